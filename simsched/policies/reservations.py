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

This walk is the definition. The scheduler runs :class:`simsched.policies.easy.ReservingWalk`,
which makes the same decisions without the profile array (tests/test_easy_fast.py compares
them at every decision); ``QueueScheduler.fast_reservations = False`` runs this one.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

import numpy as np

from simsched.core.contract import JobView, SchedulerView
from simsched.policies.placement import Placement


class Profile:
    """Free milli-GPUs per node over time: row ``i`` of ``free`` holds from ``times[i]`` to
    ``times[i + 1]`` (the last row forever). Starts as the free GPUs now plus every running job's
    release at its end. A numpy array (breakpoints x nodes), so a window's least free capacity over
    a node group is one slice and one ``min``."""

    __slots__ = ("times", "free")

    def __init__(self, now: float, free: Sequence[int], releases: Sequence[tuple[float, Sequence[int], int]]) -> None:
        ends = np.fromiter((end for end, _, _ in releases), dtype=np.float64, count=len(releases))
        later = np.unique(ends[ends > now])
        self.times = [now, *later.tolist()]
        base = np.asarray(free, dtype=np.int64)
        self.free = np.empty((len(self.times), len(base)), dtype=np.int64)
        self.free[:] = base
        if len(releases):
            # each release adds its share to its nodes from its end's row on: one scatter, one cumsum
            rows = np.searchsorted(later, ends, side="left") + 1
            rows[ends <= now] = 0
            counts = [len(nodes) for _, nodes, _ in releases]
            node_index = np.fromiter((n for _, nodes, _ in releases for n in nodes), dtype=np.int64,
                                     count=sum(counts))
            shares = np.repeat(np.fromiter((share for _, _, share in releases), dtype=np.int64,
                                           count=len(releases)), counts)
            width = len(base)
            delta = np.bincount(np.repeat(rows, counts) * width + node_index, weights=shares,
                                minlength=self.free.size).astype(np.int64).reshape(self.free.shape)
            self.free += np.cumsum(delta, axis=0)

    @classmethod
    def of(cls, view: SchedulerView) -> Profile:
        # a running job ends when the engine's completion fires: its start + (restart penalty + its
        # work at the start / its speed), the very float the engine computes (simsched.core.engine.start)
        releases = [(job.run_start + (job.run_penalty + job.remaining_work / job.run_speed),
                     job.running_nodes, job.run_share) for job in view.running]
        return cls(view.now, view.free, releases)

    def _split(self, t: float) -> int:
        """Make ``t`` a breakpoint; its index."""
        i = bisect_left(self.times, t)
        if i < len(self.times) and self.times[i] == t:
            return i
        self.times.insert(i, t)
        self.free = np.insert(self.free, i, self.free[i - 1], axis=0)
        return i

    def window(self, start: float, end: float, nodes: Sequence[int]) -> dict[int, int]:
        """The least free of each of ``nodes`` over [start, end)."""
        first = bisect_right(self.times, start) - 1
        last = max(first + 1, bisect_left(self.times, end))
        least = self.free[first:last, nodes].min(axis=0).tolist()
        return dict(zip(nodes, least))

    def take(self, start: float, end: float, nodes: Sequence[int], share: int) -> None:
        """Take ``share`` on each listed node (one entry per worker) over [start, end)."""
        first = self._split(start)
        last = self._split(end) if math.isfinite(end) else len(self.times)
        for n in nodes:
            self.free[first:last, n] -= share


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
           view: SchedulerView, held_now: dict[int, int] | None = None) -> tuple[tuple[int, ...], int, float] | None:
    """(nodes, share per worker, run time) of ``job`` started at ``t`` in ``cluster`` (None: any),
    fastest GPU type first, fitting in the profile over its whole run; None when it does not.
    At ``t`` = now it must also fit in ``held_now``, the GPUs free at this instant (a job of this
    walk that ends now holds its GPUs at now, though the profile never holds them)."""
    for option in job.options:
        if cluster is not None and option.cluster != cluster:
            continue
        run = view.remaining_time(job, option.speed)
        nodes = groups[option.cluster, option.gpu_type]
        least = profile.window(t, t + run, nodes)
        if held_now is not None and t == view.now:
            least = {n: min(value, held_now[n]) for n, value in least.items()}
        chosen = _place(placement, nodes, option.per_worker, job.workers, least)
        if chosen is not None:
            return chosen, option.per_worker, run
    return None


def _fit_free(job: JobView, cluster: int | None, groups: dict, placement: Placement, free: dict[int, int],
              view: SchedulerView) -> tuple[tuple[int, ...], int, float] | None:
    """:func:`fit_at` now, before any reservation: on the GPUs free now."""
    for option in job.options:
        if cluster is not None and option.cluster != cluster:
            continue
        nodes = groups[option.cluster, option.gpu_type]
        chosen = _place(placement, nodes, option.per_worker, job.workers, {n: free[n] for n in nodes})
        if chosen is not None:
            return chosen, option.per_worker, view.remaining_time(job, option.speed)
    return None


def reserve(job: JobView, cluster: int | None, groups: dict, placement: Placement, profile: Profile,
            view: SchedulerView, held_now: dict[int, int] | None = None) -> tuple[float, tuple[int, ...]] | None:
    """The earliest (time, nodes) at which ``job`` fits for its whole run, taken out of the
    profile; None when it fits at no breakpoint (it cannot run on this fleet's capacity)."""
    for t in list(profile.times):
        found = fit_at(job, cluster, t, groups, placement, profile, view, held_now)
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
    groups = view.fleet.groups
    now = view.now
    starts: list[tuple[str, tuple[int, ...]]] = []
    reservations: list[tuple[str, float, tuple[int, ...]]] = []
    # Until the first job that cannot start, nothing is reserved, and the profile only gains capacity
    # after now: a job fits over its whole run exactly when it fits in the GPUs free now. So the
    # profile (a pass over every running job) is built only when some job has to wait.
    profile: Profile | None = None
    free_now = {n: f for n, f in enumerate(view.free)}
    taken: list[tuple[tuple[int, ...], int, float]] = []  # the starts so far: (nodes, share, run)
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
        elif profile is None:
            found = _fit_free(job, cluster, groups, placement, free_now, view)
        else:
            found = fit_at(job, cluster, now, groups, placement, profile, view, free_now)
        if found is None:
            failed_now.setdefault(shape, work)
            failed_now[shape] = min(failed_now[shape], work)
        else:
            nodes, share, run = found
            for n in nodes:  # held now, even by a job that ends now (which the profile never holds)
                free_now[n] -= share
            if profile is None:
                taken.append(found)
            else:
                profile.take(now, now + run, nodes, share)
            starts.append((job.job_id, nodes))
            continue
        if len(reservations) < depth:
            if profile is None:
                profile = Profile.of(view)
                for nodes, share, run in taken:
                    profile.take(now, now + run, nodes, share)
            slot = reserve(job, cluster, groups, placement, profile, view, free_now)
            if slot is not None:
                reservations.append((job.job_id, slot[0], slot[1]))
    return starts, reservations


__all__ = ["Profile", "fit_at", "reserve", "reserving_walk"]
