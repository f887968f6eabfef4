"""Queue orderings (SPEC §4): a key per queued job, smaller first.

Ties are broken by submit time, then input order (the engine's ``index``).
A *static* ordering's key does not change while a job waits, so its sorted
queue can be kept between decisions; a dynamic one is re-sorted each time.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from simsched.policies.base import JobView, SchedulerView

KeyFn = Callable[[JobView, SchedulerView], float]


@dataclass(frozen=True, slots=True)
class Ordering:
    name: str
    key: KeyFn
    static: bool
    description: str

    def sort(self, jobs, view: SchedulerView) -> list:
        key = self.key
        return sorted(jobs, key=lambda j: (key(j, view), j.submit, j.index))


ORDERINGS: dict[str, Ordering] = {}


def ordering(name: str, *, static: bool, aliases: tuple[str, ...] = ()) -> Callable[[KeyFn], KeyFn]:
    """Register a key function under ``name`` (and aliases)."""

    def deco(fn: KeyFn) -> KeyFn:
        entry = Ordering(name, fn, static, (fn.__doc__ or "").strip())
        for n in (name, *aliases):
            ORDERINGS[n] = entry
        return fn

    return deco


@ordering("fifo", static=True)
def fifo_key(job: JobView, view: SchedulerView) -> float:
    """First in, first out: submit time."""
    return job.submit


@ordering("sjf", static=True, aliases=("spt",))
def sjf_key(job: JobView, view: SchedulerView) -> float:
    """Shortest job first: duration on the reference type."""
    return job.duration


@ordering("srtf", static=True)
def srtf_key(job: JobView, view: SchedulerView) -> float:
    """Shortest remaining time first: remaining reference-type seconds."""
    return job.remaining_work


@ordering("srsf", static=True)
def srsf_key(job: JobView, view: SchedulerView) -> float:
    """Shortest remaining service first: remaining time x GPUs (Tiresias with known durations)."""
    return job.remaining_work * job.gpus


@ordering("edf", static=True)
def edf_key(job: JobView, view: SchedulerView) -> float:
    """Earliest deadline first; jobs without a deadline go last."""
    return math.inf if job.deadline is None else job.deadline


@ordering("lyra", static=True)
def lyra_key(job: JobView, view: SchedulerView) -> float:
    """Largest per-worker GPU demand first (best-fit decreasing)."""
    return -job.gpus / job.workers


@ordering("hrrn", static=False)
def hrrn_key(job: JobView, view: SchedulerView) -> float:
    """Highest response ratio (wait + duration) / duration first."""
    duration = job.duration if job.duration > 0 else 1e-9
    return -(view.queued_time(job) + duration) / duration


@ordering("sufferage", static=False)
def sufferage_key(job: JobView, view: SchedulerView) -> float:
    """Largest sufferage first: completion time on the second-best GPU type minus the best.

    A type's completion time is now + remaining work / speed on it (run time only,
    so the gap measures what the job loses when denied its best type). A job with
    one allowed type has gap 0 and falls back to submit order.
    """
    speeds = sorted({o.speed for o in job.options}, reverse=True)
    if len(speeds) < 2:
        return 0.0
    return -(job.remaining_work / speeds[1] - job.remaining_work / speeds[0])
