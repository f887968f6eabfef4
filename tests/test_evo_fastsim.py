"""The compiled mct-gp run (GP fitness) equals the SimPy engine exactly: differential tests."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.scenario import load_scenario
from simsched.evo import gp
from simsched.evo.priority import NanPriority, evaluate, load_priority, parse, to_json
from simsched.evo.scheduler import make_planner_scheduler
from simsched.learning import fastsim
from simsched.learning.gp import run_objective, run_objective_engine
from tests.helpers import write_scenario

PAPER_TINY = """name = "tiny"
seed = 3
[[cluster]]
name = "a"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[[cluster]]
name = "b"
nodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "paper"
jobs_per_node = 6
[scheduler]
policy = "fifo"
"""
TYPES = ("V100", "K80", "A100")


def engine_run(path: Path, graph, seed: int | None = None):
    scenario = load_scenario(path)
    scheduler = make_planner_scheduler(graph, allocation="mct", weights=scenario.objective_weights)
    return simsched.run(scenario, seed=seed, scheduler=scheduler)


def assert_same(path: Path, graph, seed: int | None = None) -> None:
    """Objective and every job's start, end, wait and GPU-seconds agree exactly."""
    result = engine_run(path, graph, seed)
    instance = fastsim.prepare(load_scenario(path), seed=seed)
    out = fastsim.run(instance, graph)
    jobs = result.jobs
    np.testing.assert_array_equal(out.start, jobs["start"].to_numpy(float))
    np.testing.assert_array_equal(np.where(out.status == 3, out.end, np.nan), jobs["end"].to_numpy(float))
    np.testing.assert_array_equal(np.where(out.status == 3, out.wait, np.nan), jobs["wait"].to_numpy(float))
    np.testing.assert_array_equal(out.gpu_seconds, jobs["gpu_seconds"].to_numpy(float))
    assert list(np.where(out.status == 3, "done", "infeasible")) == list(jobs["status"])
    assert fastsim.objective(instance, graph) == result.summary["objective"]


def random_fleet(rng: np.random.Generator) -> tuple[str, bool]:
    """1-4 clusters; some with two GPU types (then placement is heterogeneous)."""
    lines = []
    mixed = False
    for c in range(int(rng.integers(1, 5))):
        groups = []
        for t in rng.choice(len(TYPES), size=int(rng.integers(1, 3)), replace=False):
            groups.append(f'{{ count = {int(rng.integers(1, 4))}, gpus = {int(rng.choice([1, 2, 4, 8]))}, '
                          f'gpu_type = "{TYPES[t]}" }}')
        mixed |= len(groups) > 1
        lines.append(f'[[cluster]]\nname = "c{c}"\nnodes = [{", ".join(groups)}]')
    return "\n".join(lines), mixed


def random_jobs(rng: np.random.Generator, count: int) -> list[str]:
    """Float submits (some equal, some rounding), fractional durations, multi-worker jobs, GPU types.

    Durations are > 0 (:func:`test_zero_duration_jobs_match_the_engine` adds zeros).
    """
    rows = []
    submit = 0.0
    for i in range(count):
        if rng.random() > 0.3:
            submit += float(rng.choice([rng.exponential(50.0), round(rng.exponential(50.0), 1), 0.1, 0.7]))
        workers = int(rng.choice([1, 1, 1, 2, 3]))
        gpus = workers * int(rng.choice([1, 1, 2, 4, 8]))
        duration = float(rng.choice([0.25, round(rng.exponential(300.0), 2) + 0.01, float(rng.integers(1, 900))]))
        gpu_type = str(rng.choice(["", *TYPES]))
        rows.append(f"j{i},{submit!r},{duration!r},{gpus},{workers},{int(rng.integers(1, 4))},,,{gpu_type}")
    return rows


def test_random_instances_and_functions_match_the_engine(tmp_path: Path) -> None:
    rng = np.random.default_rng(14)
    primitives = gp.PrimitiveSet()
    for case in range(40):
        folder = tmp_path / f"case{case}"
        folder.mkdir()
        clusters, mixed = random_fleet(rng)
        scheduler = 'policy = "fifo"' + ("\nheterogeneous = true" if mixed and rng.random() < 0.7 else "")
        extra = '[objective]\nkind = "eq16"\nw = 0.3' if case % 4 == 3 else ""
        path = write_scenario(folder, clusters=clusters, scheduler=scheduler, extra=extra,
                              jobs=random_jobs(rng, int(rng.integers(5, 45))))
        for graph in (parse("g * d"), gp.to_graph(gp.generate(rng, primitives, 1, 5, "grow"), primitives)):
            assert_same(path, graph)


def test_zero_duration_jobs_match_the_engine(tmp_path: Path) -> None:
    """A third of the jobs last 0 s. The plan gives them no capacity, the engine holds their nodes
    until their finish event at the same instant: both paths start only the zero-duration jobs
    when the jobs planned at now do not all fit (Problem.decision); the direct kernel agrees."""
    rng = np.random.default_rng(5)
    primitives = gp.PrimitiveSet()
    for case in range(12):
        folder = tmp_path / f"case{case}"
        folder.mkdir()
        clusters, mixed = random_fleet(rng)
        scheduler = 'policy = "fifo"' + ("\nheterogeneous = true" if mixed and rng.random() < 0.7 else "")
        jobs = []
        for row in random_jobs(rng, int(rng.integers(5, 45))):
            fields = row.split(",")
            if rng.random() < 0.3:
                fields[2] = "0.0"
            jobs.append(",".join(fields))
        path = write_scenario(folder, clusters=clusters, scheduler=scheduler, jobs=jobs)
        for graph in (parse("d"), gp.to_graph(gp.generate(rng, primitives, 1, 5, "grow"), primitives)):
            assert_same(path, graph)
            instance = fastsim.prepare(load_scenario(path))
            fast, direct = fastsim.run(instance, graph), fastsim.run(instance, graph, direct=True)
            for name in ("status", "wait", "start", "end", "gpu_seconds", "group"):
                np.testing.assert_array_equal(getattr(fast, name), getattr(direct, name))


@pytest.mark.parametrize("priority", ["srsf", "gp-paper", "q * u - d", "d % (q - q)"])
def test_paper_generator_instances_match_the_engine(tmp_path: Path, priority: str) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(PAPER_TINY)
    for seed in (1, 2, 1000):
        assert_same(path, load_priority(priority), seed)


def test_run_objective_equals_the_engine_path_and_nan_scores_inf(tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(PAPER_TINY)
    for text in ("u * q - g", "1e308 * 10 - 1e308 * 10 + d"):
        graph_json = json.dumps(to_json(parse(text)))
        fast = run_objective(str(path), 7, graph_json, None)
        assert fast == run_objective_engine(str(path), 7, graph_json, None)
    assert math.isinf(fast)
    with pytest.raises(NanPriority):
        engine_run(path, parse("1e308 * 10 - 1e308 * 10 + d"), 7)


def test_periodic_rounds_are_left_to_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "tiny.toml"
    path.write_text(PAPER_TINY.replace('policy = "fifo"', 'policy = "fifo"\ninterval_s = 600'))
    assert fastsim.prepare(load_scenario(path)) is None
    graph_json = json.dumps(to_json(parse("g * d")))
    assert run_objective(str(path), 1, graph_json, None) == run_objective_engine(str(path), 1, graph_json, None)


def test_arrival_trigger_is_left_to_the_engine(tmp_path: Path) -> None:
    """decide_on = "arrival" (plans at arrivals only) is not modelled here: learning scores it by the engine,
    whose mct-gp then follows the scenario's trigger."""
    path = tmp_path / "tiny.toml"
    path.write_text(PAPER_TINY.replace('policy = "fifo"', 'policy = "fifo"\ndecide_on = "arrival"'))
    assert fastsim.prepare(load_scenario(path)) is None
    graph_json = json.dumps(to_json(parse("g * d")))
    arrival = run_objective(str(path), 1, graph_json, None)
    assert arrival == run_objective_engine(str(path), 1, graph_json, None)
    scenario = load_scenario(path).with_scheduler_keys({"policy": "mct-gp", "priority": "g * d",
                                                        "decide_on": "arrival"}, "test")
    assert arrival == simsched.run(scenario, seed=1).summary["objective"]


finite = st.floats(-1e6, 1e6, allow_nan=False)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), values=st.lists(st.tuples(finite, finite, finite, finite),
                                                       min_size=1, max_size=12))
def test_program_evaluates_like_the_graph(seed: int, values: list) -> None:
    """Same floats as priority.evaluate (protected division, shared subtrees copied out)."""
    rng = np.random.default_rng(seed)
    primitives = gp.PrimitiveSet(constants=(0.0, 2.0))
    graph = gp.to_graph(gp.generate(rng, primitives, 0, 6, "grow"), primitives)
    cols = np.array(values, dtype=np.float64).T
    cols[:, ::3] = 0.0  # zeros exercise x % 0 = x
    d, q, u, g = (np.ascontiguousarray(c) for c in cols)
    expected = evaluate(graph, {"d": d, "q": q, "u": u, "g": g})
    codes, consts = fastsim.program(graph)
    out = np.empty(len(d))
    ok = fastsim._priority(codes, consts, d, q, u, g, len(d), out, np.empty(codes.shape[0]))
    assert ok == (not np.isnan(expected).any())
    if ok:
        np.testing.assert_array_equal(out, expected)


def test_fast_kernel_equals_the_direct_kernel_on_paper_instances() -> None:
    """The shortcuts of ``simulate`` (lazy group states, early MCT stop, first fit at now) change nothing."""
    from simsched.config.instances import paper_instance

    rng = np.random.default_rng(7)
    primitives = gp.PrimitiveSet()
    graphs = [load_priority("srsf"), load_priority("gp-paper"),
              *(gp.to_graph(gp.generate(rng, primitives, 2, 6, "grow"), primitives) for _ in range(3))]
    for index in (1, 10, 46):  # light, loaded, overloaded (queues of a dozen jobs)
        instance = fastsim.prepare(paper_instance(0, index, scheduler={"policy": "mct-gp"}))
        for graph in graphs:
            fast, direct = fastsim.run(instance, graph), fastsim.run(instance, graph, direct=True)
            for name in ("status", "wait", "start", "end", "gpu_seconds", "group"):
                np.testing.assert_array_equal(getattr(fast, name), getattr(direct, name))


def test_an_overloaded_paper_instance_matches_the_engine() -> None:
    from simsched.config.instances import paper_instance

    scenario = paper_instance(0, 46, scheduler={"policy": "mct-gp"})  # 2 clusters, queues of 12
    for priority in ("gp-paper", "u * q - g"):
        graph = load_priority(priority)
        result = simsched.run(scenario, jobs=300, scheduler=make_planner_scheduler(graph))
        instance = fastsim.prepare(scenario, jobs=300)
        assert fastsim.objective(instance, graph) == result.summary["objective"]
        assert fastsim.run(instance, graph).stats[1] > 1
