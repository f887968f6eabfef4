"""Algorithm 2 planner: hand-computed plans, kernel == reference, no over-allocation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core.errors import InputError
from simsched.evo.planner import Plan, max_overallocation, plan_kernel, plan_reference, plan_trusted

PLANNERS = [plan_reference, plan_kernel]


def _assert_same(a: Plan, b: Plan) -> None:
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.finish, b.finish)
    np.testing.assert_array_equal(a.worker_offset, b.worker_offset)
    np.testing.assert_array_equal(a.worker_node, b.worker_node)


@pytest.mark.parametrize("planner", PLANNERS)
def test_hand_computed_plan(planner) -> None:
    # Two nodes of 8 units; a running job holds 6 units of node 0 until t=10.
    plan = planner(
        0.0,
        [8, 8],
        [10.0],
        [[6, 0]],
        per_worker=[4, 2, 8, 4],
        workers=[2, 1, 1, 1],
        duration=[5.0, 3.0, 1.0, 2.0],
        order=[0, 1, 2, 3],
    )
    # job 0: now, sigma=[2, 8] -> both workers best-fit on node 1 (8, then 4).
    # job 1: now, sigma=[2, 0] -> node 0.
    # job 2 (8 units): sigma(0)=[0,0], sigma(3)=[2,0], sigma(5)=[2,8] -> 5 on node 1.
    # job 3: sigma(5)=[2,0] since job 2 (F=6 > 5) counts; sigma(6)=[2,8] -> 6 on node 1.
    np.testing.assert_array_equal(plan.start, [0.0, 0.0, 5.0, 6.0])
    np.testing.assert_array_equal(plan.finish, [5.0, 3.0, 6.0, 8.0])
    np.testing.assert_array_equal(plan.worker_node, [1, 1, 0, 1, 1])
    np.testing.assert_array_equal(plan.nodes(0), [1, 1])


@pytest.mark.parametrize("planner", PLANNERS)
def test_future_job_blocks_earlier_candidate(planner) -> None:
    """Eq. 12 counts a planned job that starts after t; counting only jobs running at t would
    start job 1 at t=2 and put 12 units on an 8-unit node at t=4."""
    plan = planner(
        0.0,
        [8],
        [2.0, 4.0],
        [[4], [4]],
        per_worker=[8, 4],
        workers=[1, 1],
        duration=[10.0, 100.0],
        order=[0, 1],
    )
    np.testing.assert_array_equal(plan.start, [4.0, 14.0])
    np.testing.assert_array_equal(plan.finish, [14.0, 114.0])


@pytest.mark.parametrize("planner", PLANNERS)
def test_best_fit_ties_and_piling(planner) -> None:
    plan = planner(0.0, [4, 4, 4], [], [], [2], [3], [1.0], [0])
    np.testing.assert_array_equal(plan.worker_node, [0, 0, 1])
    # Least free node that still fits wins: node 2 (3 free) over node 0 (8 free).
    plan = planner(0.0, [8, 2, 8], [1.0], [[0, 0, 5]], [3], [1], [1.0], [0])
    np.testing.assert_array_equal(plan.worker_node, [2])


@pytest.mark.parametrize("planner", PLANNERS)
def test_never_fitting_job_gets_inf_and_blocks_nothing(planner) -> None:
    plan = planner(5.0, [4, 4], [], [], [8, 4], [1, 2], [3.0, 3.0], [0, 1])
    assert plan.start[0] == np.inf and plan.finish[0] == np.inf
    np.testing.assert_array_equal(plan.nodes(0), [-1])
    np.testing.assert_array_equal(plan.start[1:], [5.0])
    np.testing.assert_array_equal(plan.nodes(1), [0, 1])


@pytest.mark.parametrize("planner", PLANNERS)
def test_order_is_followed_and_unlisted_jobs_are_nan(planner) -> None:
    plan = planner(0.0, [4], [], [], [4, 4, 4], [1, 1, 1], [1.0, 2.0, 3.0], [2, 0])
    np.testing.assert_array_equal(plan.start[[2, 0]], [0.0, 3.0])
    assert np.isnan(plan.start[1]) and np.isnan(plan.finish[1])
    np.testing.assert_array_equal(plan.nodes(1), [-1])


@pytest.mark.parametrize("planner", PLANNERS)
def test_finished_fixed_jobs_and_zero_durations(planner) -> None:
    # A fixed job finishing at or before now holds nothing; a zero-length job holds nothing.
    plan = planner(10.0, [4], [10.0, 3.0], [[4], [4]], [4, 4], [1, 1], [0.0, 1.0], [0, 1])
    np.testing.assert_array_equal(plan.start, [10.0, 10.0])
    np.testing.assert_array_equal(plan.finish, [10.0, 11.0])


def _random_instance(rng: np.random.Generator, max_jobs: int = 10):
    n_nodes = int(rng.integers(1, 6))
    unit = int(rng.choice([1, 1000]))
    cap = rng.integers(0, 9, n_nodes) * unit
    now = float(rng.integers(0, 5))
    n_fixed = int(rng.integers(0, 5))
    fixed_finish = now + rng.integers(-2, 10, n_fixed).astype(float)
    fixed_usage = np.zeros((n_fixed, n_nodes), np.int64)
    free = cap.copy()
    for k in range(n_fixed):
        for n in range(n_nodes):
            if fixed_finish[k] > now:
                take = int(rng.integers(0, free[n] + 1))
                fixed_usage[k, n] = take
                free[n] -= take
            else:
                fixed_usage[k, n] = int(rng.integers(0, cap[n] + 1))
    n_jobs = int(rng.integers(0, max_jobs + 1))
    per_worker = rng.integers(1, 6, n_jobs) * unit
    workers = rng.integers(1, 4, n_jobs)
    duration = rng.integers(0, 7, n_jobs).astype(float) * rng.choice([1.0, 0.5])
    order = rng.permutation(n_jobs)[: int(rng.integers(0, n_jobs + 1))]
    return now, cap, fixed_finish, fixed_usage, per_worker, workers, duration, order


def test_kernel_equals_reference_on_random_instances() -> None:
    rng = np.random.default_rng(2024)
    for _ in range(400):
        args = _random_instance(rng)
        _assert_same(plan_reference(*args), plan_kernel(*args))


def test_trusted_plan_equals_the_checked_one() -> None:
    """plan_trusted (no input checks, for the planner scheduler's own arrays) gives plan_kernel's plan,
    with per_worker and duration as column slices of (jobs, groups) arrays, as the scheduler passes them."""
    rng = np.random.default_rng(77)
    for _ in range(300):
        now, cap, ffin, fuse, per_worker, workers, duration, order = _random_instance(rng)
        wide_pw = np.stack([per_worker + 1, per_worker]).T.astype(np.int64)  # column 1 is per_worker
        wide_d = np.stack([duration + 1, duration]).T.astype(np.float64)
        trusted = plan_trusted(now, np.asarray(cap, np.int64), np.asarray(ffin, np.float64),
                               np.ascontiguousarray(fuse, np.int64), wide_pw[:, 1],
                               np.asarray(workers, np.int64), wide_d[:, 1], np.asarray(order, np.int64))
        _assert_same(plan_kernel(now, cap, ffin, fuse, per_worker, workers, duration, order), trusted)


def test_kernel_equals_reference_on_larger_instances() -> None:
    rng = np.random.default_rng(11)
    for _ in range(20):
        n_nodes = int(rng.integers(4, 12))
        cap = np.full(n_nodes, 8000)
        n_fixed = int(rng.integers(0, 8))
        fixed_usage = np.zeros((n_fixed, n_nodes), np.int64)
        for k in range(n_fixed):
            fixed_usage[k, k % n_nodes] = 1000 * int(rng.integers(1, 2))
        fixed_finish = rng.uniform(1, 5000, n_fixed)
        n_jobs = 40
        per_worker = rng.choice([1000, 2000, 4000, 8000], n_jobs)
        workers = rng.choice([1, 1, 2, 4, 8], n_jobs)
        duration = np.floor(rng.exponential(3600, n_jobs))
        args = (
            0.0,
            cap,
            fixed_finish,
            fixed_usage,
            per_worker,
            workers,
            duration,
            rng.permutation(n_jobs),
        )
        ref = plan_reference(*args)
        _assert_same(ref, plan_kernel(*args))
        assert max_overallocation(ref, 0.0, cap, fixed_finish, fixed_usage, per_worker) == 0


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_no_overallocation_at_any_instant(seed: int) -> None:
    args = _random_instance(np.random.default_rng(seed), max_jobs=14)
    now, cap, fixed_finish, fixed_usage, per_worker, *_ = args
    plan = plan_kernel(*args)
    assert max_overallocation(plan, now, cap, fixed_finish, fixed_usage, per_worker) == 0
    # Every planned job starts at a candidate time: now or a finish time placed before it.
    finishes = set(fixed_finish.tolist()) | set(plan.finish[np.isfinite(plan.finish)].tolist())
    for s in plan.start[np.isfinite(plan.start)]:
        assert s == now or s in finishes


def test_overallocation_checker_sees_a_bad_plan() -> None:
    bad = Plan(
        start=np.array([0.0, 2.0]),
        finish=np.array([5.0, 6.0]),
        worker_offset=np.array([0, 1, 2]),
        worker_node=np.array([0, 0]),
    )
    assert (
        max_overallocation(bad, 0.0, np.array([8]), np.zeros(0), np.zeros((0, 1)), np.array([6, 6]))
        == 4
    )


@pytest.mark.parametrize(
    "change, message",
    [
        ({"per_worker": [0]}, "per_worker"),
        ({"workers": [0]}, "workers"),
        ({"duration": [-1.0]}, "duration"),
        ({"duration": [1.0, 2.0]}, "one length"),
        ({"order": [0, 0]}, "order"),
        ({"capacity": [7.5]}, "capacity"),
        ({"fixed_finish": [9.0], "fixed_usage": [[9]]}, "over-allocate"),
        ({"fixed_finish": [9.0], "fixed_usage": [[1, 1]]}, "fixed_usage"),
    ],
)
@pytest.mark.parametrize("planner", PLANNERS)
def test_bad_inputs_raise_input_error(planner, change: dict, message: str) -> None:
    kwargs = {
        "now": 0.0,
        "capacity": [8],
        "fixed_finish": [],
        "fixed_usage": [],
        "per_worker": [4],
        "workers": [1],
        "duration": [1.0],
        "order": [0],
    }
    kwargs.update(change)
    with pytest.raises(InputError, match=message):
        planner(**kwargs)


def _state(now, cap, fixed_finish, fixed_usage, max_items, max_entries):
    from simsched.evo.planner import _state_from_fixed

    state = (np.zeros(cap.shape[0], np.int64), np.zeros(max_items), np.zeros(max_items + 1, np.int64),
             np.zeros(max_entries, np.int64), np.zeros(max_entries, np.int64), np.zeros(max_items, np.int64),
             np.zeros(2, np.int64))
    _state_from_fixed(now, cap, fixed_finish, fixed_usage, *state)
    return state


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_place_one_equals_earliest_then_commit(seed: int) -> None:
    """The EA's fused one-worker placement (planner._place_one) against the general path it
    replaces there (_earliest, then _commit): same start, finish, node and planner state after
    every job, on random clusters with running jobs, ties, zero durations and jobs that never fit."""
    from simsched.evo.planner import _commit, _earliest, _place_one

    rng = np.random.default_rng(seed)
    now, cap, fixed_finish, fixed_usage, *_ = _random_instance(rng)
    n_jobs = int(rng.integers(1, 25))
    per_worker = rng.integers(1, 6, n_jobs) * int(max(cap.max(initial=1), 1) // 4 or 1)
    duration = rng.integers(0, 7, n_jobs).astype(float) * rng.choice([1.0, 0.5])
    max_items, max_entries = fixed_finish.shape[0] + n_jobs, fixed_usage.size + n_jobs
    old = _state(now, cap, fixed_finish, fixed_usage, max_items, max_entries)
    new = _state(now, cap, fixed_finish, fixed_usage, max_items, max_entries)
    sigma_old, sigma_new = np.zeros(cap.shape[0], np.int64), np.zeros(cap.shape[0], np.int64)
    nodes = np.zeros(1, np.int64)
    for j in range(n_jobs):
        t_old = _earliest(now, per_worker[j], 1, *old, sigma_old)
        t_new, fin_new = _place_one(now, per_worker[j], duration[j], *new, sigma_new)
        assert t_new == t_old
        if t_old == np.inf:
            assert fin_new == np.inf
            continue
        assert fin_new == _commit(now, t_old, duration[j], per_worker[j], 1, sigma_old, *old, nodes)
        for a, b in zip(old, new):
            np.testing.assert_array_equal(a, b)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_commit_fill_equals_commit(seed: int) -> None:
    """The EA's node-at-a-time best fit for multi-worker jobs (planner._commit_fill) against
    _commit: same finish and planner state after every job (1-4 workers, ties, zero durations)."""
    from simsched.evo.planner import _commit, _commit_fill, _earliest

    rng = np.random.default_rng(seed)
    now, cap, fixed_finish, fixed_usage, *_ = _random_instance(rng)
    n_jobs = int(rng.integers(1, 25))
    per_worker = rng.integers(1, 6, n_jobs) * int(max(cap.max(initial=1), 1) // 4 or 1)
    workers = rng.integers(1, 5, n_jobs)
    duration = rng.integers(0, 7, n_jobs).astype(float) * rng.choice([1.0, 0.5])
    max_items, max_entries = fixed_finish.shape[0] + n_jobs, fixed_usage.size + int(workers.sum())
    old = _state(now, cap, fixed_finish, fixed_usage, max_items, max_entries)
    new = _state(now, cap, fixed_finish, fixed_usage, max_items, max_entries)
    sigma_old, sigma_new = np.zeros(cap.shape[0], np.int64), np.zeros(cap.shape[0], np.int64)
    nodes, candidates = np.zeros(4, np.int64), np.zeros(cap.shape[0], np.int64)
    for j in range(n_jobs):
        t = _earliest(now, per_worker[j], workers[j], *old, sigma_old)
        assert _earliest(now, per_worker[j], workers[j], *new, sigma_new) == t
        if t == np.inf:
            continue
        finish = _commit(now, t, duration[j], per_worker[j], workers[j], sigma_old, *old, nodes)
        assert _commit_fill(now, t, duration[j], per_worker[j], workers[j], sigma_new, *new, candidates) == finish
        np.testing.assert_array_equal(sigma_old, sigma_new)
        for a, b in zip(old, new):
            np.testing.assert_array_equal(a, b)
