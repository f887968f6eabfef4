"""The fast EASY walk (simsched/policies/easy.py) against its reference, reservations.reserving_walk
with depth 1: at every decision of random heterogeneous two-cluster runs (fractional and
multi-worker jobs, zero durations, jobs with and without a home cluster, every ordering,
placement and allocation), both walks give the same starts and the same reservation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched.policies.queue as queue_module
from simsched.config.catalog import ALLOCATIONS
from simsched.core.engine import Engine, EngineConfig
from simsched.policies import PLACEMENTS
from simsched.policies.easy import ReservingWalk
from simsched.policies.queue import QueueScheduler
from simsched.policies.reservations import reserving_walk
from tests.test_queue_walk import FLEET, ordering, workload

ORDERINGS_CHECKED = ("fifo", "sjf", "srsf", "edf", "hrrn", "gp")


class CheckedWalk(ReservingWalk):
    """ReservingWalk that asserts, at every decision, the reference walk's starts and reservations;
    ``calls`` gets each decision's (reservations made, jobs walked again after a resume)."""

    calls: list[tuple[int, bool]] = []

    def __call__(self, ordered, cluster_of, view, placement, resumable=False):
        want = reserving_walk(ordered, [cluster_of(job, view) for job in ordered], view, placement, self.depth)
        resumed = self._resume is not None and resumable and self._resume.holds_for(view, ordered)
        got = super().__call__(ordered, cluster_of, view, placement, resumable)
        assert got == want, view.now
        CheckedWalk.calls.append((len(got[1]), resumed))
        return got


def _scheduler(name: str, placement: str, allocation: str, depth: float = 1) -> QueueScheduler:
    rng = np.random.default_rng(5)
    if depth == math.inf:
        return QueueScheduler(ordering(name), PLACEMENTS[placement](), ALLOCATIONS[allocation](rng),
                              True, reserve="conservative")
    return QueueScheduler(ordering(name), PLACEMENTS[placement](), ALLOCATIONS[allocation](rng),
                          True, reserve="easy", reserve_depth=int(depth))


def _events(scheduler, jobs, heterogeneous: bool):
    engine = Engine(FLEET, jobs, scheduler, EngineConfig(heterogeneous=heterogeneous, restrict_to_home=True))
    engine.run()
    return engine.events


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(ORDERINGS_CHECKED), st.sampled_from(sorted(PLACEMENTS)),
       st.sampled_from(sorted(ALLOCATIONS)), st.booleans(), st.sampled_from([1, 1, 2, 3, math.inf]))
def test_fast_walk_equals_the_reference_at_every_decision(seed, name, placement, allocation, heterogeneous, depth):
    jobs = workload(seed, 50)
    CheckedWalk.calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queue_module, "ReservingWalk", CheckedWalk)
        _events(_scheduler(name, placement, allocation, depth), jobs, heterogeneous)
    assert CheckedWalk.calls  # the fast walk ran


def test_fast_and_reference_runs_give_the_same_event_log(monkeypatch):
    """Whole runs with reservations made (a loaded fleet): the fast path's log is the reference's."""
    jobs = workload(17, 300)
    fast = _events(_scheduler("fifo", "best_fit", "home"), jobs, True)
    monkeypatch.setattr(QueueScheduler, "fast_reservations", False)
    reference_scheduler = _scheduler("fifo", "best_fit", "home")
    assert reference_scheduler._reserving is None
    assert _events(reference_scheduler, jobs, True) == fast


def test_a_scheduler_reused_on_a_second_run_rebuilds_its_running_ends():
    """The kept releases belong to one run: a second run (time starts again) rebuilds them."""
    jobs = workload(4, 120)
    scheduler = _scheduler("sjf", "first_fit", "home")
    _events(scheduler, jobs, True)
    CheckedWalk.calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queue_module, "ReservingWalk", CheckedWalk)
        again = _scheduler("sjf", "first_fit", "home")
        again._reserving.running_ends = scheduler._reserving.running_ends  # what the first run left
        _events(again, jobs, True)
    assert any(reserved for reserved, _ in CheckedWalk.calls)  # reservations were made and checked


def test_walks_are_resumed_after_arrivals_only():
    """FIFO on a loaded fleet: many decisions resume the walk before (only arrivals since a walk
    that started nothing), each checked against the reference's full walk."""
    CheckedWalk.calls = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queue_module, "ReservingWalk", CheckedWalk)
        _events(_scheduler("fifo", "best_fit", "home"), workload(23, 300), True)
    resumed = sum(1 for _, again in CheckedWalk.calls if again)
    assert 0.1 * len(CheckedWalk.calls) < resumed < len(CheckedWalk.calls)
