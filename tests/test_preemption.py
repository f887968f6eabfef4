"""Preemption and resume under srtf-preemptive and las, with exact event logs."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched
from simsched.core.errors import InputError

HEADER = "job_id,submit,duration,gpus,workers,weight,deadline,home_cluster,gpu_type"


def scenario(folder: Path, rows: list[str], scheduler: str,
             nodes: str = '[{ count = 1, gpus = 1, gpu_type = "V100" }]') -> Path:
    (folder / "jobs.csv").write_text(HEADER + "\n" + "\n".join(rows) + "\n")
    path = folder / "scenario.toml"
    path.write_text(f'name = "t"\nseed = 1\n[[cluster]]\nname = "c0"\nnodes = {nodes}\n'
                    f'[workload]\nsource = "csv"\npath = "jobs.csv"\n[scheduler]\n{scheduler}\n')
    return path


def log(result) -> list[tuple]:
    """(time, event, job) without arrivals."""
    return [(t, e, j) for t, e, j, _ in result.events.itertuples(index=False) if e != "arrive"]


@pytest.mark.parametrize("policy", ['policy = "srtf-preemptive"', 'policy = "srtf"\npreemptive = true'])
@pytest.mark.parametrize("penalty", [0.0, 1.0])
def test_srtf_preempts_then_resumes(tmp_path: Path, policy: str, penalty: float) -> None:
    # t=2: b (3 left) preempts a (8 left); t=3: c (4) waits, b has 2 left; t=5: c before a (8)
    rows = ["a,0,10,1,1,1,,,", "b,2,3,1,1,1,,,", "c,3,4,1,1,1,,,"]
    result = simsched.run(scenario(tmp_path, rows, f"{policy}\nrestart_penalty_s = {penalty}"))
    end_a = 17 + penalty
    assert log(result) == [
        (0, "start", "a"), (2, "preempt", "a"), (2, "start", "b"), (5, "finish", "b"),
        (5, "start", "c"), (9, "finish", "c"), (9, "start", "a"), (end_a, "finish", "a"),
    ]
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["a", "preemptions"] == 1
    assert jobs.loc["a", "wait"] == 7  # queued 2 -> 9
    assert jobs.loc["a", "start"] == 0 and jobs.loc["a", "jct"] == end_a


def test_srtf_preempts_only_when_the_job_starts(tmp_path: Path) -> None:
    """b needs both GPUs; at t=1 only z is lower priority (a has 3 left < 5), so nothing is preempted.
    When a finishes at 4, preempting z makes room: b runs 4 -> 9, z resumes with 16 left."""
    rows = ["a,0,4,1,1,1,,,", "z,0,20,1,1,1,,,", "b,1,5,2,1,1,,,"]
    result = simsched.run(scenario(tmp_path, rows, 'policy = "srtf-preemptive"',
                                   '[{ count = 1, gpus = 2, gpu_type = "V100" }]'))
    assert log(result) == [
        (0, "start", "a"), (0, "start", "z"), (4, "finish", "a"), (4, "preempt", "z"), (4, "start", "b"),
        (9, "finish", "b"), (9, "start", "z"), (25, "finish", "z"),
    ]


def test_preempted_job_migrates_to_free_gpus(tmp_path: Path) -> None:
    """Two 1-GPU nodes: b preempts z (not a, which has less left) and z resumes on a's node."""
    rows = ["a,0,4,1,1,1,,,", "z,0,20,1,1,1,,,", "b,1,5,1,1,1,,,"]
    result = simsched.run(scenario(tmp_path, rows, 'policy = "srtf-preemptive"',
                                   '[{ count = 2, gpus = 1, gpu_type = "V100" }]'))
    # at 1: a (3 left) keeps node 0, z (19 left) is preempted for b; at 4 z resumes on node 0
    assert log(result) == [
        (0, "start", "a"), (0, "start", "z"), (1, "preempt", "z"), (1, "start", "b"), (4, "finish", "a"),
        (4, "start", "z"), (6, "finish", "b"), (23, "finish", "z"),
    ]


def test_las_demotes_preempts_and_keeps_fifo_within_a_queue(tmp_path: Path) -> None:
    """Queue 0 below 10 GPU-s. a reaches 10 at t=10 (queue 1); b (queue 0) preempts it at 12;
    c arrives in queue 0 while b runs and waits (same queue: no preemption); a resumes last."""
    rows = ["a,0,30,1,1,1,,,", "b,12,4,1,1,1,,,", "c,13,3,1,1,1,,,"]
    sched = ('policy = "las"\nlas_thresholds = [10.0]\nstarvation_factor = 0\ninterval_s = 5\n'
             "restart_penalty_s = 2")
    result = simsched.run(scenario(tmp_path, rows, sched))
    assert log(result) == [
        (0, "start", "a"), (12, "preempt", "a"), (12, "start", "b"), (16, "finish", "b"),
        (16, "start", "c"), (19, "finish", "c"), (19, "start", "a"), (39, "finish", "a"),  # 19 + 2 + 18
    ]


def test_las_starvation_promotion(tmp_path: Path) -> None:
    """starvation_factor 1: a queued job is promoted to queue 0 once its wait >= its run time.
    a (run 12 s) waits from 12, promoted at the round at 25 and preempts b (queue 1 by then);
    b (run 13 s) waits from 25, promoted at 40 and preempts a (15 s of service since promotion)."""
    rows = ["a,0,30,1,1,1,,,", "b,12,40,1,1,1,,,"]
    sched = 'policy = "las"\nlas_thresholds = [10.0]\nstarvation_factor = 1.0\ninterval_s = 5'
    result = simsched.run(scenario(tmp_path, rows, sched))
    assert log(result) == [
        (0, "start", "a"), (12, "preempt", "a"), (12, "start", "b"), (25, "preempt", "b"), (25, "start", "a"),
        (40, "preempt", "a"), (40, "start", "b"), (67, "finish", "b"), (67, "start", "a"), (70, "finish", "a"),
    ]


def test_las_defaults_run(tmp_path: Path) -> None:
    rows = [f"j{i},{i * 100},{500 + 700 * (i % 3)},1,1,1,,," for i in range(12)]
    result = simsched.run(scenario(tmp_path, rows, 'policy = "las"'))
    assert (result.jobs["status"] == "done").all()


@pytest.mark.parametrize(("scheduler", "message"), [
    ('policy = "las"\nlas_threshold = [1.0]', "scheduler.las_threshold: unknown key"),
    ('policy = "las"\nlas_thresholds = [10.0, 5.0]', "scheduler.las_thresholds: must be strictly increasing"),
    ('policy = "las"\nstarvation_factor = -1', "scheduler.starvation_factor: must be >= 0"),
    ('policy = "fifo"\npreemptive = true', "scheduler.preemptive: policy 'fifo' has no preemptive variant"),
    ('policy = "srtf-preemptive"\nlas_thresholds = [1.0]', "scheduler.las_thresholds: unknown key"),
])
def test_bad_options_name_file_and_key(tmp_path: Path, scheduler: str, message: str) -> None:
    path = scenario(tmp_path, ["a,0,1,1,1,1,,,"], scheduler)
    with pytest.raises(InputError) as info:
        simsched.run(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)
