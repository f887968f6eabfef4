"""The paper's experiment specs repeat the algorithm, not the workload (issue 34; docs/paper.md,
"Seeds and repeats"): every preset of every spec in experiments/paper/ gives each test instance one
fixed job table, and only the stochastic methods repeat (over EA streams)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pytest

from simsched.runs.experiment.grid import plan
from simsched.runs.experiment.spec import load_spec
from simsched.runs.single import prepare
from tests.conftest import REPO

SPECS = sorted((REPO / "experiments" / "paper").glob("*.toml"))


def _presets(path: Path) -> list[str | None]:
    import tomllib

    return [None, *tomllib.loads(path.read_text()).get("preset", {})]


CASES = [(path, preset) for path in SPECS for preset in _presets(path)]


def _workload(task) -> tuple:
    """What decides a run's job table: its seed, workload table and fleet."""
    scenario = task.resolved
    return scenario.seed, repr(scenario.workload), repr(scenario.clusters)


@pytest.mark.parametrize("path, preset", CASES, ids=[f"{p.stem}-{preset or 'base'}" for p, preset in CASES])
def test_every_repeat_of_an_instance_has_its_jobs(path: Path, preset: str | None):
    spec = load_spec(path, preset)
    by_instance: dict[tuple, set] = defaultdict(set)
    repeats: dict[tuple, int] = defaultdict(int)
    for task in plan(spec):
        case = (task.scenario, task.instance, task.point) if spec.instances else \
            (task.scenario, task.instance, task.point, task.seed)
        by_instance[case].add(_workload(task))
        repeats[(*case, task.scheduler)] += 1
    assert by_instance, "the spec plans no run"
    assert [case for case, workloads in by_instance.items() if len(workloads) != 1] == []
    # a deterministic method runs once per case; evo-gp once per EA stream
    for (*_, scheduler), count in repeats.items():
        entry = next(e for e in spec.schedulers if e.name == scheduler)
        assert count == (len(spec.ea_streams) if entry.uses_ea else 1), scheduler


def _table_hash(task) -> str:
    _, table, _ = prepare(task.resolved)
    return hashlib.sha256(pd.util.hash_pandas_object(table, index=False).values.tobytes()).hexdigest()


@pytest.mark.parametrize("name, preset", [("fig4", "tiny"), ("fig5", "quick")])
def test_the_repeats_simulate_one_job_table(name: str, preset: str):
    """The job tables themselves: every run of the instance (each EA stream, each method) has the
    same jobs."""
    tasks = plan(load_spec(REPO / "experiments" / "paper" / f"{name}.toml", preset))
    assert len(tasks) > 1
    assert len({_table_hash(task) for task in tasks}) == 1


def test_the_full_fig4_is_30_fixed_instances_and_15_streams():
    tasks = plan(load_spec(REPO / "experiments" / "paper" / "fig4.toml", "full"))
    assert len({task.instance for task in tasks}) == 30
    assert {task.ea_stream for task in tasks if task.scheduler == "evo-gp"} == set(range(15))
    assert len(tasks) == 30 * (2 * 15 + 5)
