"""Every ordering's order and every placement's node choice on tiny hand-computed cases."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched

HEADER = "job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type"


def scenario(folder: Path, rows: list[str], scheduler: str, nodes: str, extra: str = "") -> Path:
    (folder / "jobs.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    path = folder / "scenario.toml"
    path.write_text(f'name = "t"\nseed = 1\n{extra}\n[[cluster]]\nname = "c0"\nnodes = {nodes}\n'
                    f'[workload]\nsource = "csv"\npath = "jobs.csv"\n[scheduler]\n{scheduler}\n')
    return path


def times(path: Path) -> dict[str, tuple[float, float]]:
    jobs = simsched.run(path).jobs
    return {r.job_id: (r.start, r.end) for r in jobs.itertuples()}


ONE_GPU = '[{ count = 1, gpus = 1, gpu_type = "V100" }]'
TWO_GPUS = '[{ count = 1, gpus = 2, gpu_type = "V100" }]'
# a blocks the single GPU until 10; b, c, d wait and are then taken in key order
FOUR_JOBS = ["a,0,10,1,1,1,100,,", "b,1,5,1,1,1,50,,", "c,2,3,1,1,1,60,,", "d,3,8,1,1,1,20,,"]


@pytest.mark.parametrize(("policy", "expected"), [
    ("fifo", {"a": (0, 10), "b": (10, 15), "c": (15, 18), "d": (18, 26)}),
    ("sjf", {"a": (0, 10), "c": (10, 13), "b": (13, 18), "d": (18, 26)}),
    ("spt", {"a": (0, 10), "c": (10, 13), "b": (13, 18), "d": (18, 26)}),
    ("srtf", {"a": (0, 10), "c": (10, 13), "b": (13, 18), "d": (18, 26)}),
    ("edf", {"a": (0, 10), "d": (10, 18), "b": (18, 23), "c": (23, 26)}),
])
def test_single_gpu_orderings(tmp_path: Path, policy: str, expected: dict) -> None:
    path = scenario(tmp_path, FOUR_JOBS, f'policy = "{policy}"', ONE_GPU)
    assert times(path) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    # at 10: b ratio (9+20)/20 = 1.45 beats c (1+4)/4 = 1.25
    ("hrrn", {"a": (0, 10), "b": (10, 30), "c": (30, 34)}),
    ("sjf", {"a": (0, 10), "c": (10, 14), "b": (14, 34)}),
])
def test_hrrn_differs_from_sjf(tmp_path: Path, policy: str, expected: dict) -> None:
    rows = ["a,0,10,1,1,1,,,", "b,1,20,1,1,1,,,", "c,9,4,1,1,1,,,"]
    assert times(scenario(tmp_path, rows, f'policy = "{policy}"', ONE_GPU)) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    # srsf keys at 10: b 4x2 = 8, c 6x1 = 6, d 5x1 = 5 -> d and c share the node, b after c
    ("srsf", {"a": (0, 10), "b": (16, 20), "c": (10, 16), "d": (10, 15)}),
    ("tiresias", {"a": (0, 10), "b": (16, 20), "c": (10, 16), "d": (10, 15)}),
    ("sjf", {"a": (0, 10), "b": (10, 14), "c": (14, 20), "d": (14, 19)}),
])
def test_srsf_weighs_gpus(tmp_path: Path, policy: str, expected: dict) -> None:
    rows = ["a,0,10,2,1,1,,,", "b,1,4,2,1,1,,,", "c,2,6,1,1,1,,,", "d,3,5,1,1,1,,,"]
    assert times(scenario(tmp_path, rows, f'policy = "{policy}"', TWO_GPUS)) == expected


@pytest.mark.parametrize(("policy", "expected"), [
    ("lyra", {"a": (0, 10), "b": (13, 16), "c": (10, 13)}),  # largest per-worker demand first
    ("fifo", {"a": (0, 10), "b": (10, 13), "c": (13, 16)}),
])
def test_lyra_takes_largest_first(tmp_path: Path, policy: str, expected: dict) -> None:
    rows = ["a,0,10,2,1,1,,,", "b,1,3,1,1,1,,,", "c,2,3,2,1,1,,,"]
    assert times(scenario(tmp_path, rows, f'policy = "{policy}"', TWO_GPUS)) == expected


HETERO_TYPES = """
[[gpu_type]]
name = "FAST"
speedup = 2.0
memory_gb = 16.0
[[gpu_type]]
name = "SLOW"
speedup = 1.0
memory_gb = 16.0
"""
HETERO_NODES = '[{ count = 1, gpus = 1, gpu_type = "FAST" }, { count = 1, gpus = 1, gpu_type = "SLOW" }]'


@pytest.mark.parametrize(("policy", "expected"), [
    # at 10 both nodes free; sufferage (loss on SLOW) c: 8 - 4 = 4 beats b: 4 - 2 = 2,
    # so c gets the FAST node (10 -> 14) and b the SLOW one (10 -> 14)
    ("sufferage", {"a": (0, 10), "a2": (0, 10), "b": (10, 14), "c": (10, 14)}),
    ("fifo", {"a": (0, 10), "a2": (0, 10), "b": (10, 12), "c": (10, 18)}),
])
def test_sufferage_gives_the_fast_type_to_the_biggest_loser(tmp_path: Path, policy: str, expected: dict) -> None:
    rows = ["a,0,20,1,1,1,,,SLOW", "a2,0,10,1,1,1,,,SLOW", "b,1,4,1,1,1,,,SLOW", "c,2,8,1,1,1,,,SLOW"]
    sched = f'policy = "{policy}"\nheterogeneous = true'
    result = simsched.run(scenario(tmp_path, rows, sched, HETERO_NODES, HETERO_TYPES))
    assert {r.job_id: (r.start, r.end) for r in result.jobs.itertuples()} == expected
    on = dict(zip(result.jobs["job_id"], result.jobs["gpu_type"]))
    assert on["a"] == "FAST" and on["a2"] == "SLOW"
    assert on["c"] == ("FAST" if policy == "sufferage" else "SLOW")


# three 4-GPU nodes; p(2), q(3), r(1), s(1) all arrive at 0 and start in input order (fifo)
PLACEMENT_ROWS = ["p,0,100,2,1,1,,,", "q,0,100,3,1,1,,,", "r,0,100,1,1,1,,,", "s,0,100,1,1,1,,,"]


@pytest.mark.parametrize(("placement", "nodes"), [
    ("first_fit", {"p": "0", "q": "1", "r": "0", "s": "0"}),
    ("best_fit", {"p": "0", "q": "1", "r": "1", "s": "0"}),
    ("worst_fit", {"p": "0", "q": "1", "r": "2", "s": "2"}),
    ("round_robin", {"p": "0", "q": "1", "r": "2", "s": "0"}),
])
def test_placement_node_choice(tmp_path: Path, placement: str, nodes: dict) -> None:
    path = scenario(tmp_path, PLACEMENT_ROWS, f'policy = "fifo"\nplacement = "{placement}"',
                    '[{ count = 3, gpus = 4, gpu_type = "V100" }]')
    result = simsched.run(path)
    starts = result.events[result.events["event"] == "start"]
    assert dict(zip(starts["job_id"], starts["detail"])) == nodes
    assert all((r.start, r.end) == (0, 100) for r in result.jobs.itertuples())


def test_multi_worker_best_fit(tmp_path: Path) -> None:
    """Each worker on the fullest node that still fits: y's first worker fills node 0 (2 left), the second node 1."""
    rows = ["x,0,100,2,1,1,,,", "y,0,50,4,2,1,,,"]
    path = scenario(tmp_path, rows, 'policy = "fifo"\nplacement = "best_fit"',
                    '[{ count = 2, gpus = 4, gpu_type = "V100" }]')
    starts = simsched.run(path).events.query("event == 'start'")
    assert dict(zip(starts["job_id"], starts["detail"])) == {"x": "0", "y": "0 1"}
