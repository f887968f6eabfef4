"""Tenants and their GPU quotas (SPEC §3): the engine's ledger of who holds how many GPUs.

A cluster may give tenants (VCs, users, groups) quotas, as ``[[cluster.tenant]]``
tables or a dated table (:class:`~simsched.core.model.QuotaSchedule`). Quotas are
counted in GPUs held, i.e. milli-GPUs per worker on the type a job runs on
(after the memory scaling of SPEC §2) times its workers.

In a cluster with quotas, every tenant the table does not list (and every job
without a tenant) shares one pool, :data:`OTHER`, holding the GPUs no listed
tenant owns (capacity minus the quotas). A cluster without quotas limits nobody.

:class:`Tenancy` is engine state: only the engine calls :meth:`Tenancy.hold` and
:meth:`Tenancy.release` (when a job starts and when it stops). Policies read it
through ``view.tenants`` (:meth:`quota`, :meth:`usage`, :meth:`tenant_names`).
The quota semantics themselves (strict, borrow, reclaim) live in
:mod:`simsched.policies.quota`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from simsched.core.model import MILLI, ClusterSpec, to_milli

QUOTA_MODES = ("none", "strict", "borrow")
RECLAIM_MODES = ("preempt", "wait")

#: the pool of a cluster's unlisted tenants (and of jobs without a tenant)
OTHER = None

#: the latest releases whose keys the ledger keeps in order (Staged.grown_since reads them)
_LOG_KEPT = 128


class Tenancy:
    """Quotas per cluster and the GPUs each tenant holds now (milli-GPUs inside)."""

    def __init__(self, clusters: Sequence[ClusterSpec], capacity: Sequence[int], mode: str = "strict",
                 reclaim: str = "preempt", type_capacity: Sequence[dict[str, int]] | None = None) -> None:
        """``capacity``: milli-GPUs per cluster; ``type_capacity``: per cluster, milli-GPUs per GPU type."""
        self.mode = mode
        self.reclaim = reclaim
        self._capacity = list(capacity)
        self._type_capacity = list(type_capacity) if type_capacity is not None else [{} for _ in capacity]
        self._limited = [bool(c.tenants) or c.quota_schedule is not None for c in clusters]
        self._listed: list[frozenset[str]] = []
        self._quota: dict[tuple[int, str | None], int] = {}
        self._type_quota: dict[tuple[int, str | None, str], int] = {}
        self._per_type: set[tuple[int, str | None]] = set()
        self._schedules = [(c, cluster.quota_schedule) for c, cluster in enumerate(clusters)
                           if cluster.quota_schedule is not None]
        for c, cluster in enumerate(clusters):
            schedule = cluster.quota_schedule
            names = schedule.tenants if schedule is not None else tuple(t.name for t in cluster.tenants)
            self._listed.append(frozenset(names))
            for tenant in cluster.tenants:
                if tenant.per_type is not None:
                    self._per_type.add((c, tenant.name))
                    for type_name, gpus in tenant.per_type:
                        self._type_quota[c, tenant.name, type_name] = to_milli(gpus)
                self._quota[c, tenant.name] = to_milli(tenant.total)
        self._usage: dict[tuple[int, str | None], int] = {}
        self._type_usage: dict[tuple[int, str | None, str], int] = {}
        self._tenant_usage: dict[str | None, int] = {}
        changes = sorted({t for _, s in self._schedules for t in s.times})
        self.change_times: tuple[float, ...] = tuple(changes)
        self._applied = -1  # index into change_times of the last schedule step applied
        # releases in clusters with quotas, counted, and the count at each (cluster, quota key)'s last
        # one (key: a tenant, OTHER for a pool): a room grows only then (or when the dated table moves),
        # which the queue walk's memory of quota refusals reads (Staged.mark, Staged.grown_since); and
        # the (cluster, key) of the latest releases in order (_log[i]: release _log_base + i + 1)
        self._releases = 0
        self._last_release: dict[tuple[int, str | None], int] = {}
        self._log: list[tuple[int, str | None]] = []
        self._log_base = 0
        self.version = 0  # grows whenever a usage or a quota changes (policies cache on it)
        self.update(0.0)
        self._set_other_pools()

    # -- engine side -------------------------------------------------------------
    def update(self, now: float) -> bool:
        """Apply the dated quotas in force at ``now``; True when they changed."""
        if not self.change_times:
            return False
        k = bisect_right(self.change_times, now) - 1
        if k == self._applied:
            return False
        self._applied = k
        for c, schedule in self._schedules:
            for name, gpus in zip(schedule.tenants, schedule.at(now)):
                self._quota[c, name] = to_milli(gpus)
        self._set_other_pools()
        self.version += 1
        return True

    def _set_other_pools(self) -> None:
        for c, limited in enumerate(self._limited):
            if limited:
                listed = sum(self._quota.get((c, name), 0) for name in self._listed[c])
                self._quota[c, OTHER] = max(0, self._capacity[c] - listed)

    def key(self, tenant: str | None, cluster: int) -> str | None:
        """Whose quota a job of ``tenant`` counts against in ``cluster`` (its own, or the pool)."""
        return tenant if tenant in self._listed[cluster] else OTHER

    def hold(self, tenant: str | None, cluster: int, gpu_type: str, milli: int) -> None:
        """A job of ``tenant`` started holding ``milli`` milli-GPUs of ``gpu_type`` in ``cluster``."""
        self._add(tenant, cluster, gpu_type, milli)

    def release(self, tenant: str | None, cluster: int, gpu_type: str, milli: int) -> None:
        """It stopped (finished or preempted)."""
        self._add(tenant, cluster, gpu_type, -milli)

    def _add(self, tenant: str | None, cluster: int, gpu_type: str, milli: int) -> None:
        key = tenant if tenant in self._listed[cluster] else OTHER  # (self.key, inlined: once per start and end)
        pair = (cluster, key)
        usage = self._usage
        usage[pair] = usage.get(pair, 0) + milli
        if pair in self._per_type:
            self._type_usage[cluster, key, gpu_type] = self._type_usage.get((cluster, key, gpu_type), 0) + milli
        self._tenant_usage[tenant] = self._tenant_usage.get(tenant, 0) + milli
        if milli < 0 and self._limited[cluster]:
            self._releases += 1
            self._last_release[pair] = self._releases
            log = self._log
            log.append(pair)
            if len(log) > 2 * _LOG_KEPT:
                del log[:_LOG_KEPT]
                self._log_base += _LOG_KEPT
        self.version += 1

    # -- policy side (read only) ---------------------------------------------------
    def limited(self, cluster: int) -> bool:
        """Whether ``cluster`` gives tenants quotas."""
        return self._limited[cluster]

    def tenant_names(self, cluster: int | None = None) -> tuple[str, ...]:
        """The tenants with a quota in ``cluster`` (None: in any cluster), sorted."""
        if cluster is None:
            return tuple(sorted(set().union(*self._listed)))
        return tuple(sorted(self._listed[cluster]))

    def quota(self, tenant: str | None, cluster: int, gpu_type: str | None = None) -> float | None:
        """GPUs ``tenant`` may hold in ``cluster`` (of ``gpu_type`` when given), None = no limit."""
        milli = self.quota_milli(self.key(tenant, cluster), cluster, gpu_type)
        return None if milli is None else milli / MILLI

    def usage(self, tenant: str | None, cluster: int | None = None, gpu_type: str | None = None) -> float:
        """GPUs ``tenant`` holds now: in ``cluster`` (of ``gpu_type``) or, with no cluster, fleet-wide.
        In a cluster with quotas an unlisted tenant reads its pool's usage."""
        return self.usage_milli(tenant, cluster, gpu_type) / MILLI

    def usage_milli(self, tenant: str | None, cluster: int | None = None, gpu_type: str | None = None) -> int:
        if cluster is None:
            return self._tenant_usage.get(tenant, 0)
        key = self.key(tenant, cluster)
        if gpu_type is None:
            return self._usage.get((cluster, key), 0)
        if (cluster, key) in self._per_type:
            return self._type_usage.get((cluster, key, gpu_type), 0)
        return self._usage.get((cluster, key), 0)

    def quota_milli(self, key: str | None, cluster: int, gpu_type: str | None = None) -> int | None:
        """The quota of a quota key (see :meth:`key`) in milli-GPUs, None = no limit."""
        if not self._limited[cluster]:
            return None
        if gpu_type is not None and (cluster, key) in self._per_type:
            return self._type_quota.get((cluster, key, gpu_type), 0)
        return self._quota.get((cluster, key), 0)

    def headroom_milli(self, key: str | None, cluster: int, gpu_type: str) -> int | None:
        """Milli-GPUs the key may still take of ``gpu_type`` in ``cluster`` (None = no limit)."""
        if not self._limited[cluster]:
            return None
        room = self._quota.get((cluster, key), 0) - self._usage.get((cluster, key), 0)
        if (cluster, key) in self._per_type:
            room = min(room, self._type_quota.get((cluster, key, gpu_type), 0)
                       - self._type_usage.get((cluster, key, gpu_type), 0))
        return room

    def most_milli(self, key: str | None, cluster: int, gpu_type: str) -> int | None:
        """The most milli-GPUs of ``gpu_type`` the quota key may ever hold in ``cluster`` (the largest
        quota over a dated table), None = no limit. A job larger than this never starts under
        ``strict``, whatever the policy."""
        if not self._limited[cluster]:
            return None
        schedule = next((s for c, s in self._schedules if c == cluster), None)
        if schedule is None:
            return self.quota_milli(key, cluster, gpu_type)
        listed = self._listed[cluster]
        if key in listed:
            i = schedule.tenants.index(key)
            return max(to_milli(row[i]) for row in schedule.gpus)
        return max(max(0, self._capacity[cluster] - sum(to_milli(g) for g in row)) for row in schedule.gpus)

    def per_type(self, key: str | None, cluster: int) -> bool:
        return (cluster, key) in self._per_type


class Staged:
    """A decision's scratch copy of the usage: what the starts and preemptions chosen so far would
    leave (a policy charges here; the engine's :class:`Tenancy` changes only when it applies them)."""

    __slots__ = ("tenancy", "_delta", "_type_delta")

    def __init__(self, tenancy: Tenancy) -> None:
        self.tenancy = tenancy
        self._delta: dict[tuple[int, str | None], int] = {}
        self._type_delta: dict[tuple[int, str | None, str], int] = {}

    def room(self, tenant: str | None, cluster: int, gpu_type: str) -> int | None:
        """Milli-GPUs ``tenant`` may still take of ``gpu_type`` in ``cluster`` (None = no limit)."""
        tenancy = self.tenancy
        if not tenancy._limited[cluster]:
            return None
        key = tenant if tenant in tenancy._listed[cluster] else OTHER  # tenancy.key, inlined (hot)
        pair = (cluster, key)
        room = tenancy._quota.get(pair, 0) - tenancy._usage.get(pair, 0) - self._delta.get(pair, 0)
        if pair in tenancy._per_type:
            room = min(room, tenancy._type_quota.get((cluster, key, gpu_type), 0)
                       - tenancy._type_usage.get((cluster, key, gpu_type), 0)
                       - self._type_delta.get((cluster, key, gpu_type), 0))
        return room

    def admits(self, tenant: str | None, cluster: int, gpu_type: str, milli: int) -> bool:
        """Whether ``milli`` more milli-GPUs fit ``tenant``'s room (:meth:`room`, inlined: the
        queue walk asks this for every job it tries under quotas)."""
        tenancy = self.tenancy
        if not tenancy._limited[cluster]:
            return True
        key = tenant if tenant in tenancy._listed[cluster] else OTHER
        pair = (cluster, key)
        if milli > tenancy._quota.get(pair, 0) - tenancy._usage.get(pair, 0) - self._delta.get(pair, 0):
            return False
        if pair in tenancy._per_type:
            triple = (cluster, key, gpu_type)
            return milli <= (tenancy._type_quota.get(triple, 0) - tenancy._type_usage.get(triple, 0)
                             - self._type_delta.get(triple, 0))
        return True

    def add(self, tenant: str | None, cluster: int, gpu_type: str, milli: int) -> None:
        tenancy = self.tenancy
        if not tenancy._limited[cluster]:
            return
        key = tenancy.key(tenant, cluster)
        self._delta[cluster, key] = self._delta.get((cluster, key), 0) + milli
        if (cluster, key) in tenancy._per_type:
            self._type_delta[cluster, key, gpu_type] = self._type_delta.get((cluster, key, gpu_type), 0) + milli

    def mark(self) -> tuple[int, int]:
        """Where the rooms stand, for :meth:`grown_since` to tell later whose room grew: the dated
        table's row in force and how many releases the ledger has counted. A queue walk keeps this to
        tell whether a quota refusal still holds."""
        return self.tenancy._applied, self.tenancy._releases

    def grown_since(self, before: tuple[int, int] | None) -> set[str | None] | None:
        """The tenants whose room in some cluster with quotas may admit now a job it refused at
        ``before`` (a :meth:`mark`): those that gave GPUs back there since, in the ledger or staged in
        this decision, and have room left there. None when any tenant's may (no mark, the dated quotas
        moved, or the pool of unlisted tenants grew). A tenant may be named that did not grow (a
        release followed by a new hold counts), never the other way round: one at or above its quota
        in that cluster after its release (under ``"borrow"``, still borrowing) refuses every job
        there whatever it refused before, as each needs at least one milli-GPU."""
        tenancy = self.tenancy
        if before is None or before[0] != tenancy._applied:
            return None
        since = before[1]
        if tenancy._releases == since:
            released = set()
        elif since >= tenancy._log_base:  # the releases since are all in the log
            released = set(tenancy._log[since - tenancy._log_base:])
        else:
            released = {pair for pair, at in tenancy._last_release.items() if at > since}
        if self._delta:
            released.update(pair for pair, d in self._delta.items() if d < 0)
        if self._type_delta:
            released.update(k[:2] for k, d in self._type_delta.items() if d < 0)
        if not released:
            return released
        quota, usage, delta = tenancy._quota, tenancy._usage, self._delta
        # (a per-type quota only narrows a room: a key without room in total refuses every type)
        grown = {pair[1] for pair in released if quota[pair] > usage.get(pair, 0) + delta.get(pair, 0)}
        return None if OTHER in grown else grown

    def roomy_tenants(self) -> set[str | None]:
        """The quota keys (tenants; :data:`OTHER` for a pool) with room left in some cluster with quotas,
        not counting per-type quotas (a key not here has no room for any job there)."""
        tenancy = self.tenancy
        usage, delta = tenancy._usage, self._delta
        return {pair[1] for pair, quota in tenancy._quota.items()
                if quota > usage.get(pair, 0) + delta.get(pair, 0)}

    def borrowing(self, tenant: str | None, cluster: int, gpu_type: str) -> bool:
        """Whether ``tenant`` holds more than its quota (of ``gpu_type``) in ``cluster``."""
        room = self.room(tenant, cluster, gpu_type)
        return room is not None and room < 0
