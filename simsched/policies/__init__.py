"""Policies: the interface, the built-in orderings/placements/allocations, and the
name -> scheduler registry used by scenarios (SPEC §4)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from simsched.errors import InputError
from simsched.policies.allocation import ALLOCATIONS as CLASSIC_ALLOCATIONS
from simsched.policies.allocation import Allocation
from simsched.policies.base import Decision, Scheduler, SchedulerView, Start
from simsched.policies.drf import build_drf
from simsched.policies.ftf import build_ftf
from simsched.policies.maxmin_hetero import build_maxmin_hetero
from simsched.policies.ordering import ORDERINGS
from simsched.policies.placement import PLACEMENTS
from simsched.policies.preemptive import PREEMPTIVE, PREEMPTIVE_VARIANT
from simsched.policies.queue import QueueScheduler
from simsched.policies.user import load_user_policy

__all__ = ["Decision", "Scheduler", "SchedulerView", "Start", "PLACEMENTS", "ORDERINGS",
           "policy_names", "build_scheduler", "load_user_policy", "resolve_policy_ref"]

def _mct(rng=None, decide_on: str = "event") -> Allocation:
    from simsched.evo.scheduler import MctAllocation  # numba-compiled planner: import on demand

    return MctAllocation(rng, decide_on)


def _allocation(name: str, rng, decide_on: str) -> Allocation:
    """The allocation ``name``; ``decide_on`` matters to MCT only (the others decide once per job,
    when they first see it, which is at its arrival either way)."""
    return _mct(rng, decide_on) if name == "mct" else ALLOCATIONS[name](rng)


#: every cluster allocation by scenario name (SPEC §4)
ALLOCATIONS: dict[str, Callable[..., Allocation]] = {**CLASSIC_ALLOCATIONS, "mct": _mct}

#: the EVO-GP paper's named baselines: policy -> (ordering, placement)
BASELINES: dict[str, tuple[str, str]] = {
    "spark": ("fifo", "round_robin"),
    "liquid": ("fifo", "best_fit"),
    "tiresias": ("srsf", "best_fit"),
}
# "lyra" is both an ordering and the baseline lyra + best_fit: the ordering entry serves both.


#: fair-share schedulers between tenants (docs/comparison.md): builder(options, placement=, allocation=,
#: backfill=, interval_s=); they weight tenants by their quotas whatever scheduler.quota says
FAIR_SHARE: dict[str, Callable[..., Scheduler]] = {
    "drf": build_drf,
    "ftf": build_ftf,
    "maxmin-hetero": build_maxmin_hetero,
}

#: planner-driven schedulers of SPEC §6 (simsched.evo.scheduler)
PLANNER_POLICIES = ("mct-gp", "evo-gp")

#: a trained RL agent run greedily (simsched.rl.policy; `agent = "file.npz"`)
RL_POLICY = "rl"


def _mct_names() -> set[str]:
    """``mct-<ordering or baseline>``: the classic pipeline with MCT cluster allocation."""
    return {f"mct-{name}" for name in (*ORDERINGS, *BASELINES)}


def policy_names() -> list[str]:
    """Every built-in scenario name for ``scheduler.policy``."""
    return sorted(set(ORDERINGS) | set(BASELINES) | set(PREEMPTIVE) | set(FAIR_SHARE) | {"gp", RL_POLICY, *PLANNER_POLICIES} | _mct_names())


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


def _planner_scheduler(policy: str, options, base_dir: Path, rng_for, weights, objective,
                       restart_penalty_s: float, decide_on: str = "event") -> Scheduler:
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
                            rng=rng, kind=kind, w=w, restart_penalty_s=restart_penalty_s, decide_on=decide_on,
                            **ea)


def ea_rng(optimizer: Any, k: int) -> Any:
    """The EA's stream ``k``: 0 is the scenario's "optimizer" stream itself (today's results);
    k >= 1 is its k-th spawned child (``Generator.spawn``), independent of stream 0 and of each other."""
    return optimizer if k == 0 else optimizer.spawn(k)[k - 1]


def build_scheduler(spec, *, base_dir: Path, rng_for: Callable[[str], Any], file: str,
                    weights: tuple[float, float, float] = (1.0, 1.0, 1.0), objective: Any = None) -> Scheduler:
    """The scheduler a ``[scheduler]`` table asks for; ``rng_for(name)`` gives named streams.
    ``objective`` (a :class:`~simsched.scenario.ObjectiveSpec`) selects Eq. 5 or Eq. 16 for the planners."""
    from simsched.params import Params

    options = Params(spec.options, "scheduler", file)
    options.allow(*getattr(spec, "known_keys", ()))  # read by the scenario: "valid keys" lists them too
    if spec.policy in PLANNER_POLICIES:
        scheduler = _planner_scheduler(spec.policy, options, base_dir, rng_for, weights, objective,
                                       spec.restart_penalty_s, getattr(spec, "decide_on", "event"))
        options.finish()
        return scheduler
    decide_on = getattr(spec, "decide_on", "event")
    if decide_on != "event" and (spec.policy == RL_POLICY or ":" in spec.policy):
        raise options.error("decide_on", f"{decide_on!r} applies to the planner schedulers (mct-gp, evo-gp) and "
                                         f"the built-in queue policies; policy {spec.policy!r} decides at every "
                                         'event: use decide_on = "event"')
    if spec.policy == RL_POLICY:
        from simsched.rl.policy import build_rl_policy

        scheduler = build_rl_policy(options, base_dir, rng_for("allocation"), spec.allocation, spec.placement, file)
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
    if policy in PREEMPTIVE and spec.reserve != "none":
        raise options.error("policy", f'{policy!r} is preemptive and walks its own way; backfill = '
                                      f'"{spec.reserve}" (reservations) works with the queue-order policies; use '
                                      'backfill = true or false with it')
    if policy in FAIR_SHARE:
        if spec.reserve != "none":
            raise options.error("policy", f'{policy!r} walks the queue tenant by tenant; backfill = '
                                          f'"{spec.reserve}" (reservations) works with the queue-order policies; '
                                          'use backfill = true or false with it')
        scheduler = FAIR_SHARE[policy](options, placement=PLACEMENTS[spec.placement](),
                                       allocation=_allocation(spec.allocation, rng_for("allocation"), decide_on),
                                       backfill=spec.backfill, interval_s=spec.interval_s)
        options.finish()
        return scheduler
    if policy in PREEMPTIVE:
        scheduler = PREEMPTIVE[policy](options, placement=PLACEMENTS[spec.placement](),
                                       allocation=_allocation(spec.allocation, rng_for("allocation"), decide_on),
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
    allocation = _allocation(allocation_name, rng_for("allocation"), decide_on)
    options.finish()
    return QueueScheduler(ordering, PLACEMENTS[placement_name](), allocation, spec.backfill,
                          reserve=spec.reserve, reserve_depth=spec.reserve_depth)


def resolve_policy_ref(name: str, scenario: Path) -> str:
    """``file.py:Class`` resolves next to the scenario; failing that, from the working directory."""
    where, sep, cls = name.rpartition(":")
    if not sep or not where.endswith(".py") or Path(where).is_absolute():
        return name
    if (scenario.resolve().parent / where).is_file() or not Path(where).is_file():
        return name
    return f"{Path(where).resolve()}:{cls}"

