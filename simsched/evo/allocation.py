"""Cluster allocation for the schedulable jobs: MCT and the EA of Algorithm 1 (SPEC §4, §6).

An :class:`AllocationInstance` holds one decision's data as arrays. It gives
P clusters (capacity per node plus the running jobs that stay there) and J
schedulable jobs, with their per-cluster units per worker and remaining
duration, their weight, queued time and priority value f(j). An assignment is
one cluster index per job (-1 for a job that no cluster can host).

A cluster's plan depends only on the set of jobs assigned to it, because its
jobs are always planned in global priority order. So the EA caches each
cluster's objective sums exactly, per (cluster, job set). The key is a
Zobrist hash of the set, and every hit is confirmed by comparing the set's
bitset. Planning, objective sums, offspring and the cache all run in numba.
Python keeps only the generation loop and the selection.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from numba import njit

from simsched.errors import InputError
from simsched.evo.objective import DEFAULT_WEIGHTS, _combine, combine_weights, objective
from simsched.evo.planner import (
    Plan,
    _commit,
    _commit_fill,
    _earliest,
    _place_one,
    _state_copy,
    _state_from_fixed,
    plan_kernel,
    plan_reference,
)
from simsched.evo.priority import NanPriority

SEED_OPTIONS: tuple[str, ...] = ("mct", "current")


@dataclass(frozen=True, slots=True, eq=False)
class ClusterState:
    """One cluster at decision time: node capacities and the running jobs it keeps.

    ``fixed_usage[k, n]`` holds the units that running job k takes on node n. A
    running job counts in the objective with its ``fixed_weight`` (u) and its
    ``fixed_queued`` time, until ``fixed_finish``.
    """

    capacity: np.ndarray
    fixed_finish: np.ndarray | None = None
    fixed_usage: np.ndarray | None = None
    fixed_weight: np.ndarray | None = None
    fixed_queued: np.ndarray | None = None

    def __post_init__(self) -> None:
        cap = np.ascontiguousarray(np.asarray(self.capacity).reshape(-1), dtype=np.int64)
        if np.any(cap < 0):
            raise InputError('ClusterState: "capacity" must be >= 0 on every node')
        ffin = np.zeros(0) if self.fixed_finish is None else self.fixed_finish
        ffin = np.ascontiguousarray(np.asarray(ffin, dtype=np.float64).reshape(-1))
        if np.any(np.isnan(ffin)):
            raise InputError('ClusterState: "fixed_finish" must not be NaN')
        k = ffin.shape[0]
        fuse = np.zeros((k, cap.shape[0])) if self.fixed_usage is None else self.fixed_usage
        fuse = np.asarray(fuse)
        if fuse.size == 0:
            fuse = np.zeros((k, cap.shape[0]))
        if fuse.shape != (k, cap.shape[0]):
            raise InputError(
                f'ClusterState: "fixed_usage" must have shape ({k}, {cap.shape[0]}), got {fuse.shape}'
            )
        weight = np.ones(k) if self.fixed_weight is None else self.fixed_weight
        queued = np.zeros(k) if self.fixed_queued is None else self.fixed_queued
        weight = np.asarray(weight, dtype=np.float64).reshape(-1)
        queued = np.asarray(queued, dtype=np.float64).reshape(-1)
        if weight.shape[0] != k or queued.shape[0] != k:
            raise InputError(
                'ClusterState: "fixed_weight" and "fixed_queued" need one entry per fixed job'
            )
        object.__setattr__(self, "capacity", cap)
        object.__setattr__(self, "fixed_finish", ffin)
        object.__setattr__(self, "fixed_usage", np.ascontiguousarray(fuse, dtype=np.int64))
        object.__setattr__(self, "fixed_weight", weight)
        object.__setattr__(self, "fixed_queued", queued)


class _Kernel(NamedTuple):
    """Everything the numba kernels read, packed once per instance."""

    now: float
    capacity: np.ndarray  # (P, N_max), padded with 0-capacity nodes
    template: tuple  # fixed-jobs planner state per cluster (see planner.py)
    fixed_sums: np.ndarray  # (P, 5): sum u q, max u q, sum work, max F, count
    per_worker: np.ndarray  # (J, P)
    workers: np.ndarray  # (J,)
    duration: np.ndarray  # (J, P)
    weight: np.ndarray  # (J,) u_j (1 under Eq. 16)
    work: np.ndarray  # (J, P) the job's work term: g_j x useful d_j (Eq. 5), d_j (Eq. 16)
    queued: np.ndarray  # (J,)
    order: np.ndarray  # (J,) job indices by increasing f(j), ties by index
    feasible: np.ndarray  # (J, P) bool
    feasible_offset: np.ndarray  # (J + 1,)
    feasible_list: np.ndarray  # clusters of job j: feasible_list[offset[j]:offset[j+1]]
    mobile: np.ndarray  # jobs with at least two feasible clusters
    zobrist: np.ndarray  # (J,) uint64
    total_capacity: float
    weights: np.ndarray  # (4,) w1..w4 of _combine
    max_items: int
    max_entries: int


def _as_job_cluster(
    name: str, values: object, n_jobs: int, n_clusters: int, dtype: type
) -> np.ndarray:
    arr = np.asarray(values, dtype=dtype)
    if arr.ndim == 1:
        arr = np.repeat(arr[:, None], n_clusters, axis=1)
    if arr.shape != (n_jobs, n_clusters):
        raise InputError(
            f'"{name}" must have shape ({n_jobs},) or ({n_jobs}, {n_clusters}), got {arr.shape}'
        )
    return np.ascontiguousarray(arr)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    z = x.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@dataclass(frozen=True, slots=True, eq=False)
class AllocationInstance:
    """One allocation decision: clusters, schedulable jobs and their priority values.

    ``per_worker`` (units per worker) and ``duration`` (remaining seconds) may
    be per job, shape (J,), or per job and cluster, shape (J, P). ``allowed``
    (J, P) lets the caller forbid clusters (GPU type, home-only). ``current``
    is the cluster a job is on now (-1 if queued). It is used only to seed the EA.
    ``kind`` is the objective (``"eq5"`` with ``weights``, or ``"eq16"`` with ``w``).
    ``overhead`` (J,) or (J, P), default 0, is the part of ``duration`` that is no useful
    work (a restart penalty): it holds the GPUs but does not count in C_u (Eq. 4).
    ``feasible`` is computed: allowed, and Eq. 10 generalised: at least r_j
    workers fit in the empty cluster.
    """

    now: float
    clusters: tuple[ClusterState, ...]
    per_worker: np.ndarray
    workers: np.ndarray
    duration: np.ndarray
    weight: np.ndarray
    queued: np.ndarray
    priority: np.ndarray
    allowed: np.ndarray | None = None
    overhead: np.ndarray | None = None
    current: np.ndarray | None = None
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS
    kind: str = "eq5"
    w: float = 0.5
    feasible: np.ndarray = field(init=False, repr=False, compare=False)
    kernel: _Kernel = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not math.isfinite(self.now):
            raise InputError(f'"now" must be finite, got {self.now}')
        clusters = tuple(self.clusters)
        if not clusters:
            raise InputError("an allocation instance needs at least one cluster")
        n_clusters = len(clusters)
        workers = np.ascontiguousarray(np.asarray(self.workers, dtype=np.int64).reshape(-1))
        n_jobs = workers.shape[0]
        per_worker = _as_job_cluster("per_worker", self.per_worker, n_jobs, n_clusters, np.int64)
        duration = _as_job_cluster("duration", self.duration, n_jobs, n_clusters, np.float64)
        weight = np.ascontiguousarray(np.asarray(self.weight, dtype=np.float64).reshape(-1))
        queued = np.ascontiguousarray(np.asarray(self.queued, dtype=np.float64).reshape(-1))
        priority = np.asarray(self.priority, dtype=np.float64).reshape(-1)
        for name, arr in (("weight", weight), ("queued", queued), ("priority", priority)):
            if arr.shape[0] != n_jobs:
                raise InputError(
                    f'"{name}" must have one entry per job ({n_jobs}), got {arr.shape[0]}'
                )
        if np.any(workers <= 0) or np.any(per_worker <= 0):
            raise InputError('"workers" and "per_worker" must be > 0')
        if not np.all(np.isfinite(duration)) or np.any(duration < 0):
            raise InputError('"duration" must be finite and >= 0')
        if np.any(np.isnan(priority)):
            raise NanPriority('"priority" must not be NaN')
        combined = combine_weights(self.kind, tuple(self.weights), self.w)
        unweighted = self.kind == "eq16"
        if unweighted:
            weight = np.ones_like(weight)
            work = duration.copy()
        else:
            useful = duration
            if self.overhead is not None:
                overhead = _as_job_cluster("overhead", self.overhead, n_jobs, n_clusters, np.float64)
                if np.any(overhead < 0) or np.any(overhead > duration):
                    raise InputError('"overhead" must be between 0 and "duration"')
                useful = duration - overhead
            work = (per_worker * workers[:, None]).astype(np.float64) * useful
        allowed = np.ones((n_jobs, n_clusters), dtype=bool)
        if self.allowed is not None:
            allowed = _as_job_cluster("allowed", self.allowed, n_jobs, n_clusters, bool)
        if self.current is not None:
            current = np.asarray(self.current, dtype=np.int64).reshape(-1)
            if current.shape[0] != n_jobs or np.any(current < -1) or np.any(current >= n_clusters):
                raise InputError(f'"current" must hold one cluster index or -1 per job ({n_jobs})')
            object.__setattr__(self, "current", current)

        n_max = max(c.capacity.shape[0] for c in clusters)
        capacity = np.zeros((n_clusters, n_max), dtype=np.int64)
        slots = np.zeros((n_jobs, n_clusters), dtype=np.int64)
        for p, c in enumerate(clusters):
            capacity[p, : c.capacity.shape[0]] = c.capacity
            slots[:, p] = (c.capacity[None, :] // per_worker[:, p : p + 1]).sum(axis=1)
        feasible = allowed & (slots >= workers[:, None])  # Eq. 10, generalised
        counts = feasible.sum(axis=1)
        offset = np.zeros(n_jobs + 1, dtype=np.int64)
        np.cumsum(counts, out=offset[1:])
        feasible_list = np.nonzero(feasible)[1].astype(np.int64)

        k_max = max(c.fixed_finish.shape[0] for c in clusters)
        fixed_entries = max(int(np.count_nonzero(c.fixed_usage)) for c in clusters)
        max_items = k_max + n_jobs
        max_entries = fixed_entries + int(workers.sum())
        template = _new_states(n_clusters, n_max, max_items, max_entries)
        fixed_sums = np.zeros((n_clusters, 5))
        for p, c in enumerate(clusters):
            usage = np.zeros((c.fixed_finish.shape[0], n_max), dtype=np.int64)
            usage[:, : c.capacity.shape[0]] = c.fixed_usage
            running = c.fixed_finish > self.now
            over = capacity[p] - usage[running].sum(axis=0)
            if np.any(over < 0):
                raise InputError(
                    f"cluster {p}: running jobs over-allocate node {int(np.argmin(over))}"
                )
            _state_from_fixed(
                self.now, capacity[p], c.fixed_finish, usage, *(a[p] for a in template)
            )
            fixed_weight = np.ones_like(c.fixed_weight) if unweighted else c.fixed_weight
            uq = fixed_weight[running] * c.fixed_queued[running]
            remaining = c.fixed_finish[running] - self.now
            fixed_work = np.ones(int(running.sum())) if unweighted else usage[running].sum(axis=1)
            fixed_sums[p] = (
                uq.sum(),
                uq.max(initial=-np.inf),
                (fixed_work * remaining).sum(),
                c.fixed_finish[running].max(initial=self.now),
                running.sum(),
            )

        object.__setattr__(self, "clusters", clusters)
        object.__setattr__(self, "feasible", feasible)
        object.__setattr__(
            self,
            "kernel",
            _Kernel(
                now=float(self.now),
                capacity=capacity,
                template=template,
                fixed_sums=fixed_sums,
                per_worker=per_worker,
                workers=workers,
                duration=duration,
                weight=weight,
                work=np.ascontiguousarray(work),
                queued=queued,
                order=np.argsort(priority, kind="stable").astype(np.int64),
                feasible=feasible,
                feasible_offset=offset,
                feasible_list=feasible_list,
                mobile=np.nonzero(counts >= 2)[0].astype(np.int64),
                zobrist=_splitmix64(np.arange(n_jobs, dtype=np.uint64)),
                total_capacity=float(capacity.sum()),
                weights=np.asarray(combined, dtype=np.float64),
                max_items=max_items,
                max_entries=max_entries,
            ),
        )

    @property
    def n_jobs(self) -> int:
        return int(self.kernel.workers.shape[0])

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    def check_assignment(self, assignment: np.ndarray) -> np.ndarray:
        """``assignment`` as int64, or :class:`InputError` when a job is on an infeasible cluster."""
        a = np.asarray(assignment, dtype=np.int64).reshape(-1)
        if a.shape[0] != self.n_jobs:
            raise InputError(
                f"assignment must have one cluster per job ({self.n_jobs}), got {a.shape[0]}"
            )
        for j, p in enumerate(a):
            has_any = bool(self.feasible[j].any())
            if (p == -1 and has_any) or (
                p != -1 and not (0 <= p < self.n_clusters and self.feasible[j, p])
            ):
                valid = np.nonzero(self.feasible[j])[0].tolist() or [-1]
                raise InputError(f"job {j} assigned to cluster {int(p)}; feasible: {valid}")
        return a


def _new_states(n_clusters: int, n_nodes: int, max_items: int, max_entries: int) -> tuple:
    """P empty planner states (rows of 2-d arrays), in the argument order of planner kernels."""
    return (
        np.zeros((n_clusters, n_nodes), np.int64),  # base
        np.zeros((n_clusters, max(max_items, 1)), np.float64),  # item_finish
        np.zeros((n_clusters, max_items + 1), np.int64),  # item_offset
        np.zeros((n_clusters, max(max_entries, 1)), np.int64),  # entry_node
        np.zeros((n_clusters, max(max_entries, 1)), np.int64),  # entry_units
        np.zeros((n_clusters, max(max_items, 1)), np.int64),  # by_finish
        np.zeros((n_clusters, 2), np.int64),  # counts
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


# ------------------------------------------------------------------ kernels
@njit(cache=True)
def _pick(u: float, count: int) -> int:
    """A uniform draw in [0, 1) to an index in [0, count)."""
    i = int(u * count)
    return i if i < count else count - 1


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


@njit(cache=True)
def _before(a: float, b: float) -> bool:
    """``a`` sorts before ``b`` in numpy's order for floats (NaN last)."""
    return a < b or (np.isnan(b) and not np.isnan(a))


@njit(cache=True)
def _generation(
    k: _Kernel,
    ws: _Workspace,
    cache: _Cache,
    use_cache: bool,
    population: np.ndarray,
    fitness: np.ndarray,
    uniforms: np.ndarray,
    mutation_rate: float,
    children: np.ndarray,
    child_fitness: np.ndarray,
    child_order: np.ndarray,
    out_population: np.ndarray,
    out_fitness: np.ndarray,
) -> None:
    """One EA generation: offspring, their objectives, and the best n of parents and offspring.

    The selection is ``np.argsort(concat(fitness, child_fitness), kind="stable")[:n]``
    (parents win ties), computed as a merge: ``population`` is sorted by ``fitness``
    already (every generation leaves it so), the children are sorted stably here.
    """
    _offspring(k, population, uniforms, mutation_rate, children)
    _evaluate_population(k, ws, cache, use_cache, children, child_fitness)
    _select(population, fitness, children, child_fitness, child_order, out_population, out_fitness)


@njit(cache=True)
def _select(
    population: np.ndarray,
    fitness: np.ndarray,
    children: np.ndarray,
    child_fitness: np.ndarray,
    child_order: np.ndarray,
    out_population: np.ndarray,
    out_fitness: np.ndarray,
) -> None:
    """The best n of parents (sorted by ``fitness``) and children, as numpy's stable argsort
    of the concatenation (NaN last, parents win ties) would keep them, in that order."""
    m = child_fitness.shape[0]
    for c in range(m):  # stable insertion sort of the children by fitness
        value = child_fitness[c]
        pos = c
        while pos > 0 and _before(value, child_fitness[child_order[pos - 1]]):
            child_order[pos] = child_order[pos - 1]
            pos -= 1
        child_order[pos] = c
    n = population.shape[0]
    i = 0
    c = 0
    for slot in range(n):
        if c < m and (i >= n or _before(child_fitness[child_order[c]], fitness[i])):
            out_population[slot] = children[child_order[c]]
            out_fitness[slot] = child_fitness[child_order[c]]
            c += 1
        else:
            out_population[slot] = population[i]
            out_fitness[slot] = fitness[i]
            i += 1


@njit(cache=True)
def _random_init(k: _Kernel, uniforms: np.ndarray, out: np.ndarray) -> None:
    """Feasibility-aware init: each job on a uniformly drawn feasible cluster (-1 if none)."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            lo = k.feasible_offset[j]
            count = k.feasible_offset[j + 1] - lo
            out[i, j] = k.feasible_list[lo + _pick(uniforms[i, j], count)] if count > 0 else -1


@njit(cache=True)
def _mutate(k: _Kernel, child: np.ndarray, u_kind: float, u_job: float, u_choice: float) -> None:
    """Half the time move one job to another feasible cluster, else swap two jobs' clusters."""
    n_mobile = k.mobile.shape[0]
    if n_mobile == 0:
        return
    j = k.mobile[_pick(u_job, n_mobile)]
    p = child[j]
    if u_kind < 0.5:
        lo = k.feasible_offset[j]
        count = k.feasible_offset[j + 1] - lo
        m = _pick(u_choice, count - 1)
        for f in range(lo, lo + count):
            q = k.feasible_list[f]
            if q == p:
                continue
            if m == 0:
                child[j] = q
                return
            m -= 1
        return
    # Swap: a job on another of j's feasible clusters that may itself run on p.
    candidates = 0
    for other in range(child.shape[0]):
        q = child[other]
        if q >= 0 and q != p and k.feasible[j, q] and k.feasible[other, p]:
            candidates += 1
    if candidates == 0:
        return
    m = _pick(u_choice, candidates)
    for other in range(child.shape[0]):
        q = child[other]
        if q >= 0 and q != p and k.feasible[j, q] and k.feasible[other, p]:
            if m == 0:
                child[j] = q
                child[other] = p
                return
            m -= 1


@njit(cache=True)
def _offspring(
    k: _Kernel, population: np.ndarray, uniforms: np.ndarray, mutation_rate: float, out: np.ndarray
) -> None:
    """Two children per row of ``uniforms``: random parents, single-point crossover, mutation."""
    n = population.shape[0]
    n_jobs = population.shape[1]
    for i in range(uniforms.shape[0]):
        u = uniforms[i]
        first = population[_pick(u[0], n)]
        second = population[_pick(u[1], n)]
        cut = 1 + _pick(u[2], n_jobs - 1) if n_jobs >= 2 else n_jobs
        c1 = out[2 * i]
        c2 = out[2 * i + 1]
        for j in range(n_jobs):
            if j < cut:
                c1[j] = first[j]
                c2[j] = second[j]
            else:
                c1[j] = second[j]
                c2[j] = first[j]
        if u[3] < mutation_rate:
            _mutate(k, c1, u[4], u[5], u[6])
            _mutate(k, c2, u[7], u[8], u[9])


@njit(cache=True)
def _mct(k: _Kernel, ws: _Workspace, out: np.ndarray) -> None:
    """Jobs in priority order, each to the cluster where its planned finish is earliest."""
    n_clusters = k.capacity.shape[0]
    b, f, o, en, eu, bf, c = ws.states
    for p in range(n_clusters):
        _reset_cluster(k, ws, p)
    starts = np.empty(n_clusters)
    now = k.now
    for i in range(k.order.shape[0]):
        j = k.order[i]
        best = -1
        best_finish = np.inf
        for g in range(k.feasible_offset[j], k.feasible_offset[j + 1]):
            p = k.feasible_list[g]
            t = _earliest(
                now,
                k.per_worker[j, p],
                k.workers[j],
                b[p],
                f[p],
                o[p],
                en[p],
                eu[p],
                bf[p],
                c[p],
                ws.sigma[p],
            )
            starts[p] = t
            fin = t + k.duration[j, p]
            if fin < best_finish:
                best_finish = fin
                best = p
        out[j] = best
        if best >= 0:
            p = best
            _commit(
                now,
                starts[p],
                k.duration[j, p],
                k.per_worker[j, p],
                k.workers[j],
                ws.sigma[p],
                b[p],
                f[p],
                o[p],
                en[p],
                eu[p],
                bf[p],
                c[p],
                ws.nodes,
            )


# ------------------------------------------------------------------ public API
def mct_assign(instance: AllocationInstance) -> np.ndarray:
    """MCT allocation (SPEC §4): the cluster of earliest planned finish, jobs in priority order.

    Ties go to the lowest cluster index; a job with no feasible cluster gets -1.
    """
    out = np.full(instance.n_jobs, -1, dtype=np.int64)
    if instance.n_jobs:
        _mct(instance.kernel, _workspace(instance.kernel), out)
    return out


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


@dataclass(frozen=True, slots=True, eq=False)
class EvolveResult:
    """Outcome of :func:`evolve`. ``history[0]`` is the best after init, then one per generation."""

    assignment: np.ndarray
    objective: float
    history: np.ndarray
    generations: int
    evaluations: int
    cluster_plans: int
    cache_hits: int
    seeded: tuple[str, ...]
    stop_reason: str
    elapsed_s: float


def evolve(
    instance: AllocationInstance,
    rng: np.random.Generator,
    n: int = 100,
    generations: int = 200,
    mutation_rate: float = 0.1,
    time_budget_s: float | None = None,
    stagnation: int | None = None,
    seed_with: tuple[str, ...] = (),
    cache: bool = True,
) -> EvolveResult:
    """The allocation EA (Algorithm 1): the best assignment found, its Eq. 5 value and the history.

    ``time_budget_s`` stops before a generation once that much wall time has
    passed. ``stagnation`` stops after that many generations without
    improvement. ``seed_with`` puts the MCT and/or the current assignment into
    the initial population (jobs with no current cluster keep their random gene).
    """
    started = time.perf_counter()
    if n < 2:
        raise InputError(f'evolve: "n" must be >= 2, got {n}')
    if generations < 0:
        raise InputError(f'evolve: "generations" must be >= 0, got {generations}')
    if not 0.0 <= mutation_rate <= 1.0:
        raise InputError(f'evolve: "mutation_rate" must be in [0, 1], got {mutation_rate}')
    if stagnation is not None and stagnation < 1:
        raise InputError(f'evolve: "stagnation" must be >= 1, got {stagnation}')
    unknown = [s for s in seed_with if s not in SEED_OPTIONS]
    if unknown:
        raise InputError(
            f'evolve: unknown "seed_with" entries {unknown}; valid: {", ".join(SEED_OPTIONS)}'
        )
    if "current" in seed_with and instance.current is None:
        raise InputError('evolve: seed_with "current" needs the instance\'s "current" assignment')

    k = instance.kernel
    n_jobs = instance.n_jobs
    ws = _workspace(k)
    table = _new_cache(n_jobs, k.capacity.shape[0] * n * (generations + 1) if cache else 0)
    population = np.empty((n, n_jobs), dtype=np.int64)
    _random_init(k, rng.random((n, n_jobs)), population)
    seeded: list[str] = []
    for name in dict.fromkeys(seed_with):
        row = len(seeded)
        if name == "mct":
            population[row] = mct_assign(instance)
        else:
            current = instance.current
            ok = (current >= 0) & instance.feasible[np.arange(n_jobs), np.maximum(current, 0)]
            population[row, ok] = current[ok]
        seeded.append(name)
    fitness = np.empty(n)
    _evaluate_population(k, ws, table, cache, population, fitness)
    keep = np.argsort(fitness, kind="stable")
    population, fitness = population[keep], fitness[keep]

    history = [float(fitness[0])]
    n_pairs = (n + 1) // 2
    children = np.empty((2 * n_pairs, n_jobs), dtype=np.int64)
    child_fitness = np.empty(2 * n_pairs)
    child_order = np.empty(2 * n_pairs, dtype=np.int64)
    next_population = np.empty_like(population)
    next_fitness = np.empty_like(fitness)
    stop_reason = "generations"
    since_improvement = 0
    done = 0
    while done < generations:
        if time_budget_s is not None and time.perf_counter() - started >= time_budget_s:
            stop_reason = "time_budget"
            break
        if stagnation is not None and since_improvement >= stagnation:
            stop_reason = "stagnation"
            break
        _generation(k, ws, table, cache, population, fitness, rng.random((n_pairs, 10)), mutation_rate,
                    children, child_fitness, child_order, next_population, next_fitness)
        population, next_population = next_population, population
        fitness, next_fitness = next_fitness, fitness
        since_improvement = since_improvement + 1 if fitness[0] >= history[-1] else 0
        history.append(float(fitness[0]))
        done += 1
    return EvolveResult(
        assignment=population[0].copy(),
        objective=float(fitness[0]),
        history=np.asarray(history),
        generations=done,
        evaluations=int(table.stats[0]),
        cluster_plans=int(table.stats[1]),
        cache_hits=int(table.stats[2]),
        seeded=tuple(seeded),
        stop_reason=stop_reason,
        elapsed_s=time.perf_counter() - started,
    )
