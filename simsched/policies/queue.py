"""The classic pipeline: allocation -> ordering -> placement (SPEC §3-§4).

:class:`QueueScheduler` walks the queue in key order and starts every job
that fits now; with ``backfill = False`` the walk stops, per cluster, at the
first job that does not fit (strict head-of-line).

How the walk stays cheap on a queue of thousands of jobs: queued jobs with one
*signature* (cluster, GPU options, workers) fit or fail together, so the queue
is kept as one bucket per signature, each in key order, and the walk merges
the buckets' heads. A bucket whose head does not fit leaves the merge with all
its jobs, so a decision costs about (signatures + starts) x log(signatures),
not the queue length. A static ordering keeps each bucket sorted between
decisions; a time-dependent ordering with a vectorised key (hrrn, gp) keeps
its bucket's fields in numpy columns and finds each head with one key
evaluation per bucket and decision. With an MCT allocation the cluster of a
job changes between decisions, so that case walks the whole ordered queue.
The result is the same walk in the same order either way.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left

import numpy as np

from simsched.core.contract import EMPTY_DECISION, Decision, JobView, SchedulerView, Start
from simsched.policies.aging import AgedJobs
from simsched.policies.allocation import Allocation
from simsched.policies.easy import ReservingWalk
from simsched.policies.ordering import ORDERINGS, Ordering
from simsched.policies.placement import Placement
from simsched.policies.registry import Request, register
from simsched.policies.reservations import reserving_walk
from simsched.policies.walk_memory import WalkMemory


def place_job(job: JobView, cluster: int | None, groups: dict, placement: Placement, free: list[int],
              failed: set[tuple] | None = None, skip: set[int] | frozenset = frozenset(),
              admission=None) -> tuple[int, ...] | None:
    """Place ``job``'s workers in ``cluster`` on the fastest GPU type that fits now.

    ``cluster`` None places fleet-wide (any cluster not in ``skip``, fastest type first):
    a job without a home cluster under "home" allocation. ``failed`` remembers
    (cluster, type, per_worker, workers) shapes that did not fit: while ``free`` only
    shrinks they cannot fit later either, so they are skipped. ``admission`` (tenants'
    quotas, simsched.policies.quota) passes over the options that would take the job's
    tenant over its quota, and is charged for the one placed.
    """
    for option in job.options:
        if option.cluster != cluster if cluster is not None else option.cluster in skip:
            continue
        if admission is not None and not admission.admits(job, option):
            continue
        shape = (option.cluster, option.gpu_type, option.per_worker, job.workers)
        if failed is not None and shape in failed:
            continue
        nodes = placement(groups[option.cluster, option.gpu_type], option.per_worker, job.workers, free)
        if nodes is not None:
            if admission is not None:
                admission.take(job, option)
            return nodes
        if failed is not None:
            failed.add(shape)
    return None


def place_remembered(memory: WalkMemory, job: JobView, signature: tuple, kind: int, shape: int, groups: dict,
                     placement: Placement, free: list[int], failed: set[tuple], blocked: set[int] | frozenset,
                     admission) -> tuple[int, ...] | None:
    """:func:`place_job` in the job's cluster (``signature[0]``); when it fails, ``memory`` learns why
    (``kind``, ``shape``: its :meth:`~WalkMemory.ids` of ``signature``), from the admission's counts of
    options asked and refused."""
    if admission is None:
        nodes = place_job(job, signature[0], groups, placement, free, failed, blocked)
        if nodes is None:
            memory.failed(job, signature, kind, shape, 0, 0)
        return nodes
    asked, refused = admission.asked, admission.refused
    nodes = place_job(job, signature[0], groups, placement, free, failed, blocked, admission)
    if nodes is None:
        memory.failed(job, signature, kind, shape, admission.asked - asked, admission.refused - refused)
    return nodes


def _over_quota(job: JobView, cluster: int | None, admission) -> bool:
    """Whether ``admission`` (tenants' quotas) lets ``job`` use none of its options in ``cluster``:
    such a job waits for its tenant's share and holds no line (backfill = false)."""
    if admission is None:
        return False
    return not any(admission.admits(job, option) for option in job.options
                   if cluster is None or option.cluster == cluster)


def could_fit(job: JobView, cluster: int | None, groups: dict, free: list[int]) -> bool:
    """Whether some option of ``job`` in ``cluster`` (None: any cluster) has a free slot per
    worker (what every built-in placement needs to succeed), without placing anything."""
    workers = job.workers
    for option in job.options:
        if cluster is not None and option.cluster != cluster:
            continue
        per_worker = option.per_worker
        slots = 0
        for n in groups[option.cluster, option.gpu_type]:
            slots += free[n] // per_worker
            if slots >= workers:
                return True
    return False


class SortedBucket:
    """Queued jobs of one signature in (key, submit, index) order, kept between decisions."""

    __slots__ = ("signature", "cluster", "keys", "jobs", "pos", "kind", "shape", "local", "least")

    def __init__(self, signature: tuple) -> None:
        self.signature = signature
        self.cluster = signature[0]
        self.keys: list[tuple] = []
        self.jobs: list[JobView] = []
        self.pos = 0  # jobs before it were started in this decision

    def __len__(self) -> int:
        return len(self.jobs)

    def add(self, job: JobView, key: tuple) -> None:
        i = bisect_left(self.keys, key)
        self.keys.insert(i, key)
        self.jobs.insert(i, job)

    def begin(self, ordering, now: float) -> bool:
        self.pos = 0
        return True

    def head(self) -> tuple[tuple, JobView] | None:
        if self.pos < len(self.jobs):
            return self.keys[self.pos], self.jobs[self.pos]
        return None

    def take(self) -> None:
        self.pos += 1

    def remove_row(self, i: int) -> None:
        del self.keys[i]
        del self.jobs[i]

    def end(self) -> None:
        if self.pos:
            del self.keys[:self.pos]
            del self.jobs[:self.pos]
            self.pos = 0


class ColumnBucket:
    """Queued jobs of one signature with the fields a vectorised key reads in numpy columns.

    Rows are kept in (submit, index) order, so the first minimum of the keys is
    the job a sort by (key, submit, index) puts first. Each decision evaluates
    the key of every row once; a started row's key becomes +inf for the rest of
    the decision, and the row is removed at its end.
    """

    __slots__ = ("signature", "cluster", "columns", "jobs", "order", "size", "keys", "taken", "_head", "_key",
                 "kind", "shape", "local", "least", "_out")

    def __init__(self, signature: tuple, ordering) -> None:
        self._key = getattr(ordering, "key", None)  # fills a "key" column (a key fixed while a job waits)
        self.signature = signature
        self.cluster = signature[0]
        self.columns = {name: np.empty(16) for name in ordering.columns}
        self._out = np.empty(16)  # the keys of one decision (``vector_min`` writes them here)
        self.jobs: list[JobView] = []
        self.order: list[tuple[float, int]] = []  # (submit, index) per row, ascending
        self.keys: np.ndarray | None = None
        self.taken: list[int] = []
        self._head = -1

    def __len__(self) -> int:
        return len(self.jobs)

    def add(self, job: JobView, view: SchedulerView) -> None:
        n = len(self.jobs)
        at = (job.submit, job.index)
        i = n if not n or self.order[-1] < at else bisect_left(self.order, at)
        for name, column in self.columns.items():
            if n == len(column):
                column = self.columns[name] = np.concatenate((column, np.empty(n)))
            if i < n:
                column[i + 1:n + 1] = column[i:n]
            column[i] = self._key(job, view) if name == "key" else getattr(job, name)
        if n == len(self._out):
            self._out = np.empty(2 * n)
        self.order.insert(i, at)
        self.jobs.insert(i, job)

    def remove_row(self, i: int) -> None:
        n = len(self.jobs)
        if i < n - 1:
            for column in self.columns.values():
                column[i:n - 1] = column[i + 1:n]
        del self.order[i]
        del self.jobs[i]

    def begin(self, ordering, now: float) -> bool:
        """Evaluate every row's key now; False when a key is NaN (no total order to merge)."""
        n = len(self.jobs)
        self.taken = []
        vector_min = getattr(ordering, "vector_min", None)
        if vector_min is not None:
            i = vector_min(self.columns, n, now, self._out)
            keys = self._out[:n]
        else:
            keys = np.array(ordering.vector({k: c[:n] for k, c in self.columns.items()}, now), dtype=np.float64)
            i = int(keys.argmin())  # a NaN is the minimum of argmin
            if keys[i] != keys[i]:
                i = -1
        if i < 0:
            self.keys = None
            return False
        self.keys = keys
        self._head = i
        return True

    def head(self) -> tuple[tuple, JobView] | None:
        if self._head < 0:
            if len(self.taken) == len(self.jobs):
                return None
            keys = self.keys
            i = int(keys.argmin())
            if keys[i] == np.inf:  # maybe a started row: the first +inf row not started
                taken = set(self.taken)
                i = next(int(t) for t in np.flatnonzero(keys == np.inf) if t not in taken)
            self._head = i
        job = self.jobs[self._head]
        return (float(self.keys[self._head]), job.submit, job.index), job

    def take(self) -> None:
        self.keys[self._head] = np.inf
        self.taken.append(self._head)
        self._head = -1

    def end(self) -> None:
        taken = self.taken
        if len(taken) == 1:
            self.remove_row(taken[0])
        elif taken:  # one compaction of the columns instead of a shift per started row
            n = len(self.jobs)
            keep = np.ones(n, dtype=bool)
            keep[taken] = False
            for column in self.columns.values():
                column[:n - len(taken)] = column[:n][keep]
            for i in sorted(taken, reverse=True):
                del self.order[i]
                del self.jobs[i]
        self.taken = []
        self.keys = None


class QueueScheduler:
    """Order the queue, then place each job on the fastest GPU type that fits in its cluster."""

    #: False: ``easy`` and ``conservative`` take the reference walk (reservations.reserving_walk), for tests
    fast_reservations = True

    def __init__(self, ordering: Ordering, placement: Placement, allocation: Allocation,
                 backfill: bool = True, reserve: str = "none", reserve_depth: int = 1,
                 max_wait_s: float | None = None) -> None:
        self.ordering = ordering
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        # "easy" / "conservative": backfilling with reservations (simsched.policies.reservations)
        self.reserve = reserve
        self.reserve_depth = math.inf if reserve == "conservative" else reserve_depth
        # the starvation guard (SPEC §3): a job queued longer than this goes first (None: off)
        self.max_wait_s = max_wait_s
        self.supports_max_wait = True
        # the guard's order kept between decisions (simsched.policies.aging): same jobs, same order
        self._aged = AgedJobs(max_wait_s) if max_wait_s is not None else None
        # the walk with reservations without a profile array (simsched.policies.easy): same decisions
        self._reserving = (ReservingWalk(self.reserve_depth) if reserve != "none" and self.fast_reservations
                           else None)
        self._plans = type(allocation).prepare is not Allocation.prepare  # e.g. MCT
        self._vector = getattr(ordering, "vector", None) if not ordering.static else None
        # the kinds of job that failed to start, while they still fail (simsched.policies.walk_memory):
        # a blocked queue costs almost nothing to re-check
        self._memory = WalkMemory()
        # the free GPUs the last walk with quotas left, while borrow_pass may continue it
        self._after_walk: list[int] | None = None
        # strict order (backfill off, static keys, no quotas, no guard): (free GPUs, key) after a walk that
        # started nothing and stopped with every cluster's line blocked at the job of that key. While
        # the free GPUs are the same and every job queued since sorts after that key, a walk would fail
        # the same jobs in the same order and start nothing: it is skipped (_decide_buckets)
        self._blocked: tuple[tuple[int, ...], tuple] | None = None
        self._blocked_at: tuple | None = None  # set by _merge: the key of the job that blocked the last line
        self._last_seq = -1
        # Bucketed queue (static allocation): signature -> bucket, and each job's signature.
        self._bucketed = not self._plans and (ordering.static or self._vector is not None) and reserve == "none"
        # tenants' quotas (simsched.policies.quota): the walk checks each placement against
        # view.admission; jobs of different tenants then no longer fit or fail together
        self.supports_admission = reserve == "none"
        self.by_tenant = False
        self._buckets: dict[tuple, SortedBucket | ColumnBucket] = {}
        self._signature_of: dict[str, tuple] = {}
        # Whole sorted queue (MCT allocation with a static ordering): keys and jobs.
        self._keys: list[tuple[float, float, int]] = []
        self._jobs: list[JobView] = []

    def _sort_key(self, job: JobView, view: SchedulerView) -> tuple[float, float, int]:
        return (self.ordering.key(job, view), job.submit, job.index)

    def _signature(self, job: JobView, view: SchedulerView) -> tuple:
        # the engine shares one options tuple between jobs of one shape: id() is exact and cheap
        if self.by_tenant:
            return (self.allocation.cluster_for(job, view), id(job.options), job.workers, job.tenant)
        return (self.allocation.cluster_for(job, view), id(job.options), job.workers)

    # -- the bucketed queue ------------------------------------------------------
    def _bucket_add(self, job: JobView, view: SchedulerView) -> None:
        blocked = self._blocked
        if blocked is not None and self._sort_key(job, view) <= blocked[1]:
            self._blocked = None  # it sorts before the job that blocked the line: walk again
        signature = self._signature_of[job.job_id] = self._signature(job, view)
        bucket = self._buckets.get(signature)
        if bucket is None:
            bucket = self._buckets[signature] = (
                SortedBucket(signature) if self._vector is None
                else ColumnBucket(signature, self.ordering))
            # facts of the kind: all its options in its cluster? the fewest milli-GPUs per worker there
            shares = [o.per_worker for o in job.options if bucket.cluster is None or o.cluster == bucket.cluster]
            bucket.kind, bucket.shape = self._memory.ids(signature)
            bucket.local = len(shares) == len(job.options)
            bucket.least = min(shares, default=math.inf)
        bucket.add(job, self._sort_key(job, view) if self._vector is None else view)

    def forget(self, job_ids) -> None:
        """Queued jobs that someone else started (the quota wrapper's reclaim step) leave the buckets,
        so that the next walk finds them in step with the queue (else it rebuilds them all)."""
        self._blocked = None
        if self._aged is not None:
            self._aged.forget(job_ids)
        if not self._bucketed:
            return
        for job_id in job_ids:
            signature = self._signature_of.pop(job_id, None)
            if signature is None:
                continue
            bucket = self._buckets[signature]
            bucket.remove_row(next(i for i, job in enumerate(bucket.jobs) if job.job_id == job_id))
            if not bucket.jobs:
                del self._buckets[signature]

    def _sync(self, view: SchedulerView) -> None:
        """Take in the jobs that entered the queue since the last decision."""
        newcomers = view.queued_after(self._last_seq)
        if newcomers:
            self._last_seq = newcomers[0].queue_seq
        if len(self._signature_of) + len(newcomers) != view.queue_length:
            # the queue changed behind our back: rebuild
            self._blocked = None
            self._buckets, self._signature_of = {}, {}
            newcomers = self.ordering.sort(view.queue, view)
        elif self._vector is not None and len(newcomers) > 1:
            # first allocation calls in key order, as a sorted walk makes them
            newcomers = self.ordering.sort(newcomers, view)
        for job in newcomers:
            self._bucket_add(job, view)

    def _place(self, job: JobView, signature: tuple, kind: int, shape: int, groups: dict, free: list[int],
               failed: set[tuple], blocked: set[int], admission) -> tuple[int, ...] | None:
        return place_remembered(self._memory, job, signature, kind, shape, groups, self.placement, free, failed,
                                blocked, admission)

    def _decide_buckets(self, view: SchedulerView, admission, aged: list[JobView] = ()) -> Decision:
        self._sync(view)
        blocked_line = self._blocked
        self._blocked = None
        strict = not self.backfill and admission is None and not aged and self.ordering.static
        if strict and blocked_line is not None and tuple(view.free) == blocked_line[0]:
            self._blocked = blocked_line  # the same jobs fail in the same order (see __init__)
            self._after_walk = None
            return EMPTY_DECISION
        self._blocked_at = None
        free = list(view.free)
        groups = view.fleet.groups
        buckets = self._buckets
        backfill = self.backfill
        memory = self._memory
        # with backfill off a failure also depends on which clusters are blocked, which can differ
        # between decisions with the same free GPUs: reuse failures only when backfilling
        memory.begin(free, admission, backfill)
        blocked: set[int] = set()
        first: list[Start] = []
        if aged:  # the guard: the jobs queued too long are walked first, then the buckets' merge
            first = self._walk_aged(aged, view, free, blocked, admission)
            if first:
                memory.most = None
        full, refused = memory.full, memory.quota_failures(admission)
        vector = self._vector is not None
        heap: list = []
        most = memory.most  # the most free milli-GPUs on one node (computed when first needed)
        for order, bucket in enumerate(buckets.values()):
            if backfill:
                if bucket.shape in full or bucket.kind in refused:
                    continue
                if admission is None:  # (with quotas a refusal is the longer-lived memory: ask first)
                    if most is None:
                        most = memory.most = max(free, default=0)
                    if bucket.least > most:
                        full.add(bucket.shape)  # no node has room for one worker: no placement fits
                        continue
                if vector and not could_fit(bucket.jobs[0], bucket.cluster, groups, free):
                    full.add(bucket.shape)  # cannot fit now, so neither later in this walk
                    continue
            if not bucket.begin(self.ordering, view.now):
                self._after_walk = None
                # (a NaN key: the plain sorted walk, without the guard's pre-pass, whose starts are dropped)
                return self._decide_sorted_fallback(view, admission)
            key, job = bucket.head()
            heap.append((key, order, bucket, job))
        skip = {start.job_id for start in first}
        starts = first + self._merge(heap, view, free, admission, blocked, skip)
        if skip:  # the guard's starts the merge did not pass over (their bucket left it) leave the buckets
            self.forget([job_id for job_id in skip if job_id in self._signature_of])
        if starts:
            memory.most = None  # (the starts took free GPUs)
        elif strict and self._blocked_at is not None:
            self._blocked = (tuple(free), self._blocked_at)
        memory.end(free, admission)
        # quota = "borrow" may go on over the same buckets (borrow_pass): only after a backfilling walk
        self._after_walk = free if admission is not None and backfill else None
        return Decision(tuple(starts)) if starts else EMPTY_DECISION

    def _walk_aged(self, aged: list[JobView], view: SchedulerView, free: list[int], blocked: set[int],
                   admission) -> list[Start]:
        """The guard's jobs in their order, each started when it fits ``free`` (and its quota). The
        first that does not fit blocks its cluster's line (``blocked``) in every mode without
        reservations: with greedy backfill too, the guard's coarsest reservation (all the cluster's
        GPUs, until it starts), as nothing else would keep later jobs off the GPUs it waits for."""
        groups = view.fleet.groups
        memory = self._memory
        cluster_count = len(view.fleet.cluster_names)
        starts: list[Start] = []
        for job in aged:
            signature = self._signature_of[job.job_id]
            cluster = signature[0]
            if cluster in blocked:
                continue
            kind, shape = memory.ids(signature)
            nodes = self._place(job, signature, kind, shape, groups, free, memory.options, blocked, admission)
            if nodes is None:
                if not _over_quota(job, cluster, admission):
                    blocked.update(range(cluster_count) if cluster is None else (cluster,))
                    # every line blocked: the rest start nothing. (A fleet-wide job among them would be noted
                    # as failed, memory.full; the merge next does the same with its bucket's head.)
                    if len(blocked) == cluster_count:
                        break
                continue
            starts.append(Start(job.job_id, nodes))
        return starts

    def _merge(self, heap: list, view: SchedulerView, free: list[int], admission,
               blocked: set[int] | None = None, skip: set[str] = frozenset()) -> list[Start]:
        """Merge the buckets' heads in ``heap`` (key, order, bucket, job) in key order, starting every
        job that fits ``free`` (and ``admission``'s quotas); the buckets forget the jobs started."""
        buckets = self._buckets
        groups = view.fleet.groups
        backfill = self.backfill
        memory = self._memory
        full, refused = memory.full, memory.quota_failures(admission)
        failed = memory.options
        heapq.heapify(heap)
        blocked = set() if blocked is None else blocked
        cluster_count = len(view.fleet.cluster_names)
        starts: list[Start] = []
        touched: dict[int, SortedBucket | ColumnBucket] = {}
        while heap:
            key, order, bucket, job = heapq.heappop(heap)
            if skip and job.job_id in skip:  # started by the guard's pre-pass: taken out of its bucket
                touched[order] = bucket
                bucket.take()
                del self._signature_of[job.job_id]
                head = bucket.head()
                if head is not None:
                    heapq.heappush(heap, (head[0], order, bucket, head[1]))
                continue
            cluster = bucket.cluster
            if cluster in blocked:
                continue
            kind, shape = bucket.kind, bucket.shape
            known = shape in full or kind in refused  # e.g. another tenant's bucket of a full shape
            nodes = None if known else self._place(job, bucket.signature, kind, shape, groups, free, failed,
                                                   blocked, admission)
            if nodes is None:
                if not backfill and not _over_quota(job, cluster, admission):
                    # a fleet-wide job (cluster None) heads every cluster's line
                    blocked.update(range(cluster_count) if cluster is None else (cluster,))
                    if len(blocked) == cluster_count:
                        self._blocked_at = key
                        break
                continue
            starts.append(Start(job.job_id, nodes))
            touched[order] = bucket
            bucket.take()
            head = bucket.head()
            if head is not None:
                heapq.heappush(heap, (head[0], order, bucket, head[1]))
        for bucket in touched.values():
            bucket.end()
            if not bucket.jobs:
                del buckets[bucket.signature]
        for start in starts:
            del self._signature_of[start.job_id]
        return starts

    def waiting_kinds(self) -> list[JobView] | None:
        """Right after a backfilling walk with quotas (``view.admission``): one waiting job of each
        kind (signature: cluster, options, workers, tenant) that its tenant's quota may still admit
        somewhere, all that a reclaim depends on; None otherwise. Left out: the kinds whose every
        option lies in their cluster and was refused for the quota in this walk or, the refusal
        still holding, an earlier one (rooms only shrink during a walk)."""
        if self._after_walk is None:
            return None
        quota = self._memory.quota
        out = []
        for bucket in self._buckets.values():
            # every option in its cluster refused, and it has no other
            if quota.get(bucket.kind) is False and bucket.local:
                continue
            out.append(bucket.jobs[0])
        return out

    def borrow_tries(self, view: SchedulerView) -> bool:
        """Whether :meth:`borrow_pass`, next, would try any kind of job with the GPUs the walk left (a
        kind refused for its quota, of a shape not full, whose smallest worker fits the freest node).
        Holds for owners (``reclaim = "wait"``) only take GPUs away, and each of these checks fails on
        fewer GPUs when it fails on more: when this is False the pass starts nothing, with holds or
        without, so the wrapper need not compute them. True when the pass does not apply."""
        free = self._after_walk
        if free is None:
            return True
        memory = self._memory
        quota, full = memory.quota, memory.full
        if not quota:
            return False
        most = max(free, default=0)
        if not most:
            return False
        vector = self._vector is not None
        groups = view.fleet.groups
        for bucket in self._buckets.values():
            if (bucket.kind in quota and bucket.shape not in full and bucket.least <= most
                    and (not vector or could_fit(bucket.jobs[0], bucket.cluster, groups, free))):
                return True
        return False

    def borrow_pass(self, view: SchedulerView, held: list[int] | None = None) -> tuple[Start, ...] | None:
        """Step 3 of ``quota = "borrow"`` (simsched.policies.quota), right after the walk within quotas
        when nothing changed since (no reclaim): the walk again over every waiting job, without
        quotas, with the GPUs the walk left. Exactly the same starts as a new walk over a view of the
        waiting jobs, cheaper: every kind of job still waiting failed in the first walk, either for its
        shape (it fits no free GPUs, and they only shrank) or for its tenant's quota, so only the kinds
        refused for quotas are merged. Its starts; None when the first walk was not one this applies
        to. ``held``: milli-GPUs per node held for waiting owners (``reclaim = "wait"``), which this
        pass may not take: they leave the free GPUs in place (the walk's failures hold on fewer)."""
        free = self._after_walk
        self._after_walk = None
        if free is None:
            return None
        memory = self._memory
        if held is not None:
            for n, amount in enumerate(held):
                if amount:
                    free[n] = max(0, free[n] - amount)
            memory.most = None
        memory.begin(free, None, True)  # the free GPUs the last walk ended with: every failure holds
        full, quota = memory.full, memory.quota
        groups = view.fleet.groups
        vector = self._vector is not None
        heap: list = []
        most = memory.most  # (as in _decide_buckets: computed when first needed)
        if quota:
            for order, bucket in enumerate(self._buckets.values()):
                if bucket.kind not in quota or bucket.shape in full:
                    continue
                if most is None:
                    most = memory.most = max(free, default=0)
                if not most:
                    break  # no GPU free anywhere
                if bucket.least > most:
                    full.add(bucket.shape)  # (as in _decide_buckets)
                    continue
                if vector and not could_fit(bucket.jobs[0], bucket.cluster, groups, free):
                    full.add(bucket.shape)
                    continue
                if not bucket.begin(self.ordering, view.now):  # (keys were numbers a moment ago)
                    return None
                key, job = bucket.head()
                heap.append((key, order, bucket, job))
        starts = tuple(self._merge(heap, view, free, None)) if heap else ()
        if starts:
            memory.most = None
        memory.end(free, None)
        return starts

    def _decide_sorted_fallback(self, view: SchedulerView, admission) -> Decision:
        """A NaN key has no place in a merge: walk the sorted queue, then forget the starts."""
        for bucket in self._buckets.values():
            bucket.taken, bucket.keys = [], None
        ordered = self.ordering.sort(view.queue, view)
        decision = self._walk(view, ordered, self._signature_of, dict.fromkeys(self._buckets), admission)
        for start in decision.starts:
            signature = self._signature_of.pop(start.job_id)
            bucket = self._buckets[signature]
            bucket.remove_row(next(i for i, job in enumerate(bucket.jobs) if job.job_id == start.job_id))
            if not bucket.jobs:
                del self._buckets[signature]
        return decision

    # -- the whole ordered queue (MCT) ---------------------------------------------
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
        if newcomers:
            self._last_seq = newcomers[0].queue_seq
        if len(self._keys) != view.queue_length:  # the queue changed behind our back: rebuild
            self._jobs = self.ordering.sort(view.queue, view)
            self._keys = [self._sort_key(job, view) for job in self._jobs]
        return self._jobs

    def _walk(self, view: SchedulerView, ordered: list[JobView], signature_of: dict[str, tuple],
              counts: dict, admission, aged: set[str] = frozenset()) -> Decision:
        """Walk ``ordered``; a job of ``aged`` (the guard's, first in ``ordered``) that does not fit
        blocks its cluster's line even when backfilling (see :meth:`_walk_aged`)."""
        free = list(view.free)
        groups = view.fleet.groups
        cluster_count = len(view.fleet.cluster_names)
        blocked: set[int] = set()
        memory = self._memory
        # (see _decide_buckets) failures are reused only when backfilling
        memory.begin(free, admission, self.backfill)
        failed, full, refused = memory.options, memory.full, memory.quota_failures(admission)
        ids = {signature: memory.ids(signature) for signature in counts}
        # the kinds of job still queued that fail now: once all do, nothing else can start
        dead = {s for s, (kind, shape) in ids.items() if shape in full or kind in refused}
        starts: list[Start] = []
        for job in ordered:
            if len(dead) == len(counts):
                break
            signature = signature_of[job.job_id]
            cluster = signature[0]
            if cluster in blocked:
                continue
            kind, shape = ids[signature]
            known = signature in dead or shape in full
            nodes = None if known else self._place(job, signature, kind, shape, groups, free, failed, blocked,
                                                   admission)
            if nodes is None:
                dead.add(signature)
                if (not self.backfill or job.job_id in aged) and not _over_quota(job, cluster, admission):
                    # a fleet-wide job (cluster None) heads every cluster's line
                    blocked.update(range(cluster_count) if cluster is None else (cluster,))
                    if len(blocked) == cluster_count:
                        break
                continue
            starts.append(Start(job.job_id, nodes))
        if starts:
            memory.most = None  # (the starts took free GPUs)
        memory.end(free, admission)
        return Decision(tuple(starts))

    def decide(self, view: SchedulerView) -> Decision:
        return self.decide_admitted(view, getattr(view, "admission", None))

    def aged(self, view: SchedulerView) -> list[JobView]:
        """The starvation guard (SPEC §3, ``max_wait_s``): the queued jobs that have waited longer than
        ``max_wait_s``, longest wait first (ties: submit, input order); they go to the front of the
        ordering, so the first of them that does not fit gets the reservation. Empty when off."""
        if self._aged is None:
            return []
        return self._aged.aged(view)

    def decide_admitted(self, view: SchedulerView, admission) -> Decision:
        """:meth:`decide` with tenants' quotas checked by ``admission`` (an
        :class:`~simsched.policies.quota.Admission`, or None), the same as deciding over a view whose
        ``admission`` it is, without building one (the quota wrapper's call for every decision)."""
        aged = self.aged(view)
        decision = self._decide(view, admission, aged)
        if self._aged is not None and decision.starts:  # they leave the queue
            self._aged.forget([start.job_id for start in decision.starts])
        return decision

    def _decide(self, view: SchedulerView, admission, aged: list[JobView]) -> Decision:
        if self._bucketed:
            return self._decide_buckets(view, admission, aged)
        ordered = self.ordered_queue(view)
        if aged:  # the guard: the jobs queued too long first (a new list: self._jobs stays sorted)
            first = {job.job_id for job in aged}
            ordered = [*aged, *(job for job in ordered if job.job_id not in first)]
        if self._plans:
            self.allocation.prepare(view, ordered)
        if self._reserving is not None:
            # resumable: the jobs' clusters and keys stay (the walk checks that the order of the jobs it
            # saw did, the guard's front included)
            walk = self._reserving
            starts, _ = walk(ordered, self.allocation.cluster_for, view, self.placement,
                             self.ordering.static and not self._plans)
            if not starts:
                return EMPTY_DECISION
            if self.ordering.static:  # forget the started jobs (the walk's, in hand: no pass over the queue)
                keys, jobs, sort_key = self._keys, self._jobs, self._sort_key
                for job in walk.last_started:
                    pos = bisect_left(keys, sort_key(job, view))
                    del keys[pos]
                    del jobs[pos]
            return Decision(tuple([Start(job_id, nodes) for job_id, nodes in starts]))
        elif self.reserve != "none":
            clusters = [self.allocation.cluster_for(job, view) for job in ordered]
            starts, _ = reserving_walk(ordered, clusters, view, self.placement, self.reserve_depth)
            decision = Decision(tuple(Start(job_id, nodes) for job_id, nodes in starts))
        else:
            signature_of = {job.job_id: self._signature(job, view) for job in ordered}
            decision = self._walk(view, ordered, signature_of, dict.fromkeys(signature_of.values()), admission,
                                  {job.job_id for job in aged})
        if self.ordering.static and decision.starts:  # forget the started jobs
            started = {start.job_id for start in decision.starts}
            for job in [job for job in ordered if job.job_id in started]:
                pos = bisect_left(self._keys, self._sort_key(job, view))
                del self._keys[pos]
                del self._jobs[pos]
        return decision


# -- the queue-order family (simsched.policies.registry) ------------------------------------------
#: the EVO-GP paper's named baselines: policy -> (ordering, placement); "lyra" is both an ordering
#: and the baseline lyra + best_fit: its ordering entry serves both
BASELINES: dict[str, tuple[str, str]] = {
    "spark": ("fifo", "round_robin"),
    "liquid": ("fifo", "best_fit"),
    "tiresias": ("srsf", "best_fit"),
}


def build_queue(request: Request, ordering: Ordering | None = None) -> QueueScheduler:
    """The classic pipeline for an ordering or baseline name; ``mct-<name>`` allocates by MCT.
    ``ordering`` replaces the name's ordering (the ``gp`` ordering of simsched.evo)."""
    spec = request.spec
    policy, allocation = request.policy, spec.allocation
    if policy.startswith("mct-"):
        policy, allocation = policy.removeprefix("mct-"), "mct"
    ordering_name, placement = policy, spec.placement
    if policy in BASELINES:
        ordering_name, placement = BASELINES[policy]
    elif policy == "lyra":
        placement = "best_fit"
    if ordering is None:
        ordering = ORDERINGS[ordering_name]
    chosen = request.allocation(allocation)
    return QueueScheduler(ordering, request.placement(placement), chosen, spec.backfill,
                          reserve=spec.reserve, reserve_depth=spec.reserve_depth,
                          max_wait_s=getattr(spec, "max_wait_s", None))


register(*ORDERINGS, *BASELINES)(build_queue)
register(*(f"mct-{name}" for name in (*ORDERINGS, *BASELINES)), allocation="mct")(build_queue)
