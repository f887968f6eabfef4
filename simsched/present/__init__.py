"""The presentation layer: rich tables and live progress, figures (matplotlib, optional), report.html
and the notebook HTML; it registers the views of the result types with simsched.runs.display."""
