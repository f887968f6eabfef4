"""The per-cluster planner: the paper's Algorithm 2 with Eq. 12-13 (SPEC §6).

Jobs already running in the cluster ("fixed") keep their placements. The
other jobs are taken in the given order (increasing priority value f(j), ties
by index); each starts at the earliest candidate time at which all its workers
fit, and its workers go one by one on the fullest node that still holds one
(best fit, ties lowest node index).

Eq. 12, with t in T_j = {now} u {F_w : w placed before j, F_w >= now}:

    sigma(n, t) = cap[n] - sum over placed w with F_w > t of x_w[n]

Every placed job that has not finished by t counts, including a job planned
to start *after* t. That is what keeps the plan sound.

Invariant (no over-allocation): at every instant tau >= now and on every
node n, the jobs running at tau (fixed and planned) use at most cap[n].
Why: when job j goes in at t_j it gets only capacity that is free of every
job placed before it that is still running after t_j. Any earlier job w
running at some tau in [t_j, F_j) has F_w > tau >= t_j, so it was
subtracted. A job placed after j subtracts j the same way. So every pair of
jobs that overlap in time is charged against the same capacity.

sigma(n, t) never decreases as t grows, and so does the number of workers
that fit. The earliest feasible candidate can then be found with one sweep
over finish times, adding back the usage of the jobs that finish. The kernel
keeps a running count of worker slots (sum over nodes of floor(sigma /
per_worker)). Greedy placement (best fit included) places all r workers
exactly when that count is >= r.

Units are whatever the caller uses (the engine uses milli-GPUs): every
capacity is an integer, and all the code compares and subtracts integers.

:func:`plan_reference` is the plain-Python statement of the above. The
:func:`plan_kernel` numba kernel gives exactly the same arrays. Its state
helpers (``_state_*``, ``_earliest``, ``_commit``) are shared with the
allocation EA.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from simsched.core.errors import InputError

INFEASIBLE = math.inf


@dataclass(frozen=True, slots=True, eq=False)
class Plan:
    """Planned start/finish per job, and each worker's node.

    ``start[j]`` is ``inf`` when job j can never fit in the cluster and ``nan``
    when j was not in ``order``. The workers of job j are on
    ``worker_node[worker_offset[j]:worker_offset[j + 1]]``, or -1 when j is not placed.
    """

    start: np.ndarray
    finish: np.ndarray
    worker_offset: np.ndarray
    worker_node: np.ndarray

    def nodes(self, job: int) -> np.ndarray:
        """Node index of every worker of ``job``."""
        return self.worker_node[self.worker_offset[job] : self.worker_offset[job + 1]]


@dataclass(frozen=True, slots=True)
class _Inputs:
    now: float
    capacity: np.ndarray
    fixed_finish: np.ndarray
    fixed_usage: np.ndarray
    per_worker: np.ndarray
    workers: np.ndarray
    duration: np.ndarray
    order: np.ndarray


def _int_array(name: str, values: object, ndim: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.ndim != ndim:
        raise InputError(f'"{name}" must be a {ndim}-d array, got shape {arr.shape}')
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or not np.all(arr == np.round(arr)):
            raise InputError(f'"{name}" must hold whole units (integers), got {arr.tolist()!r:.80}')
    elif arr.dtype.kind not in "iub":
        raise InputError(f'"{name}" must be integer units, got dtype {arr.dtype}')
    return np.ascontiguousarray(arr, dtype=np.int64)


def check_inputs(
    now: float,
    capacity: object,
    fixed_finish: object,
    fixed_usage: object,
    per_worker: object,
    workers: object,
    duration: object,
    order: object,
) -> _Inputs:
    """Validate and normalise the planner inputs once; errors name the argument."""
    if not math.isfinite(now):
        raise InputError(f'"now" must be finite, got {now}')
    cap = _int_array("capacity", capacity, 1)
    if np.any(cap < 0):
        raise InputError('"capacity" must be >= 0 on every node')
    n_nodes = cap.shape[0]
    ffin = np.ascontiguousarray(np.asarray(fixed_finish, dtype=np.float64).reshape(-1))
    fuse = np.asarray(fixed_usage)
    if fuse.size == 0:
        fuse = np.zeros((ffin.shape[0], n_nodes), dtype=np.int64)
    fuse = _int_array("fixed_usage", fuse, 2)
    if fuse.shape != (ffin.shape[0], n_nodes):
        raise InputError(
            f'"fixed_usage" must have shape (len(fixed_finish), nodes) = '
            f"({ffin.shape[0]}, {n_nodes}), got {fuse.shape}"
        )
    if np.any(np.isnan(ffin)):
        raise InputError('"fixed_finish" must not be NaN')
    if np.any(fuse < 0):
        raise InputError('"fixed_usage" must be >= 0')
    running = ffin > now
    over = cap - fuse[running].sum(axis=0)
    if np.any(over < 0):
        n = int(np.argmin(over))
        raise InputError(
            f"fixed jobs over-allocate node {n}: {cap[n] - over[n]} > capacity {cap[n]}"
        )
    pw = _int_array("per_worker", per_worker, 1)
    r = _int_array("workers", workers, 1)
    d = np.ascontiguousarray(np.asarray(duration, dtype=np.float64).reshape(-1))
    n_jobs = pw.shape[0]
    if r.shape[0] != n_jobs or d.shape[0] != n_jobs:
        raise InputError(
            f'"per_worker", "workers" and "duration" must have one length, got '
            f"{n_jobs}, {r.shape[0]}, {d.shape[0]}"
        )
    if np.any(pw <= 0):
        raise InputError('"per_worker" must be > 0 units')
    if np.any(r <= 0):
        raise InputError('"workers" must be >= 1')
    if not np.all(np.isfinite(d)) or np.any(d < 0):
        raise InputError('"duration" must be finite and >= 0')
    od = _int_array("order", order, 1)
    if od.size and (od.min() < 0 or od.max() >= n_jobs or np.unique(od).size != od.size):
        raise InputError('"order" must list distinct job indices in [0, jobs)')
    return _Inputs(float(now), cap, ffin, fuse, pw, r, d, od)


def _empty_plan(n_jobs: int, workers: np.ndarray) -> Plan:
    offset = np.zeros(n_jobs + 1, dtype=np.int64)
    np.cumsum(workers, out=offset[1:])
    return Plan(
        np.full(n_jobs, np.nan),
        np.full(n_jobs, np.nan),
        offset,
        np.full(int(offset[-1]), -1, dtype=np.int64),
    )


# ------------------------------------------------------------------ reference
def _best_fit(sigma: list[int], per_worker: int, workers: int) -> list[int] | None:
    """Each worker on the node with least sigma that still holds it; None if one does not fit."""
    sigma = list(sigma)
    nodes = []
    for _ in range(workers):
        fitting = [n for n, s in enumerate(sigma) if s >= per_worker]
        if not fitting:
            return None
        best = min(fitting, key=lambda n: (sigma[n], n))
        sigma[best] -= per_worker
        nodes.append(best)
    return nodes


def plan_reference(
    now: float,
    capacity: object,
    fixed_finish: object,
    fixed_usage: object,
    per_worker: object,
    workers: object,
    duration: object,
    order: object,
) -> Plan:
    """Algorithm 2 written plainly (Eq. 12-13); the specification :func:`plan_kernel` must match."""
    x = check_inputs(now, capacity, fixed_finish, fixed_usage, per_worker, workers, duration, order)
    plan = _empty_plan(x.per_worker.shape[0], x.workers)
    cap = [int(c) for c in x.capacity]
    # Every job placed so far, as (finish time, units per node).
    placed: list[tuple[float, list[int]]] = [
        (float(f), [int(u) for u in row]) for f, row in zip(x.fixed_finish, x.fixed_usage)
    ]
    for j in (int(j) for j in x.order):
        units, r, d = int(x.per_worker[j]), int(x.workers[j]), float(x.duration[j])
        candidates = sorted({x.now} | {f for f, _ in placed if f >= x.now})
        start, nodes = INFEASIBLE, None
        for t in candidates:
            sigma = [  # Eq. 12
                cap[n] - sum(usage[n] for f, usage in placed if f > t) for n in range(len(cap))
            ]
            nodes = _best_fit(sigma, units, r)
            if nodes is not None:
                start = t
                break
        plan.start[j] = start
        if nodes is None:
            plan.finish[j] = INFEASIBLE
            continue
        plan.finish[j] = start + d
        plan.worker_node[plan.worker_offset[j] : plan.worker_offset[j + 1]] = nodes
        usage = [0] * len(cap)
        for n in nodes:
            usage[n] += units
        placed.append((start + d, usage))
    return plan


# ------------------------------------------------------------------ kernel
# One cluster's planning state, as flat arrays (so the EA can keep P of them):
#   base[n]      cap[n] minus the usage of every placed job with finish > now
#   item_finish  finish time of placed job i (only jobs with finish > now are kept)
#   item_offset  entries of item i are item_offset[i]:item_offset[i + 1]
#   entry_node, entry_units   (node, units) pairs of the placed jobs
#   by_finish    item indices sorted by finish (ties: insertion order)
#   counts       [number of items, number of entries]
@njit(cache=True)
def _state_from_fixed(
    now: float,
    cap: np.ndarray,
    fixed_finish: np.ndarray,
    fixed_usage: np.ndarray,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
) -> None:
    n_nodes = cap.shape[0]
    for n in range(n_nodes):
        base[n] = cap[n]
    n_items = 0
    n_entries = 0
    item_offset[0] = 0
    for k in range(fixed_finish.shape[0]):
        f = fixed_finish[k]
        if not f > now:
            continue
        for n in range(n_nodes):
            units = fixed_usage[k, n]
            if units > 0:
                entry_node[n_entries] = n
                entry_units[n_entries] = units
                base[n] -= units
                n_entries += 1
        item_finish[n_items] = f
        pos = n_items
        while pos > 0 and item_finish[by_finish[pos - 1]] > f:
            by_finish[pos] = by_finish[pos - 1]
            pos -= 1
        by_finish[pos] = n_items
        n_items += 1
        item_offset[n_items] = n_entries
    counts[0] = n_items
    counts[1] = n_entries


@njit(cache=True)
def _state_copy(
    src_base: np.ndarray,
    src_finish: np.ndarray,
    src_offset: np.ndarray,
    src_node: np.ndarray,
    src_units: np.ndarray,
    src_order: np.ndarray,
    src_counts: np.ndarray,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
) -> None:
    base[:] = src_base
    n_items = src_counts[0]
    n_entries = src_counts[1]
    item_finish[:n_items] = src_finish[:n_items]
    item_offset[: n_items + 1] = src_offset[: n_items + 1]
    by_finish[:n_items] = src_order[:n_items]
    entry_node[:n_entries] = src_node[:n_entries]
    entry_units[:n_entries] = src_units[:n_entries]
    counts[0] = n_items
    counts[1] = n_entries


@njit(cache=True, inline="always")
def _earliest_one(
    now: float,
    per_worker: int,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
    sigma: np.ndarray,
) -> float:
    """:func:`_earliest` for a one-worker job: one slot somewhere is one node with
    sigma >= per_worker, so no slot counting (and no integer division) is needed."""
    fits = False
    for n in range(base.shape[0]):
        s = base[n]
        sigma[n] = s
        if s >= per_worker:
            fits = True
    if fits:
        return now
    n_items = counts[0]
    k = 0
    while k < n_items:
        t = item_finish[by_finish[k]]
        while k < n_items and item_finish[by_finish[k]] == t:
            i = by_finish[k]
            for e in range(item_offset[i], item_offset[i + 1]):
                n = entry_node[e]
                new = sigma[n] + entry_units[e]
                sigma[n] = new
                if new >= per_worker:
                    fits = True
            k += 1
        if fits:
            return t
    return np.inf


@njit(cache=True, inline="always")
def _earliest(
    now: float,
    per_worker: int,
    workers: int,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
    sigma: np.ndarray,
) -> float:
    """Earliest candidate start (Eq. 13) and, in ``sigma``, Eq. 12 at that time; inf if never."""
    if workers == 1:
        return _earliest_one(now, per_worker, base, item_finish, item_offset, entry_node, entry_units,
                             by_finish, counts, sigma)
    slots = 0
    for n in range(base.shape[0]):
        s = base[n]
        sigma[n] = s
        if s >= per_worker:
            slots += s // per_worker
    if slots >= workers:
        return now
    n_items = counts[0]
    k = 0
    while k < n_items:
        t = item_finish[by_finish[k]]
        # Every job finishing at t stops counting at t (F_w > t is false).
        while k < n_items and item_finish[by_finish[k]] == t:
            i = by_finish[k]
            for e in range(item_offset[i], item_offset[i + 1]):
                n = entry_node[e]
                old = sigma[n]
                new = old + entry_units[e]
                sigma[n] = new
                gained = new // per_worker if new > 0 else 0
                lost = old // per_worker if old > 0 else 0
                slots += gained - lost
            k += 1
        if slots >= workers:
            return t
    return np.inf


@njit(cache=True, inline="always")
def _close_item(finish: float, n_items: int, n_entries: int, item_finish: np.ndarray, item_offset: np.ndarray,
                by_finish: np.ndarray, counts: np.ndarray) -> None:
    """Close the item whose entries end at ``n_entries``: its finish time, its place in the
    finish order (insertion, after equal finishes) and the new item and entry counts."""
    item_finish[n_items] = finish
    item_offset[n_items + 1] = n_entries
    pos = n_items
    while pos > 0 and item_finish[by_finish[pos - 1]] > finish:
        by_finish[pos] = by_finish[pos - 1]
        pos -= 1
    by_finish[pos] = n_items
    counts[0] = n_items + 1
    counts[1] = n_entries


@njit(cache=True, inline="always")
def _commit(
    now: float,
    start: float,
    duration: float,
    per_worker: int,
    workers: int,
    sigma: np.ndarray,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
    out_nodes: np.ndarray,
) -> float:
    """Best-fit the workers on ``sigma`` (Eq. 12 at ``start``), record the job, return its finish."""
    n_nodes = sigma.shape[0]
    for w in range(workers):
        best = -1
        best_sigma = 0
        for n in range(n_nodes):
            s = sigma[n]
            if s >= per_worker and (best < 0 or s < best_sigma):
                best = n
                best_sigma = s
        sigma[best] -= per_worker
        out_nodes[w] = best
    finish = start + duration
    if finish > now:
        n_items = counts[0]
        n_entries = counts[1]
        first = n_entries
        for w in range(workers):
            n = out_nodes[w]
            base[n] -= per_worker
            if n_entries > first and entry_node[n_entries - 1] == n:
                entry_units[n_entries - 1] += per_worker
            else:
                entry_node[n_entries] = n
                entry_units[n_entries] = per_worker
                n_entries += 1
        _close_item(finish, n_items, n_entries, item_finish, item_offset, by_finish, counts)
    return finish


@njit(cache=True, inline="always")
def _place_one(
    now: float,
    per_worker: int,
    duration: float,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
    sigma: np.ndarray,
) -> tuple[float, float]:
    """:func:`_earliest` then :func:`_commit` for a one-worker job, in one pass: (start, finish).

    The same start and node: at ``now`` the best fit is found while scanning ``base``;
    later, only the nodes of the jobs finishing at the start time can hold the worker
    (none could before), so the best fit is searched among those. (inf, inf) if never.
    """
    n_nodes = base.shape[0]
    best = -1
    best_sigma = 0
    for n in range(n_nodes):
        s = base[n]
        sigma[n] = s
        if s >= per_worker and (best < 0 or s < best_sigma):
            best = n
            best_sigma = s
            if s == per_worker:  # no node can fit tighter, and later ties lose (sigma is unused now)
                break
    t = now
    if best < 0:
        n_items = counts[0]
        k = 0
        first = 0
        fits = False
        while k < n_items and not fits:
            t = item_finish[by_finish[k]]
            first = k
            while k < n_items and item_finish[by_finish[k]] == t:
                i = by_finish[k]
                for e in range(item_offset[i], item_offset[i + 1]):
                    n = entry_node[e]
                    new = sigma[n] + entry_units[e]
                    sigma[n] = new
                    if new >= per_worker:
                        fits = True
                k += 1
        if not fits:
            return np.inf, np.inf
        for g in range(first, k):
            i = by_finish[g]
            for e in range(item_offset[i], item_offset[i + 1]):
                n = entry_node[e]
                s = sigma[n]
                if s >= per_worker and (best < 0 or s < best_sigma or (s == best_sigma and n < best)):
                    best = n
                    best_sigma = s
    finish = t + duration
    if finish > now:
        n_items = counts[0]
        n_entries = counts[1]
        base[best] -= per_worker
        entry_node[n_entries] = best
        entry_units[n_entries] = per_worker
        n_entries += 1
        _close_item(finish, n_items, n_entries, item_finish, item_offset, by_finish, counts)
    return t, finish


@njit(cache=True, inline="always")
def _commit_fill(
    now: float,
    start: float,
    duration: float,
    per_worker: int,
    workers: int,
    sigma: np.ndarray,
    base: np.ndarray,
    item_finish: np.ndarray,
    item_offset: np.ndarray,
    entry_node: np.ndarray,
    entry_units: np.ndarray,
    by_finish: np.ndarray,
    counts: np.ndarray,
    candidates: np.ndarray,
) -> float:
    """:func:`_commit` (without ``out_nodes``), filling one node at a time: the same nodes and state.

    Best fit puts a worker on the fitting node of least sigma (lowest index on ties); that
    node's sigma only drops, so the next workers go there too until it is full, then to the
    next such node. So each node used is found once, not once per worker (a node with
    sigma == per_worker ends the search: none is tighter, and later ties lose).
    """
    m = 0
    for n in range(sigma.shape[0]):
        if sigma[n] >= per_worker:
            candidates[m] = n
            m += 1
    finish = start + duration
    keep = finish > now
    n_items = counts[0]
    n_entries = counts[1]
    left = workers
    while left > 0:
        pick = 0
        best_sigma = sigma[candidates[0]]
        if best_sigma != per_worker:
            for c in range(1, m):
                s = sigma[candidates[c]]
                if s < best_sigma:
                    pick = c
                    best_sigma = s
                    if s == per_worker:
                        break
        n = candidates[pick]
        take = best_sigma // per_worker
        if take > left:
            take = left
        units = take * per_worker
        sigma[n] = best_sigma - units
        left -= take
        if keep:
            base[n] -= units
            entry_node[n_entries] = n
            entry_units[n_entries] = units
            n_entries += 1
        for c in range(pick, m - 1):
            candidates[c] = candidates[c + 1]
        m -= 1
    if keep:
        _close_item(finish, n_items, n_entries, item_finish, item_offset, by_finish, counts)
    return finish


@njit(cache=True)
def _plan_cluster(
    now: float,
    cap: np.ndarray,
    fixed_finish: np.ndarray,
    fixed_usage: np.ndarray,
    per_worker: np.ndarray,
    workers: np.ndarray,
    duration: np.ndarray,
    order: np.ndarray,
    worker_offset: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    worker_node: np.ndarray,
) -> None:
    n_nodes = cap.shape[0]
    n_fixed = fixed_finish.shape[0]
    max_items = n_fixed + order.shape[0]
    max_entries = n_fixed * n_nodes + worker_node.shape[0]
    base = np.empty(n_nodes, np.int64)
    sigma = np.empty(n_nodes, np.int64)
    item_finish = np.empty(max_items, np.float64)
    item_offset = np.zeros(max_items + 1, np.int64)
    entry_node = np.empty(max_entries, np.int64)
    entry_units = np.empty(max_entries, np.int64)
    by_finish = np.empty(max_items, np.int64)
    counts = np.zeros(2, np.int64)
    _state_from_fixed(
        now,
        cap,
        fixed_finish,
        fixed_usage,
        base,
        item_finish,
        item_offset,
        entry_node,
        entry_units,
        by_finish,
        counts,
    )
    for k in range(order.shape[0]):
        j = order[k]
        units = per_worker[j]
        r = workers[j]
        t = _earliest(
            now,
            units,
            r,
            base,
            item_finish,
            item_offset,
            entry_node,
            entry_units,
            by_finish,
            counts,
            sigma,
        )
        start[j] = t
        if t == np.inf:
            finish[j] = np.inf
            continue
        nodes = worker_node[worker_offset[j] : worker_offset[j + 1]]
        finish[j] = _commit(
            now,
            t,
            duration[j],
            units,
            r,
            sigma,
            base,
            item_finish,
            item_offset,
            entry_node,
            entry_units,
            by_finish,
            counts,
            nodes,
        )


def plan_kernel(
    now: float,
    capacity: object,
    fixed_finish: object,
    fixed_usage: object,
    per_worker: object,
    workers: object,
    duration: object,
    order: object,
) -> Plan:
    """Algorithm 2 compiled with numba; the same arrays as :func:`plan_reference`, exactly."""
    x = check_inputs(now, capacity, fixed_finish, fixed_usage, per_worker, workers, duration, order)
    return plan_trusted(x.now, x.capacity, x.fixed_finish, x.fixed_usage, x.per_worker, x.workers, x.duration,
                        x.order)


def plan_trusted(
    now: float,
    capacity: np.ndarray,
    fixed_finish: np.ndarray,
    fixed_usage: np.ndarray,
    per_worker: np.ndarray,
    workers: np.ndarray,
    duration: np.ndarray,
    order: np.ndarray,
) -> Plan:
    """:func:`plan_kernel` without :func:`check_inputs`, for simsched's own callers whose arrays are
    valid and of the planner's types already (a :class:`~simsched.evo.instance.ClusterState`'s
    int64 capacity and usage and float64 finishes; int64 per_worker, workers and order, float64
    duration, one dimension each). The same plan; only a column slice is made contiguous."""
    per_worker = np.ascontiguousarray(per_worker)
    duration = np.ascontiguousarray(duration)
    plan = _empty_plan(per_worker.shape[0], workers)
    _plan_cluster(float(now), capacity, fixed_finish, fixed_usage, per_worker, workers, duration, order,
                  plan.worker_offset, plan.start, plan.finish, plan.worker_node)
    return plan


def max_overallocation(
    plan: Plan,
    now: float,
    capacity: np.ndarray,
    fixed_finish: np.ndarray,
    fixed_usage: np.ndarray,
    per_worker: np.ndarray,
) -> int:
    """Largest excess of used over capacity at any instant >= now on any node (0 = sound plan).

    Checks the invariant in the module docstring directly: usage is piecewise
    constant and only rises at a start, so it is enough to look at ``now`` and at every start.
    """
    cap = np.asarray(capacity, dtype=np.int64)
    intervals: list[tuple[float, float, np.ndarray]] = [
        (-math.inf, float(f), np.asarray(u, dtype=np.int64))
        for f, u in zip(fixed_finish, fixed_usage)
    ]
    for j in range(plan.start.shape[0]):
        if not math.isfinite(plan.start[j]):
            continue
        usage = np.zeros(cap.shape[0], dtype=np.int64)
        np.add.at(usage, plan.nodes(j), int(per_worker[j]))
        intervals.append((float(plan.start[j]), float(plan.finish[j]), usage))
    worst = 0
    for tau in {now, *(s for s, _, _ in intervals if s >= now)}:
        used = np.zeros(cap.shape[0], dtype=np.int64)
        for s, f, usage in intervals:
            if s <= tau < f:
                used += usage
        worst = max(worst, int((used - cap).max(initial=0)))
    return worst
