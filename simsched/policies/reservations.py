"""Backfilling with reservations: EASY and conservative (SPEC §3, docs/engine.md "Backfill modes").

A queue-order walk with ``backfill = "easy"`` or ``"conservative"`` plans on a
*profile*: the free milli-GPUs of every node from now on, if every running job
ends at its known end. Walking the queue in key order, a job starts now when
it fits in the profile over its whole run [now, now + run time) on the nodes
the placement rule picks; that run is then taken out of the profile. A job
that cannot start gets a reservation, while reservations remain (the first
``reserve_depth`` such jobs with ``easy``, every one with ``conservative``):
the earliest time t, among now and the known ends, at which it fits over
[t, t + run time), on the nodes the placement rule picks on the least free
capacity of that window; the reservation is taken out of the profile too. So
a later job starts now only if it delays no reservation made before it in the
walk: with ``easy`` it either ends by the reserved job's start or leaves the
GPUs that reservation needs (SPEC's wording), and with ``conservative`` the
same holds for every earlier job.

Nothing is promised across decisions: the profile and its reservations are
rebuilt at every decision from the state then. With exact durations and no
arrival sorting before it, a reserved job starts no later than its
reservation (tested against a brute-force check).

Run times are the jobs' remaining work at the option's speed; a restart
penalty a preempted job will pay is not known to the policy and not counted.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from simsched.policies.base import JobView, SchedulerView
from simsched.policies.placement import Placement


class Profile:
    """Free milli-GPUs per node over time: ``free[i]`` holds from ``times[i]`` to ``times[i + 1]``
    (the last one forever). Starts as the free GPUs now plus every running job's release at its end."""

    __slots__ = ("times", "free")

    def __init__(self, now: float, free: Sequence[int], releases: Sequence[tuple[float, Sequence[int], int]]) -> None:
        self.times = [now]
        self.free = [list(free)]
        current = list(free)
        for end, nodes, share in sorted(releases, key=lambda r: r[0]):
            if end > self.times[-1]:
                current = list(current)
                self.times.append(end)
                self.free.append(current)
            for n in nodes:
                current[n] += share

    @classmethod
    def of(cls, view: SchedulerView) -> Profile:
        now = view.now
        releases = []
        for job in view.running:
            end = now + view.remaining_time(job, job.run_speed) + max(0.0, job.run_start + job.run_penalty - now)
            releases.append((end, job.running_nodes, job.run_share))
        return cls(now, view.free, releases)

    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint; its index."""
        i = bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        self.times.insert(i, t)
        self.free.insert(i, list(self.free[i - 1]))
        return i

    def window(self, start: float, end: float, nodes: Sequence[int]) -> dict[int, int]:
        """The least free of each of ``nodes`` over [start, end)."""
        first = bisect_right(self.times, start) - 1
        least = {n: self.free[first][n] for n in nodes}
        for i in range(first + 1, len(self.times)):
            if self.times[i] >= end:
                break
            row = self.free[i]
            for n in nodes:
                if row[n] < least[n]:
                    least[n] = row[n]
        return least

    def take(self, start: float, end: float, nodes: Sequence[int], share: int) -> None:
        """Take ``share`` on each listed node (one entry per worker) over [start, end)."""
        first = self._split(start)
        last = self._split(end) if math.isfinite(end) else len(self.times)
        for i in range(first, last):
            row = self.free[i]
            for n in nodes:
                row[n] -= share


def _place(placement: Placement, nodes: Sequence[int], per_worker: int, workers: int,
           least: dict[int, int]) -> tuple[int, ...] | None:
    """The placement rule's nodes on ``least`` free (a hypothetical call: a stateful rule such as
    round robin keeps its pointer as it was)."""
    pointer = getattr(placement, "_pointer", None)
    saved = dict(pointer) if pointer is not None else None
    free = [0] * (max(nodes) + 1) if nodes else []
    for n, value in least.items():
        free[n] = value
    chosen = placement(nodes, per_worker, workers, free)
    if saved is not None:
        placement._pointer = saved  # type: ignore[attr-defined]
    return chosen


def fit_at(job: JobView, cluster: int | None, t: float, groups: dict, placement: Placement, profile: Profile,
           view: SchedulerView) -> tuple[tuple[int, ...], int, float] | None:
    """(nodes, share per worker, run time) of ``job`` started at ``t`` in ``cluster`` (None: any),
    fastest GPU type first, fitting in the profile over its whole run; None when it does not."""
    for option in job.options:
        if cluster is not None and option.cluster != cluster:
            continue
        run = view.remaining_time(job, option.speed)
        nodes = groups[option.cluster, option.gpu_type]
        least = profile.window(t, t + run, nodes)
        chosen = _place(placement, nodes, option.per_worker, job.workers, least)
        if chosen is not None:
            return chosen, option.per_worker, run
    return None


def reserve(job: JobView, cluster: int | None, groups: dict, placement: Placement, profile: Profile,
            view: SchedulerView) -> tuple[float, tuple[int, ...]] | None:
    """The earliest (time, nodes) at which ``job`` fits for its whole run, taken out of the
    profile; None when it fits at no breakpoint (it cannot run on this fleet's capacity)."""
    for t in list(profile.times):
        found = fit_at(job, cluster, t, groups, placement, profile, view)
        if found is not None:
            nodes, share, run = found
            profile.take(t, t + run, nodes, share)
            return t, nodes
    return None


def reserving_walk(ordered: Sequence[JobView], clusters: Sequence[int | None], view: SchedulerView,
                   placement: Placement, depth: float) -> tuple[list[tuple[str, tuple[int, ...]]],
                                                            list[tuple[str, float, tuple[int, ...]]]]:
    """Walk ``ordered`` (key order) with reservations; returns the starts now [(job_id, nodes)] and
    the reservations made [(job_id, time, nodes)] (the latter for tests and docs)."""
    profile = Profile.of(view)
    groups = view.fleet.groups
    now = view.now
    starts: list[tuple[str, tuple[int, ...]]] = []
    reservations: list[tuple[str, float, tuple[int, ...]]] = []
    # shape (cluster, options, workers) -> the least remaining work that did not fit now. The profile
    # only loses capacity during the walk, and a longer run needs the same GPUs over a longer
    # window, so a job of that shape with at least that much work cannot fit now either.
    failed_now: dict[tuple, float] = {}
    for job, cluster in zip(ordered, clusters):
        shape = (cluster, id(job.options), job.workers)
        work = view.remaining_time(job)
        if work >= failed_now.get(shape, math.inf):
            found = None
            if len(reservations) >= depth:
                continue
        else:
            found = fit_at(job, cluster, now, groups, placement, profile, view)
            if found is None:
                failed_now[shape] = work
        if found is not None:
            nodes, share, run = found
            profile.take(now, now + run, nodes, share)
            starts.append((job.job_id, nodes))
            continue
        if len(reservations) < depth:
            slot = reserve(job, cluster, groups, placement, profile, view)
            if slot is not None:
                reservations.append((job.job_id, slot[0], slot[1]))
    return starts, reservations


__all__ = ["Profile", "fit_at", "reserve", "reserving_walk"]
