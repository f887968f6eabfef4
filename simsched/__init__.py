"""simsched: a SimPy simulator for scheduling ML training jobs on heterogeneous GPU fleets.

The public names are loaded on first use (PEP 562), so ``import simsched`` --
and ``python -m simsched``, which imports this package before its
``__main__`` -- is instant and can install its signal handlers before the
heavy libraries load (an early Ctrl-C then ends with one line, SPEC §8).
"""

from __future__ import annotations

from simsched.core.version import __version__
from simsched.runs import display as _display

__all__ = ["Comparison", "ExperimentResult", "Result", "RunResult", "compare", "load_experiment", "load_run",
           "load_scenario", "run", "run_experiment", "__version__"]

_LAZY = {"RunResult": "simsched.runs.single", "Result": "simsched.runs.single", "run": "simsched.runs.single",
         "load_scenario": "simsched.config.scenario", "Comparison": "simsched.runs.results",
         "ExperimentResult": "simsched.runs.results", "compare": "simsched.runs.results",
         "run_experiment": "simsched.runs.results", "load_experiment": "simsched.runs.results",
         "load_run": "simsched.runs.results"}


def _load_presentation() -> None:
    """Register the HTML views, figures and Markdown of the result types (simsched.runs.display)."""
    # the facade wires the presentation layer in, lazily (pandas/matplotlib cost)
    from simsched.present import notebook  # noqa: F401


_display.set_loader(_load_presentation)


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'simsched' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
