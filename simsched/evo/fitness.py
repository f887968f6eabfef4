"""An assignment's objective (Eq. 5 or 16): per-cluster plans and the exact fitness cache.

A cluster's plan depends only on the set of jobs assigned to it, because its
jobs are always planned in global priority order (Algorithm 2). So the EA
caches each cluster's objective sums exactly, per (cluster, job set): the key
is a Zobrist hash of the set, and every hit is confirmed by comparing the set's
bitset. :func:`_evaluate` plans each cluster whose set misses the cache
(:func:`_plan_sums`, numba) and combines the sums (:func:`objective._combine`).
:func:`objective_reference` computes the same value through the plain-Python
planner and :func:`~simsched.evo.objective.objective`; tests require the two to
agree (tests/test_evo_allocation.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from simsched.evo.instance import AllocationInstance, _as_job_cluster, _Kernel, _new_states
from simsched.evo.objective import _combine, objective
from simsched.evo.planner import (
    Plan,
    _commit_fill,
    _earliest,
    _place_one,
    _state_copy,
    plan_kernel,
    plan_reference,
)


class _Workspace(NamedTuple):
    states: tuple
    sigma: np.ndarray  # (P, N_max)
    nodes: np.ndarray  # (max workers,)
    members: np.ndarray  # (P, J) jobs of each cluster, in priority order
    member_count: np.ndarray  # (P,)
    keys: np.ndarray  # (P,) uint64
    bits: np.ndarray  # (P, W) uint64
    candidates: np.ndarray  # (N_max,) scratch of planner._commit_fill


def _workspace(k: _Kernel) -> _Workspace:
    n_clusters, n_nodes = k.capacity.shape
    n_jobs = k.workers.shape[0]
    return _Workspace(
        _new_states(n_clusters, n_nodes, k.max_items, k.max_entries),
        np.zeros((n_clusters, n_nodes), np.int64),
        np.zeros(max(int(k.workers.max(initial=1)), 1), np.int64),
        np.zeros((n_clusters, max(n_jobs, 1)), np.int64),
        np.zeros(n_clusters, np.int64),
        np.zeros(n_clusters, np.uint64),
        np.zeros((n_clusters, max((n_jobs + 63) // 64, 1)), np.uint64),
        np.zeros(n_nodes, np.int64),
    )


class _Cache(NamedTuple):
    """Open-addressing table: (cluster, job-set hash, job-set bitset) -> the cluster's 5 sums."""

    used: np.ndarray  # (T,) bool
    cluster: np.ndarray  # (T,) int64
    key: np.ndarray  # (T,) uint64
    bits: np.ndarray  # (T, W) uint64
    sums: np.ndarray  # (T, 5) float64
    stats: np.ndarray  # [evaluations, cluster plans, cache hits, entries]


def _new_cache(n_jobs: int, expected: int) -> _Cache:
    words = max((n_jobs + 63) // 64, 1)
    limit = max(1 << 12, (64 << 20) // (8 * (words + 8)))  # at most ~64 MB
    size = 1 << max(12, min(int(2 * expected), limit).bit_length())
    size = min(size, 1 << max(12, limit.bit_length() - 1))
    return _Cache(
        np.zeros(size, bool),
        np.zeros(size, np.int64),
        np.zeros(size, np.uint64),
        np.zeros((size, words), np.uint64),
        np.zeros((size, 5), np.float64),
        np.zeros(4, np.int64),
    )


@njit(cache=True)
def _reset_cluster(k: _Kernel, ws: _Workspace, p: int) -> None:
    """Cluster p's working state back to its fixed jobs only (the template)."""
    tb, tf, to, tn, tu, tbf, tc = k.template
    b, f, o, en, eu, bf, c = ws.states
    _state_copy(tb[p], tf[p], to[p], tn[p], tu[p], tbf[p], tc[p],
                b[p], f[p], o[p], en[p], eu[p], bf[p], c[p])


@njit(cache=True)
def _plan_sums(k: _Kernel, ws: _Workspace, p: int) -> tuple:
    """Plan cluster p with its member jobs and return (sum u q, max u q, sum work d, max F, count)."""
    _reset_cluster(k, ws, p)
    b, f, o, en, eu, bf, c = ws.states
    sum_uq = k.fixed_sums[p, 0]
    max_uq = k.fixed_sums[p, 1]
    sum_gd = k.fixed_sums[p, 2]
    max_f = k.fixed_sums[p, 3]
    count = k.fixed_sums[p, 4]
    now = k.now
    sigma = ws.sigma[p]
    # this cluster's state rows, taken once (not per job: a view per argument per call adds up)
    bp, fp, op, enp, eup, bfp, cp = b[p], f[p], o[p], en[p], eu[p], bf[p], c[p]
    for i in range(ws.member_count[p]):
        j = ws.members[p, i]
        units = k.per_worker[j, p]
        r = k.workers[j]
        d = k.duration[j, p]
        if r == 1:
            t, fin = _place_one(now, units, d, bp, fp, op, enp, eup, bfp, cp, sigma)
            if t == np.inf:
                return np.inf, np.inf, np.inf, np.inf, count + 1.0
        else:
            t = _earliest(now, units, r, bp, fp, op, enp, eup, bfp, cp, sigma)
            if t == np.inf:
                return np.inf, np.inf, np.inf, np.inf, count + 1.0
            fin = _commit_fill(now, t, d, units, r, sigma, bp, fp, op, enp, eup, bfp, cp, ws.candidates)
        uq = k.weight[j] * (k.queued[j] + (t - now))  # Eq. 2
        sum_uq += uq
        if uq > max_uq:
            max_uq = uq
        sum_gd += k.work[j, p]
        if fin > max_f:
            max_f = fin
        count += 1.0
    return sum_uq, max_uq, sum_gd, max_f, count


@njit(cache=True)
def _mix(key: np.uint64, p: int) -> np.uint64:
    h = key ^ (np.uint64(p + 1) * np.uint64(0x9E3779B97F4A7C15))
    h = (h ^ (h >> np.uint64(29))) * np.uint64(0xBF58476D1CE4E5B9)
    return h ^ (h >> np.uint64(32))


@njit(cache=True)
def _evaluate(k: _Kernel, ws: _Workspace, cache: _Cache, use_cache: bool, a: np.ndarray) -> float:
    """The objective for assignment ``a``: plan every cluster (or reuse its cached sums) and combine."""
    n_clusters = k.capacity.shape[0]
    words = ws.bits.shape[1]
    for p in range(n_clusters):
        ws.member_count[p] = 0
        ws.keys[p] = np.uint64(0)
        for w in range(words):
            ws.bits[p, w] = np.uint64(0)
    for i in range(k.order.shape[0]):
        j = k.order[i]
        p = a[j]
        if p < 0:
            continue
        ws.members[p, ws.member_count[p]] = j
        ws.member_count[p] += 1
        ws.keys[p] += k.zobrist[j]
        ws.bits[p, j >> 6] |= np.uint64(1) << np.uint64(j & 63)
    cache.stats[0] += 1
    size = cache.used.shape[0]
    mask = np.uint64(size - 1)
    total_sum_uq = 0.0
    total_max_uq = -np.inf
    total_sum_gd = 0.0
    total_max_f = k.now
    total_count = 0.0
    for p in range(n_clusters):
        slot = -1
        hit = False
        if use_cache:
            idx = np.int64(_mix(ws.keys[p], p) & mask)
            for _ in range(size):
                if not cache.used[idx]:
                    slot = idx
                    break
                if cache.cluster[idx] == p and cache.key[idx] == ws.keys[p]:
                    same = True
                    for w in range(words):
                        if cache.bits[idx, w] != ws.bits[p, w]:
                            same = False
                            break
                    if same:
                        slot = idx
                        hit = True
                        break
                idx = (idx + 1) & (size - 1)
        if hit:
            cache.stats[2] += 1
            s0 = cache.sums[slot, 0]
            s1 = cache.sums[slot, 1]
            s2 = cache.sums[slot, 2]
            s3 = cache.sums[slot, 3]
            s4 = cache.sums[slot, 4]
        else:
            cache.stats[1] += 1
            s0, s1, s2, s3, s4 = _plan_sums(k, ws, p)
            # Keep the table at most 3/4 full so probes stay short.
            if slot >= 0 and 4 * (cache.stats[3] + 1) <= 3 * size:
                cache.used[slot] = True
                cache.cluster[slot] = p
                cache.key[slot] = ws.keys[p]
                for w in range(words):
                    cache.bits[slot, w] = ws.bits[p, w]
                cache.sums[slot, 0] = s0
                cache.sums[slot, 1] = s1
                cache.sums[slot, 2] = s2
                cache.sums[slot, 3] = s3
                cache.sums[slot, 4] = s4
                cache.stats[3] += 1
        total_sum_uq += s0
        if s1 > total_max_uq:
            total_max_uq = s1
        total_sum_gd += s2
        if s3 > total_max_f:
            total_max_f = s3
        total_count += s4
    return _combine(
        k.now,
        total_sum_uq,
        total_max_uq,
        total_sum_gd,
        total_max_f,
        total_count,
        k.total_capacity,
        k.weights[0],
        k.weights[1],
        k.weights[2],
        k.weights[3],
    )


@njit(cache=True)
def _evaluate_population(
    k: _Kernel,
    ws: _Workspace,
    cache: _Cache,
    use_cache: bool,
    population: np.ndarray,
    out: np.ndarray,
) -> None:
    for i in range(population.shape[0]):
        out[i] = _evaluate(k, ws, cache, use_cache, population[i])


def evaluate_assignment(instance: AllocationInstance, assignment: np.ndarray) -> float:
    """Eq. 5 of the plans that ``assignment`` gives (numba path, no cache)."""
    a = instance.check_assignment(assignment)
    k = instance.kernel
    return float(_evaluate(k, _workspace(k), _new_cache(instance.n_jobs, 0), False, a))


def plan_assignment(
    instance: AllocationInstance, assignment: np.ndarray, reference: bool = False
) -> tuple[Plan, ...]:
    """One :class:`Plan` per cluster, over all J jobs (nan for jobs assigned elsewhere).

    The engine starts the jobs whose planned start is ``now`` on their cluster.
    ``reference=True`` uses the plain-Python planner (for tests).
    """
    a = instance.check_assignment(assignment)
    k = instance.kernel
    planner = plan_reference if reference else plan_kernel
    plans = []
    for p, c in enumerate(instance.clusters):
        order = k.order[a[k.order] == p]
        plans.append(
            planner(
                instance.now,
                c.capacity,
                c.fixed_finish,
                c.fixed_usage,
                k.per_worker[:, p],
                k.workers,
                k.duration[:, p],
                order,
            )
        )
    return tuple(plans)


def objective_reference(instance: AllocationInstance, assignment: np.ndarray) -> float:
    """The objective (Eq. 5 or 16) via :func:`plan_reference` and :func:`objective`; the kernel path must agree."""
    a = instance.check_assignment(assignment)
    k = instance.kernel
    plans = plan_assignment(instance, a, reference=True)
    weight, queued, start, remaining, gpus, useful = [], [], [], [], [], []
    overhead = np.zeros_like(k.duration) if instance.overhead is None else _as_job_cluster(
        "overhead", instance.overhead, instance.n_jobs, instance.n_clusters, np.float64)
    for p, (c, plan) in enumerate(zip(instance.clusters, plans)):
        running = c.fixed_finish > instance.now
        weight.append(c.fixed_weight[running])
        queued.append(c.fixed_queued[running])
        start.append(np.full(int(running.sum()), instance.now))
        remaining.append(c.fixed_finish[running] - instance.now)
        useful.append(c.fixed_finish[running] - instance.now)
        gpus.append(c.fixed_usage[running].sum(axis=1).astype(np.float64))
        mine = np.nonzero(a == p)[0]
        weight.append(k.weight[mine])
        queued.append(k.queued[mine])
        start.append(plan.start[mine])
        remaining.append(k.duration[mine, p])
        useful.append(k.duration[mine, p] - overhead[mine, p])
        gpus.append((k.per_worker[mine, p] * k.workers[mine]).astype(np.float64))
    return objective(
        instance.now,
        *(np.concatenate(x) for x in (weight, queued, start, remaining, gpus)),
        total_capacity=k.total_capacity,
        weights=tuple(instance.weights),
        kind=instance.kind,
        w=instance.w,
        useful=np.concatenate(useful),
    )
