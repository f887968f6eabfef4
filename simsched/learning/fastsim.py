"""A compiled ``mct-gp`` run for GP fitness: the engine's event sequence in one numba kernel.

GP learning (Algorithm 3) scores a candidate priority function by a whole
simulation with MCT allocation. Through the SimPy engine one run of
``paper_multicluster`` costs about 0.6 s, almost all of it per-decision Python
(views, networkx priority evaluation, allocation instances). Profiled in
docs/learning.md. This module replays the same run in numba, in the same order:

* arrivals at the engine's arrival times (the feeder's ``now + (submit - now)``
  floats), jobs with no feasible group unscheduled at arrival;
* at one timestamp: completions (in start order), then arrivals, then one
  decision when either happened and the queue is not empty;
* a decision: f(j) for every queued job (the prefix program below; the same
  float operations as :func:`simsched.evo.priority.evaluate`), a stable sort,
  MCT over the groups with the planner kernels of :mod:`simsched.evo.planner`
  (each group's state rebuilt from its running jobs, with the engine's
  ``now + time left`` finish times), and the jobs planned at ``now`` started
  group by group in priority order, on the planned nodes (only the
  zero-duration ones that fit, when a zero-duration job makes them not all
  fit: :meth:`simsched.evo.scheduler.Problem.decision`'s rule);
* the §7 summary objective from the per-job waits, ends and GPU-seconds.

The SimPy engine stays the reference: :func:`objective` must equal
``api.run(...).summary["objective"]`` exactly, which
``tests/test_evo_fastsim.py`` checks on many random instances. Scenarios this
kernel does not model (periodic decision rounds, ``decide_on = "arrival"``)
return ``None`` from :func:`prepare` and the caller uses the engine.

The proof that this replay equals the engine is differential, in
``tests/test_evo_fastsim.py``, one test per kind of instance, each comparing the
objective here with the SimPy engine's exactly:

* ``test_random_instances_and_functions_match_the_engine`` (random fleets, jobs
  and priority functions),
* ``test_zero_duration_jobs_match_the_engine``,
* ``test_paper_generator_instances_match_the_engine`` (the paper's generator),
* ``test_an_overloaded_paper_instance_matches_the_engine`` (deep queues),
* ``test_run_objective_equals_the_engine_path_and_nan_scores_inf`` (the learning
  entry point), ``test_fast_kernel_equals_the_direct_kernel_on_paper_instances``
  (this module's two kernels), and ``test_periodic_rounds_are_left_to_the_engine``
  / ``test_arrival_trigger_is_left_to_the_engine`` (what it does not model).
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from numba import njit

from simsched.evo.gp import from_graph
from simsched.evo.planner import _commit, _earliest
from simsched.evo.priority import BUILTIN, FUNCTIONS, TERMINALS, NanPriority, parse
from simsched.evo.scheduler import PlannerScheduler
from simsched.runs import single as api

#: opcodes of the priority program (postfix); terminals follow the functions, then a constant.
_OPCODES = {op: i for i, op in enumerate(FUNCTIONS)}  # + - * %
_TERMINAL0 = len(_OPCODES)
_CONST = _TERMINAL0 + len(TERMINALS)
_STATUS_DONE = 3

#: what :func:`simulate` returns besides ok
NAN_PRIORITY = 1


def program(graph: nx.DiGraph) -> tuple[np.ndarray, np.ndarray]:
    """The priority DAG as a postfix program: (opcodes, constants), evaluated with a stack.

    Shared subtrees are copied out (:func:`simsched.evo.gp.from_graph`); every
    node still computes the same float operation on the same operands.
    """
    prefix = from_graph(graph)
    codes = np.empty(len(prefix), dtype=np.int64)
    consts = np.zeros(len(prefix), dtype=np.float64)
    for k, token in enumerate(reversed(prefix)):
        if isinstance(token, float):
            codes[k] = _CONST
            consts[k] = token
        elif token in _OPCODES:
            codes[k] = _OPCODES[token]
        else:
            codes[k] = _TERMINAL0 + TERMINALS.index(token)
    return codes, consts


@njit(cache=True)
def _priority(codes: np.ndarray, consts: np.ndarray, d: np.ndarray, q: np.ndarray, u: np.ndarray,
              g: np.ndarray, count: int, out: np.ndarray, stack: np.ndarray) -> bool:
    """f(j) for the first ``count`` jobs into ``out``; False when one is NaN."""
    for i in range(count):
        sp = 0
        for k in range(codes.shape[0]):
            c = codes[k]
            if c >= 4:
                if c == 4:
                    v = d[i]
                elif c == 5:
                    v = q[i]
                elif c == 6:
                    v = u[i]
                elif c == 7:
                    v = g[i]
                else:
                    v = consts[k]
                stack[sp] = v
                sp += 1
            else:
                left = stack[sp - 1]  # reversed prefix: the left argument is on top
                right = stack[sp - 2]
                sp -= 2
                if c == 0:
                    v = left + right
                elif c == 1:
                    v = left - right
                elif c == 2:
                    v = left * right
                else:
                    v = left / right if right != 0 else left  # protected division
                stack[sp] = v
                sp += 1
        out[i] = stack[0]
        if out[i] != out[i]:
            return False
    return True


@njit(cache=True)
def _heap_push(times: np.ndarray, seqs: np.ndarray, jobs: np.ndarray, size: int, t: float, seq: int,
               job: int) -> int:
    i = size
    while i > 0:
        parent = (i - 1) // 2
        if times[parent] < t or (times[parent] == t and seqs[parent] < seq):
            break
        times[i] = times[parent]
        seqs[i] = seqs[parent]
        jobs[i] = jobs[parent]
        i = parent
    times[i] = t
    seqs[i] = seq
    jobs[i] = job
    return size + 1


@njit(cache=True)
def _heap_pop(times: np.ndarray, seqs: np.ndarray, jobs: np.ndarray, size: int) -> int:
    """Remove the smallest (time, seq); the caller read it at index 0 before. Returns the new size."""
    size -= 1
    t = times[size]
    seq = seqs[size]
    job = jobs[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        other = child + 1
        if other < size and (times[other] < times[child]
                             or (times[other] == times[child] and seqs[other] < seqs[child])):
            child = other
        if t < times[child] or (t == times[child] and seq < seqs[child]):
            break
        times[i] = times[child]
        seqs[i] = seqs[child]
        jobs[i] = jobs[child]
        i = child
    if size > 0:
        times[i] = t
        seqs[i] = seq
        jobs[i] = job
    return size


@njit(cache=True)
def _zero_only(now: float, count: int, order: np.ndarray, assigned: np.ndarray, planned: np.ndarray,
               queue: np.ndarray, duration: np.ndarray, speed: np.ndarray, per_worker: np.ndarray,
               worker_offset: np.ndarray, worker_node: np.ndarray, free: np.ndarray, scratch: np.ndarray) -> bool:
    """Problem.decision's rule: True when the jobs planned at ``now`` (among the first ``count``
    in ``order``) do not all fit in ``free`` and one of them has zero duration; then only the
    zero-duration ones that fit start, in the usual order."""
    has_zero = False
    for k in range(count):
        i = order[k]
        p = assigned[i]
        if p >= 0 and planned[i] == now and not now + duration[queue[i]] / speed[queue[i], p] > now:
            has_zero = True
            break
    if not has_zero:
        return False
    for p in range(free.shape[0]):
        scratch[:] = free[p]
        for k in range(count):
            i = order[k]
            if assigned[i] != p or not planned[i] == now:
                continue
            j = queue[i]
            for w in range(worker_offset[j], worker_offset[j + 1]):
                scratch[worker_node[w]] -= per_worker[j, p]
        for n in range(scratch.shape[0]):
            if scratch[n] < 0:
                return True
    return False


@njit(cache=True)
def _take(free: np.ndarray, nodes: np.ndarray, units: int) -> bool:
    """Take ``units`` per worker from ``free`` on ``nodes``; False (and ``free`` unchanged) if they do not fit."""
    for n in nodes:
        free[n] -= units
    for n in nodes:
        if free[n] < 0:
            for m in nodes:
                free[m] += units
            return False
    return True


@njit(cache=True)
def simulate_direct(codes: np.ndarray, consts: np.ndarray, arrival: np.ndarray, arrival_order: np.ndarray,
             duration: np.ndarray, weight: np.ndarray, gpus: np.ndarray, workers: np.ndarray,
             per_worker: np.ndarray, speed: np.ndarray, feasible_offset: np.ndarray,
             feasible_list: np.ndarray, capacity: np.ndarray, status: np.ndarray, wait: np.ndarray,
             start: np.ndarray, end: np.ndarray, gpu_seconds: np.ndarray, group: np.ndarray) -> int:
    """One mct-gp run, written as directly as the engine does it: every decision rebuilds
    every group's planner state and plans the whole queue. Same outputs as :func:`simulate`
    (tested); kept as its readable statement. Returns 0, or :data:`NAN_PRIORITY`.

    ``status``: 1 queued, 2 running, 3 done, 4 unscheduled (0 not arrived yet).
    """
    n_jobs = arrival.shape[0]
    n_groups, n_nodes = capacity.shape
    worker_offset = np.zeros(n_jobs + 1, np.int64)
    for j in range(n_jobs):
        worker_offset[j + 1] = worker_offset[j] + workers[j]
    total_workers = worker_offset[n_jobs]
    worker_node = np.zeros(max(total_workers, 1), np.int64)
    run_share = np.zeros(n_jobs, np.int64)
    run_speed = np.ones(n_jobs, np.float64)
    queue = np.empty(n_jobs, np.int64)
    n_queued = 0
    running = np.empty(n_jobs, np.int64)
    n_running = 0
    heap_time = np.empty(n_jobs, np.float64)
    heap_seq = np.empty(n_jobs, np.int64)
    heap_job = np.empty(n_jobs, np.int64)
    heap_size = 0
    started = 0
    # per-decision buffers
    d = np.empty(n_jobs)
    q = np.empty(n_jobs)
    u = np.empty(n_jobs)
    g = np.empty(n_jobs)
    value = np.empty(n_jobs)
    stack = np.empty(max(codes.shape[0], 1))
    assigned = np.empty(n_jobs, np.int64)
    planned = np.empty(n_jobs)
    starts_at = np.empty(n_groups)
    # planner state per group (see planner.py): items are running and planned jobs
    max_items = n_jobs
    max_entries = max(total_workers, 1)
    base = np.empty((n_groups, n_nodes), np.int64)
    sigma = np.empty((n_groups, n_nodes), np.int64)
    item_finish = np.empty((n_groups, max_items), np.float64)
    item_offset = np.zeros((n_groups, max_items + 1), np.int64)
    entry_node = np.empty((n_groups, max_entries), np.int64)
    entry_units = np.empty((n_groups, max_entries), np.int64)
    by_finish = np.empty((n_groups, max_items), np.int64)
    counts = np.zeros((n_groups, 2), np.int64)
    free = np.empty((n_groups, n_nodes), np.int64)
    scratch = np.empty(n_nodes, np.int64)

    for j in range(n_jobs):
        status[j] = 0
        wait[j] = 0.0
        start[j] = np.nan
        end[j] = np.nan
        gpu_seconds[j] = 0.0
        group[j] = -1

    next_arrival = 0
    while True:
        t_finish = heap_time[0] if heap_size > 0 else np.inf
        t_arrive = arrival[arrival_order[next_arrival]] if next_arrival < n_jobs else np.inf
        if heap_size == 0 and next_arrival >= n_jobs:
            break
        now = t_finish if t_finish <= t_arrive else t_arrive
        requested = False
        # completions at now (start order), engine.finish
        while heap_size > 0 and heap_time[0] == now:
            j = heap_job[0]
            heap_size = _heap_pop(heap_time, heap_seq, heap_job, heap_size)
            elapsed = now - start[j]
            held = (run_share[j] * workers[j]) / 1000
            gpu_seconds[j] = 0.0 + elapsed * held
            status[j] = _STATUS_DONE
            end[j] = now
            k = 0
            for i in range(n_running):
                if running[i] != j:
                    running[k] = running[i]
                    k += 1
            n_running = k
            requested = True
        # arrivals at now (input order), engine.arrive
        while next_arrival < n_jobs and arrival[arrival_order[next_arrival]] == now:
            j = arrival_order[next_arrival]
            next_arrival += 1
            if feasible_offset[j + 1] == feasible_offset[j]:
                status[j] = 4
                continue
            status[j] = 1
            queue[n_queued] = j
            n_queued += 1
            requested = True
        if not requested or n_queued == 0:
            continue

        # ---- one decision (PlannerScheduler.decide with MCT)
        for i in range(n_queued):
            j = queue[i]
            d[i] = duration[j]
            q[i] = 0.0 + (now - arrival[j])
            u[i] = weight[j]
            g[i] = gpus[j]
        if not _priority(codes, consts, d, q, u, g, n_queued, value, stack):
            return NAN_PRIORITY
        order = np.argsort(value[:n_queued], kind="mergesort")
        # group states from the running jobs (Problem.cluster_states, _state_from_fixed)
        for p in range(n_groups):
            for n in range(n_nodes):
                base[p, n] = capacity[p, n]
            counts[p, 0] = 0
            counts[p, 1] = 0
            item_offset[p, 0] = 0
        for i in range(n_running):
            j = running[i]
            p = group[j]
            rs = start[j]  # the run start: under MCT a job runs once
            penalty_left = rs + 0.0 - now
            penalty_left = penalty_left if penalty_left > 0.0 else 0.0
            done = now - rs - 0.0
            done = (done if done > 0.0 else 0.0) * run_speed[j]
            left = duration[j] - done
            left = (left if left > 0.0 else 0.0) / run_speed[j]
            f = now + (penalty_left + left)
            if not f > now:
                continue
            n_items = counts[p, 0]
            n_entries = counts[p, 1]
            first = n_entries
            for w in range(worker_offset[j], worker_offset[j + 1]):
                n = worker_node[w]
                base[p, n] -= run_share[j]
                if n_entries > first and entry_node[p, n_entries - 1] == n:
                    entry_units[p, n_entries - 1] += run_share[j]
                else:
                    entry_node[p, n_entries] = n
                    entry_units[p, n_entries] = run_share[j]
                    n_entries += 1
            item_finish[p, n_items] = f
            pos = n_items
            while pos > 0 and item_finish[p, by_finish[p, pos - 1]] > f:
                by_finish[p, pos] = by_finish[p, pos - 1]
                pos -= 1
            by_finish[p, pos] = n_items
            counts[p, 0] = n_items + 1
            counts[p, 1] = n_entries
            item_offset[p, n_items + 1] = n_entries
        # MCT (mct._mct): jobs by priority, each to the group of earliest planned finish
        for k in range(n_queued):
            i = order[k]
            j = queue[i]
            best = -1
            best_finish = np.inf
            for f_index in range(feasible_offset[j], feasible_offset[j + 1]):
                p = feasible_list[f_index]
                t = _earliest(now, per_worker[j, p], workers[j], base[p], item_finish[p], item_offset[p],
                              entry_node[p], entry_units[p], by_finish[p], counts[p], sigma[p])
                starts_at[p] = t
                fin = t + duration[j] / speed[j, p]
                if fin < best_finish:
                    best_finish = fin
                    best = p
            assigned[i] = best
            planned[i] = np.nan
            if best >= 0:
                p = best
                planned[i] = starts_at[p]
                _commit(now, starts_at[p], duration[j] / speed[j, p], per_worker[j, p], workers[j],
                        sigma[p], base[p], item_finish[p], item_offset[p], entry_node[p], entry_units[p],
                        by_finish[p], counts[p], worker_node[worker_offset[j]:worker_offset[j + 1]])
        # starts (Problem.decision): group by group, in priority order, the jobs planned at now
        # (only the zero-duration ones that fit when a zero-duration job makes them not all fit)
        for p in range(n_groups):
            for n in range(n_nodes):
                free[p, n] = capacity[p, n]
        for i in range(n_running):
            j = running[i]
            for w in range(worker_offset[j], worker_offset[j + 1]):
                free[group[j], worker_node[w]] -= run_share[j]
        zero_only = _zero_only(now, n_queued, order, assigned, planned, queue, duration, speed, per_worker,
                               worker_offset, worker_node, free, scratch)
        n_started = 0
        for p in range(n_groups):
            for k in range(n_queued):
                i = order[k]
                if assigned[i] != p or not planned[i] == now:
                    continue
                j = queue[i]
                if zero_only and (now + duration[j] / speed[j, p] > now or not _take(
                        free[p], worker_node[worker_offset[j]:worker_offset[j + 1]], per_worker[j, p])):
                    continue
                wait[j] = 0.0 + (now - arrival[j])
                start[j] = now
                status[j] = 2
                group[j] = p
                run_share[j] = per_worker[j, p]
                run_speed[j] = speed[j, p]
                running[n_running] = j
                n_running += 1
                run_time = 0.0 + duration[j] / speed[j, p]
                heap_size = _heap_push(heap_time, heap_seq, heap_job, heap_size, now + run_time, started, j)
                started += 1
                n_started += 1
        if n_started:
            k = 0
            for i in range(n_queued):
                j = queue[i]
                if status[j] == 1:
                    queue[k] = j
                    k += 1
            n_queued = k
    for i in range(n_queued):
        status[queue[i]] = 4
    return 0


@njit(cache=True)
def _finish_of(now: float, run_start: float, remaining: float, speed: float) -> float:
    """``now + _time_left(job)`` of the engine's Problem.cluster_states, the same float operations."""
    penalty_left = run_start + 0.0 - now
    penalty_left = penalty_left if penalty_left > 0.0 else 0.0
    done = now - run_start - 0.0
    done = (done if done > 0.0 else 0.0) * speed
    left = remaining - done
    left = (left if left > 0.0 else 0.0) / speed
    return now + (penalty_left + left)


@njit(cache=True)
def _fits_now(base: np.ndarray, sigma: np.ndarray, per_worker: int, workers: int) -> bool:
    """Eq. 13's first candidate (t = now): sigma = base, and do all workers fit?"""
    slots = 0
    for n in range(base.shape[0]):
        s = base[n]
        sigma[n] = s
        if s >= per_worker:
            slots += s // per_worker
    return slots >= workers


@njit(cache=True)
def _add_item(f: float, first_worker: int, last_worker: int, units: int, worker_node: np.ndarray,
              item_finish: np.ndarray, item_offset: np.ndarray, entry_node: np.ndarray, entry_units: np.ndarray,
              by_finish: np.ndarray, counts: np.ndarray) -> None:
    """Append a running job (finishing at f) to a planner state whose base already excludes it."""
    n_items = counts[0]
    n_entries = counts[1]
    first = n_entries
    for w in range(first_worker, last_worker):
        n = worker_node[w]
        if n_entries > first and entry_node[n_entries - 1] == n:
            entry_units[n_entries - 1] += units
        else:
            entry_node[n_entries] = n
            entry_units[n_entries] = units
            n_entries += 1
    item_finish[n_items] = f
    by_finish[n_items] = n_items  # the caller sorts by_finish once all running jobs are in
    counts[0] = n_items + 1
    counts[1] = n_entries
    item_offset[n_items + 1] = n_entries


@njit(cache=True)
def simulate(codes: np.ndarray, consts: np.ndarray, arrival: np.ndarray, arrival_order: np.ndarray,
             duration: np.ndarray, weight: np.ndarray, gpus: np.ndarray, workers: np.ndarray,
             per_worker: np.ndarray, speed: np.ndarray, feasible_offset: np.ndarray,
             feasible_list: np.ndarray, capacity: np.ndarray, status: np.ndarray, wait: np.ndarray,
             start: np.ndarray, end: np.ndarray, gpu_seconds: np.ndarray, group: np.ndarray,
             stats: np.ndarray) -> int:
    """One mct-gp run (the outputs of :func:`simulate_direct`, exactly), doing only the work that
    can change a decision. Returns 0, or :data:`NAN_PRIORITY`; ``stats`` gets the number of
    decisions and the longest queue a decision saw.

    * Free capacity per node is kept across decisions (the engine's ``free``); a group's
      planner state is copied from it when the decision first touches the group, and its
      running jobs become planner items only when a job must be swept past ``now`` there.
      A running job whose computed finish is not after ``now`` (possible only within
      rounding of its completion time) is left out of the state, as the planner does.
    * A decision only starts jobs planned at ``now``. Commits only lower the planner's
      capacity at ``now``, so once no group has a node with room for the smallest worker
      any job there needs, no later job can start: MCT stops.
    * When a job runs at one speed in all its groups, the first group (lowest index)
      where it fits at ``now`` ends the search: no later group can finish it earlier,
      and ties keep the lower index, as MCT does.
    """
    n_jobs = arrival.shape[0]
    n_groups, n_nodes = capacity.shape
    worker_offset = np.zeros(n_jobs + 1, np.int64)
    for j in range(n_jobs):
        worker_offset[j + 1] = worker_offset[j] + workers[j]
    total_workers = worker_offset[n_jobs]
    worker_node = np.zeros(max(total_workers, 1), np.int64)
    run_share = np.zeros(n_jobs, np.int64)
    run_speed = np.ones(n_jobs, np.float64)
    # smallest worker any job may put on each group; one speed across a job's groups?
    min_share = np.full(n_groups, np.iinfo(np.int64).max, np.int64)
    uniform = np.ones(n_jobs, np.bool_)
    for j in range(n_jobs):
        lo = feasible_offset[j]
        for f_index in range(lo, feasible_offset[j + 1]):
            p = feasible_list[f_index]
            if per_worker[j, p] < min_share[p]:
                min_share[p] = per_worker[j, p]
            if speed[j, p] != speed[j, feasible_list[lo]]:
                uniform[j] = False
    free = capacity.copy()
    free_max = np.zeros(n_groups, np.int64)
    for p in range(n_groups):
        free_max[p] = free[p].max()
    group_running = np.empty((n_groups, n_jobs), np.int64)
    group_count = np.zeros(n_groups, np.int64)
    slot_of = np.zeros(n_jobs, np.int64)
    queue = np.empty(n_jobs, np.int64)
    n_queued = 0
    heap_time = np.empty(n_jobs, np.float64)
    heap_seq = np.empty(n_jobs, np.int64)
    heap_job = np.empty(n_jobs, np.int64)
    heap_size = 0
    started = 0
    # per-decision buffers
    d = np.empty(n_jobs)
    q = np.empty(n_jobs)
    u = np.empty(n_jobs)
    g = np.empty(n_jobs)
    value = np.empty(n_jobs)
    stack = np.empty(max(codes.shape[0], 1))
    assigned = np.empty(n_jobs, np.int64)
    planned = np.empty(n_jobs)
    starts_at = np.empty(n_groups)
    edge = np.empty(n_jobs, np.int64)
    visit = np.empty(n_jobs, np.int64)
    touched = np.full(n_groups, -1, np.int64)
    built = np.full(n_groups, -1, np.int64)
    max_base = np.zeros(n_groups, np.int64)
    max_items = n_jobs
    max_entries = max(total_workers, 1)
    base = np.empty((n_groups, n_nodes), np.int64)
    sigma = np.empty((n_groups, n_nodes), np.int64)
    item_finish = np.empty((n_groups, max_items), np.float64)
    item_offset = np.zeros((n_groups, max_items + 1), np.int64)
    entry_node = np.empty((n_groups, max_entries), np.int64)
    entry_units = np.empty((n_groups, max_entries), np.int64)
    by_finish = np.empty((n_groups, max_items), np.int64)
    counts = np.zeros((n_groups, 2), np.int64)
    scratch = np.empty(n_nodes, np.int64)

    for j in range(n_jobs):
        status[j] = 0
        wait[j] = 0.0
        start[j] = np.nan
        end[j] = np.nan
        gpu_seconds[j] = 0.0
        group[j] = -1

    decision = 0
    next_arrival = 0
    while True:
        if heap_size == 0 and next_arrival >= n_jobs:
            break
        t_finish = heap_time[0] if heap_size > 0 else np.inf
        t_arrive = arrival[arrival_order[next_arrival]] if next_arrival < n_jobs else np.inf
        now = t_finish if t_finish <= t_arrive else t_arrive
        requested = False
        while heap_size > 0 and heap_time[0] == now:  # completions, in start order
            j = heap_job[0]
            heap_size = _heap_pop(heap_time, heap_seq, heap_job, heap_size)
            held = (run_share[j] * workers[j]) / 1000
            gpu_seconds[j] = 0.0 + (now - start[j]) * held
            status[j] = _STATUS_DONE
            end[j] = now
            p = group[j]
            for w in range(worker_offset[j], worker_offset[j + 1]):
                free[p, worker_node[w]] += run_share[j]
            free_max[p] = free[p].max()
            last = group_running[p, group_count[p] - 1]
            group_running[p, slot_of[j]] = last
            slot_of[last] = slot_of[j]
            group_count[p] -= 1
            requested = True
        while next_arrival < n_jobs and arrival[arrival_order[next_arrival]] == now:  # arrivals
            j = arrival_order[next_arrival]
            next_arrival += 1
            if feasible_offset[j + 1] == feasible_offset[j]:
                status[j] = 4
                continue
            status[j] = 1
            queue[n_queued] = j
            n_queued += 1
            requested = True
        if not requested or n_queued == 0:
            continue

        # ---- one decision
        decision += 1
        stats[0] = decision
        if n_queued > stats[1]:
            stats[1] = n_queued
        for i in range(n_queued):
            j = queue[i]
            d[i] = duration[j]
            q[i] = 0.0 + (now - arrival[j])
            u[i] = weight[j]
            g[i] = gpus[j]
        if not _priority(codes, consts, d, q, u, g, n_queued, value, stack):
            return NAN_PRIORITY
        order = np.argsort(value[:n_queued], kind="mergesort")
        # running jobs whose computed finish is not after now (only within rounding of their end)
        n_edge = 0
        bound = now + 1e-7 * (1.0 + abs(now))
        n_visit = 0
        if heap_size > 0:
            visit[0] = 0
            n_visit = 1
        while n_visit > 0:
            n_visit -= 1
            h = visit[n_visit]
            if heap_time[h] > bound:
                continue
            j = heap_job[h]
            if not _finish_of(now, start[j], duration[j], run_speed[j]) > now:
                edge[n_edge] = j
                n_edge += 1
            for child in (2 * h + 1, 2 * h + 2):
                if child < heap_size:
                    visit[n_visit] = child
                    n_visit += 1
        for p in range(n_groups):
            max_base[p] = free_max[p]
        for e in range(n_edge):
            j = edge[e]
            p = group[j]
            if touched[p] != decision:
                touched[p] = decision
                base[p, :] = free[p]
                counts[p, 0] = 0
                counts[p, 1] = 0
                item_offset[p, 0] = 0
            for w in range(worker_offset[j], worker_offset[j + 1]):
                base[p, worker_node[w]] += run_share[j]
            max_base[p] = base[p].max()
        n_open = 0
        for p in range(n_groups):
            if max_base[p] >= min_share[p]:
                n_open += 1
        # every running job's computed finish is >= low (rounding bound), and so is every planned one
        soonest = heap_time[0] if heap_size > 0 else np.inf
        low = soonest - 1e-9 * (1.0 + abs(soonest))
        processed = 0
        for k in range(n_queued):
            if n_open == 0:
                break
            processed = k + 1
            i = order[k]
            j = queue[i]
            r = workers[j]
            best = -1
            best_finish = np.inf
            lo = feasible_offset[j]
            if uniform[j] and lo < feasible_offset[j + 1]:
                x = duration[j] / speed[j, feasible_list[lo]]
                if low + x > now + x:
                    # a group where j cannot start at now finishes it later than one where it can:
                    # the first group (lowest index) where it fits at now is MCT's choice
                    for f_index in range(lo, feasible_offset[j + 1]):
                        p = feasible_list[f_index]
                        units = per_worker[j, p]
                        if max_base[p] < units:
                            continue
                        if touched[p] != decision:
                            touched[p] = decision
                            base[p, :] = free[p]
                            counts[p, 0] = 0
                            counts[p, 1] = 0
                            item_offset[p, 0] = 0
                        if _fits_now(base[p], sigma[p], units, r):
                            best = p
                            starts_at[p] = now
                            break
            quick = best >= 0
            for f_index in range(feasible_offset[j], feasible_offset[j + 1]):
                if quick or (uniform[j] and best >= 0 and starts_at[best] == now):
                    break
                p = feasible_list[f_index]
                units = per_worker[j, p]
                if touched[p] != decision:
                    touched[p] = decision
                    base[p, :] = free[p]
                    counts[p, 0] = 0
                    counts[p, 1] = 0
                    item_offset[p, 0] = 0
                if max_base[p] >= units and _fits_now(base[p], sigma[p], units, r):
                    t = now
                else:
                    if built[p] != decision:
                        built[p] = decision
                        for c in range(group_count[p]):
                            y = group_running[p, c]
                            f = _finish_of(now, start[y], duration[y], run_speed[y])
                            if f > now:
                                _add_item(f, worker_offset[y], worker_offset[y + 1], run_share[y], worker_node,
                                          item_finish[p], item_offset[p], entry_node[p], entry_units[p],
                                          by_finish[p], counts[p])
                        n_items = counts[p, 0]
                        by_finish[p, :n_items] = np.argsort(item_finish[p, :n_items], kind="mergesort")
                    t = _earliest(now, units, r, base[p], item_finish[p], item_offset[p], entry_node[p],
                                  entry_units[p], by_finish[p], counts[p], sigma[p])
                starts_at[p] = t
                fin = t + duration[j] / speed[j, p]
                if fin < best_finish:
                    best_finish = fin
                    best = p
            assigned[i] = best
            planned[i] = np.nan
            if best >= 0:
                p = best
                planned[i] = starts_at[p]
                _commit(now, starts_at[p], duration[j] / speed[j, p], per_worker[j, p], r, sigma[p], base[p],
                        item_finish[p], item_offset[p], entry_node[p], entry_units[p], by_finish[p], counts[p],
                        worker_node[worker_offset[j]:worker_offset[j + 1]])
                planned_finish = starts_at[p] + duration[j] / speed[j, p]
                if planned_finish < low:
                    low = planned_finish
                was_open = max_base[p] >= min_share[p]
                max_base[p] = base[p].max()
                if was_open and max_base[p] < min_share[p]:
                    n_open -= 1
        # starts: group by group, in priority order, the jobs planned at now (only the zero-duration
        # ones that fit when a zero-duration job makes them not all fit, see _zero_only)
        zero_only = _zero_only(now, processed, order, assigned, planned, queue, duration, speed, per_worker,
                               worker_offset, worker_node, free, scratch)
        n_started = 0
        for p in range(n_groups):
            before = n_started
            for k in range(processed):
                i = order[k]
                if assigned[i] != p or not planned[i] == now:
                    continue
                j = queue[i]
                if zero_only:
                    if now + duration[j] / speed[j, p] > now:
                        continue
                    nodes = worker_node[worker_offset[j]:worker_offset[j + 1]]
                    if not _take(free[p], nodes, per_worker[j, p]):
                        continue
                    for n in nodes:  # given back: the loop below takes them
                        free[p, n] += per_worker[j, p]
                wait[j] = 0.0 + (now - arrival[j])
                start[j] = now
                status[j] = 2
                group[j] = p
                run_share[j] = per_worker[j, p]
                run_speed[j] = speed[j, p]
                for w in range(worker_offset[j], worker_offset[j + 1]):
                    free[p, worker_node[w]] -= run_share[j]
                slot_of[j] = group_count[p]
                group_running[p, group_count[p]] = j
                group_count[p] += 1
                run_time = 0.0 + duration[j] / speed[j, p]
                heap_size = _heap_push(heap_time, heap_seq, heap_job, heap_size, now + run_time, started, j)
                started += 1
                n_started += 1
            if n_started > before:
                free_max[p] = free[p].max()
        if n_started:
            k = 0
            for i in range(n_queued):
                j = queue[i]
                if status[j] == 1:
                    queue[k] = j
                    k += 1
            n_queued = k
    for i in range(n_queued):
        status[queue[i]] = 4
    return 0


@dataclass(frozen=True, slots=True, eq=False)
class Instance:
    """One scenario instance (scenario, seed, job limit) as the kernel's arrays, built once."""

    arrival: np.ndarray
    arrival_order: np.ndarray
    submit: np.ndarray
    duration: np.ndarray
    weight: np.ndarray
    gpus: np.ndarray
    workers: np.ndarray
    per_worker: np.ndarray
    speed: np.ndarray
    feasible_offset: np.ndarray
    feasible_list: np.ndarray
    capacity: np.ndarray
    group_nodes: np.ndarray
    total_gpus: float
    weights: tuple[float, float, float]
    kind: str = "eq5"
    w: float = 0.5


def prepare(scenario: object, seed: int | None = None, jobs: int | None = None) -> Instance | None:
    """The instance the engine would run (same fleet, jobs and options), or None if not modelled here."""
    sim = api.simulation(scenario, seed=seed, jobs=jobs, scheduler=PlannerScheduler(parse(BUILTIN["srsf"])))
    engine = sim.engine
    if engine.config.interval_s:
        return None  # periodic decision rounds: not modelled, use the engine
    if sim.scenario.scheduler.decide_on != "event":
        return None  # plans at arrivals only (decide_on = "arrival"): not modelled, use the engine
    groups = list(engine.fleet_state.groups.items())
    index = {key: p for p, (key, _) in enumerate(groups)}
    n_groups = len(groups)
    n_nodes = max(len(nodes) for _, nodes in groups)
    capacity = np.zeros((n_groups, n_nodes), dtype=np.int64)
    group_nodes = np.full((n_groups, n_nodes), -1, dtype=np.int64)
    for p, (_, nodes) in enumerate(groups):
        capacity[p, : len(nodes)] = [engine.fleet_state.node_capacity[n] for n in nodes]
        group_nodes[p, : len(nodes)] = nodes
    records = engine.jobs
    n_jobs = len(records)
    per_worker = np.full((n_jobs, n_groups), 1 << 40, dtype=np.int64)
    speed = np.ones((n_jobs, n_groups), dtype=np.float64)
    allowed = np.zeros((n_jobs, n_groups), dtype=bool)
    for j, job in enumerate(records):
        for option in job.options:
            p = index[option.cluster, option.gpu_type]
            per_worker[j, p] = option.per_worker
            speed[j, p] = option.speed
            allowed[j, p] = True
    offset = np.zeros(n_jobs + 1, dtype=np.int64)
    np.cumsum(allowed.sum(axis=1), out=offset[1:])
    # the arrival feeder: now + (submit - now) when the next submit is later
    arrival = np.empty(n_jobs, dtype=np.float64)
    order = sorted(records, key=lambda j: (j.submit, j.index))
    now = 0.0
    for job in order:
        if job.submit > now:
            now = now + (job.submit - now)
        arrival[job.index] = now
    return Instance(
        arrival=arrival,
        arrival_order=np.array([job.index for job in order], dtype=np.int64),
        submit=np.array([job.submit for job in records], dtype=np.float64),
        duration=np.array([job.remaining_work for job in records], dtype=np.float64),
        weight=np.array([job.weight for job in records], dtype=np.float64),
        gpus=np.array([job.gpus for job in records], dtype=np.float64),
        workers=np.array([job.workers for job in records], dtype=np.int64),
        per_worker=per_worker,
        speed=speed,
        feasible_offset=offset,
        feasible_list=np.nonzero(allowed)[1].astype(np.int64),
        capacity=capacity,
        group_nodes=group_nodes,
        total_gpus=float(sum(float(c.total_gpus) for c in engine.fleet.clusters)),
        weights=tuple(sim.scenario.objective_weights),
        kind=sim.scenario.objective.kind,
        w=float(sim.scenario.objective.w),
    )


@dataclass(frozen=True, slots=True, eq=False)
class Outcome:
    """Per-job results of a compiled run (input order); ``start`` is NaN for a job that never ran."""

    status: np.ndarray
    wait: np.ndarray
    start: np.ndarray
    end: np.ndarray
    gpu_seconds: np.ndarray
    group: np.ndarray
    stats: np.ndarray  # [decisions, longest queue at a decision]; -1 from the direct kernel


def run(instance: Instance, graph: nx.DiGraph, direct: bool = False) -> Outcome:
    """Simulate ``instance`` under mct-gp with priority ``graph``; raises :class:`NanPriority`.

    ``direct=True`` runs :func:`simulate_direct` (for tests; no decision statistics)."""
    codes, consts = program(graph)
    n = instance.arrival.shape[0]
    out = Outcome(np.zeros(n, np.int64), np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n),
                  np.zeros(n, np.int64), np.full(2, -1, np.int64))
    args = (codes, consts, instance.arrival, instance.arrival_order, instance.duration, instance.weight,
            instance.gpus, instance.workers, instance.per_worker, instance.speed, instance.feasible_offset,
            instance.feasible_list, instance.capacity, out.status, out.wait, out.start, out.end,
            out.gpu_seconds, out.group)
    if direct:
        code = simulate_direct(*args)
    else:
        out.stats[:] = 0
        code = simulate(*args, out.stats)
    if code == NAN_PRIORITY:
        raise NanPriority('"priority" must not be NaN')
    return out


def objective(instance: Instance, graph: nx.DiGraph) -> float:
    """The §7 summary objective of the run (Eq. 5, or Eq. 16 with ``[objective] kind = "eq16"``),
    as :func:`simsched.core.metrics.summarize` computes it."""
    import pandas as pd

    out = run(instance, graph)
    done = out.status == _STATUS_DONE
    u = instance.weight[done]
    wait = out.wait[done]
    ends = out.end[done]
    makespan = float(ends.max() - instance.submit.min()) if ends.size else 0.0
    gpus = instance.total_gpus
    util = float(pd.Series(out.gpu_seconds).sum()) / (gpus * makespan) if gpus > 0 and makespan > 0 else 0.0
    if instance.kind == "eq16":
        avg_jct = float((ends - instance.submit[done]).mean()) if done.any() else 0.0
        max_wait = float(wait.max()) if done.any() else 0.0
        return instance.w * avg_jct + (1.0 - instance.w) * max_wait
    cq_avg = float(np.mean(u * wait)) if done.any() else 0.0
    cq_max = float(np.max(u * wait)) if done.any() else 0.0
    w1, w2, w3 = instance.weights
    return w1 * cq_avg + w2 * cq_max + w3 * (1.0 - util)
