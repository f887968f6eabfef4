"""The run layer: one simulation (:mod:`~simsched.runs.single`), comparisons, experiments with their
store, and the executors (local processes, Ray). Results are data here; their pictures are drawn by
simsched.present through :mod:`~simsched.runs.display`."""
