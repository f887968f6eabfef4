"""The objective's floor (simsched/evo/floor.py) and the EA's stop at it: a faithful shortcut.

``evolve`` returns at once when an initial individual is at the floor. These tests hold it to the
full EA (``floor=False``): the same assignment, objective and random state afterwards, on random
integral instances (idle ones, where it applies, and contended ones), and on whole evo-gp runs.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.scenario import load_scenario
from simsched.evo import ea
from simsched.evo.allocation import AllocationInstance, ClusterState, evaluate_assignment, evolve
from simsched.evo.floor import objective_floor
from tests.test_evo_decide_on import PAPER


def _instance(seed: int, n_jobs: int, n_clusters: int, busy: float, *, same_duration: bool = True,
              integral: bool = True, now: float = 100.0) -> AllocationInstance:
    """Whole-second data (as the paper's instances): ``busy`` is the chance a node is fully taken by
    a running job, so busy = 0 gives idle clusters where every job can start now."""
    rng = np.random.default_rng(seed)
    clusters = []
    for _ in range(n_clusters):
        n_nodes = int(rng.integers(1, 5))
        taken = rng.random(n_nodes) < busy
        fixed = np.nonzero(taken)[0]
        usage = np.zeros((fixed.size, n_nodes), np.int64)
        usage[np.arange(fixed.size), fixed] = 8
        clusters.append(ClusterState(np.full(n_nodes, 8), now + rng.integers(1, 60, fixed.size).astype(float),
                                     usage, rng.integers(1, 4, fixed.size).astype(float),
                                     rng.integers(0, 30, fixed.size).astype(float)))
    duration = rng.integers(1, 40, n_jobs).astype(float)
    if not same_duration:
        duration = duration[:, None] * rng.choice([1.0, 2.0], (n_jobs, n_clusters))
    queued = rng.integers(0, 30, n_jobs).astype(float)
    if not integral:
        queued = queued + 0.25
    return AllocationInstance(
        now=now,
        clusters=tuple(clusters),
        per_worker=rng.choice([1, 2, 4, 8], n_jobs),
        workers=rng.choice([1, 1, 2], n_jobs),
        duration=duration,
        weight=rng.integers(1, 4, n_jobs).astype(float),
        queued=queued,
        priority=rng.integers(0, 5, n_jobs).astype(float),
        allowed=rng.random((n_jobs, n_clusters)) < 0.85,
    )


def _state(rng: np.random.Generator) -> bytes:
    return pickle.dumps(rng.bit_generator.state)


def _both(instance: AllocationInstance, seed: int, **options):
    """evolve with and without the floor stop from the same stream: (results, states after)."""
    results, states = [], []
    for floor in (True, False):
        rng = np.random.default_rng(seed)
        results.append(evolve(instance, rng, floor=floor, **options))
        states.append(_state(rng))
    return results, states


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_jobs=st.integers(2, 9), n_clusters=st.integers(2, 4),
       busy=st.sampled_from([0.0, 0.0, 0.3, 0.8]), stagnation=st.sampled_from([None, 3]))
def test_floor_stop_gives_the_full_eas_answer_and_random_state(seed, n_jobs, n_clusters, busy, stagnation) -> None:
    instance = _instance(seed, n_jobs, n_clusters, busy)
    (fast, full), (after_fast, after_full) = _both(instance, seed, n=8, generations=12, stagnation=stagnation)
    assert np.array_equal(fast.assignment, full.assignment)
    assert fast.objective == full.objective
    assert after_fast == after_full  # later decisions draw the same numbers
    assert fast.generations == full.generations
    assert np.array_equal(fast.history, full.history)
    if fast.stop_reason == "floor":
        assert full.history[0] == full.history[-1]  # the full EA never improved on it either


def test_floor_stop_applies_on_idle_clusters_and_not_where_jobs_queue() -> None:
    idle = _instance(3, 6, 3, busy=0.0)
    (fast, full), _ = _both(idle, 1, n=10, generations=30)
    assert fast.stop_reason == "floor" and full.stop_reason == "generations"
    assert fast.evaluations < full.evaluations
    # every node taken, so no job starts now: the floor cannot be reached
    crowded = _instance(3, 6, 3, busy=1.0)
    (fast, _), _ = _both(crowded, 1, n=10, generations=30)
    assert fast.stop_reason == "generations"


@pytest.mark.parametrize("seed", range(6))
def test_the_floor_is_a_lower_bound_of_every_assignment(seed: int) -> None:
    instance = _instance(seed, 7, 3, busy=0.4)
    bound = objective_floor(instance.kernel)
    assert bound is not None
    rng = np.random.default_rng(seed)
    k = instance.kernel
    for _ in range(200):
        a = np.array([rng.choice(np.nonzero(row)[0]) if row.any() else -1 for row in k.feasible])
        assert evaluate_assignment(instance, a) >= bound


def test_the_floor_is_unproven_where_it_could_be_wrong() -> None:
    assert objective_floor(_instance(1, 5, 3, 0.0).kernel) is not None
    # a job's duration depends on its cluster (GPU speed): C_u differs between assignments
    assert objective_floor(_instance(1, 5, 3, 0.0, same_duration=False).kernel) is None
    # a fractional term: sums in another order may round differently
    assert objective_floor(_instance(1, 5, 3, 0.0, integral=False).kernel) is None
    assert objective_floor(_instance(1, 5, 3, 0.0, now=100.5).kernel) is None
    # a negative weight makes the objective fall as a term grows
    base = _instance(1, 5, 3, 0.0)
    negative = AllocationInstance(base.now, base.clusters, base.per_worker, base.workers, base.duration,
                                  base.weight, base.queued, base.priority, base.allowed,
                                  weights=(1.0, -1.0, 1.0))
    assert objective_floor(negative.kernel) is None


def test_a_time_budget_runs_the_ea_as_before() -> None:
    rng = np.random.default_rng(0)
    result = evolve(_instance(3, 6, 3, busy=0.0), rng, n=6, generations=3, time_budget_s=60.0)
    assert result.stop_reason == "generations"


@pytest.mark.parametrize("decide_on", ["event", "arrival"])
def test_whole_evo_gp_runs_are_identical_with_and_without_the_floor_stop(monkeypatch, decide_on) -> None:
    scenario = load_scenario(PAPER).with_scheduler_keys(
        {"policy": "evo-gp", "population": 10, "generations": 8, "decide_on": decide_on}, "test")
    stops: list[str] = []
    full = ea.evolve

    def counting(*args, **kwargs):
        result = full(*args, **kwargs)
        stops.append(result.stop_reason)
        return result

    monkeypatch.setattr("simsched.evo.scheduler.evolve", counting)
    fast = simsched.run(scenario, jobs=150, seed=2)
    monkeypatch.setattr("simsched.evo.scheduler.evolve", lambda *a, **kw: full(*a, **{**kw, "floor": False}))
    slow = simsched.run(scenario, jobs=150, seed=2)
    assert "floor" in stops  # the shortcut was taken in this run
    assert fast.events.equals(slow.events)
    assert fast.jobs.equals(slow.jobs)
