"""``drf``: dominant-resource fair share of GPUs between tenants (Ghodsi et al., NSDI 2011).

DRF gives each user the resource vector it asks for and, by progressive
filling, always serves next the user whose *dominant share* (its largest share
of any one resource) is lowest. Here the users are tenants and the resources
are **the clusters' GPUs, one resource per cluster**:

    share(t) = max over clusters c of  held(t, c) / entitled(t, c)

held = the GPUs tenant t's running jobs hold in c (after memory scaling, as
quotas count them); entitled = its quota in c, or its equal split of c when
c has no quotas (simsched.policies.shares). With quotas this is weighted DRF
(weights = quotas); without, plain DRF; on one cluster it is weighted
max-min fairness of GPU counts, which is what DRF reduces to with a single
resource.

Why GPU types are *not* separate resources: DRF assumes each task needs a
fixed vector (so many CPUs *and* so much memory). A simsched job needs GPUs of
*one* type, whichever of its options it lands on: types are substitutes, not
complements, and a per-type dominant share would call a tenant that holds all
four K80s of a fleet "saturated" while it holds 4 of 400 GPUs. A job placed on
a slower type is charged the GPUs it holds there (more after memory
scaling). Heterogeneity-aware fairness, where a K80 is worth less than an
A100, is ``maxmin-hetero``'s job. Clusters stay separate resources because a
job runs in one cluster (its home under ``allocation = "home"``).

One decision (progressive filling, non-preemptive): take the tenant with the
lowest dominant share that has a queued job; start its first job (submit
order) that fits now on the fastest GPU type its cluster allows; charge the
GPUs to the tenant and repeat. A tenant none of whose queued jobs fits leaves
the decision. Ties between tenants: the earlier head job (submit, input
order). With ``backfill = false`` a tenant whose first queued job does not fit
starts nothing else in that decision (head-of-line per tenant, not per
cluster). Deviation from DRF: nothing is preempted to restore fair shares; they
are restored as jobs end (use ``quota = "borrow"`` with ``reclaim = "preempt"``
to take GPUs back for an owner).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort

from simsched.core.contract import EMPTY_DECISION, Decision, JobView, SchedulerView, Start
from simsched.policies.allocation import Allocation
from simsched.policies.placement import Placement
from simsched.policies.queue import _over_quota, place_job, place_remembered
from simsched.policies.registry import common_builder, register
from simsched.policies.shares import (
    Entitled,
    FairShareBase,
    cluster_gpus,
    entitlements,
    held_gpus,
    home_on_first_sight,
    listed_tenants,
    plan_clusters,
    tenant_order,
)
from simsched.policies.walk_memory import WalkMemory


def dominant_share(held: list[float], entitled: list[float]) -> float:
    """max over clusters of held / entitled (a cluster it holds GPUs in without entitlement: inf)."""
    share = 0.0
    for h, e in zip(held, entitled):
        if h > 0:
            share = max(share, h / e if e > 0 else math.inf)
    return share


def held_by_tenant(running, clusters: int) -> dict[str | None, list[float]]:
    """GPUs each tenant's running jobs hold, per cluster."""
    held: dict[str | None, list[float]] = {}
    for job in running:
        row = held.get(job.tenant)
        if row is None:
            row = held[job.tenant] = [0.0] * clusters
        row[job.running_cluster] += held_gpus(job)
    return held


#: up to this many tenants with queued jobs and no GPUs a decision sorts them all; more, it reads them per
#: shape of kind that may fit, as far as it gets (the lists cost more to read than a short sort)
_FEW_IDLE = 32


class DrfScheduler(FairShareBase):
    """Progressive filling by dominant share (see the module docstring).

    How a decision stays cheap on a long queue (under ``quota = "strict"`` tenants
    wait for their share while GPUs idle, and the queue grows to hundreds): the
    queued jobs are kept between decisions by *kind* (cluster, options, workers,
    tenant), each kind in submit order. Jobs of a kind fit or fail together
    within a decision (free GPUs and quota rooms only shrink), so a tenant's
    first job that fits is the earliest head of its kinds that have not failed,
    and a decision costs about the kinds and the starts, not the queue. When
    backfilling, the kinds that failed are remembered across decisions while
    they still fail, as the queue walk remembers them
    (simsched.policies.walk_memory). The starts are those of the plain walk
    over each tenant's jobs in submit order (``remember_failures = False``, the
    reference in the tests). With a planning allocation (MCT) a job's cluster
    changes between decisions, so that case walks each tenant's sorted jobs.
    """

    name = "drf"

    def __init__(self, placement, allocation, backfill: bool = True) -> None:
        super().__init__(placement, allocation, backfill)
        # the queue by kind, kept between decisions (a static allocation only: see the class docstring)
        self._static = type(allocation).prepare is Allocation.prepare
        self._kinds: dict[tuple, _Kind] = {}
        self._kind_of: dict[str, _Kind] = {}  # queued job id -> its kind
        self._tenant_kinds: dict[str | None, dict[tuple, _Kind]] = {}
        # each tenant with queued jobs by its first one: (submit, index, tenant_order, tenant), and per
        # shape of kind (the walk memory's id) the entries of the tenants with a kind of it, sorted (a
        # tenant that holds no GPUs has dominant share 0: this is the heap's order for them; a decision
        # reads them in order, as far as it gets, and only those with a kind of a shape that may fit)
        self._first_of: dict[str | None, tuple] = {}
        self._shapes: dict[int, list[tuple]] = {}
        self._indexed = False  # whether _shapes is kept (only while many tenants hold no GPUs)
        self._present: dict[int, int] = {}  # the queued kinds' shapes -> how many kinds
        self._tenant_shapes: dict[str | None, dict[int, int]] = {}  # tenant -> its kinds' shapes -> how many
        self._last_seq = -1
        # the kinds that failed, while they still fail (simsched.policies.walk_memory, as the queue walk
        # keeps it)
        self._memory = WalkMemory()
        # under quota = "borrow" the wrapper asks twice per decision, over the same running jobs and
        # quotas: the GPUs each tenant held (by the running tuple) are kept from the first time
        self._held_from: tuple | None = None
        self._held: dict[str | None, list[float]] = {}
        self._capacity: tuple | None = None  # (fleet, GPUs per cluster)
        self._entitled: Entitled | None = None  # the last decision's (kept while its inputs stand)
        self._listed: tuple | None = None  # (quotas, listed_tenants of them)

    def shares(self, view: SchedulerView) -> dict[str | None, float]:
        """Every active tenant's dominant share now (for tests and users)."""
        held, entitled = self._held_and_entitled(view)
        return {t: dominant_share(held[t], entitled[t]) for t in entitled}

    def _held_and_entitled(self, view: SchedulerView):
        clusters = len(view.fleet.cluster_names)
        held = held_by_tenant(view.running, clusters)
        active = set(held) | {job.tenant for job in view.queue}
        for tenant in active:
            held.setdefault(tenant, [0.0] * clusters)
        return held, entitlements(view, self.quotas(view), active)

    @property
    def idle_without_fit(self) -> bool:
        """For the quota wrapper (simsched.policies.quota): a decision in which no queued job has an
        option whose GPUs per worker are free on a node of its group starts and preempts nothing, and
        leaving it out changes no later decision. What it would have left behind is exact either way:
        the queue by kind is made anew when its length says so, and the walk's memory of failures
        forgets full shapes when the free GPUs differ from those the last walk ended with (those of
        the walk before, then: a shape full there is full on the same GPUs) and keeps the quota
        marks of walks with an admission only. With an allocation that gives jobs their home
        cluster (:func:`~simsched.policies.shares.home_on_first_sight`)."""
        return home_on_first_sight(self.allocation)

    def decide(self, view: SchedulerView) -> Decision:
        if self._static and self.remember_failures:
            return self._decide_kinds(view)
        return self._decide_walk(view)

    # -- the queue by kind -----------------------------------------------------------
    def _sync(self, view: SchedulerView) -> None:
        """Take in the jobs that entered the queue since the last decision (rebuild when the queue
        changed otherwise: a job another step of the quota wrapper started)."""
        newcomers = view.queued_after(self._last_seq)
        if newcomers:
            self._last_seq = max(self._last_seq, newcomers[0].queue_seq)
        if len(self._kind_of) + len(newcomers) != view.queue_length:
            self._kinds, self._kind_of, self._tenant_kinds = {}, {}, {}
            self._first_of, self._shapes, self._tenant_shapes, self._present = {}, {}, {}, {}
            self._indexed = False
            newcomers = view.queue
            self._last_seq = max((job.queue_seq for job in newcomers), default=self._last_seq)
        kinds = self._kinds
        first_of = self._first_of
        tenant_shapes = self._tenant_shapes
        for job in newcomers:
            cluster = self.allocation.cluster_for(job, view)
            tenant = job.tenant
            signature = (cluster, id(job.options), job.workers, tenant)
            kind = kinds.get(signature)
            added = None  # a shape the tenant had no kind of
            if kind is None:
                kind = kinds[signature] = _Kind(signature, cluster, tenant, *self._memory.ids(signature))
                self._tenant_kinds.setdefault(tenant, {})[signature] = kind
                shapes = tenant_shapes.get(tenant)
                if shapes is None:
                    shapes = tenant_shapes[tenant] = {}
                count = shapes.get(kind.shape, 0)
                shapes[kind.shape] = count + 1
                self._present[kind.shape] = self._present.get(kind.shape, 0) + 1
                if not count:
                    added = kind.shape
            kind.add(job)
            self._kind_of[job.job_id] = kind
            entry = first_of.get(tenant)
            if entry is None or (job.submit, job.index) < entry[:2]:
                new = first_of[tenant] = (job.submit, job.index, tenant_order(tenant), tenant)
                shapes = tenant_shapes[tenant]
                self._index(entry, [shape for shape in shapes if shape != added], new, shapes)
            elif added is not None:
                self._index(None, (), entry, (added,))

    def _index(self, old: tuple | None, old_shapes, new: tuple | None, new_shapes) -> None:
        """Move a tenant's entry in the per-shape lists from ``old`` under ``old_shapes`` to ``new``
        under ``new_shapes`` (None: none), while the lists are kept."""
        if not self._indexed:
            return
        lists = self._shapes
        if old is not None:
            for shape in old_shapes:
                entries = lists[shape]
                del entries[bisect_left(entries, old)]
                if not entries:
                    del lists[shape]
        if new is not None:
            for shape in new_shapes:
                entries = lists.get(shape)
                if entries is None:
                    lists[shape] = [new]
                else:
                    insort(entries, new)

    def _decide_kinds(self, view: SchedulerView) -> Decision:
        """The walk over the queue by kind (see the class docstring).

        Its cost grows with the tenants it reads, not with all that have queued jobs: the tenants
        holding GPUs go on a heap by dominant share; those holding none (share 0, whatever their
        entitlement) come before them, in the order of their first queued job, read from per-shape
        lists kept between decisions (:attr:`_shapes`) and only for the shapes not known to be full (a
        tenant all of whose kinds are of full shapes would start nothing); entitlements are computed
        only for the tenants whose share is read (:class:`~simsched.policies.shares.Entitled`); and
        the walk stops once every queued kind's shape is known to be full."""
        self._sync(view)
        free = list(view.free)
        if not self._kind_of or not any(free):
            return EMPTY_DECISION
        admission = getattr(view, "admission", None)
        backfill = self.backfill
        memory = self._memory
        # failures are reused across decisions only when backfilling (as in the queue walk)
        memory.begin(free, admission, backfill)
        # (without backfilling a failure also ends its tenant's turn: every kind is tried then)
        full, refused = (memory.full, memory.quota_failures(admission)) if backfill else ((), ())
        # the queued kinds' shapes not known to be full: none left, nothing can start
        alive = {shape for shape in self._present if shape not in memory.full}
        if backfill and (not alive or (refused and all(k.shape in full or k.kind in refused
                                                       for k in self._kinds.values()))):
            memory.end(free, admission)  # every kind is known to fail: nothing starts
            return EMPTY_DECISION
        clusters = len(view.fleet.cluster_names)
        running = view.running
        if running is self._held_from:
            held = {tenant: list(row) for tenant, row in self._held.items()}
        else:
            held = held_by_tenant(running, clusters)
            self._held_from, self._held = running, {tenant: list(row) for tenant, row in held.items()}
        tenant_kinds = self._tenant_kinds
        active = len(tenant_kinds) + sum(1 for tenant in held if tenant not in tenant_kinds)
        if self._capacity is None or self._capacity[0] is not view.fleet:
            self._capacity = (view.fleet, cluster_gpus(view))
        quotas = self.quotas(view)
        if self._listed is None or self._listed[0] is not quotas:  # (a ledger's listed tenants never change)
            self._listed = (quotas, listed_tenants(quotas, clusters))
        listed = self._listed[1]
        pooled = [0 if names is None else active - sum(1 for t in names if t in tenant_kinds or t in held)
                  for names in listed]
        entitled = self._entitled
        if (entitled is None or entitled.quotas is not quotas or entitled.capacity is not self._capacity[1]
                or entitled.version != getattr(quotas, "version", None) or entitled.active != active
                or entitled.pooled != pooled):  # (else the same numbers: keep those computed already)
            entitled = self._entitled = Entitled(view, quotas, active, None, self._capacity[1], listed, pooled)
        heap = []  # the tenants with queued jobs that hold GPUs (the others: self._shapes, in order)
        first_of = self._first_of
        for tenant, row in held.items():
            first = first_of.get(tenant)
            if first is not None:
                heap.append((dominant_share(row, entitled[tenant]), *first))
        heapq.heapify(heap)
        # the tenants holding no GPUs: few, all of them sorted; many, per shape that may fit, how far
        # its list has been read (none when every tenant with queued jobs holds GPUs: all on the heap)
        idle_count = len(tenant_kinds) - len(heap)
        few = idle_count <= _FEW_IDLE
        idle = sorted(first_of[t] for t in tenant_kinds if t not in held) if few and idle_count else []
        i = 0
        at = dict.fromkeys(alive, 0) if not few else {}
        if not few and not self._indexed:  # many: keep the per-shape lists from now on
            lists = self._shapes = {}
            for tenant, entry in first_of.items():
                for shape in self._tenant_shapes[tenant]:
                    lists.setdefault(shape, []).append(entry)
            for entries in lists.values():
                entries.sort()
            self._indexed = True
        elif few and self._indexed and len(tenant_kinds) <= _FEW_IDLE:  # few again: drop them
            self._shapes, self._indexed = {}, False
        lists = self._shapes
        seen: set = set()  # the tenants holding no GPUs read so far (a tenant is in the list of each shape)
        groups = view.fleet.groups
        node_cluster = view.fleet.node_cluster
        failed = memory.options  # option shapes that did not fit: free only shrinks in a decision
        starts: list[Start] = []
        touched: list[_Kind] = []
        dead: set[_Kind] = set()  # kinds that failed in this decision
        while alive:
            # the first tenant holding no GPUs with a kind of a shape that may fit (the others would
            # start nothing: each of their kinds is known not to fit)
            head = idle[i] if i < len(idle) else None
            for shape in at:
                if shape not in alive:
                    continue
                entries, j = lists[shape], at[shape]
                while j < len(entries) and (entries[j][3] in held or entries[j][3] in seen):
                    j += 1  # (holds GPUs: on the heap; or read already)
                at[shape] = j
                if j < len(entries) and (head is None or entries[j] < head):
                    head = entries[j]
            if head is not None and (not heap or (0.0, *head[:3]) < heap[0][:4]):
                _, _, order, tenant = head
                if few:
                    i += 1
                else:
                    seen.add(tenant)
            elif heap:
                _, _, _, order, tenant = heapq.heappop(heap)
            else:
                break
            kinds = tenant_kinds[tenant].values()
            # its kinds that have not failed, by their next job (submit order); a failure changes no
            # other kind's next job, so they are tried in this order until one starts
            # (and not known to fail: the memory's full shapes and quota refusals)
            for _, kind in sorted((k.keys[k.pos], k) for k in kinds if k.pos < len(k.keys) and k not in dead
                                  and k.shape not in full and k.kind not in refused):
                job = kind.jobs[kind.pos]
                nodes = place_remembered(memory, job, kind.signature, kind.kind, kind.shape, groups, self.placement,
                                         free, failed, frozenset(), admission)
                if nodes is None:
                    dead.add(kind)
                    if kind.shape in memory.full:
                        alive.discard(kind.shape)
                    if not backfill and not _over_quota(job, kind.cluster, admission):
                        break  # (a job over its tenant's quota waits for it and holds no line)
                    continue
                starts.append(Start(job.job_id, nodes))
                if not kind.pos:
                    touched.append(kind)
                kind.pos += 1
                row = held.get(tenant)
                if row is None:
                    row = held[tenant] = [0.0] * clusters
                row[node_cluster[nodes[0]]] += _taken(job, nodes, view) / 1000
                # the tenant's next job in submit order, as the plain walk reads it (failed kinds too:
                # their first job after this one; a kind not failed has none before it)
                after = kind.keys[kind.pos - 1]
                nxt = None
                for k in kinds:
                    j = bisect_right(k.keys, after, k.pos)
                    if j < len(k.keys) and (nxt is None or k.keys[j] < nxt):
                        nxt = k.keys[j]
                if nxt is not None:
                    heapq.heappush(heap, (dominant_share(row, entitled[tenant]), nxt[0], nxt[1], order, tenant))
                break
            if not any(free):
                break
        memory.end(free, admission)
        tenant_shapes = self._tenant_shapes
        changed = {kind.tenant: (first_of[kind.tenant], list(tenant_shapes[kind.tenant])) for kind in touched}
        for kind in touched:  # forget the started jobs
            for job in kind.jobs[:kind.pos]:
                del self._kind_of[job.job_id]
            del kind.jobs[:kind.pos]
            del kind.keys[:kind.pos]
            kind.pos = 0
            if not kind.jobs:
                del self._kinds[kind.signature]
                del tenant_kinds[kind.tenant][kind.signature]
                if not tenant_kinds[kind.tenant]:
                    del tenant_kinds[kind.tenant]
                present = self._present
                if present[kind.shape] > 1:
                    present[kind.shape] -= 1
                else:
                    del present[kind.shape]
                shapes = tenant_shapes[kind.tenant]
                if shapes[kind.shape] > 1:
                    shapes[kind.shape] -= 1
                else:
                    del shapes[kind.shape]
                    if not shapes:
                        del tenant_shapes[kind.tenant]
        for tenant, (old, old_shapes) in changed.items():  # their first queued job moved on
            del first_of[tenant]
            kinds = tenant_kinds.get(tenant)
            new = None
            if kinds:
                first = min(kind.keys[0] for kind in kinds.values())
                new = first_of[tenant] = (first[0], first[1], old[2], tenant)
            self._index(old, old_shapes, new, tenant_shapes[tenant] if kinds else ())
        return Decision(tuple(starts)) if starts else EMPTY_DECISION

    # -- each tenant's sorted jobs ---------------------------------------------------
    def _decide_walk(self, view: SchedulerView) -> Decision:
        queue = view.queue
        free = list(view.free)
        if not queue or not any(free):
            return EMPTY_DECISION
        waiting: dict[str | None, list[JobView]] = {}
        for job in queue:
            waiting.setdefault(job.tenant, []).append(job)
        held, entitled = self._held_and_entitled(view)
        heap = []
        for tenant, jobs in waiting.items():
            jobs.sort(key=lambda j: (j.submit, j.index))
            heap.append((dominant_share(held[tenant], entitled[tenant]), jobs[0].submit, jobs[0].index,
                         tenant_order(tenant), tenant, 0))
        heapq.heapify(heap)
        plan_clusters(self.allocation, view, queue)
        groups = view.fleet.groups
        node_cluster = view.fleet.node_cluster
        admission = getattr(view, "admission", None)
        failed: set[tuple] = set()  # shapes that did not fit: free only shrinks in a decision
        # kinds of job (cluster, options, workers, tenant) that did not start: free GPUs and quota rooms
        # only shrink in a decision, so they fail again (without asking the quota ledger per job)
        failed_kinds: set[tuple] = set()
        remember = self.remember_failures
        starts: list[Start] = []
        while heap:
            _, _, _, order, tenant, position = heapq.heappop(heap)
            jobs = waiting[tenant]
            while position < len(jobs):
                job = jobs[position]
                position += 1
                cluster = self.allocation.cluster_for(job, view)
                kind = (cluster, id(job.options), job.workers, tenant)
                nodes = None if kind in failed_kinds else place_job(job, cluster, groups, self.placement, free,
                                                                    failed, admission=admission)
                if nodes is None:
                    if remember:
                        failed_kinds.add(kind)
                else:
                    starts.append(Start(job.job_id, nodes))
                    held[tenant][node_cluster[nodes[0]]] += _taken(job, nodes, view) / 1000
                    if position < len(jobs):
                        nxt = jobs[position]
                        heapq.heappush(heap, (dominant_share(held[tenant], entitled[tenant]), nxt.submit,
                                              nxt.index, order, tenant, position))
                    break
                if not self.backfill and not _over_quota(job, cluster, admission):
                    break  # (a job over its tenant's quota waits for it and holds no line)
            if not any(free):
                break
        return Decision(tuple(starts))


class _Kind:
    """Queued jobs of one kind (cluster, options, workers, tenant) in (submit, index) order; ``pos``:
    how many of them the current decision started."""

    __slots__ = ("signature", "cluster", "tenant", "kind", "shape", "jobs", "keys", "pos")

    def __init__(self, signature: tuple, cluster: int | None, tenant: str | None, kind: int, shape: int) -> None:
        self.signature = signature
        self.cluster = cluster
        self.tenant = tenant
        self.kind, self.shape = kind, shape  # the walk memory's integers for it
        self.jobs: list[JobView] = []
        self.keys: list[tuple[float, int]] = []
        self.pos = 0

    def add(self, job: JobView) -> None:
        key = (job.submit, job.index)
        if not self.keys or self.keys[-1] < key:
            self.keys.append(key)
            self.jobs.append(job)
        else:
            i = bisect_right(self.keys, key)
            self.keys.insert(i, key)
            self.jobs.insert(i, job)


def _taken(job: JobView, nodes: tuple[int, ...], view: SchedulerView) -> int:
    """Milli-GPUs ``job`` takes on ``nodes`` (its option on that cluster and type)."""
    fleet = view.fleet
    cluster, gpu_type = fleet.node_cluster[nodes[0]], fleet.node_type[nodes[0]]
    for option in job.options:
        if option.cluster == cluster and option.gpu_type == gpu_type:
            return option.per_worker * job.workers
    raise AssertionError(f"job {job.job_id} placed on a type it has no option for")


def build_drf(options, *, placement: Placement, allocation: Allocation, backfill: bool,
              interval_s: float | None = None) -> DrfScheduler:
    return DrfScheduler(placement, allocation, backfill)


register("drf", no_reservations="walks the queue tenant by tenant")(common_builder(build_drf))
