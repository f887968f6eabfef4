"""Policies (SPEC §4): orderings, placements, allocations, the classic, preemptive and fair-share
families, and the name -> family registry scenarios use.

Importing this package registers its families (:mod:`simsched.policies.registry`): the queue
orderings and the paper's baselines (``queue``), the preemptive policies (``preemptive``) and
the fair-share ones (``drf``, ``ftf``, ``maxmin_hetero``). The planner schedulers and the RL
agent register from their own packages (simsched.evo, simsched.rl); simsched.config.catalog
imports them all. The policy contract (Decision, Start, SchedulerView ...) is the engine's
(:mod:`simsched.core.contract`) and is re-exported here for policy authors.
"""

from __future__ import annotations

from simsched.core.contract import Decision, Scheduler, SchedulerView, Start
from simsched.policies import (  # each registers its family
    drf,
    ftf,
    maxmin_hetero,
    preemptive,
    queue,
)
from simsched.policies.ordering import ORDERINGS
from simsched.policies.placement import PLACEMENTS
from simsched.policies.registry import (
    ALLOCATIONS,
    SCHEDULERS,
    build_scheduler,
    check_user_backfill,
    effective_allocation,
    policy_names,
    resolve_policy_ref,
)
from simsched.policies.user import load_user_policy

__all__ = ["Decision", "Scheduler", "SchedulerView", "Start", "PLACEMENTS", "ORDERINGS", "ALLOCATIONS",
           "SCHEDULERS", "policy_names", "build_scheduler", "check_user_backfill", "effective_allocation", "load_user_policy",
           "resolve_policy_ref", "drf", "ftf", "maxmin_hetero", "preemptive", "queue"]
