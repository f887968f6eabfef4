"""simsched: a SimPy simulator for scheduling ML training jobs on heterogeneous GPU fleets."""

__version__ = "0.1.0"
