"""The starvation guard (SPEC §3 "Starvation guard", ``scheduler.max_wait_s``): a job queued longer
than ``max_wait_s`` goes to the front of the ordering and gets the reservation, in every backfill
mode; off by default (tests/test_event_digests.py keeps the shipped runs byte for byte)."""

from __future__ import annotations

import pytest

import simsched
from simsched.core.errors import InputError
from tests.helpers import write_scenario

CLUSTER = '''[[cluster]]
name = "c0"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
'''
HEADER = "job_id,submit,duration,gpus"
# s1..s60: 4 GPUs for 100 s every 40 s from 0 (the last at 2,360 s); w: 8 GPUs for 1,000 s at 1 s,
# when s1 holds half the node. Two s jobs run at once and they arrive faster than they end, so
# under SJF a shorter s job always heads the queue (and holds EASY's reservation): w waits until
# the stream has drained.
JOBS = [f"s{i},{40 * (i - 1)},100,4" for i in range(1, 61)] + ["w,1,1000,8"]
MODES = ["false", "true", '"easy"', '"conservative"']


def w_start(tmp_path, backfill: str, guard: str = "") -> float:
    path = write_scenario(tmp_path, clusters=CLUSTER, jobs=JOBS, header=HEADER,
                          scheduler=f'policy = "sjf"\nbackfill = {backfill}\n{guard}')
    jobs = simsched.run(path).jobs.set_index("job_id")
    assert jobs["end"].notna().all()
    return float(jobs.loc["w", "start"])


@pytest.mark.parametrize("backfill", MODES)
def test_sjf_starves_the_wide_job_without_the_guard(tmp_path, backfill):
    assert w_start(tmp_path, backfill) >= 2360  # not before the last s job arrived


@pytest.mark.parametrize("backfill", MODES)
def test_the_guard_puts_the_wide_job_first(tmp_path, backfill):
    """With max_wait_s = 300, w goes to the front once it has waited 300 s (at 301): nothing starts
    before it after that (it heads the line, or holds the reservation), so it starts when the s jobs
    running then have ended: by 301 + 100 s."""
    start = w_start(tmp_path, backfill, "max_wait_s = 300")
    assert 301 <= start <= 401


def test_the_guard_orders_the_aged_jobs_oldest_first(tmp_path):
    """Two aged jobs that cannot both run: the one that waited longer starts first, whatever SJF says."""
    jobs = ["blocker,0,500,8", "long,1,400,8", "short,2,100,8"]
    path = write_scenario(tmp_path, clusters=CLUSTER, jobs=jobs, header=HEADER,
                          scheduler='policy = "sjf"\nbackfill = "easy"\nmax_wait_s = 100')
    rows = simsched.run(path).jobs.set_index("job_id")
    assert (rows.loc["long", "start"], rows.loc["short", "start"]) == (500, 900)
    plain = write_scenario(tmp_path, clusters=CLUSTER, jobs=jobs, header=HEADER,
                           scheduler='policy = "sjf"\nbackfill = "easy"')
    rows = simsched.run(plain).jobs.set_index("job_id")
    assert (rows.loc["short", "start"], rows.loc["long", "start"]) == (500, 600)


def test_the_guard_is_refused_where_it_does_not_apply(tmp_path):
    path = write_scenario(tmp_path, clusters=CLUSTER + '[[cluster.tenant]]\nname = "a"\ngpus = 8\n',
                          jobs=["j,0,10,1,a"], header=HEADER + ",tenant",
                          scheduler='policy = "drf"\nmax_wait_s = 60')
    with pytest.raises(InputError, match="max_wait_s"):
        simsched.run(path)


@pytest.mark.parametrize("value", ["0", "-5", '"soon"'])
def test_a_bad_max_wait_is_one_clear_error(tmp_path, value):
    path = write_scenario(tmp_path, clusters=CLUSTER, jobs=JOBS[:2], header=HEADER,
                          scheduler=f'policy = "sjf"\nmax_wait_s = {value}')
    with pytest.raises(InputError, match="max_wait_s"):
        simsched.run(path)
