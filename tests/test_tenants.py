"""Tenants and quotas (SPEC §3): strict, borrow with reclaim by preemption or waiting,
quota validation, the tenant column, and "none" leaving every run as it was."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from tests.helpers import log, write_scenario

HEADER = "job_id,submit,duration,gpus,tenant"
CLUSTER = '''[[cluster]]
name = "c0"
nodes = [{ count = 4, gpus = 4, gpu_type = "V100" }]
[[cluster.tenant]]
name = "a"
gpus = 8
[[cluster.tenant]]
name = "b"
gpus = 8
'''
# a fills the cluster at 0 (8 GPUs of its own, 8 borrowed); b's job arrives at 10
JOBS = ["a1,0,100,4,a", "a2,0,100,4,a", "a3,0,100,4,a", "a4,0,100,4,a", "b1,10,50,4,b"]


def run(tmp_path, scheduler: str, jobs=JOBS, clusters=CLUSTER, header=HEADER):
    path = write_scenario(tmp_path, clusters=clusters, scheduler=scheduler, jobs=jobs, header=header)
    return simsched.run(path)


def events(result) -> list[tuple]:
    return [(t, e, j) for t, e, j, _ in log(result) if e != "arrive"]


def test_strict_keeps_each_tenant_inside_its_quota(tmp_path):
    result = run(tmp_path, 'policy = "fifo"\nquota = "strict"')
    assert events(result) == [
        (0, "start", "a1"), (0, "start", "a2"), (10, "start", "b1"), (60, "finish", "b1"),
        (100, "finish", "a1"), (100, "finish", "a2"), (100, "start", "a3"), (100, "start", "a4"),
        (200, "finish", "a3"), (200, "finish", "a4")]
    assert list(result.jobs["tenant"]) == ["a", "a", "a", "a", "b"]


def test_borrow_preempt_returns_the_owners_quota_at_its_arrival(tmp_path):
    result = run(tmp_path, 'policy = "fifo"\nquota = "borrow"\nreclaim = "preempt"\nrestart_penalty_s = 5')
    # a borrows 8 GPUs at 0; b1's arrival preempts a's newest job (ties: the last in input order)
    # in that very decision, and b1 starts on its GPUs; a4 comes back when b1 ends, paying the penalty
    assert events(result) == [
        (0, "start", "a1"), (0, "start", "a2"), (0, "start", "a3"), (0, "start", "a4"),
        (10, "preempt", "a4"), (10, "start", "b1"), (60, "finish", "b1"), (60, "start", "a4"),
        (100, "finish", "a1"), (100, "finish", "a2"), (100, "finish", "a3"), (155, "finish", "a4")]


def test_borrow_wait_returns_the_owners_quota_as_borrowed_jobs_end(tmp_path):
    jobs = [*JOBS, "a5,20,100,4,a"]  # a5 queues behind b1: b is within quota, a is not
    result = run(tmp_path, 'policy = "fifo"\nquota = "borrow"\nreclaim = "wait"', jobs=jobs)
    assert events(result) == [
        (0, "start", "a1"), (0, "start", "a2"), (0, "start", "a3"), (0, "start", "a4"),
        (100, "finish", "a1"), (100, "finish", "a2"), (100, "finish", "a3"), (100, "finish", "a4"),
        (100, "start", "b1"), (100, "start", "a5"), (150, "finish", "b1"), (200, "finish", "a5")]


ONE_NODE = '''[[cluster]]
name = "c0"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[[cluster.tenant]]
name = "a"
gpus = 4
[[cluster.tenant]]
name = "b"
gpus = 4
'''


def test_borrow_wait_holds_freed_gpus_for_a_wide_owner_job(tmp_path):
    """Issue 36's reproduction: one node of 8 GPUs, a and b 4 each; a submits a 1-GPU 100 s job
    every 10 s from 0 to 2,000 s, b one 4-GPU 50 s job at 55 s. At 55 a runs 6 jobs (2 borrowed,
    a5 and a6, ending at 140 and 150): b1 reserves 4 GPUs at 110 (a1 and a2 end at 100 and 110), so
    nobody borrows the GPUs freed meanwhile, and b1 starts at 110, before the borrowed jobs end
    (before the fix it waited 2,485 s while a started 195 jobs beyond its quota)."""
    jobs = [f"a{i + 1},{10 * i},100,1,a" for i in range(201)] + ["b1,55,50,4,b"]
    result = run(tmp_path, 'policy = "fifo"\nquota = "borrow"\nreclaim = "wait"', jobs=jobs, clusters=ONE_NODE)
    rows = result.jobs.set_index("job_id")
    assert rows.loc["b1", "start"] == 110
    borrowed_at_arrival = [f"a{i}" for i in (5, 6)]  # the 5th and 6th GPUs a held at 55
    assert rows.loc["b1", "start"] <= rows.loc[borrowed_at_arrival, "end"].max()
    # between b1's arrival and its start, a started nothing (it was above its quota all along)
    assert not ((rows["tenant"] == "a") & (rows["start"] > 55) & (rows["start"] < 110)).any()
    assert rows["end"].notna().all()


TWO_NODES = '''[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]
[[cluster.tenant]]
name = "a"
gpus = 8
[[cluster.tenant]]
name = "b"
gpus = 8
'''


def test_borrow_preempt_finds_the_node_to_reclaim(tmp_path):
    """Issue 36's 2x8 case: a (quota 8) fills both nodes with 1-GPU jobs at 0 (a1..a8 on node 0,
    a9..a16 on node 1); a1 and a2 end at 100 and a17, a18 take their GPUs on node 0. At 150 b's
    8-GPU job arrives, a holding 16 (8 borrowed). Newest-first preemption freed a18, a17 (node 0) and
    a16..a11 (node 1), a then at its quota, and b1 fitted no node, so nothing was reclaimed. The
    search per node finds a node whose victims free 8 GPUs, fewest GPUs preempted (8 on either node;
    ties: the lowest index): node 0's a3..a8, a17, a18. b1 starts at 150."""
    jobs = ([f"a{i},0,{100 if i <= 2 else 1000},1,a" for i in range(1, 17)]
            + ["a17,100,1000,1,a", "a18,100,1000,1,a", "b1,150,50,8,b"])
    result = run(tmp_path, 'policy = "fifo"\nquota = "borrow"\nreclaim = "preempt"\nrestart_penalty_s = 5',
                 jobs=jobs, clusters=TWO_NODES)
    at_150 = [(e, j, d) for t, e, j, d in log(result) if t == 150 and e != "arrive"]
    victims = {f"a{i}" for i in (3, 4, 5, 6, 7, 8, 17, 18)}
    assert {j for e, j, _ in at_150 if e == "preempt"} == victims
    assert ("start", "b1", "0") in at_150
    assert result.jobs.set_index("job_id").loc["b1", "start"] == 150


def owner_starts_ok(jobs: list[tuple], quotas: dict[str, int], events: list[tuple]) -> str | None:
    """The owner guarantee on one node (SPEC §3, reclaim = "wait"), read from an event log alone: no
    job of a tenant at or above its quota starts while a job of a tenant within its quota waits that
    its room admits (after the in-quota starts made before it in that decision), unless that owner
    job starts at that very time. On one node every GPU is one the owner's job could use. Returns a
    description of the first breach, or None."""
    spec = {job_id: (submit, gpus, tenant) for job_id, submit, _, gpus, tenant in jobs}
    usage = dict.fromkeys(quotas, 0)
    started: set[str] = set()
    start_time: dict[str, float] = {}
    for t, event, job_id, _ in events:
        if event == "start":
            start_time.setdefault(job_id, t)
    for t, event, job_id, _ in events:
        submit, gpus, tenant = spec[job_id]
        if event in ("finish", "preempt"):
            usage[tenant] -= gpus
            if event == "preempt":
                started.discard(job_id)
            continue
        if event != "start":
            continue
        if usage[tenant] + gpus > quotas[tenant]:  # a borrowing start
            for other, (o_submit, o_gpus, o_tenant) in spec.items():
                if (other not in started and o_submit <= t and start_time.get(other, 1e18) > t
                        and usage[o_tenant] + o_gpus <= quotas[o_tenant]):
                    return f"{job_id} ({tenant}) borrowed at {t} while {other} ({o_tenant}) waited within quota"
        usage[tenant] += gpus
        started.add(job_id)
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 300), st.sampled_from([10, 50, 100, 400]), st.sampled_from([1, 2, 4, 6]),
                          st.sampled_from(["a", "b", "c"])), min_size=1, max_size=40),
       st.sampled_from(["fifo", "sjf", "drf", "ftf"]))
def test_borrow_wait_no_borrowing_on_an_owners_gpus(tmp_path, rows, policy):
    """Property (issue 36, build 1): under borrow + wait, after an in-quota owner job arrives, no job
    of a tenant at or above its quota starts on GPUs the owner's job could use (one node: any of
    them), unless the owner's job has already started."""
    quotas = {"a": 4, "b": 3, "c": 1}
    jobs = [(f"j{i}", submit, duration, gpus, tenant)
            for i, (submit, duration, gpus, tenant) in enumerate(sorted(rows, key=lambda row: row[0]))
            if gpus <= quotas[tenant] or tenant == "c"]  # c: a job wider than its quota only ever borrows
    jobs += [(f"late_{tenant}", 5000, 1, 1, tenant) for tenant in quotas]  # (every tenant with a quota has jobs)
    clusters = '''[[cluster]]
name = "c0"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[[cluster.tenant]]
name = "a"
gpus = 4
[[cluster.tenant]]
name = "b"
gpus = 3
[[cluster.tenant]]
name = "c"
gpus = 1
'''
    result = run(tmp_path, f'policy = "{policy}"\nquota = "borrow"\nreclaim = "wait"',
                 jobs=[f"{j},{s},{d},{g},{t}" for j, s, d, g, t in jobs], clusters=clusters)
    assert owner_starts_ok(jobs, quotas, log(result)) is None
    assert result.jobs["end"].notna().all()


def test_none_ignores_quotas_and_matches_a_run_without_tenants(tmp_path):
    with_tenants = run(tmp_path, 'policy = "fifo"')
    plain = [",".join(row.split(",")[:4]) for row in JOBS]
    (tmp_path / "plain").mkdir()
    without = run(tmp_path / "plain", 'policy = "fifo"', jobs=plain, header="job_id,submit,duration,gpus",
                  clusters=CLUSTER.split("[[cluster.tenant]]")[0])
    assert log(with_tenants) == log(without)
    left = with_tenants.jobs.drop(columns=["tenant"])
    right = without.jobs.drop(columns=["tenant"])
    pd.testing.assert_frame_equal(left, right)


def test_user_policy_reads_tenant_and_usage(tmp_path):
    (tmp_path / "mine.py").write_text('''
from simsched.policies import Decision, Start

class Mine:
    def decide(self, view):
        with open(__file__ + ".seen", "a") as out:
            for job in view.queue:
                out.write(repr((view.now, job.tenant, view.tenants.usage(job.tenant, 0),
                                view.tenants.quota(job.tenant, 0))) + chr(10))
        starts, free = [], list(view.free)
        for job in view.queue:
            option = job.options[0]
            for n in view.fleet.groups[option.cluster, option.gpu_type]:
                if free[n] >= option.per_worker * job.workers:
                    free[n] -= option.per_worker * job.workers
                    starts.append(Start(job.job_id, (n,)))
                    break
        return Decision(tuple(starts))
''')
    result = run(tmp_path, 'policy = "mine.py:Mine"\nquota = "strict"')
    assert events(result)[:3] == [(0, "start", "a1"), (0, "start", "a2"), (10, "start", "b1")]
    import ast

    seen = [ast.literal_eval(line) for line in (tmp_path / "mine.py.seen").read_text().splitlines()]
    assert (0, "a", 0.0, 8.0) in seen and (10, "b", 0.0, 8.0) in seen
    assert all(usage <= 8.0 for _, _, usage, _ in seen)


@pytest.mark.parametrize("clusters, scheduler, message", [
    (CLUSTER.replace("gpus = 8\n[[cluster.tenant]]", "gpus = 12\n[[cluster.tenant]]"), 'quota = "strict"',
     "the quotas add up to 20 GPUs, above the 16 GPUs of cluster 'c0'"),
    (CLUSTER.replace('gpus = 8\n[[cluster.tenant]]', 'gpus = 17\n[[cluster.tenant]]'), 'quota = "strict"',
     "cluster[0].tenant[0].gpus: 17 GPUs is above the cluster's 16 GPUs"),
    (CLUSTER + '[[cluster.tenant]]\nname = "ghost"\ngpus = 0\n', 'quota = "strict"',
     "tenant 'ghost' has a quota but no job of the workload belongs to it"),
    (CLUSTER.replace('gpus = 8\n[[cluster.tenant]]', 'gpus = { K80 = 4 }\n[[cluster.tenant]]'), 'quota = "strict"',
     "GPU type 'K80' is not in cluster 'c0'"),
    (CLUSTER.split("[[cluster.tenant]]")[0], 'quota = "strict"', "needs tenants' quotas"),
    (CLUSTER, 'quota = "strict"\nreclaim = "wait"', 'reclaim: only applies to quota = "borrow"'),
    (CLUSTER, 'quota = "fair"', "quota"),
])
def test_bad_quotas_are_one_clear_error(tmp_path, clusters, scheduler, message):
    with pytest.raises(InputError) as err:
        run(tmp_path, 'policy = "fifo"\n' + scheduler, clusters=clusters)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_bad_quota_exits_2_with_one_line(tmp_path):
    import subprocess
    import sys

    path = write_scenario(tmp_path, clusters=CLUSTER.replace("gpus = 8\n[[cluster.tenant]]", "gpus = 12\n[[cluster.tenant]]"),
                          scheduler='quota = "strict"', jobs=JOBS, header=HEADER)
    done = subprocess.run([sys.executable, "-m", "simsched", str(path), "--quiet"], capture_output=True, text=True)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "above the 16 GPUs of cluster 'c0'" in done.stderr


def test_per_type_quota_counts_gpus_held_after_memory_scaling(tmp_path):
    clusters = '''[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }, { count = 2, gpus = 4, gpu_type = "K80" }]
[[cluster.tenant]]
name = "a"
gpus = { V100 = 4, K80 = 4 }
'''
    # a 1-GPU V100 job needs 16/12 -> 2 K80s (SPEC §2 memory scaling): K80's quota of 4 holds two such
    # jobs, not four
    jobs = ["j1,0,100,1,a,V100", "j2,0,100,1,a,V100", "j3,0,100,1,a,V100", "j4,0,100,1,a,V100",
            "j5,0,100,1,a,V100", "j6,0,100,1,a,V100"]
    result = run(tmp_path, 'policy = "fifo"\nquota = "strict"\nheterogeneous = true', jobs=jobs, clusters=clusters,
                 header="job_id,submit,duration,gpus,tenant,gpu_type")
    first = result.jobs[result.jobs["start"] == 0]
    held = (first["share"] * first["workers"] / 1000).groupby(first["gpu_type"]).sum()
    assert held.get("V100", 0) <= 4 and held.get("K80", 0) <= 4
    assert held.get("K80", 0) == 4.0
    assert list(first["gpu_type"].value_counts().sort_index()) == [2, 4]


@st.composite
def workloads(draw):
    n = draw(st.integers(1, 14))
    rows = []
    for i in range(n):
        rows.append(f"j{i},{draw(st.integers(0, 50))},{draw(st.integers(1, 80))},"
                    f"{draw(st.sampled_from([1, 2, 3, 4, 8]))},{draw(st.sampled_from(['a', 'b', 'c']))}")
    quotas = draw(st.lists(st.integers(0, 8), min_size=3, max_size=3).filter(lambda q: sum(q) <= 16))
    policy = draw(st.sampled_from(["fifo", "sjf", "las", "srsf", "hrrn", "edf", "lyra"]))
    backfill = draw(st.sampled_from(["true", "false", '"easy"']))
    return rows, quotas, policy, backfill


def max_usage(result) -> dict[str, float]:
    """The most GPUs each tenant held at once, from the run spells."""
    spells = result.spells
    tenant = dict(zip(result.jobs["job_id"], result.jobs["tenant"]))
    changes = []
    for row in spells.itertuples():
        gpus = row.share * row.workers / 1000
        changes += [(row.start, 1, tenant[row.job_id], gpus), (row.end, 0, tenant[row.job_id], -gpus)]
    held: dict[str, float] = {}
    most: dict[str, float] = {}
    for _, _, name, gpus in sorted(changes, key=lambda c: (c[0], c[1])):
        held[name] = held.get(name, 0.0) + gpus
        most[name] = max(most.get(name, 0.0), held[name])
    return most


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=workloads())
def test_strict_quota_is_never_exceeded(tmp_path_factory, case):
    rows, quotas, policy, backfill = case
    tmp = tmp_path_factory.mktemp("strict")
    present = sorted({row.rsplit(",", 1)[1] for row in rows})
    tenants = "".join(f'[[cluster.tenant]]\nname = "{name}"\ngpus = {q}\n'
                      for name, q in zip("abc", quotas) if name in present)
    clusters = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]\n' + tenants
    if policy == "las" and backfill == '"easy"':
        backfill = "true"
    result = run(tmp, f'policy = "{policy}"\nquota = "strict"\nbackfill = {backfill}', jobs=rows, clusters=clusters)
    quota = {name: q for name, q in zip("abc", quotas) if name in present}
    for name, most in max_usage(result).items():
        assert most <= quota[name] + 1e-9, (name, most, quota[name])
    # a job starts only when it fits its tenant's quota: any bigger job never starts
    for row in result.jobs.itertuples():
        if row.gpus > quota[row.tenant]:
            assert row.status == "unfinished"


@pytest.mark.parametrize("policy, backfill", [("las", "true"), ("fifo", '"easy"'), ("sjf", '"conservative"')])
def test_borrow_with_a_policy_that_mirrors_the_queue(tmp_path, policy, backfill):
    """las and the reservation walks keep a mirror of the queue between decisions and check it by
    counting; under quotas they are asked about part of the queue (the jobs within quota), then in
    the same decision about the rest, minus what the reclaim step started. At 33 here j3 (a) does
    not fit and reclaims j4's GPUs in the reclaim step; the borrowing pass then sees j2 alone, one
    job as the mirror held (j3), so the mirror passed the count and the policy started j3 a second
    time: the run stopped with "cannot start job 'j3': it is not queued". Such a policy now gets
    every queued job as new in those views (SubView ``fresh``) and rebuilds its mirror."""
    rows = ["j0,26,41,2,c,V100", "j1,32,30,3,c,V100", "j2,31,34,4,c,V100", "j3,33,54,3,a,K80", "j4,2,70,8,c,V100",
            "j5,48,78,3,c,K80", "j6,39,13,1,a,V100"]
    clusters = ('[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 8, gpu_type = "V100" }, '
                '{ count = 1, gpus = 8, gpu_type = "K80" }]\n'
                + "".join(f'[[cluster.tenant]]\nname = "{name}"\ngpus = {q}\n' for name, q in (("a", 3), ("c", 5))))
    result = run(tmp_path, f'policy = "{policy}"\nbackfill = {backfill}\nquota = "borrow"\nreclaim = "preempt"\n'
                           'heterogeneous = true\nrestart_penalty_s = 1', jobs=rows, clusters=clusters,
                 header=HEADER + ",gpu_type")
    assert set(result.jobs["status"]) == {"done"}
    starts = [(t, j) for t, e, j in events(result) if e == "start"]
    assert (33, "j3") in starts and sum(j == "j3" for _, j in starts) == 1


# ------------------------------------------------------------------ tenants from traces and mixes
def test_readers_carry_the_tenant(traces_dir):
    from simsched.workloads.readers.itp import read_itp
    from simsched.workloads.readers.philly import read_philly
    from tests.test_readers import read

    df, _ = read(read_philly, traces_dir / "philly/pollux_philly.csv")
    assert (df["tenant"] == df["home_cluster"]).all()
    assert df["tenant"].value_counts()["6214e9"] == 41226  # SOURCE.md's VC sizes
    df, _ = read(read_itp, traces_dir / "microsoft-itp-2021/cluster10.csv")
    assert set(df["tenant"]) == {"cluster10"}


def test_tenant_mix_is_seeded_and_moves_no_other_draw(tmp_path):
    clusters = '[[cluster]]\nname = "c0"\nnodes = [{ count = 4, gpus = 8, gpu_type = "V100" }]\n'
    body = 'source = "synthetic"\ngenerator = "simple"\njobs = 300'
    plain = write_scenario(tmp_path, clusters=clusters, scheduler='policy = "fifo"', workload=body)
    first = simsched.run(plain).jobs
    mixed = write_scenario(tmp_path, clusters=clusters, scheduler='policy = "fifo"',
                           workload=body + '\ntenant_mix = { x = 3, y = 1 }')
    second = simsched.run(mixed).jobs
    again = simsched.run(mixed).jobs
    assert list(second["tenant"]) == list(again["tenant"])
    assert set(second["tenant"]) == {"x", "y"} and 0.65 < (second["tenant"] == "x").mean() < 0.85
    pd.testing.assert_frame_equal(first.drop(columns="tenant"), second.drop(columns="tenant"))


def test_bad_tenant_mix_is_one_clear_error(tmp_path):
    clusters = '[[cluster]]\nname = "c0"\nnodes = [{ count = 4, gpus = 8, gpu_type = "V100" }]\n'
    path = write_scenario(tmp_path, clusters=clusters, scheduler='policy = "fifo"',
                          workload='source = "synthetic"\ngenerator = "simple"\ntenant_mix = { x = -1 }')
    with pytest.raises(InputError, match="workload.tenant_mix: must be a table of tenant = weight"):
        simsched.run(path)


# ------------------------------------------------------------------ dated quotas
def test_dated_quotas_change_at_midnight(tmp_path):
    (tmp_path / "quotas.csv").write_text("date,a,b,total\n2020-04-01,4,12,16\n2020-04-02,16,0,16\n")
    clusters = CLUSTER.split("[[cluster.tenant]]")[0] + 'quota_file = "quotas.csv"\n'
    jobs = ["a1,0,100,4,a", "a2,0,100000,4,a", "a3,0,100,4,a", "b1,0,100,4,b"]
    result = run(tmp_path, 'policy = "fifo"\nquota = "strict"', jobs=jobs, clusters=clusters)
    start = dict(zip(result.jobs["job_id"], result.jobs["start"]))
    # day 1: a may hold 4 GPUs (a1, then a2 when a1 ends); day 2 (t = 86400): 16, a3 starts
    assert start == {"a1": 0, "a2": 100, "a3": 86400, "b1": 0}


def test_quota_start_picks_the_row_in_force(tmp_path):
    (tmp_path / "quotas.csv").write_text("date,a,b\n2020-04-01,4,12\n2020-04-03,16,0\n")
    clusters = CLUSTER.split("[[cluster.tenant]]")[0] + 'quota_file = "quotas.csv"\nquota_start = "2020-04-02"\n'
    jobs = ["a1,0,100,4,a", "a2,0,100000,4,a", "a3,0,100,4,a", "b1,0,100,4,b"]
    result = run(tmp_path, 'policy = "fifo"\nquota = "strict"', jobs=jobs, clusters=clusters)
    assert dict(zip(result.jobs["job_id"], result.jobs["start"]))["a3"] == 86400


@pytest.mark.parametrize("table, message", [
    ("date,a,b\n2020-04-01,4,20\n", "quotas.csv:2: the quotas of 2020-04-01 add up to 24 GPUs, above the 16 GPUs"),
    ("date,a,b\n2020-04-02,4,2\n2020-04-01,4,2\n", "quotas.csv:3: dates must increase"),
    ("date,a,b\n2020-04-01,4,x\n", "quotas.csv:2: b = 'x' is not a number of GPUs"),
    ("day,a\n", "quotas.csv:1: a quota table starts with the header date"),
])
def test_bad_quota_table_names_its_line(tmp_path, table, message):
    (tmp_path / "quotas.csv").write_text(table)
    clusters = CLUSTER.split("[[cluster.tenant]]")[0] + 'quota_file = "quotas.csv"\n'
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        run(tmp_path, 'policy = "fifo"\nquota = "strict"', clusters=clusters)


def test_earth_daily_quotas(tmp_path, traces_dir):
    """Helios Earth's daily VC GPU numbers as a dated quota table (read in place, never copied); its
    largest day holds 1,232 GPUs = 154 nodes of 8."""
    earth = traces_dir / "helios/earth_cluster_gpu_number.csv"
    names = earth.read_text().splitlines()[0].split(",")[1:-1]
    clusters = (f'[[cluster]]\nname = "earth"\nnodes = [{{ count = 154, gpus = 8, gpu_type = "V100" }}]\n'
                f'quota_file = "{earth}"\nquota_start = "2020-06-01"\n')
    mix = ", ".join(f'{name} = 1' for name in names)
    path = write_scenario(tmp_path, clusters=clusters, scheduler='policy = "fifo"\nquota = "strict"',
                          workload=f'source = "synthetic"\ngenerator = "simple"\njobs = 400\ntenant_mix = {{ {mix} }}')
    result = simsched.run(path)
    assert result.summary["completed"] + result.summary["unfinished"] == 400
    schedule = load_scenario(path).clusters[0].quota_schedule
    assert len(schedule.tenants) == 25 and schedule.times[:2] == (0.0, 86400.0)


@pytest.mark.parametrize("mode, warned", [("strict", True), ("borrow", False), ("none", False)])
def test_a_job_above_its_strict_quota_is_announced(tmp_path, mode: str, warned: bool) -> None:
    """a's quota is 8 GPUs; a 12-GPU job of a can never start under strict (whatever the policy),
    so the run says so before it starts; under borrow it can (idle GPUs), and nothing is said."""
    jobs = ["a1,0,100,12,a", "b1,0,50,4,b"]
    result = run(tmp_path, f'policy = "fifo"\nquota = "{mode}"', jobs=jobs)
    said = [w for w in result.summary.get("warnings", []) if "strict quota ever allows" in w]
    assert bool(said) == warned
    if warned:
        assert said[0].startswith("1 job(s)") and "'a1' of tenant 'a', 12 GPUs" in said[0]
        assert result.jobs.set_index("job_id").loc["a1", "status"] == "unfinished"
