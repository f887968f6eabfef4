"""Policies (SPEC §4): orderings, placements, allocations, the classic, preemptive and fair-share
families, and the name -> family registry scenarios use.

Importing this package registers its families (:mod:`simsched.policies.registry`): the queue
orderings and the paper's baselines (``queue``), the preemptive policies (``preemptive``) and
the fair-share ones (``drf``, ``ftf``, ``maxmin_hetero``). The planner schedulers and the RL
agent register from their own packages (simsched.evo, simsched.rl); simsched.config.catalog
imports them all, and is where the full registry (``policy_names``, ``build_scheduler``,
``effective_allocation``) is read: this package alone knows only its own families. The policy
contract (Decision, Start, SchedulerView ...) is the engine's (:mod:`simsched.core.contract`) and
is re-exported here for policy authors.
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
from simsched.policies.registry import check_user_backfill
from simsched.policies.user import load_user_policy

__all__ = ["Decision", "Scheduler", "SchedulerView", "Start", "PLACEMENTS", "ORDERINGS", "check_user_backfill",
           "load_user_policy", "drf", "ftf", "maxmin_hetero", "preemptive", "queue"]
