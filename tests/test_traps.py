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


def test_assignment_scenario_has_deadlines_and_weights():
    from tests.conftest import REPO

    result = simsched.run(REPO / "docs" / "examples" / "compare_mine.toml")
    jobs = result.jobs
    assert jobs["deadline"].notna().all() and (jobs["deadline"] > jobs["submit"]).all()
    assert set(jobs["weight"]) <= {1, 2, 3, 4, 5} and jobs["weight"].nunique() > 1
    assert result.summary["deadline_miss_rate"] is not None


def test_deadline_miss_rate_is_na_without_deadlines_and_weighted_wait(tmp_path, capsys):
    from simsched.cli.main import main

    one = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "V100" }]'
    # waits: a 0, b 99 (weight 3), c 148 (weight 1): C_q,avg = (0 + 297 + 148) / 3,
    # weighted wait = (0 + 297 + 148) / (1 + 3 + 1) = 89
    path = write_scenario(tmp_path, clusters=one, scheduler='policy = "fifo"',
                          jobs=["a,0,100,1,,1,,,", "b,1,50,1,,3,,,", "c,2,10,1,,1,,,"])
    summary = simsched.run(path).summary
    assert summary["deadline_miss_rate"] is None
    assert summary["cq_avg"] == pytest.approx(445 / 3) and summary["weighted_wait"] == pytest.approx(89.0)
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "Deadline miss rate" in out and "n/a" in out and "Weighted avg wait (s)" in out


def test_heterogeneous_with_untyped_jobs_warns_once_naming_the_key(tmp_path, capsys):
    from simsched.cli.main import main

    mixed = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "T4" }, { count = 1, gpus = 1, gpu_type = "V100" }]'
    path = write_scenario(tmp_path, clusters=mixed, scheduler='policy = "fifo"\nheterogeneous = true',
                          jobs=["a,0,100,1,,,,,", "b,0,100,1,,,,,V100"])
    result = simsched.run(path)
    assert len(result.summary["warnings"]) == 1
    assert "1 of 2 jobs have no GPU type" in result.summary["warnings"][0]
    assert "workload.reference_gpu_type" in result.summary["warnings"][0]
    for argv in ([str(path), "--quiet"], ["validate", str(path)]):
        assert main(argv) == 0
        err = capsys.readouterr().err
        assert err.count("reference_gpu_type") == 1, err
    typed = write_scenario(tmp_path, clusters=mixed, scheduler='policy = "fifo"\nheterogeneous = true',
                           jobs=["a,0,100,1,,,,,", "b,0,100,1,,,,,V100"],
                           workload='source = "csv"\npath = "jobs.csv"\nreference_gpu_type = "V100"')
    assert simsched.run(typed).summary["warnings"] == []


def test_philly_generator_types_its_jobs_with_the_calibrated_type(tmp_path):
    fleet = ('[[cluster]]\nname = "p"\nnodes = [{ count = 2, gpus = 2, gpu_type = "2x12" }, '
             '{ count = 2, gpus = 8, gpu_type = "8x24" }]')
    path = write_scenario(tmp_path, clusters=fleet, scheduler='policy = "fifo"\nheterogeneous = true',
                          workload='source = "synthetic"\ngenerator = "philly"\njobs = 50')
    result = simsched.run(path)
    assert result.summary["warnings"] == []
    used = set(result.jobs["gpu_type"])
    assert "8x24" in used


@pytest.mark.parametrize("typo", ["placment", "backfil", "heterogenous"])
def test_validate_rejects_scheduler_typos_with_a_complete_valid_list(tmp_path, capsys, typo):
    from simsched.cli.main import main

    path = write_scenario(tmp_path, clusters=TWO_CLUSTERS, scheduler=f'policy = "fifo"\n{typo} = true',
                          jobs=["a,0,100,1,,,,,"])
    for argv in (["validate", str(path)], [str(path), "--quiet"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert f"scheduler.{typo}: unknown key" in err and len(err.splitlines()) == 1
        for key in ("placement", "backfill", "heterogeneous", "allocation", "policy"):
            assert key in err.split("valid keys here:")[1], err


def test_workload_valid_keys_list_the_scenarios_own_keys(tmp_path):
    from simsched.core.errors import InputError

    path = write_scenario(tmp_path, clusters=TWO_CLUSTERS, scheduler='policy = "fifo"',
                          workload='source = "synthetic"\ngenerator = "simple"\njobs = 5\njobs_limt = 3')
    with pytest.raises(InputError) as info:
        simsched.run(path)
    valid = str(info.value).split("valid keys here:")[1]
    assert "workload.jobs_limt: unknown key" in str(info.value)
    assert "jobs_limit" in valid and "synthesize_deadline" in valid and "jobs" in valid


CHEAT = '''
from simsched.policies import Decision, Start


class Cheat:
    def decide(self, view):
        starts = []
        free = list(view.free)
        for job in view.queue:
            {action}
            option = job.options[0]
            node = view.fleet.groups[option.cluster, option.gpu_type][0]
            if free[node] >= option.per_worker:
                free[node] -= option.per_worker
                starts.append(Start(job.job_id, (node,)))
        return Decision(tuple(starts))
'''


@pytest.mark.parametrize("action, needle", [
    ("job.remaining_work = 1", "'remaining_work' is read-only"),
    ("job.duration = 1", "'duration' is read-only"),
    ("del job.weight", "'weight' is read-only"),
    ("view.now = 0", "view.now is read-only"),
    ("view.fleet.groups.clear()", "'mappingproxy' object has no attribute 'clear'"),
    ("job.process.interrupt()", "'process' is engine state"),
    ("job.clusters.append(0)", "'tuple' object has no attribute 'append'"),
])
def test_user_policies_get_read_only_views(tmp_path, action, needle):
    (tmp_path / "cheat.py").write_text(CHEAT.replace("{action}", action))
    one = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "V100" }]'
    path = write_scenario(tmp_path, clusters=one, scheduler='policy = "cheat.py:Cheat"',
                          jobs=["a,0,100,1,,,,,", "b,1,50,1,,,,,"])
    with pytest.raises(simsched.core.errors.InputError) as info:  # one line naming cheat.py:line (PolicyError)
        simsched.run(path)
    assert needle in str(info.value) and "cheat.py:" in str(info.value)


def test_read_only_views_change_no_result_of_an_honest_policy(tmp_path):
    from simsched.policies.user import UserPolicy

    (tmp_path / "honest.py").write_text(CHEAT.replace("{action}", "view.queued_time(job) + view.remaining_time(job)"))
    one = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 1, gpu_type = "V100" }]'
    path = write_scenario(tmp_path, clusters=one, scheduler='policy = "honest.py:Cheat"',
                          jobs=["a,0,100,1,,,,,", "b,1,50,1,,,,,", "c,2,10,1,,,,,"])
    guarded = simsched.run(path)
    from simsched.policies import load_user_policy

    policy = load_user_policy("honest.py:Cheat", tmp_path, {}, str(path))
    assert isinstance(policy, UserPolicy)
    bare = simsched.run(path, scheduler=policy.policy)  # a bare object is guarded by run() too
    assert guarded.jobs[["job_id", "start", "end"]].equals(bare.jobs[["job_id", "start", "end"]])
    # it only ever uses the first node: a 0-100, b 100-150, c 150-160
    assert guarded.jobs.set_index("job_id").loc["c", "start"] == 150


def test_progress_refreshes_by_wall_time_not_every_20000_events():
    import time

    from simsched.core.engine import Engine
    from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
    from simsched.policies import ORDERINGS, PLACEMENTS
    from simsched.policies.allocation import Home
    from simsched.policies.queue import QueueScheduler

    class Slow(QueueScheduler):  # a decision that takes a while, like MCT's on a big fleet
        def decide(self, view):
            time.sleep(0.01)
            return super().decide(view)

    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 1, "V100"),)),), builtin_gpu_types())
    jobs = [JobSpec(str(i), float(i), 1.5, 1, 1) for i in range(40)]  # ~80 decisions, ~200 events
    engine = Engine(fleet, jobs, Slow(ORDERINGS["fifo"], PLACEMENTS["best_fit"](), Home()))
    snaps = []
    assert engine.run(snaps.append, refresh_s=0.05)
    assert len(snaps) >= 4  # before: one snapshot, at the end
    assert snaps[0].finished < 40 and snaps[-1].finished == 40
