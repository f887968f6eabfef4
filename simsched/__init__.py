"""simsched: a SimPy simulator for scheduling ML training jobs on heterogeneous GPU fleets."""

__version__ = "0.1.0"

from simsched.api import RunResult, run  # noqa: E402
from simsched.scenario import load_scenario  # noqa: E402

__all__ = ["RunResult", "load_scenario", "run", "__version__"]
