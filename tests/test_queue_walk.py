"""The bucketed queue walk (simsched/policies/queue.py) against the walk as SPEC §4 states it.

The reference scheduler below sorts the whole queue by (key, submit, index) at
every decision and tries every job in turn. The real one keeps buckets of
same-signature jobs, merges their heads, drops a bucket at its first failure
and, for time-dependent orderings, evaluates a vectorised key. On random
heterogeneous two-cluster workloads both must produce the same event log, for
every built-in ordering, placement and backfill setting.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core.contract import Decision, Start
from simsched.core.engine import Engine, EngineConfig, View
from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
from simsched.evo.priority import evaluate, load_priority
from simsched.evo.scheduler import GpOrdering, features
from simsched.policies import ORDERINGS, PLACEMENTS
from simsched.policies.allocation import ALLOCATIONS
from simsched.policies.ordering import hrrn_key
from simsched.policies.queue import QueueScheduler, place_job

FLEET = Fleet((ClusterSpec("a", (NodeGroup(2, 8, "V100"), NodeGroup(2, 4, "T4"))),
               ClusterSpec("b", (NodeGroup(1, 8, "A100"), NodeGroup(2, 8, "V100")))), builtin_gpu_types())
ORDERING_NAMES = ("fifo", "sjf", "srtf", "srsf", "edf", "lyra", "hrrn", "sufferage", "gp", "gp-compiled",
                  "gp-learned")
LEARNED = Path(__file__).resolve().parents[1] / "workloads" / "priorities" / "paper_learned.json"


def ordering(name: str):
    """A built-in ordering; "gp-compiled"/"gp-learned" evaluate every bucket with the compiled kernel."""
    if name == "gp":
        return GpOrdering(load_priority("gp-paper"))
    if name == "gp-compiled":
        return GpOrdering(load_priority("gp-paper"), compiled_from=0, compile_after=0)
    if name == "gp-learned":
        return GpOrdering(load_priority(str(LEARNED)), compiled_from=0, compile_after=0)
    return ORDERINGS[name]


class ReferenceWalk:
    """Sort the whole queue at every decision; start every job that fits, in that order."""

    def __init__(self, ordering, placement, allocation, backfill: bool) -> None:
        self.ordering, self.placement, self.allocation, self.backfill = ordering, placement, allocation, backfill

    def decide(self, view) -> Decision:
        ordered = self.ordering.sort(view.queue, view)
        free = list(view.free)
        blocked: set[int] = set()
        starts = []
        for job in ordered:
            cluster = self.allocation.cluster_for(job, view)
            if cluster in blocked:
                continue
            nodes = place_job(job, cluster, view.fleet.groups, self.placement, free, skip=blocked)
            if nodes is None:
                if not self.backfill:  # a job without a cluster (fleet-wide) blocks them all
                    blocked.update(range(len(view.fleet.cluster_names)) if cluster is None else (cluster,))
                continue
            starts.append(Start(job.job_id, nodes))
        return Decision(tuple(starts))


def workload(seed: int, count: int) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += float(np.floor(rng.exponential(20)))
        gpus = float(rng.choice([0.5, 1, 2, 4, 8, 16]))
        gpu_type = rng.choice(["", "V100", "T4", "A100"])
        duration = float(rng.choice([0, 1, 5, 60, 600, 3600, rng.integers(1, 9000)]))
        deadline = None if rng.random() < 0.5 else t + float(rng.integers(10, 5000))
        home = str(rng.choice(["a", "b", ""])) or None  # no home: placed fleet-wide
        jobs.append(JobSpec(f"j{i}", t, duration, gpus, 1 if gpus <= 8 else 2, int(rng.integers(1, 5)),
                            deadline, home, str(gpu_type) or None))
    return jobs


def events(scheduler, jobs, heterogeneous: bool) -> list:
    engine = Engine(FLEET, jobs, scheduler, EngineConfig(heterogeneous=heterogeneous, restrict_to_home=True))
    engine.run()
    return engine.events


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(ORDERING_NAMES), st.sampled_from(sorted(PLACEMENTS)),
       st.booleans(), st.booleans())
def test_bucketed_walk_equals_the_sorted_walk(seed, name, placement, backfill, heterogeneous):
    jobs = workload(seed, 60)
    ours = QueueScheduler(ordering(name), PLACEMENTS[placement](), ALLOCATIONS["home"](), backfill)
    reference = ReferenceWalk(ordering(name), PLACEMENTS[placement](), ALLOCATIONS["home"](), backfill)
    assert events(ours, jobs, heterogeneous) == events(reference, jobs, heterogeneous)


def test_deep_queue_of_one_kind_starts_in_key_order():
    """Twenty 8-GPU jobs queued behind one long job: hrrn starts them by response ratio."""
    fleet = Fleet((ClusterSpec("c", (NodeGroup(1, 8, "V100"),)),), builtin_gpu_types())
    jobs = [JobSpec("long", 0.0, 100.0, 8.0, 1)]
    jobs += [JobSpec(f"j{i}", float(i), float(10 + (7 * i) % 13), 8.0, 1) for i in range(1, 21)]
    scheduler = QueueScheduler(ORDERINGS["hrrn"], PLACEMENTS["best_fit"](), ALLOCATIONS["home"]())
    engine = Engine(fleet, jobs, scheduler)
    engine.run()
    starts = [job_id for _, event, job_id, _ in engine.events if event == "start"]
    # by hand: at each finish, the largest (wait + d) / d among the queued jobs starts next
    queued = {j.job_id: j for j in jobs[1:]}
    now, expected = 100.0, []
    while queued:
        best = min(queued.values(), key=lambda j: (-(now - j.submit + j.duration) / j.duration, j.submit))
        expected.append(best.job_id)
        now += best.duration
        del queued[best.job_id]
    assert starts == ["long", *expected]


@pytest.mark.parametrize("name", ["hrrn", "gp", "gp-compiled", "gp-learned"])
def test_vectorised_keys_equal_the_scalar_keys_bit_for_bit(name):
    """The vectorised key of a dynamic ordering gives exactly the floats of its scalar key."""
    jobs = workload(3, 200)
    engine = Engine(FLEET, jobs, QueueScheduler(ORDERINGS["fifo"], PLACEMENTS["best_fit"](), ALLOCATIONS["home"]()))
    records = [j for j in engine.jobs if j.options]
    rng = np.random.default_rng(0)
    for job in records:  # as if each had waited, run and been preempted a while
        job.status, job.queued_since = "queued", job.submit + float(rng.integers(0, 500))
        job.wait_so_far = float(rng.choice([0.0, rng.random() * 300]))
        job.remaining_work = job.duration * float(rng.choice([1.0, rng.random()]))
    view = View(1e4 + 0.25, engine.fleet_state, {j.job_id: j for j in records}, {}, tuple(engine.free))
    order = ordering(name)
    columns = {c: np.array([float(getattr(j, c)) for j in records]) for c in order.columns}
    got = order.vector(columns, view.now)
    if name.startswith("gp"):  # and the compiled kernel's keys and first minimum
        out = np.empty(len(records))
        first = order.vector_min(columns, len(records), view.now, out)
        assert out.tobytes() == got.tobytes() and first == int(got.argmin())
    if name == "hrrn":
        want = np.array([hrrn_key(j, view) for j in records])
    else:
        want = evaluate(order.graph, features(records, view))
    assert got.tobytes() == want.tobytes()


def test_a_nan_key_falls_back_to_the_sorted_walk():
    """A key without a total order (NaN) cannot be merged: that decision sorts the queue instead."""
    from simsched.policies.ordering import Ordering

    def key(job, view):
        return float("nan") if job.index % 7 == 3 else job.duration - view.queued_time(job)

    def vector(columns, now):
        keys = columns["duration"] - (columns["wait_so_far"] + (now - columns["queued_since"]))
        keys[columns["index"] % 7 == 3] = np.nan
        return keys

    odd = Ordering("odd", key, False, "", ("duration", "wait_so_far", "queued_since", "index"), vector)
    jobs = workload(11, 80)
    ours = QueueScheduler(odd, PLACEMENTS["best_fit"](), ALLOCATIONS["home"]())
    reference = ReferenceWalk(odd, PLACEMENTS["best_fit"](), ALLOCATIONS["home"](), True)
    assert events(ours, jobs, True) == events(reference, jobs, True)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["fifo", "sjf", "edf", "srsf"]), st.sampled_from(sorted(PLACEMENTS)),
       st.booleans())
def test_strict_walks_skipped_while_the_line_stays_blocked_equal_the_sorted_walk(seed, name, placement,
                                                                                  heterogeneous):
    """Strict order on a loaded fleet (150 jobs): a walk is skipped while the free GPUs are those a walk
    that started nothing left, every line blocked, and every job queued since sorts after the one that
    blocked the last line (issue 35); the run's events are the plain sorted walk's."""
    jobs = workload(seed, 150)
    ours = QueueScheduler(ordering(name), PLACEMENTS[placement](), ALLOCATIONS["home"](), False)
    reference = ReferenceWalk(ordering(name), PLACEMENTS[placement](), ALLOCATIONS["home"](), False)
    assert events(ours, jobs, heterogeneous) == events(reference, jobs, heterogeneous)


def test_strict_fifo_skips_walks_behind_a_blocked_head():
    """One node of 8 GPUs, fifo, strict: j0 (8 GPUs) runs 0-100; j1 (8 GPUs) waits; j2 and j3 (1 GPU)
    arrive at 10 and 20 and wait behind j1 (strict order). Those two decisions are skipped (same free
    GPUs, both sort after j1); j1 starts at 100, then j2 and j3 at 200."""
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 8, "V100"),)),), builtin_gpu_types())
    jobs = [JobSpec("j0", 0.0, 100.0, 8.0, 1), JobSpec("j1", 1.0, 100.0, 8.0, 1),
            JobSpec("j2", 10.0, 5.0, 1.0, 1), JobSpec("j3", 20.0, 5.0, 1.0, 1)]
    scheduler = QueueScheduler(ordering("fifo"), PLACEMENTS["first_fit"](), ALLOCATIONS["home"](), False)
    walked = []
    merge = scheduler._merge

    def counting(*args, **kwargs):
        walked.append(args[1].now)
        return merge(*args, **kwargs)

    scheduler._merge = counting
    engine = Engine(fleet, jobs, scheduler, EngineConfig())
    engine.run()
    assert engine.jobs.first_start.tolist() == [0.0, 100.0, 200.0, 200.0]
    assert walked == [0.0, 1.0, 100.0, 200.0]  # not at 10 or 20: the line stayed blocked at j1
