"""Hand-computed engine cases with exact event logs (SPEC §2-§3)."""

from __future__ import annotations

import simsched
from simsched.core.contract import Decision, Start
from simsched.core.engine import Engine, EngineConfig
from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
from tests.conftest import REPO
from tests.helpers import log, write_scenario

TWO_BY_FOUR = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]'
STRICT = 'policy = "fifo"\nplacement = "best_fit"\nbackfill = false'
BACKFILL = 'policy = "fifo"\nplacement = "best_fit"\nbackfill = true'

# A: 4 GPUs 0-10 on node 0; B: 4 GPUs 1-6 on node 1; C: 8 GPUs = 2 workers x 4 (largest node 4);
# D: 1 GPU arriving behind C.
HOL_JOBS = ["A,0,10,4,,,,,", "B,1,5,4,,,,,", "C,2,3,8,,,,,", "D,3,2,1,,,,,"]


def test_strict_head_of_line_exact_times(tmp_path):
    result = simsched.run(write_scenario(tmp_path, clusters=TWO_BY_FOUR, scheduler=STRICT, jobs=HOL_JOBS))
    times = {r.job_id: (r.start, r.end) for r in result.jobs.itertuples()}
    # C takes both nodes at 10 (node 1 idle since 6); D waits for C: 13-15.
    assert times == {"A": (0, 10), "B": (1, 6), "C": (10, 13), "D": (13, 15)}
    assert log(result) == [
        (0.0, "arrive", "A", ""), (0.0, "start", "A", "0"),
        (1.0, "arrive", "B", ""), (1.0, "start", "B", "1"),
        (2.0, "arrive", "C", ""),
        (3.0, "arrive", "D", ""),
        (6.0, "finish", "B", ""),
        (10.0, "finish", "A", ""), (10.0, "start", "C", "0 1"),
        (13.0, "finish", "C", ""), (13.0, "start", "D", "0"),
        (15.0, "finish", "D", ""),
    ]


def test_backfill_lets_small_job_pass(tmp_path):
    result = simsched.run(write_scenario(tmp_path, clusters=TWO_BY_FOUR, scheduler=BACKFILL, jobs=HOL_JOBS))
    times = {r.job_id: (r.start, r.end) for r in result.jobs.itertuples()}
    # At 6 node 1 frees: C (8 GPUs) still does not fit, D does: 6-8. C starts when A ends.
    assert times == {"A": (0, 10), "B": (1, 6), "C": (10, 13), "D": (6, 8)}
    assert result.jobs.set_index("job_id").loc["C", "wait"] == 8.0


def test_completion_then_arrival_then_one_decision(tmp_path):
    jobs = ["A,0,5,4,,,,,", "B,5,1,4,,,,,", "C,5,1,4,,,,,"]
    one_node = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4 }]'
    result = simsched.run(write_scenario(tmp_path, clusters=one_node, scheduler=STRICT, jobs=jobs))
    assert log(result) == [
        (0.0, "arrive", "A", ""), (0.0, "start", "A", "0"),
        (5.0, "finish", "A", ""), (5.0, "arrive", "B", ""), (5.0, "arrive", "C", ""),
        (5.0, "start", "B", "0"),
        (6.0, "finish", "B", ""), (6.0, "start", "C", "0"),
        (7.0, "finish", "C", ""),
    ]
    assert result.summary["decisions"] == 3  # t=0, t=5 (one for three events), t=6; t=7 has nothing left


def test_best_fit_picks_fullest_node_that_fits(tmp_path):
    three = '[[cluster]]\nname = "c0"\nnodes = [{ count = 3, gpus = 4 }]'
    jobs = ["A,0,9,2,,,,,", "B,0,9,1,,,,,", "C,0,9,3,,,,,", "D,0,9,1,,,,,", "E,0,9,2,,,,,"]
    result = simsched.run(write_scenario(tmp_path, clusters=three, scheduler=STRICT, jobs=jobs))
    nodes = {e[2]: e[3] for e in log(result) if e[1] == "start"}
    # free after each: A->n0 (2,4,4); B->n0 (1,4,4); C->n1 (1,1,4); D->n0 tie on 1 free, lowest; E->n2
    assert nodes == {"A": "0", "B": "0", "C": "1", "D": "0", "E": "2"}


HETERO_TYPES = """
[[gpu_type]]
name = "fast"
speedup = 2.0
memory_gb = 32
[[gpu_type]]
name = "slow"
speedup = 1.0
memory_gb = 16
"""
FAST_SLOW = ('[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 2, gpu_type = "fast" }, '
             '{ count = 1, gpus = 4, gpu_type = "slow" }]')


def test_heterogeneous_speed_and_memory_scaling(tmp_path):
    jobs = ["A,0,100,2,,,,,fast", "B,0,50,2,,,,,fast", "C,1,10,1,,,,,fast"]
    hetero = BACKFILL + "\nheterogeneous = true"
    result = simsched.run(write_scenario(tmp_path, clusters=FAST_SLOW, scheduler=hetero, jobs=jobs,
                                         extra=HETERO_TYPES))
    rows = result.jobs.set_index("job_id")
    # A on the fast type. B on slow: 2 x 32/16 = 4 GPUs, 50 x 2/1 = 100 s. C waits for the fast node.
    assert (rows.loc["A", "start"], rows.loc["A", "end"], rows.loc["A", "gpu_type"]) == (0, 100, "fast")
    assert (rows.loc["B", "start"], rows.loc["B", "end"], rows.loc["B", "gpu_type"]) == (0, 100, "slow")
    assert rows.loc["B", "gpu_seconds"] == 400.0  # 4 slow GPUs for 100 s
    assert (rows.loc["C", "start"], rows.loc["C", "end"], rows.loc["C", "gpu_type"]) == (100, 110, "fast")


def test_without_heterogeneity_typed_jobs_wait_for_their_type(tmp_path):
    jobs = ["A,0,100,2,,,,,fast", "B,0,50,2,,,,,fast"]
    result = simsched.run(write_scenario(tmp_path, clusters=FAST_SLOW, scheduler=BACKFILL, jobs=jobs,
                                         extra=HETERO_TYPES))
    rows = result.jobs.set_index("job_id")
    assert (rows.loc["B", "start"], rows.loc["B", "end"], rows.loc["B", "gpu_type"]) == (100, 150, "fast")


def test_memory_scaling_below_one_gpu_is_a_share(tmp_path):
    one_fast = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "fast" }]'
    jobs = ["A,0,100,1,,,,,slow", "B,0,100,1,,,,,slow", "C,0,100,1,,,,,slow"]
    hetero = BACKFILL + "\nheterogeneous = true"
    result = simsched.run(write_scenario(tmp_path, clusters=one_fast, scheduler=hetero, jobs=jobs,
                                         extra=HETERO_TYPES))
    times = {r.job_id: (r.start, r.end) for r in result.jobs.itertuples()}
    # 1 slow GPU (16 GB) = half a fast GPU (32 GB); speed 2: 50 s. Two share the GPU, C follows.
    assert times == {"A": (0, 50), "B": (0, 50), "C": (50, 100)}


def test_job_too_large_is_unscheduled_and_does_not_block(tmp_path):
    jobs = ["BIG,0,10,64,,,,,", "A,1,5,4,,,,,"]
    result = simsched.run(write_scenario(tmp_path, clusters=TWO_BY_FOUR, scheduler=STRICT, jobs=jobs))
    rows = result.jobs.set_index("job_id")
    assert rows.loc["BIG", "status"] == "infeasible"
    assert rows.loc["BIG", "start"] != rows.loc["BIG", "start"]  # NaN: empty in jobs.csv
    assert (rows.loc["A", "start"], rows.loc["A", "end"]) == (1, 6)
    assert result.summary["infeasible"] == 1 and result.summary["completed"] == 1
    assert result.summary["unscheduled"] == 1 and result.summary["unfinished"] == 0  # the old key: both kinds


class PreemptForUrgent:
    """Test policy: FIFO on one node; a job named U* preempts whatever runs."""

    def decide(self, view):
        preempts = []
        free = list(view.free)
        urgent = [j for j in view.queue if j.job_id.startswith("U")]
        if urgent and view.running:
            for job in view.running:
                preempts.append(job.job_id)
                for n in job.running_nodes:
                    free[n] += 1000 * job.gpus // job.workers
        starts = []
        for job in sorted(view.queue, key=lambda j: (not j.job_id.startswith("U"), j.submit)):
            if free[0] >= 1000:
                free[0] -= 1000
                starts.append(Start(job.job_id, (0,)))
        return Decision(tuple(starts), tuple(preempts))


def _engine(jobs, policy, **config):
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 1, "V100"),)),), builtin_gpu_types())
    return Engine(fleet, jobs, policy, EngineConfig(**config))


def test_preempted_job_resumes_with_progress_kept_and_penalty():
    jobs = [JobSpec("A", 0, 100, 1, 1), JobSpec("U", 30, 10, 1, 1)]
    engine = _engine(jobs, PreemptForUrgent(), restart_penalty_s=5.0)
    assert engine.run()
    assert engine.events == [
        (0.0, "arrive", "A", ""), (0.0, "start", "A", "0"),
        (30.0, "arrive", "U", ""), (30.0, "preempt", "A", ""), (30.0, "start", "U", "0"),
        (40.0, "finish", "U", ""), (40.0, "start", "A", "0"),
        (115.0, "finish", "A", ""),  # 70 s left + 5 s restart penalty
    ]
    a = engine.by_id["A"]
    assert (a.first_start, a.end, a.preemptions, a.wait_so_far) == (0.0, 115.0, 1, 10.0)
    assert a.gpu_seconds == 30.0 + 75.0


class MigrateToFast:
    """Test policy: start on whatever is free; when the fast node frees, move the slow job there."""

    def decide(self, view):
        free = list(view.free)
        preempts, starts = [], []
        for job in view.running:
            if job.running_nodes == (1,) and free[0] >= 1000:
                preempts.append(job.job_id)
                starts.append(Start(job.job_id, (0,)))
                free[0] -= 1000
        for job in view.queue:
            for n in (0, 1):
                if free[n] >= 1000:
                    free[n] -= 1000
                    starts.append(Start(job.job_id, (n,)))
                    break
        return Decision(tuple(starts), tuple(preempts))


def test_migration_rescales_remaining_work():
    types = builtin_gpu_types()
    types["fast"] = types["V100"].__class__("fast", 2.0, 16)
    types["slow"] = types["V100"].__class__("slow", 1.0, 16)
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 1, "fast"), NodeGroup(1, 1, "slow"))),), types)
    jobs = [JobSpec("B", 0, 40, 1, 1, gpu_type="fast"), JobSpec("A", 0, 100, 1, 1, gpu_type="slow")]
    engine = Engine(fleet, jobs, MigrateToFast(), EngineConfig(heterogeneous=True))
    assert engine.run()
    # B (fast ref) on fast: 40 s. A (slow ref, 100 s of work) on slow until 20... B ends at 40:
    # A did 40 s of 100 on slow; 60 left at speed 2 on fast -> 30 s; ends at 70.
    assert engine.events == [
        (0.0, "arrive", "B", ""), (0.0, "arrive", "A", ""),
        (0.0, "start", "B", "0"), (0.0, "start", "A", "1"),
        (40.0, "finish", "B", ""), (40.0, "preempt", "A", ""), (40.0, "start", "A", "0"),
        (70.0, "finish", "A", ""),
    ]
    assert engine.by_id["A"].clusters == [0] and engine.by_id["A"].gpu_type_used == "fast"


def test_interrupted_run_is_partial_and_keeps_finished_jobs():
    from simsched.config.scenario import load_scenario
    from simsched.runs.single import collect

    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 1, "V100"),)),), builtin_gpu_types())
    jobs = [JobSpec(str(i), float(i), 1.5, 1, 1) for i in range(40)]
    from simsched.policies import ORDERINGS, PLACEMENTS
    from simsched.policies.allocation import Home
    from simsched.policies.queue import QueueScheduler

    engine = Engine(fleet, jobs, QueueScheduler(ORDERINGS["fifo"], PLACEMENTS["best_fit"](), Home()))

    def ctrl_c(snapshot):
        if snapshot.finished >= 5:
            raise KeyboardInterrupt

    assert engine.run(ctrl_c, refresh_s=0.0) is False
    scenario = load_scenario(REPO / "scenarios" / "philly_hetero.toml")  # provenance only
    result = collect(engine, scenario, False, {}, 0.0)
    assert result.partial
    done = result.jobs[result.jobs["status"] == "done"]
    assert len(done) == result.summary["completed"] >= 5
    assert (done["end"] == done["start"] + 1.5).all()
    running = result.jobs[result.jobs["status"] == "running"]
    assert running["start"].notna().all() and running["end"].isna().all()


def test_node_gpus_take_give_and_waiting_get():
    import pytest
    import simpy

    from simsched.core.engine import NodeGpus
    from simsched.core.errors import DecisionError

    env = simpy.Environment()
    gpus = NodeGpus(env, capacity=8000, init=8000)
    gpus.take(6000)
    assert gpus.level == 2000
    with pytest.raises(DecisionError):
        gpus.take(3000)
    got = []

    def waiter(env):
        yield gpus.get(4000)  # another process using the ordinary API waits for capacity
        got.append(env.now)

    env.process(waiter(env))
    env.run(until=1)
    assert got == []
    gpus.give(6000)
    env.run(until=2)
    assert got == [1] and gpus.level == 4000
    with pytest.raises(DecisionError):
        gpus.give(5000)


# -- restart penalties and the one-node-per-worker rule (mutants of simsched/core/engine.py) ----------
class RecordingUrgent(PreemptForUrgent):
    """PreemptForUrgent that notes, at every decision, each running job's remaining time as the view
    gives it."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str, float]] = []

    def decide(self, view):
        self.seen += [(view.now, job.job_id, view.remaining_time(job)) for job in view.running]
        return super().decide(view)


def test_a_penalised_restarts_remaining_time_counts_no_work_during_the_penalty():
    """A (100 s) runs 0-30, is preempted by U, restarts at 40 with 70 s of work and a 5 s penalty. The
    view's remaining time of A is 70 s during the penalty (at 42) and 70 - (60 - 40 - 5) = 55 s at 60;
    A ends at 40 + 5 + 70 = 115. W1 and W2 (no work to speak of) only call decisions at 42 and 60."""
    jobs = [JobSpec("A", 0, 100, 1, 1), JobSpec("U", 30, 10, 1, 1), JobSpec("W1", 42, 1, 1, 1),
            JobSpec("W2", 60, 1, 1, 1)]
    policy = RecordingUrgent()
    engine = _engine(jobs, policy, restart_penalty_s=5.0)
    assert engine.run()
    assert [(t, r) for t, j, r in policy.seen if j == "A" and t in (42.0, 60.0)] == [(42.0, 70.0), (60.0, 55.0)]
    assert engine.by_id["A"].end == 115.0


def test_a_job_preempted_during_its_restart_penalty_keeps_all_its_work():
    """As above, but U2 preempts A again at 43, 3 s into its 5 s penalty: A did no work since 40, so
    it still has 70 s left; it restarts when U2 ends (53) and, with the penalty again, ends at
    53 + 5 + 70 = 128. Its GPU time counts every second it held the GPU: 30 + 3 + 75."""
    jobs = [JobSpec("A", 0, 100, 1, 1), JobSpec("U", 30, 10, 1, 1), JobSpec("U2", 43, 10, 1, 1)]
    engine = _engine(jobs, PreemptForUrgent(), restart_penalty_s=5.0)
    assert engine.run()
    assert engine.events == [
        (0.0, "arrive", "A", ""), (0.0, "start", "A", "0"),
        (30.0, "arrive", "U", ""), (30.0, "preempt", "A", ""), (30.0, "start", "U", "0"),
        (40.0, "finish", "U", ""), (40.0, "start", "A", "0"),
        (43.0, "arrive", "U2", ""), (43.0, "preempt", "A", ""), (43.0, "start", "U2", "0"),
        (53.0, "finish", "U2", ""), (53.0, "start", "A", "0"),
        (128.0, "finish", "A", ""),
    ]
    a = engine.by_id["A"]
    assert (a.end, a.preemptions, a.gpu_seconds) == (128.0, 2, 30.0 + 3.0 + 75.0)


class OneNodeForTwoWorkers:
    """A user policy's mistake: a 2-worker job started on one node."""

    def decide(self, view):
        return Decision(tuple(Start(job.job_id, (0,)) for job in view.queue))


def test_a_two_worker_job_on_one_node_is_refused():
    """Two 8-GPU nodes; J is 16 GPUs as 2 workers of 8. Starting it on node 0 alone would run it on
    8 GPUs (node 0 has room for one worker): the engine refuses the decision, naming the job."""
    import pytest

    from simsched.core.errors import DecisionError

    fleet = Fleet((ClusterSpec("c0", (NodeGroup(2, 8, "V100"),)),), builtin_gpu_types())
    engine = Engine(fleet, [JobSpec("J", 0, 10, 16, 2)], OneNodeForTwoWorkers())
    with pytest.raises(DecisionError, match="'J' needs 2 nodes"):
        engine.run()


# -- work at a speed other than 1, and the over-allocation check (mutants of simsched/core/engine.py) --
def _one_fast_node(jobs, policy, gpus: int = 1, **config):
    """One node of ``gpus`` GPUs of a type twice as fast as the jobs' reference type "slow"."""
    types = builtin_gpu_types()
    types["fast"] = types["V100"].__class__("fast", 2.0, 16)
    types["slow"] = types["V100"].__class__("slow", 1.0, 16)
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, gpus, "fast"),)),), types)
    return Engine(fleet, jobs, policy, EngineConfig(heterogeneous=True, **config))


def test_a_preempted_job_on_a_faster_type_keeps_the_work_it_did_at_that_speed():
    """A has 100 s of work on its reference type "slow" and runs on a "fast" node (speed 2) from 0:
    at 30, when U preempts it, it has done 30 x 2 = 60 s of work and 40 s are left. It restarts at 40,
    when U (20 s of slow work, 10 s at speed 2) ends, with a 5 s penalty, then needs 40 / 2 = 20 s: it ends at 40 + 5 + 20 = 65, not at 40 + 5 + 70 / 2 = 80 as
    if its first 30 s had counted at speed 1. Between, at 50, the view's remaining time of A is
    40 - (50 - 40 - 5) x 2 = 30 s of reference work; its GPU time is every second held: 30 + 25."""
    jobs = [JobSpec("A", 0, 100, 1, 1, gpu_type="slow"), JobSpec("U", 30, 20, 1, 1, gpu_type="slow"),
            JobSpec("W", 50, 1, 1, 1, gpu_type="slow")]
    policy = RecordingUrgent()
    engine = _one_fast_node(jobs, policy, restart_penalty_s=5.0)
    assert engine.run()
    assert engine.events == [
        (0.0, "arrive", "A", ""), (0.0, "start", "A", "0"),
        (30.0, "arrive", "U", ""), (30.0, "preempt", "A", ""), (30.0, "start", "U", "0"),
        (40.0, "finish", "U", ""), (40.0, "start", "A", "0"),  # U: 20 s of slow work at speed 2
        (50.0, "arrive", "W", ""),
        (65.0, "finish", "A", ""), (65.0, "start", "W", "0"),
        (65.5, "finish", "W", ""),
    ]
    assert [(t, r) for t, j, r in policy.seen if j == "A" and t == 50.0] == [(50.0, 30.0)]
    a = engine.by_id["A"]
    assert (a.end, a.preemptions, a.gpu_seconds) == (65.0, 1, 30.0 + 25.0)


class StartEverythingOnNodeZero:
    """A user policy's mistake: every queued job on node 0, whatever is free there."""

    def decide(self, view):
        return Decision(tuple(Start(job.job_id, (0,)) for job in view.queue))


def test_a_start_one_gpu_beyond_the_free_ones_is_refused_with_the_numbers():
    """One 4-GPU node: A (3 GPUs) runs from 0; at 1 the policy starts B (2 GPUs) on the same node, where
    1 GPU is free. By one GPU, not by many: the engine refuses it and says so exactly."""
    import pytest

    from simsched.core.errors import DecisionError

    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 4, "V100"),)),), builtin_gpu_types())
    engine = Engine(fleet, [JobSpec("A", 0, 10, 3, 1), JobSpec("B", 1, 10, 2, 1)], StartEverythingOnNodeZero())
    with pytest.raises(DecisionError) as refused:
        engine.run()
    assert str(refused.value) == "starting job 'B' would over-allocate node 0: needs 2 GPUs, 1 free"
    assert engine.free == [1000] and engine.by_id["B"].status == "queued"
