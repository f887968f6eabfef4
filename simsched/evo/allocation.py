"""Cluster allocation for the schedulable jobs: MCT and the EA of Algorithm 1 (SPEC §4, §6).

The pieces, one concept per module:

- :mod:`simsched.evo.instance`: one decision as arrays (:class:`ClusterState`,
  :class:`AllocationInstance`) and what the kernels read;
- :mod:`simsched.evo.fitness`: an assignment's objective, per-cluster plans and
  the exact per-(cluster, job set) cache; the plain-Python reference path;
- :mod:`simsched.evo.mct`: MCT (earliest planned finish, jobs in priority order);
- :mod:`simsched.evo.ea`: the EA's operators and loop (:func:`evolve`).

This module gathers their public API.
"""

from __future__ import annotations

from simsched.evo.ea import SEED_OPTIONS, EvolveResult, evolve
from simsched.evo.fitness import evaluate_assignment, objective_reference, plan_assignment
from simsched.evo.instance import AllocationInstance, ClusterState
from simsched.evo.mct import mct_assign

__all__ = ["SEED_OPTIONS", "AllocationInstance", "ClusterState", "EvolveResult", "evaluate_assignment", "evolve",
           "mct_assign", "objective_reference", "plan_assignment"]
