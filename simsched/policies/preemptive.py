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

How the walk stays cheap on a deep queue (:meth:`PreemptiveScheduler.decide`;
:meth:`PreemptiveScheduler._decide_reference` is the walk as written above,
and ``tests/test_las_fast.py`` checks that both give the same event log): a
queued job's key does not change while it waits (remaining work, or a LAS
level until a promotion), so queued jobs stay between decisions in buckets of
one signature (cluster, options, workers), each in key order, and the walk
merges the buckets' heads. A head that can neither be placed nor make room by
preempting fails, and so does the rest of its bucket: their keys are no
smaller, so their candidate victims are fewer, and the free GPUs plus those of
candidate victims only shrink along the walk. The bucket leaves the walk. A
decision costs the running jobs plus about (signatures + starts +
preemptions) x log, not the queue length. With a planning allocation (MCT)
every decision is the reference walk.

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
import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from operator import itemgetter

from simsched.core.contract import Decision, JobView, SchedulerView, Start
from simsched.policies.allocation import Allocation
from simsched.policies.placement import Placement
from simsched.policies.queue import place_job
from simsched.policies.registry import common_builder, register, register_variants

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
    #: False: every decision is :meth:`_decide_reference` (tests compare the two)
    incremental = True

    def __init__(self, priority: Callable[[JobView, SchedulerView], float] | None,
                 placement: Placement, allocation: Allocation, backfill: bool = True,
                 interval_s: float | None = None) -> None:
        self._priority = priority
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        if interval_s is not None:
            self.interval_s = interval_s
        self._plans = type(allocation).prepare is not Allocation.prepare  # MCT: the reference walk
        self._buckets: dict[tuple, tuple[list[Key], list[JobView]]] = {}  # signature -> keys, jobs in key order
        self._queued: dict[str, tuple[tuple, Key]] = {}  # queued job id -> (signature, key)
        self._last_seq = -1
        self._quiet: tuple[float, float] = (math.nan, math.inf)  # (decision time, running keys valid until)
        self._last_running: tuple | None = None  # (running, valid until, keys, ranked, shares) of an idle decision
        self._no_fit: tuple[list[int] | None, set[tuple]] = (None, set())  # (free at the end, shapes not fitting)
        self._failed_heads: set[tuple] = set()  # (signature, key) of bucket heads the last walk failed
        self._acted = False  # whether the last decision started or preempted anything
        self._started_jobs: list[JobView] = []  # the jobs the last walk started
        self._quiet_after: tuple = (None, math.inf)  # (state after an acting decision, its quiet_until)

    def priority(self, job: JobView, view: SchedulerView) -> float:
        """The primary key of ``job`` (queued or running) now; smaller runs first."""
        return self._priority(job, view)

    def prepare(self, view: SchedulerView) -> None:
        """Hook run once per decision before keys are computed (LAS promotes here)."""

    def _decide_reference(self, view: SchedulerView) -> Decision:
        """Every key and the whole queue at every decision (what :meth:`decide` must equal)."""
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
        if type(self.allocation).prepare is not Allocation.prepare:  # only a planning allocation reads it
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

    def _add(self, job: JobView, view: SchedulerView, signature: tuple) -> None:
        key = (self.priority(job, view), job.submit, job.index)
        bucket = self._buckets.get(signature)
        if bucket is None:
            bucket = self._buckets[signature] = ([], [])
        i = bisect_left(bucket[0], key)
        bucket[0].insert(i, key)
        bucket[1].insert(i, job)
        self._queued[job.job_id] = (signature, key)

    def _remove(self, job_id: str) -> tuple:
        signature, key = self._queued.pop(job_id)
        keys, jobs = self._buckets[signature]
        i = bisect_left(keys, key)
        del keys[i]
        del jobs[i]
        if not keys:
            del self._buckets[signature]
        return signature

    def _sync(self, view: SchedulerView) -> None:
        """Take in the jobs that (re-)entered the queue, then :meth:`_promote`."""
        newcomers = view.queued_after(self._last_seq)
        if newcomers:
            self._last_seq = newcomers[0].queue_seq
        if len(self._queued) + len(newcomers) != view.queue_length:  # changed behind our back: rebuild
            self._reset_queue()
            newcomers = list(view.queue)
        # the reference walk first meets a newcomer's allocation in key order
        newcomers.sort(key=lambda j: (self.priority(j, view), j.submit, j.index))
        for job in newcomers:
            self._add(job, view, (self.allocation.cluster_for(job, view), id(job.options), job.workers))
        self._promote(view)

    def _reset_queue(self) -> None:
        self._buckets, self._queued = {}, {}

    def _promote(self, view: SchedulerView) -> None:
        """Hook: change queued jobs' keys that changed since they were added (LAS promotions)."""

    def decide(self, view: SchedulerView) -> Decision:
        """The walk of :meth:`_decide_reference`, on the bucketed queue (see the module docstring)."""
        if self._plans or not self.incremental:
            decision = self._decide_reference(view)
            self._acted = bool(decision.starts or decision.preempts)
            return decision
        self._sync(view)
        now = view.now
        running = view.running
        last = self._last_running
        free = list(view.free)
        same_free = self._no_fit[0] == free
        if last is not None and last[0] == running and now < last[1]:
            # nothing started or stopped and no running key changed since the last decision, which did nothing
            keys, ranked, shares = last[2], last[3], last[4]
            self._quiet = (now, last[1])
            # (with backfill off a failure also depends on the clusters blocked before it: not kept)
            failed = self._failed_heads if same_free and self.backfill else set()
        else:
            keys, ranked, shares = self._rank_running(view)
            failed = set()
        # with the free GPUs of the last decision's end, what did not fit then does not fit now
        no_fit = set(self._no_fit[1]) if same_free else set()
        decision, self._failed_heads = self._walk(view, keys, ranked, shares, free, no_fit, failed)
        self._no_fit = (free, no_fit)
        self._acted = bool(decision.starts or decision.preempts)
        self._last_running = None if self._acted else (running, self._quiet[1], keys, ranked, shares)
        return decision

    def _rank_running(self, view: SchedulerView) -> tuple[dict, dict, dict]:
        """Running jobs' keys, per node group lowest priority first (the victim order), and shares;
        also ``_quiet``: (now, a time before which these keys stay the same)."""
        now = view.now
        keys: dict[str, Key] = {}
        soonest = math.inf
        shares: dict[str, int] = {}
        ordered = []
        running_key = self._running_key
        for job in view.running:
            job_id = job.job_id
            primary, until = running_key(job, view)
            if until < soonest:
                soonest = until
            key = keys[job_id] = (primary, job.submit, job.index)
            shares[job_id] = job.run_share
            ordered.append((key, job))
        self._quiet = (now, soonest)
        # running jobs per node group, lowest priority (largest key) first: the victim order
        node_cluster, node_type = view.fleet.node_cluster, view.fleet.node_type
        ranked: dict[tuple, list[JobView]] = {}
        ordered.sort(key=itemgetter(0), reverse=True)
        for _, job in ordered:
            first = job.running_nodes[0]
            group_key = (node_cluster[first], node_type[first])
            members = ranked.get(group_key)
            if members is None:
                ranked[group_key] = [job]
            else:
                members.append(job)
        return keys, ranked, shares

    def _running_key(self, job: JobView, view: SchedulerView) -> tuple[float, float]:
        """A running job's primary key now, and a time before which it stays the same (now: no such
        time; a remaining time shrinks as the job runs)."""
        return self.priority(job, view), view.now

    def _walk(self, view: SchedulerView, keys: dict, ranked: dict, shares: dict, free: list[int],
              no_fit: set[tuple], failed: set[tuple]) -> tuple[Decision, set[tuple]]:
        """:meth:`PreemptiveScheduler.decide`'s walk over the buckets' heads; also the (signature,
        key) of the heads that failed. ``failed``: heads that failed in the last decision, which did
        nothing, with the same running jobs, levels and free GPUs: until this walk starts or
        preempts something, they fail again as they did then."""
        failing: set[tuple] = set()
        unchanged = True
        # (key, bucket order or -1 for a preempted job back in the walk, signature or job, position)
        heap: list = [(bucket[0][0], n, signature, 0) for n, (signature, bucket) in enumerate(self._buckets.items())]
        heapq.heapify(heap)
        preempted: dict[str, None] = {}
        starts: list[Start] = []
        started: list[str] = []  # ids of the bucket jobs started
        started_jobs = self._started_jobs = []  # every job started (bucket jobs and restarted victims)
        blocked: set[int] = set()
        hopeless: set[tuple] = set()
        groups = view.fleet.groups
        clusters = len(view.fleet.cluster_names)
        while heap:
            key, order, item, position = heapq.heappop(heap)
            if order < 0:
                job = item
                cluster = self.allocation.cluster_for(job, view)
            else:
                job = self._buckets[item][1][position]
                cluster = item[0]
            if cluster in blocked:
                continue  # so are the bucket's later jobs
            known = unchanged and order >= 0 and (item, key) in failed
            nodes = None if known else place_job(job, cluster, groups, self.placement, free, no_fit, skip=blocked)
            if nodes is None and not known:
                for option in job.options:
                    if option.cluster != cluster if cluster is not None else option.cluster in blocked:
                        continue
                    shape = (option.cluster, option.gpu_type, option.per_worker, job.workers)
                    if shape in hopeless:
                        continue
                    candidates = []  # what _victims takes: strictly lower priority, on the group
                    for r in ranked.get((option.cluster, option.gpu_type), ()):
                        if keys[r.job_id][0] <= key[0]:
                            break
                        if r.job_id not in preempted:
                            candidates.append(r)
                    group = groups[option.cluster, option.gpu_type]
                    victims = self._fewest(candidates, option.per_worker, job.workers, group, shares, free)
                    if victims is None:
                        hopeless.add(shape)
                        continue
                    for victim in victims:
                        preempted[victim.job_id] = None
                        for n in victim.running_nodes:
                            free[n] += shares[victim.job_id]
                    no_fit.clear()  # free grew: shapes may fit again
                    nodes = self.placement(group, option.per_worker, job.workers, free)
                    if nodes is None:  # a placement that fails with free slots breaks the contract
                        raise AssertionError(f"placement refused job {job.job_id} although it fits")
                    for victim in victims:  # back into the walk: it may restart on other free GPUs
                        heapq.heappush(heap, (keys[victim.job_id], -1, victim, 0))
                    break
            if nodes is None:  # the bucket's later jobs fail too: it leaves the walk
                if order >= 0:
                    failing.add((item, key))
                if not self.backfill:
                    blocked.update(range(clusters) if cluster is None else (cluster,))
                continue
            unchanged = False
            starts.append(Start(job.job_id, nodes))
            started_jobs.append(job)
            if order >= 0:
                started.append(job.job_id)
                keys_of = self._buckets[item][0]
                if position + 1 < len(keys_of):
                    heapq.heappush(heap, (keys_of[position + 1], order, item, position + 1))
        for job_id in started:
            self._remove(job_id)
        return Decision(tuple(starts), tuple(preempted)), failing

    @staticmethod
    def _victims(key: Key, option, workers: int, group: tuple[int, ...], running: list[JobView],
                 keys: dict[str, Key], shares: dict[str, int], preempted: dict[str, None],
                 free: list[int], view: SchedulerView) -> list[JobView] | None:
        """The running jobs to preempt so ``workers`` x ``option.per_worker`` fit on ``group``.

        Candidates have a strictly larger primary key and run on ``group``; they are taken
        lowest priority first until the job fits, then any that turn out unneeded are
        dropped (highest priority first). None when even all candidates do not make room.
        """
        members = set(group)
        candidates = [r for r in running
                      if keys[r.job_id][0] > key[0] and r.job_id not in preempted
                      and r.running_nodes[0] in members]
        return PreemptiveScheduler._fewest(candidates, option.per_worker, workers, group, shares, free)

    @staticmethod
    def _fewest(candidates: list[JobView], per_worker: int, workers: int, group: tuple[int, ...],
                shares: dict[str, int], free: list[int]) -> list[JobView] | None:
        """The victims among ``candidates`` (lowest priority first) that :meth:`_victims` takes."""
        if not candidates:
            return None
        scratch = list(free)
        for victim in candidates:  # even all of them not enough: the loop below would end in None
            for n in victim.running_nodes:
                scratch[n] += shares[victim.job_id]
        if _slots(group, per_worker, scratch) < workers:
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


def _lower_bound(t: float) -> float:
    """A time safely at or before ``t``: float rounding in the exact tests moves a crossing by far less."""
    return t - (1e-7 * abs(t) + 1e-3)


class LasScheduler(PreemptiveScheduler):
    """Tiresias discretised 2D-LAS: queues by attained GPU-service, FIFO inside a queue.

    On top of the bucketed walk (module docstring; :class:`LasEveryRound` is the
    every-round reference, with exactly the same starts, preemptions, decision
    count and end time in ``tests/test_las_fast.py``):

    * starvation promotions come from a heap of each waiting job's promotion
      time instead of a pass over the queue (a promoted job moves in its bucket);
    * a running job's level is kept until (a bound on) its next threshold
      crossing; after a decision that did nothing, the next one with the same
      running jobs and free GPUs reuses their ranking and the failed heads;
    * :meth:`quiet_until` tells the engine, after every decision, the earliest
      time a running job can cross a threshold or a queued job can be promoted;
      until then (and until the next arrival or finish) a periodic round would
      start and preempt nothing, so the engine counts it without running it
      (simsched/core/engine.py, ``skipping_rounds``). After a decision that did
      something this holds because the walk leaves a fixed point (see
      :meth:`quiet_until`).

    """

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
        self._promote_at: list[tuple[float, int, JobView]] = []  # (promotion time lower bound, queue_seq, job)
        self._run_levels: dict[str, tuple] = {}  # running job -> (run_start, attained, level, next change)

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

    def _starving(self, job: JobView, view: SchedulerView) -> bool:
        """Whether a queued job is promoted back to queue 0 at a decision now."""
        if job.attained_service <= 0 or self.level(job, view) == 0:
            return False
        executed = job.attained_service / job.gpus  # run seconds so far
        return view.now - job.queued_since >= self.starvation_factor * executed

    def prepare(self, view: SchedulerView) -> None:
        if self.starvation_factor <= 0:
            return
        for job in view.queue:
            if self._starving(job, view):
                self._service_at_promotion[job.job_id] = job.attained_service
                self.promotions += 1

    def priority(self, job: JobView, view: SchedulerView) -> float:
        return float(self.level(job, view))

    # -- the incremental decision ------------------------------------------------------
    def _add(self, job: JobView, view: SchedulerView, signature: tuple) -> None:
        super()._add(job, view, signature)
        due = self._promotion_bound(job, view)
        if due < math.inf:
            heapq.heappush(self._promote_at, (due, job.queue_seq, job))

    def _promotion_bound(self, job: JobView, view: SchedulerView) -> float:
        """A time at or before a queued job's starvation promotion (inf: it will not be promoted)."""
        if self.starvation_factor <= 0 or job.attained_service <= 0 or self.level(job, view) == 0:
            return math.inf
        return _lower_bound(job.queued_since + self.starvation_factor * (job.attained_service / job.gpus))

    def _reset_queue(self) -> None:
        super()._reset_queue()
        self._promote_at = []

    def _promote(self, view: SchedulerView) -> None:
        """Promote the starving queued jobs, from the heap of their promotion times."""
        heap, now, later = self._promote_at, view.now, []
        while heap and heap[0][0] <= now:
            entry = heapq.heappop(heap)
            job = entry[2]
            if job.job_id not in self._queued or job.queue_seq != entry[1]:
                continue  # started since, or an older spell in the queue
            if self._starving(job, view):
                signature = self._remove(job.job_id)
                self._service_at_promotion[job.job_id] = job.attained_service
                self.promotions += 1
                self._add(job, view, signature)
            else:
                later.append(entry)
        for entry in later:  # the bound was early: look again at the next decision
            heapq.heappush(heap, entry)

    def _running_key(self, job: JobView, view: SchedulerView) -> tuple[float, float]:
        """The level, kept while the run lasts until (a bound on) its next threshold crossing."""
        cached = self._run_levels
        entry = cached.get(job.job_id)
        if entry is None or entry[0] != job.run_start or entry[1] != job.attained_service or view.now >= entry[3]:
            if len(cached) > 4 * len(view.running) + 64:  # forget jobs that stopped running
                self._run_levels = cached = {j.job_id: cached[j.job_id] for j in view.running if j.job_id in cached}
            entry = cached[job.job_id] = (job.run_start, job.attained_service, *self._level_and_next(job, view))
        return float(entry[2]), entry[3]

    def quiet_until(self, view: SchedulerView) -> float:
        """After a decision (``view``: the state once the engine applied it): a time at or before
        the first at which a decision could do something without an arrival or a finish first (a
        running job reaching its next threshold, a queued job's promotion). ``view.now`` when
        unknown.

        After a decision that started or preempted something the answer rests on the walk
        leaving a fixed point (with backfill; docs/engine.md, *Skipped rounds*): every job
        still queued failed at its turn, and what it could have used then (the free GPUs plus
        those of running jobs of lower priority) only shrank along the rest of the walk, so a
        walk on the state the decision left, with the same keys, fails for every queued job.
        """
        if self._plans:
            return view.now
        if self._acted:
            if not self.backfill:  # (a cluster blocked early may unblock: not proved, so not skipped)
                return view.now
            if self._quiet_after[0] is view:  # the engine asks again about the same state
                soonest = self._quiet_after[1]
            else:
                # the bound of the running jobs before the decision (a preempted one's too: a lower
                # bound, so at worst a round too many runs) and of the jobs it started
                soonest = self._quiet[1] if self._quiet[0] == view.now else min(
                    (self._level_and_next(job, view)[1] for job in view.running), default=math.inf)
                running_key = self._running_key  # (kept per run: the same bound _level_and_next gives)
                for job in self._started_jobs:
                    soonest = min(soonest, running_key(job, view)[1])
                for job in view.queued_after(self._last_seq):  # preempted by it and not restarted
                    soonest = min(soonest, self._promotion_bound(job, view))
                self._quiet_after = (view, soonest)
        elif self._quiet[0] == view.now:  # the decision just made saw the same running jobs
            soonest = self._quiet[1]
        else:
            soonest = min((self._level_and_next(job, view)[1] for job in view.running), default=math.inf)
        if self._promote_at:
            soonest = min(soonest, self._promote_at[0][0])
        return soonest

    def _level_and_next(self, job: JobView, view: SchedulerView) -> tuple[int, float]:
        """A running job's level now, and a time at or before its next threshold crossing (inf: none)."""
        base = self._service_at_promotion.get(job.job_id, 0.0)
        level = bisect_right(self.thresholds, self.attained(job, view) - base)
        if level == len(self.thresholds):
            return level, math.inf
        return level, _lower_bound(job.run_start + (self.thresholds[level] + base - job.attained_service) / job.gpus)


class LasEveryRound(LasScheduler):
    """The reference ``las``: every key and the whole queue at every decision, and a decision
    every ``interval_s`` (the engine runs every round). Tests compare :class:`LasScheduler` to it."""

    quiet_until = None  # type: ignore[assignment]

    def decide(self, view: SchedulerView) -> Decision:
        return self._decide_reference(view)


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

for _name, _build in PREEMPTIVE.items():
    register(_name, no_reservations="is preemptive and walks its own way")(common_builder(_build))
register_variants(PREEMPTIVE_VARIANT)
