"""Preemptive policies (SPEC §4): ``srtf-preemptive``, ``srsf-preemptive`` and ``las``.

All three share :class:`PreemptiveScheduler`. Every job, running or queued,
gets a priority key (smaller = more urgent; ties by submit, then input
order). The queue is walked in key order; a queued job that does not fit in
the free GPUs may preempt running jobs of its cluster whose key is
*strictly* larger (lower priority), lowest priority first, and only when
those preemptions let it start in the same decision. The engine applies the
preemptions first, then the starts, so nothing is preempted for nothing
(no thrashing); a preempted job goes back into the walk and may restart at
once on other free GPUs (a migration). Finished work is kept; the engine adds
``restart_penalty_s`` to every restart.

- ``srtf-preemptive``: key = remaining reference-type seconds. A running
  job's key only shrinks while it runs, so a job never preempts the job
  that preempted it.
- ``srsf-preemptive``: key = remaining seconds x GPUs (Tiresias with known
  durations, preemptive).
- ``las``: Tiresias' discretised 2D-LAS. The key is the queue a job is in,
  from its attained GPU-service (GPU-seconds, since its last promotion)
  against ``las_thresholds``; within a queue jobs go FIFO by arrival and a
  running job is never preempted by a job of its own queue (the point of
  discretising). A queued job that has waited, in its current queue spell,
  at least ``starvation_factor`` x its executed run time is promoted back
  to queue 0 (its service count restarts from zero). Decisions also run
  every ``interval_s`` seconds (default 60) so demotions take effect.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable

from simsched.policies.allocation import Allocation
from simsched.policies.base import Decision, JobView, SchedulerView, Start
from simsched.policies.placement import Placement
from simsched.policies.queue import place_job

#: (primary key, submit, input index): a total order over jobs
Key = tuple[float, float, int]

DEFAULT_LAS_THRESHOLDS = (3600.0, 36000.0)
DEFAULT_STARVATION_FACTOR = 2.0
DEFAULT_LAS_INTERVAL_S = 60.0


def _slots(nodes, per_worker: int, free: list[int]) -> int:
    """Workers of ``per_worker`` milli-GPUs that fit on ``nodes`` (one worker per slot)."""
    return sum(free[n] // per_worker for n in nodes)


class PreemptiveScheduler:
    """Walk all jobs in priority order; preempt lower-priority running jobs to start higher ones.

    Subclasses (or a ``priority`` function) give the primary key of a job.
    """

    interval_s: float | None = None

    def __init__(self, priority: Callable[[JobView, SchedulerView], float] | None,
                 placement: Placement, allocation: Allocation, backfill: bool = True,
                 interval_s: float | None = None) -> None:
        self._priority = priority
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        if interval_s is not None:
            self.interval_s = interval_s

    def priority(self, job: JobView, view: SchedulerView) -> float:
        """The primary key of ``job`` (queued or running) now; smaller runs first."""
        return self._priority(job, view)

    def prepare(self, view: SchedulerView) -> None:
        """Hook run once per decision before keys are computed (LAS promotes here)."""

    def decide(self, view: SchedulerView) -> Decision:
        self.prepare(view)
        keys: dict[str, Key] = {}
        for job in (*view.running, *view.queue):
            keys[job.job_id] = (self.priority(job, view), job.submit, job.index)
        # running jobs per cluster, lowest priority (largest key) first: the victim order
        running_by_cluster: dict[int, list[JobView]] = {}
        for job in sorted(view.running, key=lambda j: keys[j.job_id], reverse=True):
            running_by_cluster.setdefault(job.running_cluster, []).append(job)
        shares = {job.job_id: job.run_share for job in view.running}

        free = list(view.free)
        heap = [(keys[job.job_id], job.job_id) for job in view.queue]
        heapq.heapify(heap)
        self.allocation.prepare(view, sorted(view.queue, key=lambda j: keys[j.job_id]))
        jobs = {job.job_id: job for job in (*view.queue, *view.running)}
        preempted: dict[str, None] = {}  # ordered set
        starts: list[Start] = []
        blocked: set[int] = set()
        # the free GPUs plus those of lower-priority running jobs only shrink along the walk,
        # so a shape that cannot start even with preemption never can in this decision
        hopeless: set[tuple] = set()
        groups = view.fleet.groups
        while heap:
            key, job_id = heapq.heappop(heap)
            job = jobs[job_id]
            cluster = self.allocation.cluster_for(job, view)
            if cluster in blocked:
                continue
            nodes = place_job(job, cluster, groups, self.placement, free, skip=blocked)
            if nodes is None:
                for option in job.options:
                    # cluster None: a job without a home under "home" allocation runs anywhere
                    if option.cluster != cluster if cluster is not None else option.cluster in blocked:
                        continue
                    shape = (option.cluster, option.gpu_type, option.per_worker, job.workers)
                    if shape in hopeless:
                        continue
                    victims = self._victims(key, option, job.workers, groups[option.cluster, option.gpu_type],
                                            running_by_cluster.get(option.cluster, []), keys, shares, preempted,
                                            free, view)
                    if victims is None:
                        hopeless.add(shape)
                        continue
                    for victim in victims:
                        preempted[victim.job_id] = None
                        for n in victim.running_nodes:
                            free[n] += shares[victim.job_id]
                    nodes = self.placement(groups[option.cluster, option.gpu_type], option.per_worker,
                                           job.workers, free)
                    if nodes is None:  # a placement that fails with free slots breaks the contract
                        raise AssertionError(f"placement refused job {job_id} although it fits")
                    for victim in victims:  # back into the walk: it may restart on other free GPUs
                        heapq.heappush(heap, (keys[victim.job_id], victim.job_id))
                    break
            if nodes is None:
                if not self.backfill:
                    blocked.update(range(len(view.fleet.cluster_names)) if cluster is None else (cluster,))
                continue
            starts.append(Start(job_id, nodes))
        return Decision(tuple(starts), tuple(preempted))

    @staticmethod
    def _victims(key: Key, option, workers: int, group: tuple[int, ...], running: list[JobView],
                 keys: dict[str, Key], shares: dict[str, int], preempted: dict[str, None],
                 free: list[int], view: SchedulerView) -> list[JobView] | None:
        """The running jobs to preempt so ``workers`` x ``option.per_worker`` fit on ``group``.

        Candidates have a strictly larger primary key and run on ``group``; they are taken
        lowest priority first until the job fits, then any that turn out unneeded are
        dropped (highest priority first). None when even all candidates do not make room.
        """
        per_worker = option.per_worker
        members = set(group)
        candidates = [r for r in running
                      if keys[r.job_id][0] > key[0] and r.job_id not in preempted
                      and r.running_nodes[0] in members]
        if not candidates:
            return None
        scratch = list(free)
        chosen: list[JobView] = []
        for victim in candidates:
            chosen.append(victim)
            for n in victim.running_nodes:
                scratch[n] += shares[victim.job_id]
            if _slots(group, per_worker, scratch) >= workers:
                break
        else:
            return None
        for victim in reversed(list(chosen)):
            for n in victim.running_nodes:
                scratch[n] -= shares[victim.job_id]
            if _slots(group, per_worker, scratch) >= workers:
                chosen.remove(victim)
            else:
                for n in victim.running_nodes:
                    scratch[n] += shares[victim.job_id]
        return chosen


def srtf_remaining(job: JobView, view: SchedulerView) -> float:
    """Remaining reference-type seconds (exact for running jobs too)."""
    return view.remaining_time(job)


def srsf_remaining(job: JobView, view: SchedulerView) -> float:
    """Remaining reference-type seconds x GPUs."""
    return view.remaining_time(job) * job.gpus


class LasScheduler(PreemptiveScheduler):
    """Tiresias discretised 2D-LAS: queues by attained GPU-service, FIFO inside a queue."""

    def __init__(self, placement: Placement, allocation: Allocation, backfill: bool = True,
                 interval_s: float | None = None,
                 thresholds: tuple[float, ...] = DEFAULT_LAS_THRESHOLDS,
                 starvation_factor: float = DEFAULT_STARVATION_FACTOR) -> None:
        super().__init__(None, placement, allocation, backfill,
                         DEFAULT_LAS_INTERVAL_S if interval_s is None else interval_s)
        self.thresholds = tuple(thresholds)
        self.starvation_factor = starvation_factor
        self._service_at_promotion: dict[str, float] = {}
        self.promotions = 0

    def attained(self, job: JobView, view: SchedulerView) -> float:
        """GPU-seconds received so far, counting the current run of a running job."""
        service = job.attained_service
        if job.running_nodes:
            service += (view.now - job.run_start) * job.gpus
        return service

    def level(self, job: JobView, view: SchedulerView) -> int:
        """The queue index: how many thresholds the service since the last promotion has reached."""
        since = self.attained(job, view) - self._service_at_promotion.get(job.job_id, 0.0)
        return bisect_right(self.thresholds, since)

    def prepare(self, view: SchedulerView) -> None:
        if self.starvation_factor <= 0:
            return
        for job in view.queue:
            if job.attained_service <= 0 or self.level(job, view) == 0:
                continue
            executed = job.attained_service / job.gpus  # run seconds so far
            if view.now - job.queued_since >= self.starvation_factor * executed:
                self._service_at_promotion[job.job_id] = job.attained_service
                self.promotions += 1

    def priority(self, job: JobView, view: SchedulerView) -> float:
        return float(self.level(job, view))


def build_srtf(options, **common) -> PreemptiveScheduler:
    return PreemptiveScheduler(srtf_remaining, **common)


def build_srsf(options, **common) -> PreemptiveScheduler:
    return PreemptiveScheduler(srsf_remaining, **common)


def build_las(options, **common) -> LasScheduler:
    """``las`` with ``[scheduler] las_thresholds`` and ``starvation_factor`` (read via Params)."""
    thresholds = options.get("las_thresholds", list, list(DEFAULT_LAS_THRESHOLDS))
    if not all(isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0 for t in thresholds) \
            or list(thresholds) != sorted(set(thresholds)):
        raise options.error("las_thresholds", "must be strictly increasing positive GPU-seconds, "
                            f"e.g. [3600.0, 36000.0]; got {thresholds!r}")
    factor = options.get("starvation_factor", float, DEFAULT_STARVATION_FACTOR, min_value=0)
    return LasScheduler(thresholds=tuple(float(t) for t in thresholds), starvation_factor=factor, **common)


#: scenario policy name -> builder(options: Params, placement=, allocation=, backfill=, interval_s=)
PREEMPTIVE: dict[str, Callable[..., PreemptiveScheduler]] = {
    "srtf-preemptive": build_srtf,
    "srsf-preemptive": build_srsf,
    "las": build_las,
}

#: ``preemptive = true`` turns these orderings into their preemptive policy
PREEMPTIVE_VARIANT = {"srtf": "srtf-preemptive", "srsf": "srsf-preemptive", "las": "las",
                      "srtf-preemptive": "srtf-preemptive", "srsf-preemptive": "srsf-preemptive"}
