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

from simsched.policies.allocation import Allocation
from simsched.policies.base import EMPTY_DECISION, Decision, JobView, SchedulerView, Start
from simsched.policies.placement import Placement
from simsched.policies.queue import _over_quota, place_job
from simsched.policies.shares import (
    FairShareBase,
    entitlements,
    held_gpus,
    plan_clusters,
    tenant_order,
)


def dominant_share(held: list[float], entitled: list[float]) -> float:
    """max over clusters of held / entitled (a cluster it holds GPUs in without entitlement: inf)."""
    share = 0.0
    for h, e in zip(held, entitled):
        if h > 0:
            share = max(share, h / e if e > 0 else math.inf)
    return share


class DrfScheduler(FairShareBase):
    """Progressive filling by dominant share (see the module docstring)."""

    name = "drf"

    def shares(self, view: SchedulerView) -> dict[str | None, float]:
        """Every active tenant's dominant share now (for tests and users)."""
        held, entitled = self._held_and_entitled(view)
        return {t: dominant_share(held[t], entitled[t]) for t in entitled}

    def _held_and_entitled(self, view: SchedulerView):
        clusters = len(view.fleet.cluster_names)
        held: dict[str | None, list[float]] = {}
        for job in view.running:
            row = held.get(job.tenant)
            if row is None:
                row = held[job.tenant] = [0.0] * clusters
            row[job.running_cluster] += held_gpus(job)
        active = set(held) | {job.tenant for job in view.queue}
        for tenant in active:
            held.setdefault(tenant, [0.0] * clusters)
        return held, entitlements(view, self.quotas(view), active)

    def decide(self, view: SchedulerView) -> Decision:
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
        plan_clusters(self.allocation, view, sorted(queue, key=lambda j: (j.submit, j.index)))
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
