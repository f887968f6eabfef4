"""The starvation guard's order kept between decisions (simsched/policies/aging.py) against its
definition, aged_reference, which sorts the whole queue at every decision: on random queues of plain
and re-queued jobs with arrivals, starts seen and unseen, re-queues and non-integer times; and in
engine runs, where the guarded walk also equals the walk as SPEC §3-§4 state it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.config.catalog import ALLOCATIONS
from simsched.core.contract import Decision, Start
from simsched.core.engine import Engine, EngineConfig
from simsched.policies import PLACEMENTS, aging
from simsched.policies.aging import AgedJobs, aged_reference
from simsched.policies.queue import QueueScheduler, place_job
from simsched.policies.quota import QuotaScheduler
from simsched.runs.single import build_tenancy
from tests.test_queue_walk import FLEET, ordering, workload
from tests.test_quota_walk import FLEET as TENANT_FLEET
from tests.test_quota_walk import workload as tenant_workload


@dataclass(eq=False)
class Job:
    job_id: str
    index: int
    submit: float
    wait_so_far: float
    queued_since: float
    queue_seq: int


class FakeView:
    """A queue in the order jobs (re-)entered it, and the contract's queued_time."""

    def __init__(self) -> None:
        self.now = 0.0
        self.jobs: dict[str, Job] = {}
        self.seq = -1

    @property
    def queue(self) -> tuple[Job, ...]:
        return tuple(self.jobs.values())

    @property
    def queue_length(self) -> int:
        return len(self.jobs)

    def queued_after(self, seq: int) -> list[Job]:
        return [job for job in reversed(self.jobs.values()) if job.queue_seq > seq]

    def queued_time(self, job: Job) -> float:
        return job.wait_so_far + (self.now - job.queued_since)

    def enter(self, job: Job) -> None:
        self.seq += 1
        job.queue_seq = self.seq
        self.jobs.pop(job.job_id, None)
        self.jobs[job.job_id] = job


TIMES = st.floats(0, 1e4, allow_nan=False) | st.integers(0, 10_000).map(float) | st.sampled_from([0.1, 0.2, 0.3])
STEPS = st.lists(st.tuples(st.sampled_from(["arrive", "requeue", "start", "unseen", "again", "tick"]),
                           TIMES, st.integers(0, 1000)), max_size=60)


@settings(max_examples=300)
@given(STEPS, st.sampled_from([0.0, 0.1, 1.0, 30.0, 500.5, 3000.0]), st.sampled_from([-1, 3]))
def test_kept_order_equals_the_reference(steps, limit, short):
    """After every step, the kept order is the reference's, job for job. Steps: an arrival at now (a
    plain job, or one submitted earlier that already waited: not plain); a re-queue (a queued job
    restarted and preempted out of sight: new wait, new queue number); a start the scheduler reports;
    a start it does not see; a start unseen and the same job back in the queue; time passing. The
    queue is read whole up to ``short`` jobs (aging.SHORT): -1, never; 3, the kept order is dropped
    and rebuilt as the queue shrinks and grows."""
    view, kept = FakeView(), AgedJobs(limit)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aging, "SHORT", short)
        _steps(view, kept, steps, limit)


def _steps(view: FakeView, kept: AgedJobs, steps, limit: float) -> None:
    made = 0
    for action, amount, pick in steps:
        queued = list(view.jobs.values())
        if action == "arrive":
            plain = pick % 3 != 0
            submit = view.now if plain else max(0.0, view.now - amount)
            view.enter(Job(f"j{made}", made, submit, 0.0 if plain else min(amount, view.now - submit) / 2,
                           view.now, -1))
            made += 1
        elif action == "tick":
            view.now += amount
        elif queued:
            job = queued[pick % len(queued)]
            if action == "requeue":
                job.wait_so_far += view.now - job.queued_since
                view.now += amount / 100
                job.queued_since = view.now
                view.enter(job)
            elif action in ("start", "unseen"):
                del view.jobs[job.job_id]
                if action == "start":
                    kept.forget([job.job_id])
            else:  # started and back again before the next decision: a new spell
                job.wait_so_far += view.now - job.queued_since
                job.queued_since = view.now
                view.enter(job)
        assert kept.aged(view) == aged_reference(view, limit)


class GuardedReference:
    """The guarded walk as SPEC §3-§4 state it: the aged jobs (the guard's definition) first, then the
    whole queue sorted; an aged job that does not fit blocks its cluster's line in every mode, any
    other only with backfill off."""

    def __init__(self, name: str, placement: str, backfill: bool, limit: float) -> None:
        self.ordering, self.placement = ordering(name), PLACEMENTS[placement]()
        self.allocation, self.backfill, self.limit = ALLOCATIONS["home"](), backfill, limit

    def decide(self, view) -> Decision:
        aged = aged_reference(view, self.limit)
        first = {job.job_id for job in aged}
        ordered = aged + [job for job in self.ordering.sort(view.queue, view) if job.job_id not in first]
        free, blocked, starts = list(view.free), set(), []
        for job in ordered:
            cluster = self.allocation.cluster_for(job, view)
            if cluster in blocked:
                continue
            nodes = place_job(job, cluster, view.fleet.groups, self.placement, free, skip=blocked)
            if nodes is None:
                if not self.backfill or job.job_id in first:
                    blocked.update(range(len(view.fleet.cluster_names)) if cluster is None else (cluster,))
                continue
            starts.append(Start(job.job_id, nodes))
        return Decision(tuple(starts))


class Checked(QueueScheduler):
    """The scheduler, its guard's order checked against the definition at every decision."""

    checked = 0

    def aged(self, view):
        got = super().aged(view)
        assert got == aged_reference(view, self.max_wait_s), view.now
        Checked.checked += len(got)
        return got


def _events(scheduler, jobs) -> list:
    engine = Engine(FLEET, jobs, scheduler, EngineConfig(heterogeneous=True, restrict_to_home=True))
    engine.run()
    return engine.events


@settings(max_examples=40)
@given(st.integers(0, 10_000), st.sampled_from(["fifo", "sjf", "edf", "hrrn"]), st.sampled_from(sorted(PLACEMENTS)),
       st.booleans(), st.sampled_from([30.0, 120.0, 900.0]), st.sampled_from([-1, 4, aging.SHORT]))
def test_guarded_walk_equals_the_reference(seed, name, placement, backfill, limit, short):
    """Whole runs (jobs with and without a home cluster, so fleet-wide ones wait beside the guard's
    blocked lines): the same event log as the reference walk's."""
    jobs = workload(seed, 80)
    ours = Checked(ordering(name), PLACEMENTS[placement](), ALLOCATIONS["home"](), backfill, max_wait_s=limit)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aging, "SHORT", short)
        assert _events(ours, jobs) == _events(GuardedReference(name, placement, backfill, limit), jobs)


def test_the_runs_have_aged_jobs():
    """The property above proves little unless the guard has jobs to order: a loaded run has many."""
    Checked.checked = 0
    scheduler = Checked(ordering("sjf"), PLACEMENTS["best_fit"](), ALLOCATIONS["home"](np.random.default_rng(5)),
                        True, max_wait_s=30.0)
    _events(scheduler, workload(3, 200))
    assert Checked.checked > 100


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from(["fifo", "sjf"]), st.sampled_from(["borrow", "strict"]),
       st.sampled_from([-1, aging.SHORT]))
def test_the_kept_order_follows_the_quota_wrappers_starts_and_preemptions(seed, name, mode, short):
    """Inside tenants' quotas with reclaim by preemption (the wrapper starts and preempts jobs the guard
    does not see, and under borrow asks a second walk over every queued job): at every decision the
    guard's jobs are the definition's."""
    Checked.checked = 0
    walk = Checked(ordering(name), PLACEMENTS["best_fit"](), ALLOCATIONS["home"](), True, max_wait_s=60.0)
    scheduler = QuotaScheduler(walk, mode, "preempt", PLACEMENTS["best_fit"]())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(aging, "SHORT", short)
        Engine(TENANT_FLEET, tenant_workload(seed, 70), scheduler,
               EngineConfig(heterogeneous=True, restrict_to_home=True),
               build_tenancy(TENANT_FLEET, mode, "preempt")).run()


def test_the_quota_runs_have_aged_jobs_and_preemptions():
    """The property above proves little unless the guard has jobs and the wrapper preempts: seed 3 does."""
    Checked.checked = 0
    walk = Checked(ordering("sjf"), PLACEMENTS["best_fit"](), ALLOCATIONS["home"](), True, max_wait_s=60.0)
    engine = Engine(TENANT_FLEET, tenant_workload(3, 70), QuotaScheduler(walk, "borrow", "preempt",
                                                                          PLACEMENTS["best_fit"]()),
                    EngineConfig(heterogeneous=True, restrict_to_home=True),
                    build_tenancy(TENANT_FLEET, "borrow", "preempt"))
    engine.run()
    assert Checked.checked > 100
    assert int(engine.jobs.preemptions.sum()) > 0
