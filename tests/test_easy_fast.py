"""The fast EASY walk (simsched/policies/easy.py) against its reference, reservations.reserving_walk
with depth 1: at every decision of random heterogeneous two-cluster runs (fractional and
multi-worker jobs, zero durations, jobs with and without a home cluster, every ordering,
placement and allocation), both walks give the same starts and the same reservation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched.policies.queue as queue_module
from simsched.engine import Engine, EngineConfig
from simsched.policies import ALLOCATIONS, PLACEMENTS
from simsched.policies.easy import easy_walk
from simsched.policies.queue import QueueScheduler
from simsched.policies.reservations import reserving_walk
from tests.test_queue_walk import FLEET, ordering, workload

ORDERINGS_CHECKED = ("fifo", "sjf", "srsf", "edf", "hrrn", "gp")


def checked_walk(calls: list[int]):
    """easy_walk that asserts, at every decision, the reference walk's starts and reservations."""

    def walk(ordered, clusters, view, placement, book):
        want = reserving_walk(ordered, clusters, view, placement, 1)
        got = easy_walk(ordered, clusters, view, placement, book)
        assert got == want, view.now
        calls.append(len(got[1]))
        return got

    return walk


def _scheduler(name: str, placement: str, allocation: str) -> QueueScheduler:
    rng = np.random.default_rng(5)
    return QueueScheduler(ordering(name), PLACEMENTS[placement](), ALLOCATIONS[allocation](rng),
                          True, reserve="easy")


def _events(scheduler, jobs, heterogeneous: bool):
    engine = Engine(FLEET, jobs, scheduler, EngineConfig(heterogeneous=heterogeneous, restrict_to_home=True))
    engine.run()
    return engine.events


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(ORDERINGS_CHECKED), st.sampled_from(sorted(PLACEMENTS)),
       st.sampled_from(sorted(ALLOCATIONS)), st.booleans())
def test_fast_easy_walk_equals_the_reference_at_every_decision(seed, name, placement, allocation, heterogeneous):
    jobs = workload(seed, 50)
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queue_module, "easy_walk", checked_walk(calls))
        _events(_scheduler(name, placement, allocation), jobs, heterogeneous)
    assert calls  # the fast walk ran (easy with depth 1 takes it)


def test_fast_and_reference_runs_give_the_same_event_log(monkeypatch):
    """Whole runs with reservations made (a loaded fleet): the fast path's log is the reference's."""
    jobs = workload(17, 300)
    fast = _events(_scheduler("fifo", "best_fit", "home"), jobs, True)
    monkeypatch.setattr(QueueScheduler, "fast_easy", False)
    reference_scheduler = _scheduler("fifo", "best_fit", "home")
    assert reference_scheduler._running_ends is None
    assert _events(reference_scheduler, jobs, True) == fast


def test_a_scheduler_reused_on_a_second_run_rebuilds_its_running_ends():
    """The kept releases belong to one run: a second run (time starts again) rebuilds them."""
    jobs = workload(4, 120)
    scheduler = _scheduler("sjf", "first_fit", "home")
    _events(scheduler, jobs, True)
    calls: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(queue_module, "easy_walk", checked_walk(calls))
        again = _scheduler("sjf", "first_fit", "home")
        again._running_ends = scheduler._running_ends  # what the first run left
        _events(again, jobs, True)
    assert any(calls)  # reservations were made and checked
