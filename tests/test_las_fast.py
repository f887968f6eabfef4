"""The fast ``las`` (bucketed walk, promotion heap, skipped rounds) against the reference, event for event.

:class:`~simsched.policies.preemptive.LasEveryRound` is ``las`` as first written:
every key and the whole queue at every decision, and the engine runs a decision
at every ``interval_s`` round. :class:`~simsched.policies.preemptive.LasScheduler`
must give the same event log, the same decision count and the same end time on
random heterogeneous two-cluster workloads, for every placement, allocation,
backfill setting, thresholds, starvation factor and round interval.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core.engine import Engine, EngineConfig
from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
from simsched.policies import PLACEMENTS
from simsched.policies.allocation import ALLOCATIONS
from simsched.policies.preemptive import (
    LasEveryRound,
    LasScheduler,
    PreemptiveScheduler,
    srsf_remaining,
    srtf_remaining,
)

FLEET = Fleet((ClusterSpec("a", (NodeGroup(2, 8, "V100"), NodeGroup(2, 4, "T4"))),
               ClusterSpec("b", (NodeGroup(1, 8, "A100"), NodeGroup(2, 8, "V100")))), builtin_gpu_types())
SMALL = Fleet((ClusterSpec("c", (NodeGroup(2, 2, "V100"),)),), builtin_gpu_types())


def workload(seed: int, count: int, gap: float) -> list[JobSpec]:
    rng = np.random.default_rng(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += float(np.floor(rng.exponential(gap)))  # whole seconds: arrivals often fall on round times
        gpus = float(rng.choice([0.5, 1, 1, 2, 4, 8, 16, 64]))  # 64: fits no node (reported unscheduled)
        gpu_type = rng.choice(["", "V100", "T4", "A100"])
        duration = float(rng.choice([0, 5, 60, 300, 900, rng.integers(1, 4000)]))
        home = str(rng.choice(["a", "b", ""])) or None
        jobs.append(JobSpec(f"j{i}", t, duration, gpus, 1 if gpus <= 8 else 2, 1, None, home,
                            str(gpu_type) or None))
    return jobs


def run(cls, fleet, jobs, *, placement: str, allocation: str, backfill: bool, interval: float,
        thresholds: tuple[float, ...], factor: float, penalty: float, seed: int) -> tuple:
    scheduler = cls(PLACEMENTS[placement](), ALLOCATIONS[allocation](np.random.default_rng(seed)), backfill,
                    interval, thresholds, factor)
    engine = Engine(fleet, jobs, scheduler, EngineConfig(heterogeneous=True, restart_penalty_s=penalty))
    engine.run()
    return engine.events, engine.decisions, engine.env.now, scheduler.promotions


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), count=st.integers(1, 70), gap=st.sampled_from([5.0, 30.0, 120.0]),
       placement=st.sampled_from(sorted(PLACEMENTS)), allocation=st.sampled_from(sorted(ALLOCATIONS)),
       backfill=st.booleans(), interval=st.sampled_from([5.0, 10.0, 60.0, 7.5, 0.1 * 73]),
       thresholds=st.sampled_from([(3600.0, 36000.0), (50.0,), (20.0, 200.0, 2000.0), (0.5, 1.0)]),
       factor=st.sampled_from([0.0, 0.5, 1.0, 2.0]), penalty=st.sampled_from([0.0, 3.0]), small=st.booleans())
def test_fast_las_equals_the_every_round_reference(seed, count, gap, placement, allocation, backfill, interval,
                                                   thresholds, factor, penalty, small):
    fleet = SMALL if small else FLEET
    jobs = workload(seed, count, gap)
    if small:  # one cluster, 1-2 GPU jobs: deep queues, many preemptions
        jobs = [JobSpec(j.job_id, j.submit, j.duration, min(j.gpus, 2.0), 1) for j in jobs]
    options = dict(placement=placement, allocation=allocation, backfill=backfill, interval=interval,
                   thresholds=thresholds, factor=factor, penalty=penalty, seed=seed)
    assert run(LasScheduler, fleet, jobs, **options) == run(LasEveryRound, fleet, jobs, **options)


class CountingLas(LasScheduler):
    calls = 0

    def decide(self, view):
        CountingLas.calls += 1
        return super().decide(view)


def test_rounds_are_skipped_but_counted():
    """One 1-GPU job of 1,000 s, threshold 100 GPU-s, rounds every 10 s. The reference decides at
    0 and at the rounds 10 ... 990 (at 1,000 the job is done: the round ends the rounds); the fast
    one runs the decision at 0 (it starts the job and leaves a fixed point: the rounds before the
    job's threshold crossing would decide nothing), the round at 100 (the crossing) and counts
    the other rounds as decisions."""
    jobs = [JobSpec("a", 0.0, 1000.0, 1.0, 1)]
    options = dict(placement="best_fit", allocation="home", backfill=True, interval=10.0, thresholds=(100.0,),
                   factor=2.0, penalty=0.0, seed=0)
    CountingLas.calls = 0
    fast = run(CountingLas, SMALL, jobs, **options)
    reference = run(LasEveryRound, SMALL, jobs, **options)
    assert fast == reference
    assert reference[1] == 1 + 99 and reference[2] == 1000.0
    assert CountingLas.calls == 2


ONE_GPU = Fleet((ClusterSpec("c", (NodeGroup(1, 1, "V100"),)),), builtin_gpu_types())


def test_rounds_go_on_when_the_last_running_job_finishes_on_a_round():
    """One GPU, threshold 100 GPU-s, rounds every 10 s. a (100 s) runs from 0; b (300 s) and c
    (50 s) queue at 10 and 20. a finishes at 100, exactly on a round, with nothing else running
    and no arrival left: the rounds must not end there, as a decision is due at 100 (it starts
    b). b reaches level 1 at 200, and the round at 200 lets c (level 0) preempt it; b resumes
    when c finishes. (Rounds that ended at 100 left c waiting until 400.)"""
    jobs = [JobSpec("a", 0.0, 100.0, 1.0, 1), JobSpec("b", 10.0, 300.0, 1.0, 1), JobSpec("c", 20.0, 50.0, 1.0, 1)]
    options = dict(placement="best_fit", allocation="home", backfill=True, interval=10.0, thresholds=(100.0,),
                   factor=0.0, penalty=0.0, seed=0)
    expected = [(0.0, "arrive", "a", ""), (0.0, "start", "a", "0"), (10.0, "arrive", "b", ""),
                (20.0, "arrive", "c", ""), (100.0, "finish", "a", ""), (100.0, "start", "b", "0"),
                (200.0, "preempt", "b", ""), (200.0, "start", "c", "0"), (250.0, "finish", "c", ""),
                (250.0, "start", "b", "0"), (450.0, "finish", "b", "")]
    for cls in (LasEveryRound, CountingLas):
        CountingLas.calls = 0
        events, decisions, end, _ = run(cls, ONE_GPU, jobs, **options)
        assert list(events) == expected, cls.__name__
        assert decisions == 45 and end == 450.0  # at 0 and at every round 10 ... 440
    # the fast one decides at the arrivals 0, 10, 20, at 100 (a's finish), at the round 200 (b's
    # threshold crossing) and at 250 (c's finish; b, at the last level, crosses nothing more)
    assert CountingLas.calls == 6


def test_last_arrival_on_a_round_with_nothing_running_as_the_reference():
    """A round and the last arrival at the same time with nothing running. When the arriving job
    can run, a decision is due and the rounds go on whichever fires first. When it cannot (too
    large: reported unscheduled, no decision due), the rounds end there exactly when SimPy fires
    the arrival first. Both as in the reference."""
    options = dict(placement="best_fit", allocation="home", backfill=True, interval=10.0,
                   thresholds=(100.0,), factor=2.0, penalty=0.0, seed=0)
    for submits in ([0.0, 20.0], [0.0, 15.0, 20.0], [10.0, 20.0], [5.0, 30.0], [60.0], [0.0, 10.0, 20.0]):
        for last_gpus in (1.0, 16.0):  # 16 GPUs fit no node of SMALL
            jobs = [JobSpec(f"j{i}", t, 4.0, 1.0 if i < len(submits) - 1 else last_gpus, 1)
                    for i, t in enumerate(submits)]
            fast, reference = run(LasScheduler, SMALL, jobs, **options), run(LasEveryRound, SMALL, jobs, **options)
            assert fast == reference, (submits, last_gpus)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), placement=st.sampled_from(["best_fit", "first_fit", "round_robin"]),
       interval=st.sampled_from([10.0, 60.0]), thresholds=st.sampled_from([(100.0, 1000.0), (3600.0,)]),
       factor=st.sampled_from([0.5, 2.0]), backfill=st.booleans())
def test_fast_las_equals_the_reference_on_a_deep_queue(seed, placement, interval, thresholds, factor, backfill):
    """250 jobs arriving about every 20 s on 8 GPUs (offered load well above 1): queues of
    a hundred jobs, threshold crossings, promotions and preemptions at most decisions."""
    fleet = Fleet((ClusterSpec("c", (NodeGroup(2, 2, "V100"), NodeGroup(1, 4, "T4"))),), builtin_gpu_types())
    rng = np.random.default_rng(seed)
    submits = np.cumsum(np.floor(rng.exponential(20.0, 250)))
    jobs = [JobSpec(f"j{i}", float(t), float(rng.choice([30, 200, 900, 2500])), float(rng.choice([0.5, 1, 2])), 1)
            for i, t in enumerate(submits)]
    options = dict(placement=placement, allocation="home", backfill=backfill, interval=interval,
                   thresholds=thresholds, factor=factor, penalty=0.0, seed=seed)
    fast, reference = run(LasScheduler, fleet, jobs, **options), run(LasEveryRound, fleet, jobs, **options)
    assert fast == reference
    assert any(event == "preempt" for _, event, _, _ in reference[0])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), count=st.integers(1, 80), gap=st.sampled_from([5.0, 30.0, 120.0]),
       name=st.sampled_from(["srtf", "srsf"]), placement=st.sampled_from(sorted(PLACEMENTS)),
       allocation=st.sampled_from(sorted(ALLOCATIONS)), backfill=st.booleans(),
       interval=st.sampled_from([None, 7.5]), penalty=st.sampled_from([0.0, 3.0]), small=st.booleans())
def test_bucketed_srtf_and_srsf_preemptive_equal_the_reference_walk(seed, count, gap, name, placement, allocation,
                                                                   backfill, interval, penalty, small):
    """srtf-/srsf-preemptive share the bucketed walk (queued keys do not change while a job waits;
    running jobs' keys are computed at every decision): the same log as the whole-queue walk."""
    fleet = SMALL if small else FLEET
    jobs = workload(seed, count, gap)
    if small:
        jobs = [JobSpec(j.job_id, j.submit, j.duration, min(j.gpus, 2.0), 1) for j in jobs]

    def once(incremental: bool):
        scheduler = PreemptiveScheduler(srtf_remaining if name == "srtf" else srsf_remaining,
                                        PLACEMENTS[placement](), ALLOCATIONS[allocation](np.random.default_rng(seed)),
                                        backfill, interval)
        scheduler.incremental = incremental
        engine = Engine(fleet, jobs, scheduler, EngineConfig(heterogeneous=True, restart_penalty_s=penalty))
        engine.run()
        return engine.events, engine.decisions, engine.env.now

    assert once(True) == once(False)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), name=st.sampled_from(["srtf", "srsf"]), backfill=st.booleans())
def test_bucketed_preemptive_walk_on_a_deep_queue(seed, name, backfill):
    fleet = Fleet((ClusterSpec("c", (NodeGroup(2, 2, "V100"), NodeGroup(1, 4, "T4"))),), builtin_gpu_types())
    rng = np.random.default_rng(seed)
    submits = np.cumsum(np.floor(rng.exponential(20.0, 250)))
    jobs = [JobSpec(f"j{i}", float(t), float(rng.choice([30, 200, 900, 2500])), float(rng.choice([0.5, 1, 2])), 1)
            for i, t in enumerate(submits)]

    def once(incremental: bool):
        scheduler = PreemptiveScheduler(srtf_remaining if name == "srtf" else srsf_remaining,
                                        PLACEMENTS["best_fit"](), ALLOCATIONS["home"](), backfill)
        scheduler.incremental = incremental
        engine = Engine(fleet, jobs, scheduler, EngineConfig(heterogeneous=True))
        engine.run()
        return engine.events, engine.decisions

    fast, reference = once(True), once(False)
    assert fast == reference
    assert any(event == "preempt" for _, event, _, _ in reference[0])
