"""Where a chosen job starts: the scenario's allocation and placement rule (numpy-free).

The environment and the ``rl`` policy both start a chosen job through
:class:`Placer`, so training and inference place jobs alike.
"""

from __future__ import annotations

from simsched.core.contract import JobView
from simsched.core.errors import DecisionError, InputError
from simsched.policies.allocation import ALLOCATIONS
from simsched.policies.placement import PLACEMENTS
from simsched.policies.queue import place_job

#: allocations an agent can use: each decides a job's cluster once (MCT re-plans every decision)
SUPPORTED_ALLOCATIONS = ("home", "round_robin", "random")


def check_allocation(allocation: str, file: str) -> None:
    if allocation not in SUPPORTED_ALLOCATIONS:
        raise InputError(f"{file}: scheduler.allocation: the RL agent supports "
                         f"{', '.join(SUPPORTED_ALLOCATIONS)}, got {allocation!r}")


class Placer:
    """The scenario's allocation picks a job's cluster; its placement rule picks the nodes
    there, on the fastest GPU type that fits (as the classic pipeline does).

    ``rng`` is the scenario's ``allocation`` stream (used by ``random``).
    """

    def __init__(self, allocation: str, placement: str, rng, groups: dict[tuple[int, str], tuple[int, ...]]) -> None:
        self._allocation = ALLOCATIONS[allocation](rng)
        self._placement = PLACEMENTS[placement]()
        self._groups = groups

    def cluster_for(self, job: JobView, view) -> int | None:
        """The job's cluster; None: any cluster (``home`` for a job without one)."""
        return self._allocation.cluster_for(job, view)

    def place(self, job: JobView, cluster: int | None, free: list[int]) -> tuple[int, ...]:
        """Nodes for every worker, on the fastest GPU type that fits (``free`` is reduced by what they take)."""
        nodes = place_job(job, cluster, self._groups, self._placement, free)
        if nodes is None:
            raise DecisionError(f"job {job.job_id!r} does not fit in cluster {cluster} now")
        return nodes
