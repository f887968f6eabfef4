"""The restart penalty in evo-gp's plans: moves and restarts cost ``restart_penalty_s`` of GPU time."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from simsched.evo.allocation import evaluate_assignment, objective_reference
from simsched.evo.ea import _random_init
from simsched.evo.scheduler import Problem
from tests.test_evo_allocation import _random_instance


def _view():
    fleet = SimpleNamespace(groups={(0, "V100"): (0,), (1, "V100"): (1,)}, node_capacity={0: 8000, 1: 8000})
    return SimpleNamespace(now=10.0, fleet=fleet, remaining_time=lambda job, speed=1.0: 100.0 / speed,
                           queued_time=lambda job: 5.0)


def _job(name, running_nodes=(), preemptions=0):
    options = tuple(SimpleNamespace(cluster=c, gpu_type="V100", per_worker=1000, speed=1.0) for c in (0, 1))
    return SimpleNamespace(job_id=name, options=options, running_nodes=running_nodes, preemptions=preemptions,
                           workers=1, weight=1.0)


@pytest.mark.parametrize("penalty", [0.0, 50.0])
def test_planned_durations_carry_the_penalty_of_each_restart(penalty):
    # Q: preempted earlier, queued (restarts anywhere); N: never preempted; R: running in group 0.
    jobs = [_job("Q", preemptions=1), _job("N"), _job("R", running_nodes=(0,))]
    problem = Problem(_view(), jobs, np.arange(3.0), (1.0, 1.0, 1.0), [], restart_penalty_s=penalty)
    np.testing.assert_array_equal(problem.duration, [[100 + penalty] * 2, [100, 100], [100, 100 + penalty]])
    np.testing.assert_array_equal(problem.overhead, [[penalty] * 2, [0, 0], [0, penalty]])
    instance = problem.instance()
    # the penalty holds GPUs but is not useful work: C_u's sum leaves it out
    assert evaluate_assignment(instance, np.array([0, 1, 1])) == pytest.approx(
        objective_reference(instance, np.array([0, 1, 1])), rel=1e-12)


def test_overhead_is_left_out_of_utilisation_kernel_equals_reference():
    rng = np.random.default_rng(4)
    for _ in range(20):
        base = _random_instance(rng, int(rng.integers(1, 9)), int(rng.integers(1, 4)))
        instance = dataclasses.replace(base, overhead=base.kernel.duration * rng.random(base.kernel.duration.shape))
        population = np.empty((3, instance.n_jobs), np.int64)
        _random_init(instance.kernel, rng.random(population.shape), population)
        for assignment in population:
            assert evaluate_assignment(instance, assignment) == pytest.approx(
                objective_reference(instance, assignment), rel=1e-12)
