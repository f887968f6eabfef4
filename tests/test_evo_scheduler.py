"""EVO-GP online in the engine: MCT allocation, mct-gp, evo-gp, gp ordering (SPEC §4, §6)."""

from __future__ import annotations

import pandas as pd
import pytest

import simsched
from simsched.cli.main import main
from tests.helpers import write_scenario

TWO_CLUSTERS = ('[[cluster]]\nname = "a"\nnodes = [{ count = 1, gpus = 8 }]\n'
                '[[cluster]]\nname = "b"\nnodes = [{ count = 1, gpus = 8 }]')
# all jobs say their home is "a"
JOBS = ["A,0,100,8,,1,,a,", "B,0,10,8,,1,,a,", "C,1,10,8,,1,,a,", "D,2,5,4,,1,,a,"]


def _times(result):
    return {r.job_id: (r.start, r.end, r.cluster) for r in result.jobs.itertuples()}


def test_home_allocation_keeps_jobs_home(tmp_path):
    result = simsched.run(write_scenario(tmp_path, clusters=TWO_CLUSTERS, jobs=JOBS,
                                         scheduler='policy = "fifo"\nallocation = "home"'))
    assert _times(result) == {"A": (0, 100, "a"), "B": (100, 110, "a"), "C": (110, 120, "a"),
                              "D": (120, 125, "a")}


def test_mct_picks_earliest_planned_finish(tmp_path):
    result = simsched.run(write_scenario(tmp_path, clusters=TWO_CLUSTERS, jobs=JOBS,
                                         scheduler='policy = "mct-liquid"'))
    # A: both empty, tie -> a (0-100). B: a busy till 100, b free -> b (0-10).
    # C at 1: a frees at 100, b at 10 -> b (10-20). D at 2 (4 GPUs): b after C, at 20 -> b (20-25).
    assert _times(result) == {"A": (0, 100, "a"), "B": (0, 10, "b"), "C": (10, 20, "b"),
                              "D": (20, 25, "b")}


def test_mct_gp_starts_planned_jobs_on_planned_nodes(tmp_path):
    # priority "d": shortest remaining first. t=0: B (10 s) before A (100 s): B -> a (tie,
    # lowest index), A -> b. t=2: D (5 s) before C (10 s): D -> a at 10 (b busy till 100);
    # C on a: at 10 D holds 4 of 8 GPUs until 15 -> 15-25, earlier than b (100).
    result = simsched.run(write_scenario(tmp_path, clusters=TWO_CLUSTERS, jobs=JOBS,
                                         scheduler='policy = "mct-gp"\npriority = "d"'))
    assert _times(result) == {"A": (0, 100, "b"), "B": (0, 10, "a"), "C": (15, 25, "a"),
                              "D": (10, 15, "a")}


def test_gp_ordering_by_expression(tmp_path):
    one = '[[cluster]]\nname = "a"\nnodes = [{ count = 1, gpus = 8 }]'
    jobs = ["A,0,100,8,,,,,", "B,1,50,8,,,,,", "C,2,10,8,,,,,"]
    # f = -d: longest remaining first (A runs first as the only job at t=0)
    result = simsched.run(write_scenario(tmp_path, clusters=one, jobs=jobs,
                                         scheduler='policy = "gp"\npriority = "0 - d"'))
    assert _times(result) == {"A": (0, 100, "a"), "B": (100, 150, "a"), "C": (150, 160, "a")}


PAPER = """
[[cluster]]
name = "p0"
nodes = [{ count = 3, gpus = 8 }]
[[cluster]]
name = "p1"
nodes = [{ count = 2, gpus = 8 }]
"""


@pytest.mark.parametrize("policy", ["evo-gp", "mct-gp"])
def test_planner_schedulers_invariants(tmp_path, policy):
    scheduler = f'policy = "{policy}"\npopulation = 10\ngenerations = 5' if policy == "evo-gp" \
        else f'policy = "{policy}"'
    path = write_scenario(tmp_path, clusters=PAPER, scheduler=scheduler,
                          workload='source = "synthetic"\ngenerator = "paper"\njobs_per_node = 4')
    result = simsched.run(path)
    jobs = result.jobs
    assert set(jobs["status"]) <= {"done", "infeasible"}
    done = jobs[jobs["status"] == "done"]
    assert len(done) > 0 and (done["start"] >= done["submit"]).all()
    # only jobs running outside their home cluster may be moved
    moved = result.events[result.events["event"] == "preempt"]["job_id"]
    if policy == "mct-gp":
        assert moved.empty
    again = simsched.run(path)
    pd.testing.assert_frame_equal(jobs, again.jobs)


def test_bad_priority_expression_is_input_error(tmp_path, capsys):
    path = write_scenario(tmp_path, clusters=TWO_CLUSTERS, jobs=JOBS,
                          scheduler='policy = "mct-gp"\npriority = "d +* q"')
    assert main([str(path), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "scheduler.priority" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("policy", ["las", "srtf-preemptive"])
def test_preemptive_policies_with_mct_allocation(tmp_path, policy):
    path = write_scenario(tmp_path, clusters=PAPER, scheduler=f'policy = "{policy}"\nallocation = "mct"',
                          workload='source = "synthetic"\ngenerator = "paper"\njobs_per_node = 4')
    jobs = simsched.run(path).jobs
    assert set(jobs["status"]) == {"done"}
    assert (jobs["end"] - jobs["start"] >= jobs["duration"]).all()


ONE_NODE = '[[cluster]]\nname = "a"\nnodes = [{ count = 1, gpus = 8 }]'


def _log(result):
    return [(float(e.time), e.event, e.job_id, str(e.detail)) for e in result.events.itertuples()]


@pytest.mark.parametrize("policy", ["mct-gp", "evo-gp"])
def test_zero_duration_job_planned_at_now_does_not_over_allocate(tmp_path, policy):
    # Regression: the plan gives a 0 s job no capacity (its interval [now, now) is empty), so
    # A (0 s), B (0 s) and C (5 s) were all planned at t=0 on the one node and the engine raised
    # DecisionError starting B. Now the decision starts A only (f = d: zero-duration jobs first);
    # A's finish at t=0 brings the next decision at t=0, and so on: every job starts at its
    # planned time, one after the other.
    jobs = ["A,0,0,8,,,,,", "B,0,0,8,,,,,", "C,0,5,8,,,,,"]
    result = simsched.run(write_scenario(tmp_path, clusters=ONE_NODE, jobs=jobs,
                                         scheduler=f'policy = "{policy}"\npriority = "d"'))
    assert _log(result) == [
        (0.0, "arrive", "A", ""), (0.0, "arrive", "B", ""), (0.0, "arrive", "C", ""),
        (0.0, "start", "A", "0"), (0.0, "finish", "A", ""),
        (0.0, "start", "B", "0"), (0.0, "finish", "B", ""),
        (0.0, "start", "C", "0"), (5.0, "finish", "C", ""),
    ]


def test_zero_duration_job_after_a_longer_one(tmp_path):
    # f = -d: the 10 s job goes first and holds the node until 10; the 0 s job is planned at 10
    # (it needs the whole node); D (0 s, 4 GPUs) too, and it starts after B has finished, at 10.
    jobs = ["A,0,10,8,,,,,", "B,0,0,8,,,,,", "D,0,0,4,,,,,"]
    result = simsched.run(write_scenario(tmp_path, clusters=ONE_NODE, jobs=jobs,
                                         scheduler='policy = "mct-gp"\npriority = "0 - d"'))
    assert _log(result) == [
        (0.0, "arrive", "A", ""), (0.0, "arrive", "B", ""), (0.0, "arrive", "D", ""),
        (0.0, "start", "A", "0"), (10.0, "finish", "A", ""),
        (10.0, "start", "B", "0"), (10.0, "finish", "B", ""),
        (10.0, "start", "D", "0"), (10.0, "finish", "D", ""),
    ]
