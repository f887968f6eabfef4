"""``python -m simsched experiment``: a grid of runs with a resumable result store and statistics.

One concept per module:

- :mod:`~simsched.runs.experiment.spec`: the spec TOML -> validated, frozen :class:`ExperimentSpec`
  (presets merged first);
- :mod:`~simsched.config.overrides`: dotted scenario keys (``workload.load``) applied to a
  :class:`~simsched.config.scenario.Scenario` and validated by the scenario parser;
- :mod:`~simsched.runs.experiment.grid`: the spec -> one :class:`RunTask` per run, each with a
  ``run_id`` derived from what it runs (so a resumed experiment recognises its finished runs);
- :mod:`~simsched.runs.experiment.store`: ``results.csv`` / ``decisions.csv`` / ``jobs/``, appended
  one finished run at a time;
- :mod:`~simsched.runs.experiment.runner`: runs the tasks serially, on local processes or on Ray;
- :mod:`~simsched.runs.experiment.stats`: means with bootstrap CIs, ranks, wins, Wilcoxon (scipy);
- :mod:`~simsched.present.experiment_tables`: CSV, Markdown and rich renderings (the report layer);
- :mod:`~simsched.cli.experiment`: the subcommand.

See docs/experiment.md.
"""
