"""The classic pipeline: allocation -> ordering -> placement (SPEC §3-§4).

:class:`QueueScheduler` walks the queue in key order and starts every job
that fits now; with ``backfill = False`` the walk stops, per cluster, at the
first job that does not fit (strict head-of-line).
"""

from __future__ import annotations

from simsched.policies.allocation import Allocation
from simsched.policies.base import Decision, JobView, SchedulerView, Start
from simsched.policies.ordering import Ordering
from simsched.policies.placement import Placement


class QueueScheduler:
    """Order the queue, then place each job on the fastest GPU type that fits in its cluster."""

    def __init__(self, ordering: Ordering, placement: Placement, allocation: Allocation,
                 backfill: bool = True) -> None:
        self.ordering = ordering
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        self._sorted: list[JobView] = []  # the queue in key order (static orderings)
        self._known: set[str] = set()

    def ordered_queue(self, view: SchedulerView) -> list[JobView]:
        if not self.ordering.static:
            return self.ordering.sort(view.queue, view)
        # Static keys: keep the sorted list, merge in newcomers, drop jobs that left.
        queued = {job.job_id for job in view.queue}
        fresh = [job for job in view.queue if job.job_id not in self._known]
        kept = [job for job in self._sorted if job.job_id in queued]
        self._known = queued
        if fresh:
            kept = self.ordering.sort(kept + fresh, view) if kept else self.ordering.sort(fresh, view)
        self._sorted = kept
        return kept

    def decide(self, view: SchedulerView) -> Decision:
        free = list(view.free)
        if not any(free):
            return Decision()
        groups = view.fleet.groups
        cluster_count = len(view.fleet.cluster_names)
        blocked: set[int] = set()
        failed: set[tuple] = set()  # (cluster, type, per_worker, workers) that cannot fit now
        starts: list[Start] = []
        for job in self.ordered_queue(view):
            cluster = self.allocation.cluster_for(job, view)
            if cluster in blocked:
                continue
            nodes = None
            for option in job.options:
                if option.cluster != cluster:
                    continue
                # free only shrinks during one walk, so a shape that failed fails again
                shape = (cluster, option.gpu_type, option.per_worker, job.workers)
                if shape in failed:
                    continue
                nodes = self.placement(groups[cluster, option.gpu_type], option.per_worker,
                                       job.workers, free)
                if nodes is not None:
                    break
                failed.add(shape)
            if nodes is None:
                if not self.backfill:
                    blocked.add(cluster)
                    if len(blocked) == cluster_count:
                        break
                continue
            starts.append(Start(job.job_id, nodes))
        return Decision(tuple(starts))
