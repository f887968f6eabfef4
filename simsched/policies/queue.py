"""The classic pipeline: allocation -> ordering -> placement (SPEC §3-§4).

:class:`QueueScheduler` walks the queue in key order and starts every job
that fits now; with ``backfill = False`` the walk stops, per cluster, at the
first job that does not fit (strict head-of-line).
"""

from __future__ import annotations

from bisect import bisect_left

from simsched.policies.allocation import Allocation
from simsched.policies.base import Decision, JobView, SchedulerView, Start
from simsched.policies.ordering import Ordering
from simsched.policies.placement import Placement


def place_job(job: JobView, cluster: int | None, groups: dict, placement: Placement, free: list[int],
              failed: set[tuple] | None = None, skip: set[int] | frozenset = frozenset(),
              ) -> tuple[int, ...] | None:
    """Place ``job``'s workers in ``cluster`` on the fastest GPU type that fits now.

    ``cluster`` None places fleet-wide (any cluster not in ``skip``, fastest type first):
    a job without a home cluster under "home" allocation. ``failed`` remembers
    (cluster, type, per_worker, workers) shapes that did not fit: while ``free`` only
    shrinks they cannot fit later either, so they are skipped.
    """
    for option in job.options:
        if option.cluster != cluster if cluster is not None else option.cluster in skip:
            continue
        shape = (option.cluster, option.gpu_type, option.per_worker, job.workers)
        if failed is not None and shape in failed:
            continue
        nodes = placement(groups[option.cluster, option.gpu_type], option.per_worker, job.workers, free)
        if nodes is not None:
            return nodes
        if failed is not None:
            failed.add(shape)
    return None


class QueueScheduler:
    """Order the queue, then place each job on the fastest GPU type that fits in its cluster."""

    def __init__(self, ordering: Ordering, placement: Placement, allocation: Allocation,
                 backfill: bool = True) -> None:
        self.ordering = ordering
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        self._plans = type(allocation).prepare is not Allocation.prepare  # e.g. MCT
        # Static orderings keep the queue sorted between decisions: (key, submit, index) and
        # the jobs in the same order. Jobs enter at the tail of view.queue with a growing
        # queue_seq, and leave only when this scheduler starts them.
        self._keys: list[tuple[float, float, int]] = []
        self._jobs: list[JobView] = []
        self._last_seq = -1
        # Shapes that could not be placed, valid while free capacity is exactly `_free_after`
        # (what this scheduler left at its last decision): with the same free GPUs, the same
        # shapes fail again, so a blocked queue costs almost nothing to re-check.
        self._failed: set[tuple] = set()
        self._failed_jobs: set[tuple] = set()
        self._free_after: list[int] | None = None
        # How many queued jobs share each job signature (cluster, options, workers): jobs with
        # one signature fit or fail together, so once every signature in the queue has failed
        # the walk can stop. Kept incrementally when both the order and the cluster of a
        # queued job are fixed (static ordering, allocation decided once).
        self._incremental = self.ordering.static and not self._plans
        self._signature_of: dict[str, tuple] = {}
        self._signature_count: dict[tuple, int] = {}

    def _sort_key(self, job: JobView, view: SchedulerView) -> tuple[float, float, int]:
        return (self.ordering.key(job, view), job.submit, job.index)

    def _signature(self, job: JobView, view: SchedulerView) -> tuple:
        # the engine shares one options tuple between jobs of one shape: id() is exact and cheap
        return (self.allocation.cluster_for(job, view), id(job.options), job.workers)

    def _count(self, job: JobView, view: SchedulerView) -> None:
        signature = self._signature_of[job.job_id] = self._signature(job, view)
        self._signature_count[signature] = self._signature_count.get(signature, 0) + 1

    def _uncount(self, job: JobView) -> None:
        signature = self._signature_of.pop(job.job_id)
        left = self._signature_count[signature] - 1
        if left:
            self._signature_count[signature] = left
        else:
            del self._signature_count[signature]

    def ordered_queue(self, view: SchedulerView) -> list[JobView]:
        """The queue in key order; ties by submit, then input order."""
        if not self.ordering.static:
            return self.ordering.sort(view.queue, view)
        newcomers = view.queued_after(self._last_seq)
        for job in newcomers:
            key = self._sort_key(job, view)
            pos = bisect_left(self._keys, key)
            self._keys.insert(pos, key)
            self._jobs.insert(pos, job)
            if self._incremental:
                self._count(job, view)
        if newcomers:
            self._last_seq = newcomers[0].queue_seq
        if len(self._keys) != view.queue_length:  # the queue changed behind our back: rebuild
            self._jobs = self.ordering.sort(view.queue, view)
            self._keys = [self._sort_key(job, view) for job in self._jobs]
            self._signature_of, self._signature_count = {}, {}
            for job in self._jobs:
                self._count(job, view)
        return self._jobs

    def _forget(self, started: list[JobView], view: SchedulerView) -> None:
        if not self.ordering.static:
            return
        for job in started:
            pos = bisect_left(self._keys, self._sort_key(job, view))
            del self._keys[pos]
            del self._jobs[pos]
            if self._incremental:
                self._uncount(job)

    def decide(self, view: SchedulerView) -> Decision:
        free = list(view.free)
        groups = view.fleet.groups
        cluster_count = len(view.fleet.cluster_names)
        blocked: set[int] = set()
        # (cluster, type, per_worker, workers) option shapes and job signatures that cannot
        # fit now; free only shrinks during the walk, so what failed fails again
        unchanged = free == self._free_after
        failed = self._failed if unchanged else set()
        ordered = self.ordered_queue(view)
        if self._plans:
            self.allocation.prepare(view, ordered)
        if self._incremental:
            counts = self._signature_count
            signature_of = self._signature_of
        else:
            signature_of = {job.job_id: self._signature(job, view) for job in ordered}
            counts = dict.fromkeys(signature_of.values())
        failed_jobs = {s for s in self._failed_jobs if s in counts} if unchanged else set()
        starts: list[Start] = []
        started: list[JobView] = []
        place = self.placement
        for job in ordered:
            if len(failed_jobs) == len(counts):
                break  # every kind of job still queued has failed: nothing else can start
            signature = signature_of[job.job_id]
            cluster = signature[0]
            if cluster in blocked:
                continue
            nodes = None if signature in failed_jobs else place_job(job, cluster, groups, place, free, failed,
                                                                    blocked)
            if nodes is None:
                failed_jobs.add(signature)
                if not self.backfill:  # a fleet-wide job (cluster None) heads every cluster's line
                    blocked.update(range(cluster_count) if cluster is None else (cluster,))
                    if len(blocked) == cluster_count:
                        break
                continue
            starts.append(Start(job.job_id, nodes))
            started.append(job)
        self._forget(started, view)
        self._failed = failed
        self._failed_jobs = failed_jobs
        self._free_after = free
        return Decision(tuple(starts))
