"""The planner families' registrations (simsched.policies.registry): ``gp`` (a queue ordering by
a priority graph), ``mct-gp`` and ``evo-gp`` (SPEC §6), and the ``mct`` cluster allocation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from simsched.core.contract import Scheduler
from simsched.core.errors import InputError
from simsched.policies.allocation import Allocation
from simsched.policies.queue import build_queue
from simsched.policies.registry import Request, register, register_allocation


def _scheduler() -> Any:
    """simsched.evo.scheduler, imported when a planner family is first built: it loads numba and
    the compiled planner kernels (0.2 s), which a run of a classic policy never needs."""
    from simsched.evo import scheduler  # numba kernels: loaded on first use

    return scheduler


def priority_option(request: Request) -> Any:
    """The ``priority`` option: a built-in name, a JSON file (relative to the scenario) or an infix text."""
    # networkx (about 0.15 s): loaded when a priority is first needed, not by every scenario check
    from simsched.evo.priority import BUILTIN, load_priority

    options = request.options
    raw = options.get("priority", str, "gp-paper")
    if raw not in BUILTIN and raw.endswith(".json") and not Path(raw).is_absolute():
        raw = str(request.base_dir / raw)
    try:
        return load_priority(raw)
    except InputError as exc:
        raise options.error("priority", f"{exc}; valid: {', '.join(sorted(BUILTIN))}, "
                            "a .json file from `simsched learn`, or an expression in d, q, u, g") from None


def ea_rng(optimizer: Any, k: int) -> Any:
    """The EA's stream ``k``: 0 is the scenario's "optimizer" stream itself (today's results);
    k >= 1 is its k-th spawned child (``Generator.spawn``), independent of stream 0 and of each other."""
    return optimizer if k == 0 else optimizer.spawn(k)[k - 1]


def build_planner(request: Request) -> Scheduler:
    """``mct-gp`` and ``evo-gp``: the planner with MCT or the allocation EA."""
    options, policy = request.options, request.policy
    graph = priority_option(request)
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
        rng = ea_rng(request.rng_for("optimizer"), options.get("ea_stream", int, 0, min_value=0))
    else:
        rng = request.rng_for("optimizer")
    objective = request.objective
    kind, w = ("eq5", 0.5) if objective is None else (objective.kind, objective.w)
    return _scheduler().PlannerScheduler(graph, allocation="evo" if policy == "evo-gp" else "mct", weights=request.weights,
                                         rng=rng, kind=kind, w=w, restart_penalty_s=request.spec.restart_penalty_s,
                                         decide_on=request.decide_on, **ea)


def build_gp(request: Request) -> Scheduler:
    """``gp``: the classic pipeline ordered by a priority graph (smaller first)."""
    return build_queue(request, _scheduler().GpOrdering(priority_option(request)))


def build_mct(rng: Any = None, decide_on: str = "event") -> Allocation:
    return _scheduler().MctAllocation(rng, decide_on)


register("mct-gp", allocation="mct", preemptive_option=False)(build_planner)
register("evo-gp", allocation="evo", preemptive_option=False)(build_planner)
register("gp")(build_gp)
register_allocation("mct", build_mct)
