"""Queue orderings (SPEC §4): a key per queued job, smaller first.

Ties are broken by submit time, then input order (the engine's ``index``).
A *static* ordering's key does not change while a job waits, so its sorted
queue can be kept between decisions. A dynamic one (its key depends on the
time) may give a vectorised form of its key: ``vector(columns, now)`` returns
the keys of many jobs at once from numpy arrays of the job fields named in
``columns``, with exactly the floating-point operations of ``key`` (so the
same values, bit for bit); the queue scheduler then finds the next job of each
kind by a minimum instead of sorting the queue at every decision. An ordering
object may also give ``vector_min(columns, n, now, out) -> int``: it writes the
keys of the first ``n`` rows into ``out[:n]`` and returns the index of the first
minimum, or -1 when a key is NaN (``gp`` does it in one compiled loop).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from simsched.core.contract import JobView, SchedulerView

KeyFn = Callable[[JobView, SchedulerView], float]
VectorFn = Callable[[Mapping[str, np.ndarray], float], np.ndarray]


@dataclass(frozen=True, slots=True)
class Ordering:
    name: str
    key: KeyFn
    static: bool
    description: str
    columns: tuple[str, ...] = ()  # job fields ``vector`` reads
    vector: VectorFn | None = None

    def sort(self, jobs, view: SchedulerView) -> list:
        key = self.key
        return sorted(jobs, key=lambda j: (key(j, view), j.submit, j.index))


ORDERINGS: dict[str, Ordering] = {}


def ordering(name: str, *, static: bool, aliases: tuple[str, ...] = (), columns: tuple[str, ...] = (),
             vector: VectorFn | None = None) -> Callable[[KeyFn], KeyFn]:
    """Register a key function under ``name`` (and aliases), with its vectorised form if any."""

    def deco(fn: KeyFn) -> KeyFn:
        entry = Ordering(name, fn, static, (fn.__doc__ or "").strip(), columns, vector)
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


def hrrn_keys(columns: Mapping[str, np.ndarray], now: float) -> np.ndarray:
    """:func:`hrrn_key` of queued jobs, vectorised (the same operations in the same order)."""
    duration = columns["duration"]
    duration = np.where(duration > 0, duration, 1e-9)
    return -((columns["wait_so_far"] + (now - columns["queued_since"])) + duration) / duration


@ordering("hrrn", static=False, columns=("duration", "wait_so_far", "queued_since"), vector=hrrn_keys)
def hrrn_key(job: JobView, view: SchedulerView) -> float:
    """Highest response ratio (wait + duration) / duration first."""
    duration = job.duration if job.duration > 0 else 1e-9
    return -(view.queued_time(job) + duration) / duration


def fixed_keys(columns: Mapping[str, np.ndarray], now: float) -> np.ndarray:
    """The keys computed when each job entered the queue (a key fixed while a job waits)."""
    return columns["key"]


# A queued job's remaining work and options do not change while it waits, so its key is
# computed once (the "key" column); it stays a dynamic ordering so that jobs meet the
# allocation in key order, as before.
@ordering("sufferage", static=False, columns=("key",), vector=fixed_keys)
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
