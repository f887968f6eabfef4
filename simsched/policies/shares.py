"""What the fair-share policies (``drf``, ``ftf``, ``maxmin-hetero``) know about tenants:
each tenant's entitlement per cluster and the GPUs it holds now.

**Entitlement.** In a cluster with quotas a listed tenant is entitled to its
quota; the tenants the cluster does not list (and jobs without a tenant)
split the pool of unlisted tenants (simsched.core.tenancy) equally among those of
them that are active. In a cluster without quotas the active tenants split
its GPUs equally. *Active* means having a job queued or running.

The quotas come from ``view.tenants`` when the scenario enforces them
(``scheduler.quota = "strict" | "borrow"``). With ``quota = "none"`` the view
has no tenants, yet the fair-share policies still weight tenants by their
quotas: :func:`simsched.runs.single.simulation` hands them a quota table of their own
through ``bind_quotas`` (:class:`~simsched.core.tenancy.Tenancy`, whose usage they
never read: they count held GPUs from ``view.running``).

All amounts are GPUs (floats), counted as quotas count them: milli-GPUs per
worker on the type a job runs on (after SPEC §2's memory scaling) x workers.
"""

from __future__ import annotations

from collections.abc import Iterable

from simsched.core.contract import JobView, Option, SchedulerView
from simsched.core.model import MILLI
from simsched.policies.allocation import Allocation, Home


def tenant_order(tenant: str | None) -> tuple[bool, str]:
    """A total order over tenants (None, no tenant, last)."""
    return (tenant is None, "" if tenant is None else str(tenant))


class QuotaSource:
    """Where a fair-share policy reads quotas: the view's tenants, else the table bound to it."""

    def __init__(self) -> None:
        self._bound = None

    def bind_quotas(self, tenancy) -> None:
        """Called before the run (quota = "none" only): the scenario's quotas, for weighting only."""
        self._bound = tenancy

    def quotas(self, view: SchedulerView):
        tenants = getattr(view, "tenants", None)
        if tenants is not None:
            return tenants
        if self._bound is not None:
            self._bound.update(view.now)  # dated quota tables: the row in force now
        return self._bound


class FairShareBase(QuotaSource):
    """What drf and ftf share: a queue walk (placement, allocation, backfill) that checks quotas as it
    places (simsched.policies.quota), ordering tenants rather than per-tenant buckets."""

    supports_admission = True  # the walk checks quotas as it places (simsched.policies.quota)
    by_tenant = False
    #: False: try every job, even of a kind that already failed in the decision (the reference, for tests)
    remember_failures = True

    def __init__(self, placement, allocation, backfill: bool = True) -> None:
        super().__init__()
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill


def cluster_gpus(view: SchedulerView) -> list[float]:
    """GPUs per cluster."""
    fleet = view.fleet
    out = [0.0] * len(fleet.cluster_names)
    for cluster, capacity in zip(fleet.node_cluster, fleet.node_capacity):
        out[cluster] += capacity / MILLI
    return out


def group_gpus(view: SchedulerView) -> dict[tuple[int, str], float]:
    """GPUs per (cluster, GPU type) group."""
    capacity = view.fleet.node_capacity
    return {group: sum(capacity[n] for n in nodes) / MILLI for group, nodes in view.fleet.groups.items()}


def held_gpus(job: JobView) -> float:
    """GPUs a running job holds."""
    return job.run_share * job.workers / MILLI


def option_gpus(job: JobView, option: Option) -> float:
    """GPUs ``job`` holds when it runs with ``option``."""
    return option.per_worker * job.workers / MILLI


def entitlements(view: SchedulerView, quotas, active: Iterable[str | None]) -> dict[str | None, list[float]]:
    """GPUs each active tenant is entitled to, per cluster (see the module docstring)."""
    active = sorted(set(active), key=tenant_order)
    capacity = cluster_gpus(view)
    out = {tenant: [0.0] * len(capacity) for tenant in active}
    for c, gpus in enumerate(capacity):
        if quotas is None or not quotas.limited(c):
            for tenant in active:
                out[tenant][c] = gpus / len(active) if active else 0.0
            continue
        listed = set(quotas.tenant_names(c))
        pooled = [t for t in active if t not in listed]
        for tenant in active:
            quota = quotas.quota(tenant, c) or 0.0
            out[tenant][c] = quota if tenant in listed else quota / len(pooled)
    return out


def listed_tenants(quotas, clusters: int) -> list[frozenset | None]:
    """Per cluster, the tenants its quotas list (None: a cluster without quotas)."""
    return [frozenset(quotas.tenant_names(c)) if quotas is not None and quotas.limited(c) else None
            for c in range(clusters)]


class Entitled:
    """:func:`entitlements` one tenant at a time: the same numbers (the same float operations), for
    the tenants a decision asks about only, so that its cost grows with those, not with every active
    tenant (issue 35: with a tenant per job, thousands). ``active``: how many tenants are active;
    ``is_active(tenant)``: whether one is (asked only of the tenants a cluster's quota lists)."""

    __slots__ = ("quotas", "version", "capacity", "active", "listed", "pooled", "rows")

    def __init__(self, view: SchedulerView, quotas, active: int, is_active,
                 capacity: list[float] | None = None, listed: list[frozenset | None] | None = None,
                 pooled: list[int] | None = None) -> None:
        """``capacity``: :func:`cluster_gpus` of the view, ``listed``: :func:`listed_tenants` of the
        quotas, ``pooled``: per cluster, its active tenants not listed, when the caller has them."""
        self.quotas = quotas
        self.version = getattr(quotas, "version", None)  # (the ledger's: it moves when a quota does)
        self.capacity = cluster_gpus(view) if capacity is None else capacity
        self.active = active
        # per cluster: the tenants its quotas list (None: no quotas there)
        self.listed = listed_tenants(quotas, len(self.capacity)) if listed is None else listed
        # per cluster with quotas: its active tenants not listed
        self.pooled = pooled if pooled is not None else [
            0 if names is None else active - sum(1 for name in names if is_active(name)) for names in self.listed]
        self.rows: dict[str | None, list[float]] = {}

    def __getitem__(self, tenant: str | None) -> list[float]:
        """The GPUs an active ``tenant`` is entitled to, per cluster."""
        row = self.rows.get(tenant)
        if row is None:
            row = self.rows[tenant] = []
            quotas = self.quotas
            for c, gpus in enumerate(self.capacity):
                listed = self.listed[c]
                if listed is None:
                    row.append(gpus / self.active)
                    continue
                quota = quotas.quota(tenant, c) or 0.0
                row.append(quota if tenant in listed else quota / self.pooled[c])
        return row


def has_quotas(view: SchedulerView, quotas) -> bool:
    return quotas is not None and any(quotas.limited(c) for c in range(len(view.fleet.cluster_names)))


def home_on_first_sight(allocation) -> bool:
    """Whether ``allocation`` plans nothing and gives each job its home cluster whenever it is first
    asked: then a decision left out changes no job's cluster (a choice made on first sight by
    turns, at random or by the load would move with the decision that first asks, and a planning
    allocation plans at every decision)."""
    kind = type(allocation)
    return (kind.prepare is Allocation.prepare and kind.cluster_for is Allocation.cluster_for
            and kind.choose is Home.choose)


def plan_clusters(allocation, view: SchedulerView, queue) -> None:
    """Let a planning allocation (MCT) choose the queued jobs' clusters, in submit order (the queue
    is sorted only for such an allocation: a static one has nothing to plan)."""
    if type(allocation).prepare is not Allocation.prepare:
        allocation.prepare(view, sorted(queue, key=lambda j: (j.submit, j.index)))


def option_on(job: JobView, cluster: int, gpu_type: str) -> Option | None:
    for option in job.options:
        if option.cluster == cluster and option.gpu_type == gpu_type:
            return option
    return None
