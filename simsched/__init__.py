"""simsched: a SimPy simulator for scheduling ML training jobs on heterogeneous GPU fleets.

``run``, ``RunResult`` and ``load_scenario`` are imported on first use (PEP 562),
so ``import simsched`` and ``python -m simsched --help`` do not pay for pandas,
numpy and SimPy.
"""

__version__ = "0.1.0"

__all__ = ["RunResult", "load_scenario", "run", "__version__"]

_LAZY = {"RunResult": "simsched.api", "run": "simsched.api", "load_scenario": "simsched.scenario"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'simsched' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
