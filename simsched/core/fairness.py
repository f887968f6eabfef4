"""Fairness between tenants (issue 20): Jain's index, finish-time fairness and the per-tenant block.

The pure functions (:func:`jain`, :func:`alone_time`, :func:`rho`,
:func:`demand_at_arrival`) carry the definitions; :func:`tenant_summary`
applies them to a run's jobs table (docs/engine.md "Tenant fairness").

- **Slowdown** of a job: bounded slowdown (Feitelson), max(1, JCT / max(its
  execution time as run, SLOWDOWN_BOUND_S)); the execution time as run is its
  duration at the speed of the GPU type it last ran on, restart penalties
  excluded. The bound keeps a few-second job that waited an hour from
  swamping a tenant's mean.
- **Jain's index** over values x_1..x_n: (sum x)^2 / (n sum x^2); 1 when all are
  equal, 1/n when one tenant gets everything. ``jain_slowdown`` is taken over
  the tenants' mean slowdowns.
- **Finish-time fairness** (Themis): rho_j = JCT_j / T_alone_j with
  T_alone_j = execution time as run x max(1, D_t / Q_t): D_t is the GPUs
  demanded by the jobs of j's tenant t queued or running in j's cluster at j's
  arrival (j included), Q_t is t's quota there at that time (a cluster without
  quotas: its GPUs / the number of tenants with jobs in it). rho > 1 means the
  job finished later than on a dedicated share of its tenant's quota.

The same censoring as every other metric: completed and unfinished jobs count
(an unfinished job's JCT and wait are censored at the end of the run, and it
stays in its tenant's demand until then); infeasible jobs are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.core.model import ClusterSpec

#: the bucket of jobs without a tenant, in the ``tenants`` block
NO_TENANT = "(no tenant)"
#: bounded slowdown: execution times below this count as this long (s)
SLOWDOWN_BOUND_S = 10.0
#: rho above 1 + RHO_TOLERANCE counts as "above 1" (a job that never waited has rho = 1 up to rounding)
RHO_TOLERANCE = 1e-9


def jain(values: Sequence[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2) over the finite values; None over none
    (or when all are 0)."""
    x = np.asarray(values, dtype=float)
    x = x[np.isfinite(x)]
    squares = float((x * x).sum())
    if len(x) == 0 or squares == 0.0:
        return None
    return float(x.sum()) ** 2 / (len(x) * squares)


def alone_time(exec_s: np.ndarray, demand: np.ndarray, quota: np.ndarray) -> np.ndarray:
    """T_alone = execution time x max(1, demand / quota); NaN where the quota is 0 (no dedicated
    share to finish on)."""
    exec_s, demand, quota = (np.asarray(a, dtype=float) for a in (exec_s, demand, quota))
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = np.where(quota > 0, np.maximum(1.0, demand / np.where(quota > 0, quota, 1.0)), np.nan)
    return exec_s * factor


def rho(jct: np.ndarray, t_alone: np.ndarray) -> np.ndarray:
    """Finish-time fairness JCT / T_alone (NaN where T_alone is NaN or not positive)."""
    jct, t_alone = np.asarray(jct, dtype=float), np.asarray(t_alone, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t_alone > 0, jct / np.where(t_alone > 0, t_alone, 1.0), np.nan)


def demand_at_arrival(submit: np.ndarray, leave: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """For each job of one group, the GPUs of the group's jobs in the system at its arrival:
    submitted at or before it and not yet gone (``leave`` > arrival; inf for a job that never
    leaves). The job itself is included."""
    submit, leave, gpus = (np.asarray(a, dtype=float) for a in (submit, leave, gpus))
    by_submit = np.argsort(submit, kind="stable")
    by_leave = np.argsort(leave, kind="stable")
    arrived = np.concatenate(([0.0], np.cumsum(gpus[by_submit])))
    left = np.concatenate(([0.0], np.cumsum(gpus[by_leave])))
    n_arrived = np.searchsorted(submit[by_submit], submit, side="right")
    n_left = np.searchsorted(leave[by_leave], submit, side="right")
    return arrived[n_arrived] - left[n_left]


@dataclass(frozen=True, slots=True)
class QuotaBook:
    """The quotas the clusters declare (whatever ``scheduler.quota`` says), as the metrics read them.
    A tenant a cluster does not list, and a job without a tenant, count against the cluster's
    pool of unlisted tenants (capacity minus the listed quotas), as in :mod:`simsched.core.tenancy`."""

    clusters: tuple[ClusterSpec, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.clusters)

    def any_quota(self) -> bool:
        return any(self.limited(c) for c in range(len(self.clusters)))

    def limited(self, c: int) -> bool:
        cluster = self.clusters[c]
        return bool(cluster.tenants) or cluster.quota_schedule is not None

    def listed(self, c: int) -> tuple[str, ...]:
        cluster = self.clusters[c]
        if cluster.quota_schedule is not None:
            return cluster.quota_schedule.tenants
        return tuple(t.name for t in cluster.tenants)

    def steps(self, c: int, tenant: str | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """Tenant's (None: the pool's) quota in cluster ``c`` as a step function: change times
        (the first 0; it holds before 0 too) and GPUs from each."""
        cluster = self.clusters[c]
        capacity = float(cluster.total_gpus)
        schedule = cluster.quota_schedule
        if schedule is not None:
            rows = schedule.gpus
            if tenant is None:
                return schedule.times, tuple(max(0.0, capacity - sum(row)) for row in rows)
            k = schedule.tenants.index(tenant)
            return schedule.times, tuple(float(row[k]) for row in rows)
        quotas = {t.name: float(t.total) for t in cluster.tenants}
        if tenant is None:
            return (0.0,), (max(0.0, capacity - sum(quotas.values())),)
        return (0.0,), (quotas[tenant],)

    def quota_at(self, c: int, tenant: str | None, times: np.ndarray) -> np.ndarray:
        """The quota (GPUs) in force at each of ``times``."""
        starts, gpus = self.steps(c, tenant)
        index = np.maximum(0, np.searchsorted(np.asarray(starts), np.asarray(times, dtype=float), side="right") - 1)
        return np.asarray(gpus, dtype=float)[index]

    def total_steps(self, tenant: str, clusters: Sequence[int]) -> list[list[float]]:
        """Tenant's quota summed over ``clusters`` as [time, GPUs] steps (the first at 0)."""
        times = sorted({t for c in clusters for t in self.steps(c, tenant)[0]})
        at = np.asarray(times, dtype=float)
        total = sum((self.quota_at(c, tenant, at) for c in clusters), np.zeros(len(at)))
        return [[float(t), float(g)] for t, g in zip(times, total)]

    def gpu_seconds(self, c: int, tenant: str | None, t0: float, t1: float) -> float:
        """The quota integrated over [t0, t1] (GPU-seconds); the first step holds before its time too."""
        starts, gpus = self.steps(c, tenant)
        total = 0.0
        for k, gpus_k in enumerate(gpus):
            low = t0 if k == 0 else max(t0, starts[k])
            high = t1 if k + 1 == len(starts) else min(t1, starts[k + 1])
            if high > low:
                total += gpus_k * (high - low)
        return total


def _groups(labels: np.ndarray, rows: np.ndarray) -> list[np.ndarray]:
    """``rows`` split by their ``labels`` (same length), each group in row order."""
    if not len(rows):
        return []
    codes, _ = pd.factorize(pd.Series(labels, dtype=object))
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    return [rows[part] for part in np.split(order, bounds)]


def _stats(values: np.ndarray) -> tuple[float | None, float | None]:
    values = values[np.isfinite(values)]
    if not len(values):
        return None, None
    return float(values.mean()), float(np.quantile(values, 0.95))


def _mean(values: np.ndarray) -> float | None:
    values = values[np.isfinite(values)]
    return float(values.mean()) if len(values) else None


def tenant_summary(df: pd.DataFrame, exec_s: np.ndarray, cluster_of: np.ndarray, book: QuotaBook,
                   start: float, end: float) -> dict:
    """The ``tenants`` block and the overall fairness figures of one run.

    ``exec_s``: per job (row order of ``df``), its execution time as run (s); ``cluster_of``: the
    cluster each job counts for ("" when none); ``start``, ``end``: the span the quota GPU-hours
    are integrated over (first submit to the end of the run)."""
    status = df["status"].to_numpy(object)
    counted = (status == "done") | (status == "unfinished")
    tenant = df["tenant"].fillna("").astype(str).to_numpy(object)
    submit = df["submit"].to_numpy(float)
    jct = df["jct"].to_numpy(float)
    wait = df["wait"].to_numpy(float)
    gpus = df["gpus"].to_numpy(float)
    exec_s = np.asarray(exec_s, dtype=float)
    # an unfinished job stays in its tenant's demand to the end of the run (and past any arrival)
    leave = np.where(status == "done", df["end"].to_numpy(float), np.inf)
    slowdown = np.where(counted, np.maximum(1.0, jct / np.maximum(exec_s, SLOWDOWN_BOUND_S)), np.nan)

    names = book.names
    if len(names) == 1:  # an unfinished job that never ran and has no home still belongs to the only cluster
        cluster_of = np.where(cluster_of == "", names[0], cluster_of)
    t_alone = np.full(len(df), np.nan)
    for c, name in enumerate(names):
        rows = np.flatnonzero(counted & (cluster_of == name))
        if not len(rows):
            continue
        limited = book.limited(c)
        listed = set(book.listed(c))
        # whose quota a job counts against: its tenant's, or the pool of unlisted tenants ("")
        key = np.array([t if t in listed else "" for t in tenant[rows].tolist()], dtype=object) if limited \
            else tenant[rows]
        fair_share = float(book.clusters[c].total_gpus) / len(set(tenant[rows].tolist()))
        for part in _groups(key, np.arange(len(rows))):
            group = rows[part]
            demand = demand_at_arrival(submit[group], leave[group], gpus[group])
            quota = book.quota_at(c, key[part[0]] or None, submit[group]) if limited \
                else np.full(len(group), fair_share)
            t_alone[group] = alone_time(exec_s[group], demand, quota)
    rhos = np.where(counted, rho(jct, t_alone), np.nan)

    tenants: dict[str, dict] = {}
    gpu_seconds = df["gpu_seconds"].to_numpy(float)
    groups = {tenant[g[0]]: g for g in _groups(tenant, np.arange(len(df)))}
    for name in sorted(groups):
        mine = groups[name]
        kept = mine[counted[mine]]
        mean_jct, p95_jct = _stats(jct[kept])
        mean_wait, p95_wait = _stats(wait[kept])
        used = float(gpu_seconds[mine].sum()) / 3600.0
        holders = [c for c in range(len(names)) if name and name in book.listed(c)]
        quota = sum(book.gpu_seconds(c, name, start, end) for c in holders) / 3600.0 if holders else None
        tenant_rho = rhos[kept]
        tenant_rho = tenant_rho[np.isfinite(tenant_rho)]
        tenants[name or NO_TENANT] = {
            "jobs": int(len(mine)),
            "counted": int(len(kept)),
            "mean_jct": mean_jct, "p95_jct": p95_jct,
            "mean_wait": mean_wait, "p95_wait": p95_wait,
            "mean_slowdown": _mean(slowdown[kept]),
            "ftf_rho_max": float(tenant_rho.max()) if len(tenant_rho) else None,
            "gpu_hours": used,
            "quota_gpu_hours": quota,
            "usage_over_quota": used / quota if quota else None,
        }
        if holders:  # for the usage-against-quota plot: the quota over time, summed over its clusters
            tenants[name]["quota_steps"] = book.total_steps(name, holders)
    defined = rhos[np.isfinite(rhos)]
    return {
        "tenants": tenants,
        "jain_slowdown": jain([t["mean_slowdown"] for t in tenants.values() if t["mean_slowdown"] is not None]),
        "ftf_rho_max": float(defined.max()) if len(defined) else None,
        "ftf_rho_share_above_1": float((defined > 1.0 + RHO_TOLERANCE).mean()) if len(defined) else None,
        "ftf_rho_jobs": int(len(defined)),
    }


def has_tenants(df: pd.DataFrame, book: QuotaBook | None) -> bool:
    """Whether a run has tenants: a job with one, or a cluster with quotas."""
    if book is not None and book.any_quota():
        return True
    return bool((df["tenant"].fillna("").astype(str) != "").any()) if "tenant" in df else False
