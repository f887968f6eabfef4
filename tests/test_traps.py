"""No silent traps (issue 9): each test here failed before its fix."""

from __future__ import annotations

import pytest

import simsched
from tests.helpers import write_scenario

TWO_CLUSTERS = ('[[cluster]]\nname = "x"\nnodes = [{ count = 1, gpus = 1, gpu_type = "V100" }]\n'
                '[[cluster]]\nname = "y"\nnodes = [{ count = 1, gpus = 1, gpu_type = "V100" }]')


@pytest.mark.parametrize("policy", ["fifo", "sjf", "srtf-preemptive"])
def test_jobs_without_home_run_anywhere_under_home_allocation(tmp_path, policy):
    # a and b have no home cluster: both start at 0, one per cluster (before: both on x, b at 100)
    scheduler = f'policy = "{policy}"\nallocation = "home"'
    path = write_scenario(tmp_path, clusters=TWO_CLUSTERS, scheduler=scheduler,
                          jobs=["a,0,100,1,,,,,", "b,0,100,1,,,,,", "c,1,10,1,,,,x,"])
    jobs = simsched.run(path).jobs.set_index("job_id")
    assert jobs.loc["a", "start"] == 0 and jobs.loc["b", "start"] == 0
    assert sorted(jobs.loc[["a", "b"], "cluster"]) == ["x", "y"]
    # c must stay in its home x: it waits for x's job to finish (SRTF preempts that job instead)
    assert jobs.loc["c", "cluster"] == "x"
    assert jobs.loc["c", "start"] == (1 if policy == "srtf-preemptive" else 100)


def test_homeless_job_heads_every_line_without_backfill(tmp_path):
    # strict head-of-line: a (2 GPUs, no home) fits nowhere until both nodes are free;
    # nothing queued behind it passes it in either cluster
    scheduler = 'policy = "fifo"\nallocation = "home"\nbackfill = false'
    two_gpus = TWO_CLUSTERS.replace("gpus = 1", "gpus = 2")
    path = write_scenario(tmp_path, clusters=two_gpus, scheduler=scheduler,
                          jobs=["h,0,100,1,,,,x,", "g,0,50,1,,,,y,", "a,1,10,2,,,,,", "b,2,10,1,,,,y,"])
    jobs = simsched.run(path).jobs.set_index("job_id")
    # at 50 g ends, a takes both GPUs of y; b (home y) waits for a; with backfill it ran at 2
    assert jobs.loc["a", "start"] == 50 and jobs.loc["a", "cluster"] == "y"
    assert jobs.loc["b", "start"] == 60
