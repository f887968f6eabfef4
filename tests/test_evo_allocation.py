"""Objective (Eq. 2-5), MCT and the allocation EA (Algorithm 1)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core.errors import InputError
from simsched.evo.allocation import (
    AllocationInstance,
    ClusterState,
    evaluate_assignment,
    evolve,
    mct_assign,
    objective_reference,
    plan_assignment,
)
from simsched.evo.ea import _offspring, _random_init
from simsched.evo.objective import objective
from simsched.evo.planner import plan_reference


def test_objective_hand_computed() -> None:
    # u q = [1 * 10, 2 * (0 + 5)] -> avg 10, max 10; C_u = (2*10 + 4*5) / (8 * (10 - 0)) = 0.5
    f = objective(
        0.0,
        weight=np.array([1.0, 2.0]),
        queued=np.array([10.0, 0.0]),
        start=np.array([0.0, 5.0]),
        remaining=np.array([10.0, 5.0]),
        gpus=np.array([2.0, 4.0]),
        total_capacity=8.0,
    )
    assert f == pytest.approx(20.5)
    weighted = objective(
        0.0,
        np.array([1.0, 2.0]),
        np.array([10.0, 0.0]),
        np.array([0.0, 5.0]),
        np.array([10.0, 5.0]),
        np.array([2.0, 4.0]),
        8.0,
        weights=(0.5, 0.0, 2.0),
    )
    assert weighted == pytest.approx(0.5 * 10 + 2.0 * 0.5)


def test_objective_edge_cases() -> None:
    empty = np.zeros(0)
    assert objective(3.0, empty, empty, empty, empty, empty, 8.0) == 0.0
    one = np.ones(1)
    assert objective(0.0, one, one, np.array([np.inf]), one, one, 8.0) == np.inf


def _cluster(nodes: int, gpus: int, fixed: list[tuple[float, list[int]]] = ()) -> ClusterState:
    finish = np.array([f for f, _ in fixed], dtype=float)
    usage = np.array([u for _, u in fixed], dtype=np.int64).reshape(len(fixed), nodes)
    return ClusterState(
        np.full(nodes, gpus), finish, usage, np.ones(len(fixed)), np.zeros(len(fixed))
    )


def _random_instance(rng: np.random.Generator, n_jobs: int, n_clusters: int) -> AllocationInstance:
    clusters = []
    for _ in range(n_clusters):
        n_nodes = int(rng.integers(1, 5))
        cap = np.full(n_nodes, 8)
        n_fixed = int(rng.integers(0, 4))
        usage = np.zeros((n_fixed, n_nodes), np.int64)
        free = cap.copy()
        for k in range(n_fixed):
            n = int(rng.integers(0, n_nodes))
            take = int(rng.integers(0, free[n] + 1))
            usage[k, n] = take
            free[n] -= take
        clusters.append(
            ClusterState(
                cap,
                rng.uniform(1, 50, n_fixed),
                usage,
                rng.integers(1, 4, n_fixed).astype(float),
                rng.uniform(0, 20, n_fixed),
            )
        )
    return AllocationInstance(
        now=0.0,
        clusters=tuple(clusters),
        per_worker=rng.choice([1, 2, 4, 8], n_jobs),
        workers=rng.choice([1, 1, 2, 3], n_jobs),
        duration=rng.integers(0, 40, (n_jobs, n_clusters)).astype(float),
        weight=rng.integers(1, 4, n_jobs).astype(float),
        queued=rng.uniform(0, 30, n_jobs),
        priority=rng.integers(0, 5, n_jobs).astype(float),
        allowed=rng.random((n_jobs, n_clusters)) < 0.85,
        current=rng.integers(-1, n_clusters, n_jobs),
    )


def _mct_reference(instance: AllocationInstance) -> np.ndarray:
    """MCT written directly over the reference planner."""
    k = instance.kernel
    assignment = np.full(instance.n_jobs, -1)
    for j in k.order:
        best, best_finish = -1, np.inf
        for p in np.nonzero(instance.feasible[j])[0]:
            c = instance.clusters[p]
            mine = [i for i in k.order if assignment[i] == p] + [j]
            plan = plan_reference(
                instance.now,
                c.capacity,
                c.fixed_finish,
                c.fixed_usage,
                k.per_worker[:, p],
                k.workers,
                k.duration[:, p],
                mine,
            )
            if plan.finish[j] < best_finish:
                best, best_finish = int(p), plan.finish[j]
        assignment[j] = best
    return assignment


def test_feasibility_is_eq10_generalised_and_allowed() -> None:
    # 2 workers of 8 units: cluster 0 has one 8-unit node (no), cluster 1 two (yes), cluster 2
    # two but not allowed.
    instance = AllocationInstance(
        now=0.0,
        clusters=(_cluster(1, 8), _cluster(2, 8), _cluster(2, 8)),
        per_worker=[8, 16],
        workers=[2, 1],
        duration=[1.0, 1.0],
        weight=[1, 1],
        queued=[0, 0],
        priority=[0, 1],
        allowed=[[True, True, False], [True, True, True]],
    )
    np.testing.assert_array_equal(instance.feasible, [[False, True, False], [False, False, False]])
    np.testing.assert_array_equal(mct_assign(instance), [1, -1])
    result = evolve(instance, np.random.default_rng(0), n=4, generations=3)
    np.testing.assert_array_equal(result.assignment, [1, -1])


def test_mct_hand_computed() -> None:
    # Cluster 0 is full until t=100; cluster 1 is empty but slower for job 1 (per-cluster duration).
    instance = AllocationInstance(
        now=0.0,
        clusters=(_cluster(1, 8, [(100.0, [8])]), _cluster(1, 8)),
        per_worker=[8, 8, 8],
        workers=[1, 1, 1],
        duration=[[10.0, 10.0], [10.0, 500.0], [10.0, 10.0]],
        weight=[1, 1, 1],
        queued=[0, 0, 0],
        priority=[0.0, 1.0, 2.0],
    )
    # job 0: finish 110 on 0, 10 on 1 -> 1. job 1: 110 on 0, 510 on 1 -> 0.
    # job 2: 120 on 0 (after job 1), 20 on 1 -> 1.
    np.testing.assert_array_equal(mct_assign(instance), [1, 0, 1])


def test_mct_matches_reference_mct() -> None:
    rng = np.random.default_rng(5)
    for _ in range(25):
        instance = _random_instance(rng, int(rng.integers(0, 9)), int(rng.integers(1, 4)))
        np.testing.assert_array_equal(mct_assign(instance), _mct_reference(instance))


def test_kernel_objective_matches_reference_path() -> None:
    rng = np.random.default_rng(9)
    for _ in range(30):
        instance = _random_instance(rng, int(rng.integers(0, 10)), int(rng.integers(1, 4)))
        population = np.empty((3, instance.n_jobs), np.int64)
        _random_init(instance.kernel, rng.random(population.shape), population)
        for assignment in [*population, mct_assign(instance)]:
            assert evaluate_assignment(instance, assignment) == pytest.approx(
                objective_reference(instance, assignment), rel=1e-12
            )


def test_plan_assignment_kernel_equals_reference() -> None:
    instance = _random_instance(np.random.default_rng(1), 12, 3)
    assignment = mct_assign(instance)
    for fast, slow in zip(
        plan_assignment(instance, assignment), plan_assignment(instance, assignment, True)
    ):
        np.testing.assert_array_equal(fast.start, slow.start)
        np.testing.assert_array_equal(fast.worker_node, slow.worker_node)


def test_every_individual_stays_feasible() -> None:
    rng = np.random.default_rng(4)
    for _ in range(10):
        instance = _random_instance(rng, 15, 4)
        k = instance.kernel
        population = np.empty((20, instance.n_jobs), np.int64)
        _random_init(k, rng.random(population.shape), population)
        children = np.empty_like(population)
        for _ in range(30):
            _offspring(k, population, rng.random((10, 10)), 1.0, children)
            for child in children:
                instance.check_assignment(child)  # raises on an infeasible gene
            population = children.copy()


def test_mutation_changes_assignments() -> None:
    instance = _random_instance(np.random.default_rng(8), 15, 4)
    k = instance.kernel
    population = np.empty((1, instance.n_jobs), np.int64)
    _random_init(k, np.random.default_rng(0).random(population.shape), population)
    children = np.empty((2, instance.n_jobs), np.int64)
    moved = 0
    for seed in range(50):
        _offspring(k, population, np.random.default_rng(seed).random((1, 10)), 1.0, children)
        moved += int((children != population[0]).any())
    assert moved > 25


@pytest.fixture(scope="module")
def busy_instance() -> AllocationInstance:
    return _random_instance(np.random.default_rng(21), 30, 4)


def test_evolve_best_never_worsens_and_is_consistent(busy_instance) -> None:
    result = evolve(busy_instance, np.random.default_rng(3), n=20, generations=40)
    assert result.generations == 40 and result.stop_reason == "generations"
    assert len(result.history) == 41
    assert np.all(np.diff(result.history) <= 0)
    busy_instance.check_assignment(result.assignment)
    assert result.objective == evaluate_assignment(busy_instance, result.assignment)
    assert result.objective == pytest.approx(objective_reference(busy_instance, result.assignment))
    assert result.cache_hits > 0


def test_evolve_same_seed_same_result_and_cache_is_exact(busy_instance) -> None:
    a = evolve(busy_instance, np.random.default_rng(11), n=16, generations=25)
    b = evolve(busy_instance, np.random.default_rng(11), n=16, generations=25)
    c = evolve(busy_instance, np.random.default_rng(11), n=16, generations=25, cache=False)
    for other in (b, c):
        np.testing.assert_array_equal(a.assignment, other.assignment)
        np.testing.assert_array_equal(a.history, other.history)
    assert c.cache_hits == 0 and c.cluster_plans > a.cluster_plans


def test_evolve_seeding_and_stops(busy_instance) -> None:
    mct = evaluate_assignment(busy_instance, mct_assign(busy_instance))
    seeded = evolve(
        busy_instance, np.random.default_rng(0), n=10, generations=5, seed_with=("mct", "current")
    )
    assert seeded.seeded == ("mct", "current")
    assert seeded.history[0] <= mct
    budget = evolve(
        busy_instance, np.random.default_rng(0), n=10, generations=50, time_budget_s=0.0
    )
    assert budget.generations == 0 and budget.stop_reason == "time_budget"
    stalled = evolve(
        busy_instance, np.random.default_rng(0), n=10, generations=10_000, stagnation=3
    )
    assert stalled.stop_reason == "stagnation" and stalled.generations < 10_000


def test_evolve_bad_arguments(busy_instance) -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(InputError, match="seed_with"):
        evolve(busy_instance, rng, seed_with=("best",))
    with pytest.raises(InputError, match='"n"'):
        evolve(busy_instance, rng, n=1)
    with pytest.raises(InputError, match="mutation_rate"):
        evolve(busy_instance, rng, mutation_rate=2.0)
    no_current = AllocationInstance(0.0, (_cluster(1, 8),), [1], [1], [1.0], [1], [0], [0])
    with pytest.raises(InputError, match="current"):
        evolve(no_current, rng, seed_with=("current",))


def test_instance_validation() -> None:
    with pytest.raises(InputError, match="per_worker"):
        AllocationInstance(0.0, (_cluster(1, 8),), [[1, 1]], [1], [1.0], [1], [0], [0])
    with pytest.raises(InputError, match="over-allocate"):
        AllocationInstance(0.0, (_cluster(1, 8, [(5.0, [9])]),), [1], [1], [1.0], [1], [0], [0])
    instance = AllocationInstance(
        0.0, (_cluster(1, 8), _cluster(1, 2)), [4], [1], [1.0], [1], [0], [0]
    )
    with pytest.raises(InputError, match="feasible"):
        instance.check_assignment([1])


def test_no_jobs() -> None:
    instance = AllocationInstance(
        0.0, (_cluster(2, 8, [(10.0, [4, 0])]),), np.zeros(0, int), np.zeros(0, int), [], [], [], []
    )
    result = evolve(instance, np.random.default_rng(0), n=4, generations=2)
    assert result.assignment.shape == (0,)
    # One running job: u q = 0, C_u = 4 * 10 / (16 * 10).
    assert result.objective == pytest.approx(1 - 0.25)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_select_equals_numpy_stable_argsort(seed: int) -> None:
    """The EA's in-kernel selection against the numpy code it replaced: ties, inf and NaN."""
    from simsched.evo.ea import _select

    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(2, 12)), 2 * int(rng.integers(1, 7))
    pool = rng.choice([0.0, -0.0, 1.0, 2.0, 2.5, np.inf, -np.inf, np.nan], n + m)
    fitness = np.sort(pool[:n], kind="stable")  # parents arrive sorted
    child_fitness = pool[n:].copy()
    population = rng.integers(0, 5, (n, 3))
    children = rng.integers(0, 5, (m, 3))
    out_population, out_fitness = np.empty_like(population), np.empty_like(fitness)
    _select(population, fitness, children, child_fitness, np.empty(m, np.int64), out_population, out_fitness)
    keep = np.argsort(np.concatenate((fitness, child_fitness)), kind="stable")[:n]
    np.testing.assert_array_equal(out_population, np.concatenate((population, children))[keep])
    np.testing.assert_array_equal(out_fitness, np.concatenate((fitness, child_fitness))[keep])


def test_generation_kernel_equals_the_python_loop() -> None:
    """Offspring, objectives and selection in one kernel give the populations the old loop gave."""
    from simsched.evo.ea import _generation
    from simsched.evo.fitness import _evaluate_population, _new_cache, _workspace

    rng = np.random.default_rng(17)
    for _ in range(5):
        instance = _random_instance(rng, 20, 3)
        k = instance.kernel
        n, pairs = 10, 5
        population = np.empty((n, instance.n_jobs), np.int64)
        _random_init(k, rng.random(population.shape), population)
        fitness = np.empty(n)
        _evaluate_population(k, _workspace(k), _new_cache(instance.n_jobs, 0), False, population, fitness)
        keep = np.argsort(fitness, kind="stable")
        old_pop, old_fit = population[keep], fitness[keep]
        new_pop, new_fit = old_pop.copy(), old_fit.copy()
        ws, table = _workspace(k), _new_cache(instance.n_jobs, 1000)
        children, child_fitness = np.empty((2 * pairs, instance.n_jobs), np.int64), np.empty(2 * pairs)
        for _ in range(15):
            uniforms = rng.random((pairs, 10))
            _offspring(k, old_pop, uniforms, 0.5, children)
            _evaluate_population(k, _workspace(k), _new_cache(instance.n_jobs, 0), False, children, child_fitness)
            pool, pool_fitness = np.concatenate((old_pop, children)), np.concatenate((old_fit, child_fitness))
            keep = np.argsort(pool_fitness, kind="stable")[:n]
            old_pop, old_fit = pool[keep], pool_fitness[keep]
            out_pop, out_fit = np.empty_like(new_pop), np.empty_like(new_fit)
            _generation(k, ws, table, True, new_pop, new_fit, uniforms, 0.5, np.empty_like(children),
                        np.empty(2 * pairs), np.empty(2 * pairs, np.int64), out_pop, out_fit)
            new_pop, new_fit = out_pop, out_fit
            np.testing.assert_array_equal(new_pop, old_pop)
            np.testing.assert_array_equal(new_fit, old_fit)


def _kernel_reference(instance: AllocationInstance, unweighted: bool):
    """The fixed jobs' planner states, sums and feasibility as the instance built them before its
    build was made cheaper (4 December 2026): every cluster padded, selected and summed in turn."""
    from simsched.evo.instance import _new_states
    from simsched.evo.planner import _state_from_fixed

    clusters, now = instance.clusters, instance.now
    k = instance.kernel
    n_jobs, n_clusters = k.workers.shape[0], len(clusters)
    n_max = max(c.capacity.shape[0] for c in clusters)
    capacity = np.zeros((n_clusters, n_max), dtype=np.int64)
    slots = np.zeros((n_jobs, n_clusters), dtype=np.int64)
    for p, c in enumerate(clusters):
        capacity[p, : c.capacity.shape[0]] = c.capacity
        slots[:, p] = (c.capacity[None, :] // k.per_worker[:, p : p + 1]).sum(axis=1)
    template = _new_states(n_clusters, n_max, k.max_items, k.max_entries)
    sums = np.zeros((n_clusters, 5))
    for p, c in enumerate(clusters):
        usage = np.zeros((c.fixed_finish.shape[0], n_max), dtype=np.int64)
        usage[:, : c.capacity.shape[0]] = c.fixed_usage
        running = c.fixed_finish > now
        _state_from_fixed(now, capacity[p], c.fixed_finish, usage, *(a[p] for a in template))
        weight = np.ones_like(c.fixed_weight) if unweighted else c.fixed_weight
        uq = weight[running] * c.fixed_queued[running]
        remaining = c.fixed_finish[running] - now
        work = np.ones(int(running.sum())) if unweighted else usage[running].sum(axis=1)
        sums[p] = (uq.sum(), uq.max(initial=-np.inf), (work * remaining).sum(),
                   c.fixed_finish[running].max(initial=now), running.sum())
    return capacity, slots, template, sums


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["eq5", "eq16"]), st.booleans())
def test_instance_kernel_equals_the_per_cluster_build(seed: int, kind: str, many_jobs: bool) -> None:
    """Clusters of unequal sizes (padding), without fixed jobs, with finished fixed jobs (not
    running), with every fixed job running; few jobs (slots in one array operation) or many
    (slots one cluster at a time): the instance's kernel arrays equal the per-cluster build, bit
    for bit."""
    rng = np.random.default_rng(seed)
    now = float(rng.integers(0, 100))
    clusters = []
    for _ in range(int(rng.integers(1, 6))):
        nodes = int(rng.integers(1, 9))
        cap = rng.choice([4000, 8000], nodes)
        n_fixed = int(rng.choice([0, 1, 3, 12]))
        finish = now + rng.integers(-5, 500, n_fixed).astype(float) + rng.random(n_fixed)
        if rng.random() < 0.5:
            finish = np.maximum(finish, now + 1.0)  # all running
        usage = np.zeros((n_fixed, nodes), dtype=np.int64)
        free = cap.copy()
        for i in range(n_fixed):
            n = int(rng.integers(nodes))
            take = int(rng.integers(0, free[n] // 1000 + 1)) * 1000 if finish[i] > now else 1000
            usage[i, n] = take
            if finish[i] > now:
                free[n] -= take
        clusters.append(ClusterState(cap, finish, usage, rng.uniform(0.5, 3, n_fixed), rng.uniform(0, 1e4, n_fixed)))
    n_jobs = int(rng.integers(3000, 4000)) if many_jobs else int(rng.integers(0, 12))
    p = len(clusters)
    instance = AllocationInstance(
        now, tuple(clusters), rng.choice([1000, 2000, 8000], (n_jobs, p)), rng.integers(1, 4, n_jobs),
        rng.uniform(0, 1e4, (n_jobs, p)), rng.uniform(0.5, 3, n_jobs), rng.uniform(0, 1e4, n_jobs),
        rng.random(n_jobs), kind=kind)
    capacity, slots, template, sums = _kernel_reference(instance, kind == "eq16")
    k = instance.kernel
    np.testing.assert_array_equal(k.capacity, capacity)
    np.testing.assert_array_equal(k.feasible, slots >= k.workers[:, None])  # (every cluster allowed)
    assert k.fixed_sums.tobytes() == sums.tobytes()
    for got, want in zip(k.template, template):
        np.testing.assert_array_equal(got, want)
