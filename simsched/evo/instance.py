"""One allocation decision as arrays (SPEC §4, §6): :class:`ClusterState`, :class:`AllocationInstance`.

An :class:`AllocationInstance` holds one decision's data. It gives P clusters
(capacity per node plus the running jobs that stay there) and J schedulable
jobs, with their per-cluster units per worker and remaining duration, their
weight, queued time and priority value f(j). An assignment is one cluster index
per job (-1 for a job that no cluster can host). The instance packs everything
the numba kernels read into one :class:`_Kernel` (the fixed jobs' planner
state per cluster, the feasible clusters per job, the jobs' Zobrist keys).
Who reads it: :mod:`simsched.evo.fitness` (an assignment's objective, with the
exact cache), :mod:`simsched.evo.mct` (MCT) and :mod:`simsched.evo.ea` (the EA).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from simsched.core.errors import InputError
from simsched.evo.objective import DEFAULT_WEIGHTS, combine_weights
from simsched.evo.planner import _state_from_fixed
from simsched.evo.priority import NanPriority


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


def trusted_state(capacity: np.ndarray, fixed_finish: np.ndarray, fixed_usage: np.ndarray,
                  fixed_weight: np.ndarray, fixed_queued: np.ndarray) -> ClusterState:
    """A :class:`ClusterState` of arrays that already have its types and shapes (int64 capacity
    (N,) and usage (K, N), contiguous; float64 finish, weight and queued (K,)), without its checks
    or copies: for simsched's own callers, which build them from the engine's state at every
    decision (simsched.evo.scheduler)."""
    state = object.__new__(ClusterState)
    object.__setattr__(state, "capacity", capacity)
    object.__setattr__(state, "fixed_finish", fixed_finish)
    object.__setattr__(state, "fixed_usage", fixed_usage)
    object.__setattr__(state, "fixed_weight", fixed_weight)
    object.__setattr__(state, "fixed_queued", fixed_queued)
    return state


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
        if n_jobs * n_clusters * n_max <= 1 << 16:  # small: one operation (padded nodes hold 0 slots)
            slots = (capacity[None, :, :] // per_worker[:, :, None]).sum(axis=2)
        else:  # one cluster at a time, not a (jobs, clusters, nodes) array
            for p, c in enumerate(clusters):
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
        base = template[0]  # per cluster: capacity minus the running jobs' units, per node
        for p, c in enumerate(clusters):
            k = c.fixed_finish.shape[0]
            if c.capacity.shape[0] == n_max:
                usage = c.fixed_usage
            else:
                usage = np.zeros((k, n_max), dtype=np.int64)
                usage[:, : c.capacity.shape[0]] = c.fixed_usage
            _state_from_fixed(
                self.now, capacity[p], c.fixed_finish, usage, *(a[p] for a in template)
            )
            if k == 0:  # (the sums below of no jobs)
                fixed_sums[p] = (0.0, -np.inf, 0.0, self.now, 0)
                continue
            if base[p].min() < 0:
                raise InputError(
                    f"cluster {p}: running jobs over-allocate node {int(np.argmin(base[p]))}"
                )
            running = c.fixed_finish > self.now
            fixed_weight = np.ones_like(c.fixed_weight) if unweighted else c.fixed_weight
            if running.all():  # the same values as the selections below, without copying them
                finish, queued_k, usage_k = c.fixed_finish, c.fixed_queued, usage
            else:
                finish, queued_k, usage_k = c.fixed_finish[running], c.fixed_queued[running], usage[running]
                fixed_weight = fixed_weight[running]
            uq = fixed_weight * queued_k
            remaining = finish - self.now
            fixed_work = np.ones(finish.shape[0]) if unweighted else usage_k.sum(axis=1)
            fixed_sums[p] = (
                uq.sum(),
                uq.max(initial=-np.inf),
                (fixed_work * remaining).sum(),
                finish.max(initial=self.now),
                finish.shape[0],
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
