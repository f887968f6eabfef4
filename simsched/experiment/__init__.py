"""``python -m simsched experiment``: a grid of runs with a resumable result store and statistics.

One concept per module:

- :mod:`~simsched.experiment.spec`: the spec TOML -> validated, frozen :class:`ExperimentSpec`
  (presets merged first);
- :mod:`~simsched.experiment.overrides`: dotted scenario keys (``workload.load``) applied to a
  :class:`~simsched.scenario.Scenario` and validated by the scenario parser;
- :mod:`~simsched.experiment.grid`: the spec -> one :class:`RunTask` per run, each with a
  ``run_id`` derived from what it runs (so a resumed experiment recognises its finished runs);
- :mod:`~simsched.experiment.store`: ``results.csv`` / ``decisions.csv`` / ``jobs/``, appended
  one finished run at a time;
- :mod:`~simsched.experiment.runner`: runs the tasks serially, on local processes or on Ray;
- :mod:`~simsched.experiment.stats`: means with bootstrap CIs, ranks, wins, Wilcoxon (scipy);
- :mod:`~simsched.experiment.tables`: CSV, Markdown and rich renderings (the report layer);
- :mod:`~simsched.experiment.cli`: the subcommand.

See docs/experiment.md.
"""
