"""The EVO-GP paper's instances as validated scenarios (``[instance]`` tables; docs/scenarios.md).

The fleets and workload tables are drawn by :mod:`simsched.workloads.instances`; this module
turns them into :class:`~simsched.config.scenario.Scenario` objects, with ``evo-gp`` as the
default scheduler.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simsched.config.scenario import scenario_from_table
from simsched.core.errors import InputError
from simsched.workloads.instances import SETS, instance_name


def paper_instance(seed: int, index: int, *, scheduler: dict[str, Any] | None = None,
                   workload: dict[str, Any] | None = None) -> Any:
    """Instance ``index`` of ``seed`` as a validated :class:`~simsched.config.scenario.Scenario`.

    ``scheduler`` replaces the default ``[scheduler]`` table (``policy = "evo-gp"``);
    ``workload`` adds keys to the paper generator's table (``load``, ``jobs_per_node`` ...).
    """
    table: dict[str, Any] = {"instance": {"generator": "paper", "seed": int(seed), "index": int(index)},
                             "scheduler": dict(scheduler) if scheduler is not None else {"policy": "evo-gp"}}
    if workload:
        table["workload"] = dict(workload)
    return scenario_from_table(table, Path(f"<{instance_name(seed, index)}>"))


def instance_set(name: str, seed: int, **options: Any) -> list[Any]:
    """The named set (``train`` 50, ``validation`` 10, ``test`` 30) of ``seed`` as Scenarios."""
    if name not in SETS:
        raise InputError(f"paper instance set: unknown set {name!r}; valid: {', '.join(SETS)}")
    first, count = SETS[name]
    return [paper_instance(seed, first + i, **options) for i in range(count)]
