"""Fairness metrics between tenants (issue 20): Jain's index, finish-time fairness rho and the
summary's ``tenants`` block, on hand-computed cases."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import simsched
from simsched.config.scenario import load_scenario
from simsched.core.fairness import (
    NO_TENANT,
    QuotaBook,
    alone_time,
    demand_at_arrival,
    jain,
    rho,
    tenant_summary,
)
from simsched.core.metrics import summarize
from simsched.core.model import ClusterSpec, NodeGroup, QuotaSchedule, TenantQuota
from tests.helpers import write_scenario
from tests.test_tenants import CLUSTER, HEADER, JOBS


def test_jain_on_two_and_three_tenants():
    assert jain([2.0, 2.0]) == 1.0
    assert jain([1.0, 3.0]) == pytest.approx(16 / 20)  # (1 + 3)^2 / (2 (1 + 9))
    assert jain([1.0, 2.0, 3.0]) == pytest.approx(36 / 42)  # 6^2 / (3 (1 + 4 + 9))
    assert jain([1.0, 0.0, 0.0]) == pytest.approx(1 / 3)  # one tenant gets everything: 1/n
    assert jain([]) is None
    assert jain([1.0, float("nan")]) == 1.0  # n/a values are left out


@given(st.lists(st.floats(0.01, 1e6), min_size=1, max_size=20))
def test_jain_lies_between_one_over_n_and_one(values):
    index = jain(values)
    assert 1 / len(values) - 1e-12 <= index <= 1 + 1e-12


def test_rho_on_a_two_tenant_case():
    # tenant a: quota 8 GPUs, 16 GPUs demanded at the arrival of each of its 4-GPU jobs -> factor 2;
    # tenant b: quota 8, 4 demanded -> factor 1
    t_alone = alone_time(np.array([100.0, 100.0, 50.0]), np.array([16.0, 16.0, 4.0]), np.array([8.0, 8.0, 8.0]))
    assert list(t_alone) == [200.0, 200.0, 50.0]
    assert list(rho(np.array([100.0, 200.0, 140.0]), t_alone)) == [0.5, 1.0, 2.8]
    assert np.isnan(alone_time(np.array([10.0]), np.array([4.0]), np.array([0.0]))[0])  # no share: n/a


def test_demand_counts_the_jobs_in_the_system_at_each_arrival():
    submit = np.array([0.0, 0.0, 10.0, 100.0, 100.0])
    leave = np.array([100.0, 200.0, np.inf, 150.0, 300.0])  # inf: unfinished, there to the end
    gpus = np.array([4.0, 4.0, 2.0, 1.0, 8.0])
    # at 0: both jobs of t=0; at 10: those and itself; at 100: the first left exactly then
    assert list(demand_at_arrival(submit, leave, gpus)) == [8.0, 8.0, 10.0, 15.0, 15.0]


def test_quota_book_integrates_dated_quotas():
    schedule = QuotaSchedule(("a", "b"), (0.0, 100.0), ((4.0, 8.0), (12.0, 0.0)))
    book = QuotaBook((ClusterSpec("c0", (NodeGroup(4, 4, "V100"),), quota_schedule=schedule),))
    assert book.gpu_seconds(0, "a", 0.0, 200.0) == 4 * 100 + 12 * 100
    assert book.gpu_seconds(0, "a", 50.0, 150.0) == 4 * 50 + 12 * 50
    assert book.gpu_seconds(0, None, 0.0, 200.0) == 4 * 100 + 4 * 100  # the pool: 16 - listed
    assert list(book.quota_at(0, "b", np.array([0.0, 99.0, 100.0]))) == [8.0, 8.0, 0.0]
    fixed = QuotaBook((ClusterSpec("c0", (NodeGroup(4, 4, "V100"),), tenants=(TenantQuota("a", 6.0),)),))
    assert fixed.gpu_seconds(0, "a", 10.0, 20.0) == 60.0
    assert fixed.gpu_seconds(0, None, 10.0, 20.0) == 100.0


def run(tmp_path, scheduler, clusters=CLUSTER, jobs=JOBS, header=HEADER):
    path = write_scenario(tmp_path, clusters=clusters, scheduler=scheduler, jobs=jobs, header=header)
    return simsched.run(path)


def test_fifo_without_quota_enforcement_makes_b_wait(tmp_path):
    # a's four jobs fill the 16 GPUs at 0 for 100 s; b1 (50 s) arrives at 10 and waits to 100
    s = run(tmp_path, 'policy = "fifo"').summary
    a, b = s["tenants"]["a"], s["tenants"]["b"]
    assert (a["jobs"], a["mean_jct"], a["mean_wait"], a["mean_slowdown"], a["ftf_rho_max"]) == (4, 100.0, 0.0, 1.0, 0.5)
    assert (b["jobs"], b["mean_jct"], b["mean_wait"], b["mean_slowdown"], b["ftf_rho_max"]) == (1, 140.0, 90.0, 2.8, 2.8)
    # span 0..150 s: each quota is 8 GPUs x 150 s; a used 16 GPUs x 100 s, b 4 x 50
    assert a["quota_gpu_hours"] == pytest.approx(8 * 150 / 3600)
    assert a["gpu_hours"] == pytest.approx(1600 / 3600)
    assert a["usage_over_quota"] == pytest.approx(1600 / 1200)
    assert b["usage_over_quota"] == pytest.approx(200 / 1200)
    assert s["jain_slowdown"] == pytest.approx(3.8 ** 2 / (2 * (1 + 2.8 ** 2)))
    assert (s["ftf_rho_max"], s["ftf_rho_share_above_1"], s["ftf_rho_jobs"]) == (2.8, 0.2, 5)


def test_strict_quotas_give_every_job_rho_at_most_one(tmp_path):
    # a1, a2 run 0..100, a3, a4 100..200 (a's quota is 8 GPUs), b1 10..60
    s = run(tmp_path, 'policy = "fifo"\nquota = "strict"').summary
    a = s["tenants"]["a"]
    assert (a["mean_jct"], a["p95_jct"], a["mean_wait"], a["p95_wait"]) == (150.0, 200.0, 50.0, 100.0)
    assert a["mean_slowdown"] == 1.5 and a["ftf_rho_max"] == 1.0  # a3: JCT 200 = 100 s x (16 / 8)
    assert s["tenants"]["b"]["ftf_rho_max"] == 1.0
    assert (s["ftf_rho_max"], s["ftf_rho_share_above_1"]) == (1.0, 0.0)
    assert s["jain_slowdown"] == pytest.approx(2.5 ** 2 / (2 * (1.5 ** 2 + 1)))
    assert a["usage_over_quota"] == pytest.approx(1600 / (8 * 200))


def test_rho_leaves_out_the_restart_penalty(tmp_path):
    # a4 is preempted at 10 for b1 and runs again 60..155 (5 s penalty): its execution time is 100 s
    s = run(tmp_path, 'policy = "fifo"\nquota = "borrow"\nreclaim = "preempt"\nrestart_penalty_s = 5').summary
    assert s["tenants"]["a"]["mean_slowdown"] == pytest.approx((1 + 1 + 1 + 1.55) / 4)
    assert s["tenants"]["a"]["ftf_rho_max"] == pytest.approx(155 / 200)


def test_without_quotas_the_share_is_the_clusters_gpus_over_its_tenants(tmp_path):
    plain = CLUSTER.split("[[cluster.tenant]]")[0]  # 16 GPUs, no quotas: 8 each for a and b
    s = run(tmp_path, 'policy = "fifo"', clusters=plain).summary
    assert s["ftf_rho_max"] == 2.8 and s["tenants"]["a"]["ftf_rho_max"] == 0.5
    assert s["tenants"]["a"]["quota_gpu_hours"] is None and s["tenants"]["a"]["usage_over_quota"] is None


def test_jobs_without_a_tenant_have_their_own_bucket_and_pool(tmp_path):
    jobs = [*JOBS, "x1,10,50,4,"]  # no tenant: counts against the pool, 16 - 8 - 8 = 0 GPUs
    s = run(tmp_path, 'policy = "fifo"', jobs=jobs).summary
    assert s["tenants"][NO_TENANT]["mean_wait"] == 90.0
    assert s["tenants"][NO_TENANT]["ftf_rho_max"] is None  # a pool of 0 GPUs: no dedicated share
    assert s["tenants"][NO_TENANT]["quota_gpu_hours"] is None
    assert s["ftf_rho_jobs"] == 5
    smaller = CLUSTER.replace("gpus = 8\n", "gpus = 4\n", 1)  # a: 4, b: 8, the pool: 4 GPUs
    s = run(tmp_path, 'policy = "fifo"', jobs=jobs, clusters=smaller).summary
    assert s["tenants"][NO_TENANT]["ftf_rho_max"] == 2.8  # 140 s / (50 s x max(1, 4 / 4))
    assert s["tenants"]["a"]["ftf_rho_max"] == 0.25  # 100 s / (100 s x 16 / 4)


def test_execution_time_is_at_the_speed_of_the_type_it_ran_on(tmp_path):
    clusters = '''[[cluster]]
name = "c0"
nodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]
'''
    header = "job_id,submit,duration,gpus,tenant,gpu_type"
    jobs = ["a1,0,100,4,a,K80", "b1,0,100,4,b,K80"]  # 100 s on a K80 run 100 / speedup(V100) s here
    s = run(tmp_path, 'policy = "fifo"\nheterogeneous = true', clusters=clusters, jobs=jobs, header=header).summary
    ran = s["tenants"]["a"]["mean_jct"]
    assert ran < 100  # it ran faster than on its reference type
    assert s["tenants"]["a"]["mean_slowdown"] == pytest.approx(1.0)
    assert s["tenants"]["b"]["mean_slowdown"] == pytest.approx(2.0)  # waited one run of a1
    # each tenant's share is 2 of the 4 GPUs: a 4-GPU job alone takes twice its run time
    assert s["tenants"]["a"]["ftf_rho_max"] == pytest.approx(0.5)
    assert s["tenants"]["b"]["ftf_rho_max"] == pytest.approx(1.0)


def test_a_run_without_tenants_has_no_tenant_block(tmp_path):
    plain = [",".join(row.split(",")[:4]) for row in JOBS]
    result = run(tmp_path, 'policy = "fifo"', clusters=CLUSTER.split("[[cluster.tenant]]")[0], jobs=plain,
                 header="job_id,submit,duration,gpus")
    for key in ("tenants", "jain_slowdown", "ftf_rho_max", "ftf_rho_share_above_1", "ftf_rho_jobs"):
        assert key not in result.summary
    again = summarize(result.jobs, {"c0": 16.0})
    assert "tenants" not in again


def test_summary_json_holds_the_block(tmp_path):
    result = run(tmp_path, 'policy = "fifo"')
    result.write(tmp_path / "out")
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert written["tenants"]["b"]["ftf_rho_max"] == 2.8 and written["jain_slowdown"] == result.summary["jain_slowdown"]


def test_recomputed_from_jobs_csv_with_the_quotas_gives_the_same_block(tmp_path):
    # on one GPU type the execution time is the duration, so jobs.csv and the quotas suffice
    path = write_scenario(tmp_path, clusters=CLUSTER, scheduler='policy = "fifo"\nquota = "strict"', jobs=JOBS,
                          header=HEADER)
    result = simsched.run(path)
    book = QuotaBook(load_scenario(path).clusters)
    again = summarize(result.jobs, {"c0": 16.0}, quotas=book)
    for key in ("tenants", "jain_slowdown", "ftf_rho_max", "ftf_rho_share_above_1"):
        assert again[key] == result.summary[key]


def test_slowdown_is_bounded_below_ten_seconds():
    jobs = pd.DataFrame({"status": ["done", "done", "infeasible"], "tenant": ["a", "b", "b"], "submit": [0.0, 0.0, 0.0],
                         "jct": [100.0, 40.0, np.nan], "wait": [98.0, 0.0, np.nan], "gpus": [1.0, 1.0, 1.0],
                         "end": [100.0, 40.0, np.nan], "gpu_seconds": [2.0, 40.0, 0.0]})
    book = QuotaBook((ClusterSpec("c0", (NodeGroup(1, 4, "V100"),)),))
    out = tenant_summary(jobs, np.array([2.0, 40.0, 5.0]), np.array(["c0", "c0", ""], dtype=object), book, 0.0, 100.0)
    # a: a 2-s job that waited 98 s: 100 / max(2, 10) = 10, not 50; b: never waited (the infeasible job is left out)
    assert out["tenants"]["a"]["mean_slowdown"] == 10.0 and out["tenants"]["b"]["mean_slowdown"] == 1.0
    assert out["tenants"]["b"]["jobs"] == 2 and out["tenants"]["b"]["counted"] == 1
    # rho is not bounded: 2 GPUs each of 4 (two tenants), 1 demanded -> T_alone = 2 s, rho = 50
    assert out["tenants"]["a"]["ftf_rho_max"] == 50.0
    assert out["jain_slowdown"] == pytest.approx(11 ** 2 / (2 * 101))
