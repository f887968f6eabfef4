"""Policies: the interface, the built-in orderings/placements/allocations, and the
name -> scheduler registry used by scenarios (SPEC §4)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simsched.errors import InputError
from simsched.policies.allocation import ALLOCATIONS
from simsched.policies.base import Decision, Scheduler, SchedulerView, Start
from simsched.policies.ordering import ORDERINGS
from simsched.policies.placement import PLACEMENTS
from simsched.policies.preemptive import PREEMPTIVE, PREEMPTIVE_VARIANT
from simsched.policies.queue import QueueScheduler

__all__ = ["Decision", "Scheduler", "SchedulerView", "Start", "PLACEMENTS", "ORDERINGS",
           "policy_names", "build_scheduler"]

#: the EVO-GP paper's named baselines: policy -> (ordering, placement)
BASELINES: dict[str, tuple[str, str]] = {
    "spark": ("fifo", "round_robin"),
    "liquid": ("fifo", "best_fit"),
    "tiresias": ("srsf", "best_fit"),
}
# "lyra" is both an ordering and the baseline lyra + best_fit: the ordering entry serves both.


#: planner-driven schedulers of SPEC §6 (simsched.evo.scheduler)
PLANNER_POLICIES = ("mct-gp", "evo-gp")


def _mct_names() -> set[str]:
    """``mct-<ordering or baseline>``: the classic pipeline with MCT cluster allocation."""
    return {f"mct-{name}" for name in (*ORDERINGS, *BASELINES)}


def policy_names() -> list[str]:
    """Every built-in scenario name for ``scheduler.policy``."""
    return sorted(set(ORDERINGS) | set(BASELINES) | set(PREEMPTIVE) | {"gp", *PLANNER_POLICIES} | _mct_names())


def effective_allocation(spec) -> str:
    """The allocation a ``[scheduler]`` table really uses: ``mct-*`` and ``mct-gp`` imply
    MCT, ``evo-gp`` the EA; a user policy decides for itself ("custom")."""
    if spec.policy == "evo-gp":
        return "evo"
    if spec.policy == "mct-gp" or spec.policy in _mct_names():
        return "mct"
    if ":" in spec.policy:
        return "custom"
    return spec.allocation


def _priority(options, base_dir: Path):
    """The ``priority`` option: a built-in name, a JSON file (relative to the scenario) or an infix text."""
    from simsched.evo.priority import BUILTIN, load_priority

    raw = options.get("priority", str, "gp-paper")
    if raw not in BUILTIN and raw.endswith(".json") and not Path(raw).is_absolute():
        raw = str(base_dir / raw)
    try:
        return load_priority(raw)
    except InputError as exc:
        raise options.error("priority", f"{exc}; valid: {', '.join(sorted(BUILTIN))}, "
                            "a .json file from `simsched learn`, or an expression in d, q, u, g") from None


def _planner_scheduler(policy: str, options, base_dir: Path, rng_for, weights, objective) -> Scheduler:
    from simsched.evo.scheduler import PlannerScheduler

    graph = _priority(options, base_dir)
    ea = {}
    if policy == "evo-gp":
        ea = dict(
            population=options.get("population", int, 100, min_value=2),
            generations=options.get("generations", int, 200, min_value=0),
            mutation_rate=options.get("mutation_rate", float, 0.1, min_value=0.0, max_value=1.0),
            time_budget_s=options.get("time_budget_s", float, None, min_value=0.0, exclusive_min=True),
            stagnation=options.get("stagnation", int, None, min_value=1),
            seed_with=tuple(options.get_list("seed_with", str, [])),
            migrate=options.get("migrate", bool, True),
        )
        bad = [s for s in ea["seed_with"] if s not in ("mct", "current")]
        if bad:
            raise options.error("seed_with", f"unknown entry {bad[0]!r}; valid: mct, current")
        rng = ea_rng(rng_for("optimizer"), options.get("ea_stream", int, 0, min_value=0))
    else:
        rng = rng_for("optimizer")
    kind, w = ("eq5", 0.5) if objective is None else (objective.kind, objective.w)
    return PlannerScheduler(graph, allocation="evo" if policy == "evo-gp" else "mct", weights=weights,
                            rng=rng, kind=kind, w=w, **ea)


def ea_rng(optimizer: Any, k: int) -> Any:
    """The EA's stream ``k``: 0 is the scenario's "optimizer" stream itself (today's results);
    k >= 1 is its k-th spawned child (``Generator.spawn``), independent of stream 0 and of each other."""
    return optimizer if k == 0 else optimizer.spawn(k)[k - 1]


def build_scheduler(spec, *, base_dir: Path, rng_for: Callable[[str], Any], file: str,
                    weights: tuple[float, float, float] = (1.0, 1.0, 1.0), objective: Any = None) -> Scheduler:
    """The scheduler a ``[scheduler]`` table asks for; ``rng_for(name)`` gives named streams.
    ``objective`` (a :class:`~simsched.scenario.ObjectiveSpec`) selects Eq. 5 or Eq. 16 for the planners."""
    from simsched.workloads.registry import Params

    options = Params(spec.options, "scheduler", file)
    if spec.policy in PLANNER_POLICIES:
        scheduler = _planner_scheduler(spec.policy, options, base_dir, rng_for, weights, objective)
        options.finish()
        return scheduler
    if ":" in spec.policy:
        scheduler = load_user_policy(spec.policy, base_dir, options.rest(), file)
        options.finish()
        return scheduler
    policy = spec.policy
    if options.get("preemptive", bool, False):
        if policy not in PREEMPTIVE_VARIANT:
            raise options.error("preemptive", f"policy {policy!r} has no preemptive variant; "
                                f"preemptive = true works with {', '.join(sorted(PREEMPTIVE_VARIANT))}")
        policy = PREEMPTIVE_VARIANT[policy]
    if policy in PREEMPTIVE:
        scheduler = PREEMPTIVE[policy](options, placement=PLACEMENTS[spec.placement](),
                                       allocation=ALLOCATIONS[spec.allocation](rng_for("allocation")),
                                       backfill=spec.backfill, interval_s=spec.interval_s)
        options.finish()
        return scheduler
    allocation_name = spec.allocation
    if policy in _mct_names():
        policy, allocation_name = policy.removeprefix("mct-"), "mct"
    ordering_name, placement_name = policy, spec.placement
    if policy in BASELINES:
        ordering_name, placement_name = BASELINES[policy]
    elif policy == "lyra":
        placement_name = "best_fit"
    if policy == "gp":
        from simsched.evo.scheduler import GpOrdering

        ordering = GpOrdering(_priority(options, base_dir))
    else:
        ordering = ORDERINGS[ordering_name]
    allocation = ALLOCATIONS[allocation_name](rng_for("allocation"))
    options.finish()
    return QueueScheduler(ordering, PLACEMENTS[placement_name](), allocation, spec.backfill)


def load_user_policy(ref: str, base_dir: Path, options: dict[str, Any], file: str) -> Scheduler:
    """Load ``path/to/file.py:ClassName`` (relative to the scenario) or ``package.module:ClassName``."""
    where, _, name = ref.rpartition(":")
    if not where or not name:
        raise InputError(f"{file}: scheduler.policy: {ref!r} must look like 'my_policy.py:MyPolicy'")
    if where.endswith(".py"):
        path = Path(where) if Path(where).is_absolute() else base_dir / where
        if not path.is_file():
            raise InputError(f"{file}: scheduler.policy: policy file {path} not found")
        module_name = f"simsched_user_{path.stem}_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # the user's code: report it as bad input, one line
            raise InputError(f"{file}: scheduler.policy: importing {path} failed: "
                             f"{type(exc).__name__}: {exc}") from None
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise InputError(f"{file}: scheduler.policy: cannot import module {where!r}: {exc}") from None
    cls = getattr(module, name, None)
    if cls is None:
        found = [n for n, v in vars(module).items() if inspect.isclass(v) and hasattr(v, "decide")]
        raise InputError(f"{file}: scheduler.policy: {where} has no {name!r}; "
                         f"classes with decide(): {', '.join(found) or 'none'}")
    try:
        scheduler = cls(**options) if inspect.isclass(cls) else cls
    except TypeError as exc:
        raise InputError(f"{file}: scheduler: {name}({', '.join(options)}) failed: {exc}") from None
    if not callable(getattr(scheduler, "decide", None)):
        raise InputError(f"{file}: scheduler.policy: {name} has no decide(view) method; "
                         "see docs/assignment.md for the interface")
    return scheduler
