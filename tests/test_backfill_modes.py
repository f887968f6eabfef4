"""Backfill modes (SPEC §3): none, greedy (true/false as before), EASY and conservative with
reservations; hand-computed logs and properties against a brute-force check."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import simsched
from tests.helpers import log, run_rows, write_scenario

ONE_NODE = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
# a: 2 GPUs 0-100; b: 4 GPUs, must wait for a; c: 2 GPUs for 200 s, would run past b's start;
# d: 2 GPUs for 90 s, ends before b can start
JOBS = ["a,0,100,2,,,,,", "b,1,10,4,,,,,", "c,2,200,2,,,,,", "d,3,90,2,,,,,"]


def _scenario(tmp_path: Path, backfill: str, jobs=JOBS, clusters: str = ONE_NODE, extra: str = "") -> Path:
    return write_scenario(tmp_path, clusters=clusters, jobs=jobs,
                          scheduler=f'policy = "fifo"\nplacement = "best_fit"\nbackfill = {backfill}\n{extra}')


def test_greedy_lets_c_starve_b(tmp_path: Path) -> None:
    # hand-computed: c fits at 2 and runs to 202; d starts when a ends; b waits for c
    assert run_rows(_scenario(tmp_path, "true")) == {"a": (0, 100), "b": (202, 212), "c": (2, 202), "d": (100, 190)}


@pytest.mark.parametrize("mode", ['"easy"', '"conservative"'])
def test_easy_and_conservative_protect_b(tmp_path: Path, mode: str) -> None:
    # b is reserved at 100 (a's end); c would hold 2 of b's GPUs past 100, so it waits;
    # d ends at 93 <= 100, so it backfills now; c starts when b ends
    path = _scenario(tmp_path, mode)
    assert run_rows(path) == {"a": (0, 100), "b": (100, 110), "c": (110, 310), "d": (3, 93)}
    events = [(t, e, j) for t, e, j, _ in log(simsched.run(path)) if e in ("start", "finish")]
    assert events == [(0.0, "start", "a"), (3.0, "start", "d"), (93.0, "finish", "d"), (100.0, "finish", "a"),
                      (100.0, "start", "b"), (110.0, "finish", "b"), (110.0, "start", "c"),
                      (310.0, "finish", "c")]


def test_none_is_strict_head_of_line(tmp_path: Path) -> None:
    assert run_rows(_scenario(tmp_path, "false")) == {"a": (0, 100), "b": (100, 110), "c": (110, 310),
                                                       "d": (110, 200)}


def test_true_and_greedy_are_the_same_run(tmp_path: Path) -> None:
    one = simsched.run(_scenario(tmp_path, "true"))
    two = simsched.run(_scenario(tmp_path, '"greedy"'))
    assert log(one) == log(two)
    assert one.summary["scheduler"]["backfill"] is True and two.summary["scheduler"]["backfill"] is True


TWO_TYPES = ('[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 2, gpu_type = "V100" }, '
             '{ count = 1, gpus = 2, gpu_type = "P100" }]')


def test_a_reservation_is_for_a_gpu_type_and_its_nodes(tmp_path: Path) -> None:
    """Heterogeneous, one V100 node (speed 1) and one P100 node (speed 0.592, same memory).
    a takes the V100 node 0-100; k (P100 reference work, 50 s there) the P100 node 0-50.
    b (2 GPUs, 10 s of V100 work) cannot start at 1; its reservation is the earliest fit over
    its whole run, fastest type first at each time: at 50 the V100 is still a's, the P100 is free
    for b's 10 / 0.592 = 16.89 s, so b is reserved on the P100 at 50 and starts there then.
    c (40 s of V100 work) would need the P100 from 66.89 to 134.46 or the V100 from 100 to 140:
    it starts on the P100 when b ends. (Hand-computed on the FP32 datasheet speeds: speed_basis = "fp32".)"""
    jobs = ["a,0,100,2,,,,,V100", "k,0,50,2,,,,,P100", "b,1,10,2,,,,,V100", "c,2,40,2,,,,,V100"]
    path = write_scenario(tmp_path, clusters=TWO_TYPES, jobs=jobs, extra='speed_basis = "fp32"',
                          scheduler='policy = "fifo"\nplacement = "best_fit"\nbackfill = "easy"\nheterogeneous = true')
    result = simsched.run(path)
    rows = {r.job_id: (r.start, r.end, r.gpu_type) for r in result.jobs.itertuples()}
    assert rows["a"] == (0, 100, "V100") and rows["k"] == (0, 50, "P100")
    assert rows["b"][0] == 50 and rows["b"][2] == "P100"
    assert rows["b"][1] == pytest.approx(50 + 10 / 0.592, abs=1e-3)
    assert rows["c"][0] == pytest.approx(50 + 10 / 0.592, abs=1e-3) and rows["c"][2] == "P100"


@pytest.mark.parametrize("mode", ['"easy"', '"conservative"'])
def test_a_job_that_ends_now_holds_its_gpus_now(tmp_path: Path, mode: str) -> None:
    """One 8-GPU node; a holds 6 GPUs 0-100. At 1, b (8 GPUs) waits, reserved at 100; c (2 GPUs,
    no work) starts and ends at 1; d (2 GPUs, 50 s, ends before b's reservation) fits the profile,
    but c holds the 2 free GPUs at this instant: d waits for c's end, at 1 too. (The walk once gave
    d c's GPUs as well: the engine refused the over-allocation.)"""
    node = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]'
    jobs = ["a,0,100,6,,,,,", "b,1,10,8,,,,,", "c,1,0,2,,,,,", "d,1,50,2,,,,,"]
    path = _scenario(tmp_path, mode, jobs=jobs, clusters=node)
    assert run_rows(path) == {"a": (0, 100), "b": (100, 110), "c": (1, 1), "d": (1, 51)}
    if mode == '"easy"':  # and with reservations for the first two waiting jobs (the reference walk)
        path = _scenario(tmp_path, mode, jobs=jobs, clusters=node, extra="reserve_depth = 2")
        assert run_rows(path) == {"a": (0, 100), "b": (100, 110), "c": (1, 1), "d": (1, 51)}


def test_bad_modes_are_one_line(tmp_path: Path, capsys) -> None:
    from simsched.cli.main import main

    assert main([str(_scenario(tmp_path, '"easyy"')), "--quiet"]) == 2
    assert "did you mean 'easy'" in capsys.readouterr().err
    assert main([str(_scenario(tmp_path, '"conservative"', extra="reserve_depth = 2")), "--quiet"]) == 2
    assert 'only applies to backfill = "easy"' in capsys.readouterr().err
    path = write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "las"\nbackfill = "easy"')
    assert main([str(path), "--quiet"]) == 2
    assert "preemptive" in capsys.readouterr().err


# -- properties --------------------------------------------------------------------------------------
spread_rows = st.lists(st.tuples(st.integers(0, 50), st.integers(1, 60), st.sampled_from([1, 2, 3, 4])),
                       min_size=2, max_size=9)
# bursts: several jobs at one instant behind a running one, short and long (the inputs where two
# backfills compete for one reservation's spare GPUs, or a backfill ends exactly at its shadow time)
burst_rows = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([5, 9, 10, 60]), st.sampled_from([1, 2, 3])),
                      min_size=3, max_size=7)
job_rows = st.one_of(spread_rows, burst_rows)
TWO_BACKFILLS = [(0, 10, 2), (1, 5, 3), (1, 60, 1), (1, 60, 1)]  # issue 39: the head starts at 10, not 61


def _rows_of(jobs) -> list[str]:
    return [f"j{i},{submit},{duration},{gpus},,,,," for i, (submit, duration, gpus) in enumerate(jobs)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=job_rows)
@example(jobs=TWO_BACKFILLS)
def test_easy_never_starts_the_head_later_than_without_backfilling(tmp_path_factory, jobs) -> None:
    """Brute-force check of the reservation: with exact durations, the first job in FIFO order that
    waits starts no later under easy than under strict head-of-line (none), which is when the
    capacity it needs frees up with nothing started ahead of it."""
    folder = tmp_path_factory.mktemp("easy")
    easy = run_rows(_scenario(folder, '"easy"', jobs=_rows_of(jobs)))
    none = run_rows(_scenario(folder, "false", jobs=_rows_of(jobs)))
    order = sorted(range(len(jobs)), key=lambda i: (jobs[i][0], i))
    # jobs in FIFO order start in FIFO order under none; the first one that waits under none
    first_waiting = next((f"j{i}" for i in order if none[f"j{i}"][0] > jobs[i][0]), None)
    if first_waiting is not None:
        assert easy[first_waiting][0] <= none[first_waiting][0] + 1e-9


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(jobs=job_rows)
@example(jobs=TWO_BACKFILLS)
def test_conservative_delays_no_job_behind_strict_fifo(tmp_path_factory, jobs) -> None:
    """Conservative backfilling starts every job no later than strict FIFO without backfilling
    (a classic property with exact run times: each job's reservation is at most its FIFO start)."""
    folder = tmp_path_factory.mktemp("cons")
    conservative = run_rows(_scenario(folder, '"conservative"', jobs=_rows_of(jobs)))
    none = run_rows(_scenario(folder, "false", jobs=_rows_of(jobs)))
    for job_id, (start, _) in none.items():
        assert conservative[job_id][0] <= start + 1e-9, (job_id, conservative, none)


def test_starvation_block_on_a_hand_computed_table() -> None:
    import pandas as pd

    from simsched.core.metrics import starvation

    df = pd.DataFrame({
        "status": ["done", "done", "done", "unfinished", "infeasible"],
        "gpus": [1, 4, 16, 32, 64],
        "wait": [0.0, 3600.0, 90000.0, 10.0, 5e6],      # the infeasible job is left out
        "duration": [100.0, 100.0, 3600.0, 7200.0, 1.0],
    })
    block = starvation(df)
    assert block["max_wait"] == 90000.0
    assert block["wait_by_size"] == {"1": {"jobs": 1, "mean_wait": 0.0}, "2-8": {"jobs": 1, "mean_wait": 3600.0},
                                     ">8": {"jobs": 2, "mean_wait": 45005.0}}
    # >8-GPU GPU-hours: 16 x 3600 (waited 25 h: late) and 32 x 7200 (waited 10 s): 57,600 / 288,000
    assert block["large_gpu_hours_late_share"] == 57600 / (57600 + 230400)
    assert block["p99_wait"] == pytest.approx(float(pd.Series([0.0, 3600.0, 90000.0, 10.0]).quantile(0.99)))


# -- hand-computed guarantees of the fast walk (mutants of simsched/policies/easy.py) ------------------
def test_two_backfills_cannot_take_the_heads_reserved_gpus(tmp_path: Path) -> None:
    """One 4-GPU node, fifo, best fit. j0 holds 2 GPUs 0-10. At 1, j1 (3 GPUs) waits and is reserved
    at 10, where 1 GPU is spare; j2 (1 GPU, runs past 10) takes that spare GPU and backfills; j3 (1 GPU,
    also past 10) would take one of j1's reserved GPUs: it waits. j1 starts at 10, j3 when j1 ends.
    (A walk whose start forgets to lower the reservation's capacity lets j3 in too, and j1 waits to 61.)"""
    jobs = ["j0,0,10,2,,,,,", "j1,1,5,3,,,,,", "j2,1,60,1,,,,,", "j3,1,60,1,,,,,"]
    for mode in ('"easy"', '"conservative"'):
        assert run_rows(_scenario(tmp_path, mode, jobs=jobs)) == {
            "j0": (0, 10), "j1": (10, 15), "j2": (1, 61), "j3": (15, 75)}, mode


def test_a_backfill_ending_exactly_at_the_shadow_time_keeps_the_spare_gpus(tmp_path: Path) -> None:
    """One 4-GPU node. a holds 2 GPUs 0-10; b (3 GPUs) waits from 1, reserved at 10 with 1 GPU spare.
    c (1 GPU, 9 s) ends exactly at 10: it backfills without touching the reservation, so d (1 GPU,
    100 s) still has the spare GPU at 10 and backfills too. (A walk that counts c as holding its GPU
    at 10 refuses d, which then starts with b at 10.)"""
    jobs = ["a,0,10,2,,,,,", "b,1,5,3,,,,,", "c,1,9,1,,,,,", "d,1,100,1,,,,,"]
    assert run_rows(_scenario(tmp_path, '"easy"', jobs=jobs)) == {
        "a": (0, 10), "b": (10, 15), "c": (1, 10), "d": (1, 101)}


def test_a_restarted_jobs_release_includes_its_restart_penalty(tmp_path: Path) -> None:
    """One 4-GPU node, tenants a and b with 2 GPUs each, borrow + preempt, restart penalty 30, fifo
    with easy backfilling. b1 (b, 3 GPUs, 100 s) borrows at 0; a1 (a, 2 GPUs, 20 s) reclaims at 10:
    b1 is preempted with 90 s of work left and restarts when a1 ends, at 30, to end at
    30 + 30 + 90 = 150. At 31 h (b, 4 GPUs) waits, reserved at b1's end, 150, on every GPU; x (b, 1
    GPU, 100 s) ends at 131, before it: x backfills. (Without the penalty, b1's release is at 120, x
    would run past h's reservation, and waits until h ends.)"""
    clusters = ('[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]\n'
                '[[cluster.tenant]]\nname = "a"\ngpus = 2\n[[cluster.tenant]]\nname = "b"\ngpus = 2\n')
    jobs = ["b1,0,100,3,b", "a1,10,20,2,a", "h,31,10,4,b", "x,31,100,1,b"]
    path = write_scenario(tmp_path, clusters=clusters, jobs=jobs, header="job_id,submit,duration,gpus,tenant",
                          scheduler='policy = "fifo"\nplacement = "best_fit"\nbackfill = "easy"\nquota = "borrow"\n'
                                    'reclaim = "preempt"\nrestart_penalty_s = 30')
    assert run_rows(path) == {"b1": (0, 150), "a1": (10, 30), "h": (150, 160), "x": (31, 131)}
