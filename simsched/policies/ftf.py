"""``ftf``: finish-time fairness after Themis (Mahajan et al., NSDI 2020).

Themis calls a job's finish-time fairness ρ = T_shared / T_alone: the time it
takes in the shared cluster over the time it would take alone on its fair
share, and gives GPUs to the jobs with the largest ρ (the ones treated worst).
simsched estimates ρ online, at each decision, for every queued job of
tenant t:

    T_shared = (now - submit) + remaining time on its fastest GPU type
    T_alone  = execution time on its fastest type x max(1, D_t / Q_t)

both in the job's cluster c (the one its allocation gives it): D_t = GPUs
asked by t's jobs queued for or running in c; Q_t = t's quota in c. In a
cluster with quotas the tenants it does not list count as one, the pool of
unlisted tenants (its demand against the pool's GPUs, as simsched.core.tenancy
counts them); in a cluster without quotas Q_t = its GPUs / the number of
tenants with a job queued for or running in it. A job free to run in any
cluster (no home under ``allocation = "home"``) uses t's sums over the fleet. A
tenant that asks for more than its share would wait even alone on that share,
so its T_alone stretches by D_t / Q_t; a tenant within its share is owed its
jobs' bare run times. The after-the-fact ρ metric in summary.json
(simsched.core.fairness) uses the same definition with the real JCT, the run time
on the type the job ran on and the demand at its arrival.

One decision: queued jobs in decreasing ρ (ties: submit, input order), each
started on the fastest GPU type that fits now in its cluster; with
``backfill = false`` the walk stops, per cluster, at the first job that does
not fit (as the queue policies do).

Deviations from Themis: no auction and no leases. Themis runs a partial
auction among the apps with the worst ρ every lease period and lets leases
expire (a form of preemption); here ρ only orders the queue and nothing is
preempted. ρ is per job, with the tenant's demand and share standing in for
Themis' app-level contention.
"""

from __future__ import annotations

import math

from simsched.core.contract import EMPTY_DECISION, Decision, JobView, SchedulerView, Start
from simsched.policies.allocation import Allocation
from simsched.policies.placement import Placement
from simsched.policies.queue import _over_quota, place_job
from simsched.policies.registry import common_builder, register
from simsched.policies.shares import (
    Entitled,
    FairShareBase,
    cluster_gpus,
    home_on_first_sight,
    listed_tenants,
    plan_clusters,
)

#: the pool of a cluster's unlisted tenants, as a key (simsched.core.tenancy)
_POOL = object()


def rho_estimate(job: JobView, now: float, remaining: float, contention: float) -> float:
    """ρ of a queued job now: ``remaining`` seconds on its fastest type, ``contention`` = max(1, D_t / Q_t)."""
    speed = max(o.speed for o in job.options)
    alone = job.duration / speed * contention
    shared = (now - job.submit) + remaining
    if alone <= 0:
        return math.inf if shared > 0 else 1.0
    return shared / alone


def contention(demand: float, entitled: float) -> float:
    """max(1, D_t / Q_t); inf when the tenant is entitled to nothing."""
    if entitled <= 0:
        return math.inf
    return max(1.0, demand / entitled)


class FtfScheduler(FairShareBase):
    """Largest estimated finish-time fairness ρ first (see the module docstring)."""

    name = "ftf"

    def __init__(self, placement, allocation, backfill: bool = True) -> None:
        super().__init__(placement, allocation, backfill)
        self._static = type(allocation).prepare is Allocation.prepare
        self._last_order: tuple | None = None  # (queue, running, now, the queue in ρ order)
        self._capacity: tuple | None = None  # (fleet, GPUs per cluster)

    @property
    def idle_without_fit(self) -> bool:
        """For the quota wrapper (simsched.policies.quota): a decision in which no queued job has an
        option whose GPUs per worker are free on a node of its group starts and preempts nothing and
        leaves nothing later decisions read (the ρ order is kept for the same queue object only), so
        it may be left out; with an allocation that gives jobs their home cluster
        (:func:`~simsched.policies.shares.home_on_first_sight`)."""
        return home_on_first_sight(self.allocation)

    def rhos(self, view: SchedulerView) -> dict[str, float]:
        """Every queued job's estimated ρ now (see :meth:`_rhos`)."""
        return self._rhos(view)[0]

    def _rhos(self, view: SchedulerView) -> tuple[dict[str, float], list[int | None]]:
        """Every queued job's estimated ρ now, and the queued jobs' clusters (in queue order).

        Its cost grows with the jobs, not with the tenants: a cluster's listed tenants are read once,
        and the fleet-wide entitlements (for jobs free to run in any cluster) are computed only for
        the tenants of such jobs (:class:`~simsched.policies.shares.Entitled`)."""
        quotas = self.quotas(view)
        fleet = view.fleet
        if self._capacity is None or self._capacity[0] is not fleet:
            self._capacity = (fleet, cluster_gpus(view))
        capacity = self._capacity[1]
        allocation = self.allocation
        queue = view.queue
        running = view.running
        clusters_of = [allocation.cluster_for(job, view) for job in queue]
        # per cluster: the tenants its quotas list (None: no quotas there)
        listed = listed_tenants(quotas, len(capacity))
        # GPUs asked per (cluster, tenant, or the cluster's pool of unlisted tenants), by the running
        # jobs then the queued ones (the order of the sums is kept: the same floats); the tenants per
        # cluster only where it has no quotas (they split it equally)
        counted = None in listed
        active: dict[int | None, set] = {}
        demand: dict[tuple, float] = {}
        for job in running:
            c, tenant = job.running_cluster, job.tenant
            names = listed[c]
            k = (c, _POOL) if names is not None and tenant not in names else (c, tenant)
            demand[k] = demand.get(k, 0.0) + job.gpus
            if counted:
                active.setdefault(c, set()).add(tenant)
        for job, c in zip(queue, clusters_of):
            tenant = job.tenant
            names = None if c is None else listed[c]
            k = (c, _POOL) if names is not None and tenant not in names else (c, tenant)
            demand[k] = demand.get(k, 0.0) + job.gpus
            if counted:
                active.setdefault(c, set()).add(tenant)
        fleet_demand: dict[str | None, float] | None = None  # per tenant, fleet-wide (read only for a
        fleet_entitled = None  # job free to run in any cluster)

        factor: dict[tuple, float] = {}
        now = view.now
        remaining_time = view.remaining_time
        out = {}
        for job, c in zip(queue, clusters_of):
            tenant = job.tenant
            names = None if c is None else listed[c]
            k = (c, _POOL) if names is not None and tenant not in names else (c, tenant)
            f = factor.get(k)
            if f is None:
                if c is None:
                    if fleet_demand is None:
                        fleet_demand = {}
                        for other in (*running, *queue):
                            fleet_demand[other.tenant] = fleet_demand.get(other.tenant, 0.0) + other.gpus
                        fleet_entitled = Entitled(view, quotas, len(fleet_demand), fleet_demand.__contains__,
                                                  capacity, listed)
                    f = contention(fleet_demand[tenant], sum(fleet_entitled[tenant]))
                elif names is None:
                    f = contention(demand[k], capacity[c] / len(active[c]))
                else:  # an unlisted tenant reads its pool's quota
                    f = contention(demand[k], quotas.quota(tenant, c) or 0.0)
                factor[k] = f
            speed = max(o.speed for o in job.options)
            # (rho_estimate, inlined: once per queued job per decision)
            alone = job.duration / speed * f
            shared = (now - job.submit) + remaining_time(job, speed)
            out[job.job_id] = (math.inf if shared > 0 else 1.0) if alone <= 0 else shared / alone
        return out, clusters_of

    def _ordered(self, view: SchedulerView, queue) -> list[tuple[JobView, int | None]]:
        """The queued jobs, each with its cluster, in decreasing ρ (ties: submit, input order). Under
        ``quota = "borrow"`` the quota
        wrapper asks twice per decision; when the first pass started and preempted nothing, the second
        sees the very same queue and running jobs (the same tuples) at the same time, so the order is
        the same and is kept from the first (a static allocation only: a planning one re-plans)."""
        running = view.running
        last = self._last_order
        if last is not None and last[0] is queue and last[1] is running and last[2] == view.now:
            return last[3]
        rho, clusters_of = self._rhos(view)
        ordered = sorted(zip(queue, clusters_of), key=lambda item: (-rho[item[0].job_id], item[0].submit,
                                                                    item[0].index))
        if self._static:
            self._last_order = (queue, running, view.now, ordered)
        return ordered

    def decide(self, view: SchedulerView) -> Decision:
        queue = view.queue
        free = list(view.free)
        if not queue or not any(free):
            return EMPTY_DECISION
        plan_clusters(self.allocation, view, queue)  # (MCT: in submit order)
        ordered = self._ordered(view, queue)
        groups = view.fleet.groups
        admission = getattr(view, "admission", None)
        failed: set[tuple] = set()
        # kinds of job (cluster, options, workers, tenant) that did not start: free GPUs and quota rooms
        # only shrink in a decision (and blocked clusters only grow), so they fail again; and their
        # shapes (cluster, options, workers) when no option was refused for the quota (none fits the
        # free GPUs: whatever the tenant, so one tenant's failure stands for all, as with a tenant per job)
        failed_kinds: set[tuple] = set()
        failed_shapes: set[tuple] = set()
        remember = self.remember_failures
        blocked: set[int] = set()
        clusters = len(view.fleet.cluster_names)
        starts: list[Start] = []
        for job, cluster in ordered:
            if cluster in blocked:
                continue
            shape = (cluster, id(job.options), job.workers)
            kind = (*shape, job.tenant)
            if shape in failed_shapes or kind in failed_kinds:
                nodes = None
            else:
                refused = admission.refused if admission is not None else 0
                nodes = place_job(job, cluster, groups, self.placement, free, failed, skip=blocked,
                                  admission=admission)
                if nodes is None and remember:
                    if admission is None or admission.refused == refused:
                        failed_shapes.add(shape)
                    else:
                        failed_kinds.add(kind)
            if nodes is not None:
                starts.append(Start(job.job_id, nodes))
                if not any(free):
                    break
            elif not self.backfill and not _over_quota(job, cluster, admission):  # over quota: holds no line
                blocked.update(range(clusters) if cluster is None else (cluster,))
        return Decision(tuple(starts))


def build_ftf(options, *, placement: Placement, allocation: Allocation, backfill: bool,
              interval_s: float | None = None) -> FtfScheduler:
    return FtfScheduler(placement, allocation, backfill)


register("ftf", no_reservations="walks the queue tenant by tenant")(common_builder(build_ftf))
