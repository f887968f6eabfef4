"""Cluster allocation for multi-cluster fleets (SPEC §4).

An allocation picks the cluster a queued job is ordered and placed in. The
simple ones decide once, the first time they see a job, and stick to it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from simsched.core.contract import JobView, SchedulerView


class Allocation:
    """Base: remembers each job's cluster; subclasses implement :meth:`choose`."""

    name = "base"

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        self._rng = rng
        self._cluster_of: dict[str, int] = {}

    def prepare(self, view: SchedulerView, ordered: Sequence[JobView]) -> None:
        """Called once per decision with the queue in key order (MCT plans here)."""

    def cluster_for(self, job: JobView, view: SchedulerView) -> int | None:
        """The job's cluster; None means fleet-wide (any cluster it fits)."""
        cluster = self._cluster_of.get(job.job_id)
        if cluster is None:
            cluster = self.choose(job, view)
            self._cluster_of[job.job_id] = cluster
        return cluster

    def choose(self, job: JobView, view: SchedulerView) -> int | None:
        raise NotImplementedError

    @staticmethod
    def feasible(job: JobView) -> list[int]:
        """Clusters where the job fits on empty nodes, ascending."""
        return sorted({o.cluster for o in job.options})


class Home(Allocation):
    """The job's own cluster (the paper's s_j); single-cluster fleets always use cluster 0.

    A job without a home cluster runs anywhere (None: fleet-wide placement, fastest
    GPU type first), as docs/engine.md says; it is not pinned to the first cluster.
    """

    name = "home"

    def choose(self, job: JobView, view: SchedulerView) -> int | None:
        return job.home_cluster


class RoundRobinAllocation(Allocation):
    """Arriving jobs go to clusters in turn, skipping clusters the job cannot fit."""

    name = "round_robin"

    def __init__(self, rng: np.random.Generator | None = None) -> None:
        super().__init__(rng)
        self._next = 0

    def choose(self, job: JobView, view: SchedulerView) -> int:
        count = len(view.fleet.cluster_names)
        feasible = set(self.feasible(job))
        for step in range(count):
            cluster = (self._next + step) % count
            if cluster in feasible:
                self._next = (cluster + 1) % count
                return cluster
        raise AssertionError("a queued job always has a feasible cluster")  # engine invariant


class RandomAllocation(Allocation):
    """A uniformly random feasible cluster, drawn from the scenario's allocation stream."""

    name = "random"

    def choose(self, job: JobView, view: SchedulerView) -> int:
        feasible = self.feasible(job)
        return feasible[int(self._rng.integers(len(feasible)))]


#: the classic allocations; "mct" (the §6 planner) is registered by simsched.evo.families into
#: simsched.policies.registry.ALLOCATIONS, so this layer never imports simsched.evo
ALLOCATIONS: dict[str, Callable[..., Allocation]] = {
    "home": Home,
    "round_robin": RoundRobinAllocation,
    "random": RandomAllocation,
}
