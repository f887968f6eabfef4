"""Eq. 16 (w AvgJCT + (1 - w) MaxQT): planner objective, EA fitness, summary and [objective] keys."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import simsched
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.evo.allocation import (
    AllocationInstance,
    ClusterState,
    evaluate_assignment,
    evolve,
    objective_reference,
)
from simsched.evo.ea import _random_init
from simsched.evo.objective import objective
from tests.helpers import write_scenario
from tests.test_evo_allocation import _random_instance


def test_objective_eq16_hand_computed() -> None:
    # now 10; q' = q + (S - now) = 5, 20, 32; q' + d = 25, 30, 37 -> mean 92/3; max q' = 32.
    args = (10.0, np.array([3.0, 1.0, 2.0]), np.array([5.0, 0.0, 2.0]), np.array([10.0, 30.0, 40.0]),
            np.array([20.0, 10.0, 5.0]), np.array([8.0, 1.0, 2.0]), 16.0)
    assert objective(*args, kind="eq16", w=0.25) == pytest.approx(0.25 * 92 / 3 + 0.75 * 32)
    assert objective(*args, kind="eq16", w=1.0) == pytest.approx(92 / 3)
    assert objective(*args, kind="eq16", w=0.0) == pytest.approx(32.0)
    # the weights u and GPUs g do not enter Eq. 16
    assert objective(*args, weights=(9.0, 9.0, 9.0), kind="eq16", w=0.25) == objective(*args, kind="eq16", w=0.25)
    with pytest.raises(InputError, match='"w" must be in'):
        objective(*args, kind="eq16", w=1.5)
    with pytest.raises(InputError, match="unknown kind"):
        objective(*args, kind="eq7")


def test_allocation_instance_eq16_hand_computed() -> None:
    # One node of 8 GPUs. Running job: ends at 4, queued 1 so far, weight 3 (ignored): q' = 1, q' + d = 5.
    # j0 (d 10, q 0, first by priority) starts 4: q' = 4, q' + d = 14.
    # j1 (d 20, q 5) starts 14: q' = 19, q' + d = 39.  w = 0.5: 0.5 * 58/3 + 0.5 * 19.
    state = ClusterState(np.array([8]), np.array([4.0]), np.array([[8]]), np.array([3.0]), np.array([1.0]))
    instance = AllocationInstance(now=0.0, clusters=(state,), per_worker=[8, 8], workers=[1, 1],
                                  duration=[10.0, 20.0], weight=[2.0, 3.0], queued=[0.0, 5.0],
                                  priority=[0.0, 1.0], kind="eq16", w=0.5)
    expected = 0.5 * 58 / 3 + 0.5 * 19
    assert evaluate_assignment(instance, np.array([0, 0])) == pytest.approx(expected, rel=1e-12)
    assert objective_reference(instance, np.array([0, 0])) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(InputError, match='"w" must be in'):
        dataclasses.replace(instance, w=-0.1)


@pytest.mark.parametrize("w", [0.0, 0.3, 1.0])
def test_eq16_kernel_matches_reference_path(w) -> None:
    rng = np.random.default_rng(17)
    for _ in range(20):
        base = _random_instance(rng, int(rng.integers(0, 10)), int(rng.integers(1, 4)))
        instance = dataclasses.replace(base, kind="eq16", w=w)
        population = np.empty((3, instance.n_jobs), np.int64)
        _random_init(instance.kernel, rng.random(population.shape), population)
        for assignment in population:
            assert evaluate_assignment(instance, assignment) == pytest.approx(
                objective_reference(instance, assignment), rel=1e-12)
    result = evolve(instance, np.random.default_rng(0), n=6, generations=5)  # EA fitness is Eq. 16 too
    assert result.objective == pytest.approx(objective_reference(instance, result.assignment), rel=1e-12)


ONE = '[[cluster]]\nname = "a"\nnodes = [{ count = 1, gpus = 8 }]'


def test_summary_reports_eq16(tmp_path) -> None:
    # fifo: A 0-100, B 100-150 -> avg JCT 125, max wait 100; w = 0.2: 25 + 80 = 105
    path = write_scenario(tmp_path, clusters=ONE, jobs=["A,0,100,8,,2,,,", "B,0,50,8,,1,,,"],
                          scheduler='policy = "fifo"', extra='[objective]\nkind = "eq16"\nw = 0.2\n')
    result = simsched.run(path)
    assert result.summary["avg_jct"] == 125.0 and result.summary["max_wait"] == 100.0
    assert result.summary["objective"] == pytest.approx(105.0)
    assert result.summary["per_cluster"]["a"]["objective"] == pytest.approx(105.0)
    assert result.summary["objective_spec"]["kind"] == "eq16" and result.summary["objective_spec"]["w"] == 0.2


def test_evo_gp_runs_with_eq16(tmp_path) -> None:
    two = ONE + '\n[[cluster]]\nname = "b"\nnodes = [{ count = 1, gpus = 8 }]'
    jobs = [f"j{k},{k},{10 + 7 * k},{[2, 4, 8][k % 3]},,{1 + k % 3},,{'ab'[k % 2]}," for k in range(10)]
    extra = '[objective]\nkind = "eq16"\nw = 0.7\n'
    path = write_scenario(tmp_path, clusters=two, jobs=jobs, extra=extra,
                          scheduler='policy = "evo-gp"\npopulation = 6\ngenerations = 3')
    result = simsched.run(path)
    s = result.summary
    assert s["completed"] == 10
    assert s["objective"] == pytest.approx(0.7 * s["avg_jct"] + 0.3 * s["max_wait"])


@pytest.mark.parametrize("table, message", [
    ('kind = "eq7"', "objective.kind: unknown value 'eq7'; valid: eq5, eq16"),
    ('kind = "eq16"\nw = 1.5', "objective.w: must be <= 1.0"),
    ('kind = "eq16"\nw = -0.5', "objective.w: must be >= 0.0"),
    ('kind = "eq16"\nweights = [1, 1, 1]', 'objective.weights: is only used with kind = "eq5"'),
    ('w = 0.5', 'objective.w: is only used with kind = "eq16"'),
    ('kind = "eq16"\nalpha = 1', "objective.alpha: unknown key"),
])
def test_bad_objective_keys(tmp_path, table, message) -> None:
    path = write_scenario(tmp_path, clusters=ONE, jobs=["A,0,1,1,,,,,"], scheduler='policy = "fifo"',
                          extra=f"[objective]\n{table}\n")
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace("[", r"\[")):
        load_scenario(path)


def test_default_objective_is_eq5(tmp_path) -> None:
    path = write_scenario(tmp_path, clusters=ONE, jobs=["A,0,1,1,,,,,"], scheduler='policy = "fifo"')
    scenario = load_scenario(path)
    assert scenario.objective.kind == "eq5" and scenario.objective_weights == (1.0, 1.0, 1.0)
