"""simsched: a SimPy simulator for scheduling ML training jobs on heterogeneous GPU fleets.

The public names are loaded on first use (PEP 562), so ``import simsched`` --
and ``python -m simsched``, which imports this package before its
``__main__`` -- is instant and can install its signal handlers before the
heavy libraries load (an early Ctrl-C then ends with one line, SPEC §8).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Comparison", "ExperimentResult", "Result", "RunResult", "compare", "load_experiment", "load_run",
           "load_scenario", "run", "run_experiment", "__version__"]

_LAZY = {"RunResult": "simsched.api", "Result": "simsched.api", "run": "simsched.api",
         "load_scenario": "simsched.scenario", "Comparison": "simsched.notebook",
         "ExperimentResult": "simsched.notebook", "run_experiment": "simsched.notebook",
         "load_experiment": "simsched.notebook", "load_run": "simsched.notebook"}
# ``simsched.compare(...)`` is the module simsched/compare.py itself, made callable: a package
# attribute named like a submodule is replaced by the submodule once anything imports it, so
# the module calls simsched.notebook.compare (see the end of simsched/compare.py).


def __getattr__(name: str) -> object:
    if name == "compare":
        import importlib

        return importlib.import_module("simsched.compare")  # the import also sets the attribute
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'simsched' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
