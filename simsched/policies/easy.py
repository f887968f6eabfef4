"""EASY backfilling with one reservation, without a profile array: the fast path of
:func:`simsched.policies.reservations.reserving_walk` for ``backfill = "easy"`` and
``reserve_depth = 1`` (docs/engine.md "Backfill modes"; the reference walk stays the
definition, and tests/test_easy_fast.py checks both give the same decisions).

Why the reference's profile is not needed with one reservation. The profile is the free
milli-GPUs of every node over time. Before the walk reserves anything, it is the GPUs free
now, plus each running job's release at its end, minus each job started in this walk until
its end: it never decreases over time. So a window [t, t + run) has its least free
capacity at t: a job fits now exactly when it fits in the GPUs left now, and the
reservation is the first breakpoint t (now, a running job's end, or the end of a job this
walk started) at which it fits in the profile's values at t, which one scan over the
releases in time order gives. Once the job at ``t_s`` is reserved on nodes R, the profile is
that non-decreasing function minus the reservation over [t_s, t_s + run); over a window
[now, e) that reaches it, a node's least free capacity is the smaller of its value now and
its value at t_s minus the reservation (elsewhere the function only grows). Only the nodes of
R differ from the GPUs left now, so a later job's check is a copy of one list and a few
``min``. This is the classic EASY test (a backfilled job ends by the shadow time, or uses
only GPUs spare at the shadow time), node by node, with the placement rule choosing on it.

The running jobs' releases are kept sorted between decisions (:class:`RunningEnds`): each
decision drops the jobs that ended and adds the ones the last decision started, instead of
reading every running job again.

Two details of the reference are kept exactly: a start whose end equals now (zero run time)
holds its GPUs at this instant only (later jobs of the walk cannot have them now; the profile
after now never holds them); and every placement call is hypothetical (round robin's pointer
is restored). The reservation scan calls the placement
only at breakpoints where the group has a slot per worker, which every placement that does
not over-allocate needs.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence

from simsched.policies.base import JobView, SchedulerView
from simsched.policies.placement import Placement

#: one release: (end time, nodes (one entry per worker), milli-GPUs per worker)
Release = tuple[float, tuple[int, ...], int]


def _end_of(job: JobView) -> float:
    # the very float the engine's completion fires at (simsched.engine.start; Profile.of)
    return job.run_start + (job.run_penalty + job.remaining_work / job.run_speed)


class RunningEnds:
    """The running jobs' releases in end order, kept between one scheduler's decisions.

    :meth:`sync` brings it up to the view: the jobs with an end at or before now have
    finished (completions fire before decisions), and the jobs :meth:`started` noted at the
    last decision run now. If the count then differs from the view's running jobs (a decision
    not applied, a scheduler reused on another run), it is rebuilt from the view.
    """

    __slots__ = ("ends", "releases", "_started", "_now", "node_group")

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.releases: list[Release] = []
        self._started: list[JobView] = []
        self._now = -math.inf
        self.node_group: list[tuple[int, str]] | None = None  # (cluster, gpu type) of each node

    def started(self, jobs: Sequence[JobView]) -> None:
        """Jobs this decision starts (the engine applies it before the next one)."""
        self._started.extend(jobs)

    def _insert(self, job: JobView) -> None:
        end = _end_of(job)
        i = bisect_right(self.ends, end)
        self.ends.insert(i, end)
        self.releases.insert(i, (end, tuple(job.running_nodes), job.run_share))

    def sync(self, view: SchedulerView) -> int:
        """Up to date with ``view``; returns the index of the first release after now."""
        now = view.now
        if self.node_group is None:
            fleet = view.fleet
            self.node_group = list(zip(fleet.node_cluster, fleet.node_type))
        started, self._started = self._started, []
        running = view.running
        if now >= self._now:
            for job in started:
                self._insert(job)
            done = bisect_right(self.ends, now)
            if done:
                del self.ends[:done]
                del self.releases[:done]
        if now < self._now or len(self.ends) != len(running):
            self.ends, self.releases = [], []
            for job in running:
                self._insert(job)
        self._now = now
        return bisect_right(self.ends, now)


def _hypothetical(placement: Placement, nodes: Sequence[int], per_worker: int, workers: int,
                  free: list[int]) -> tuple[int, ...] | None:
    """The placement rule's nodes on ``free`` (a scratch copy the call may change); a stateful
    rule such as round robin keeps its pointer as it was (as reservations._place)."""
    pointer = getattr(placement, "_pointer", None)
    saved = dict(pointer) if pointer is not None else None
    chosen = placement(nodes, per_worker, workers, free)
    if saved is not None:
        placement._pointer = saved  # type: ignore[attr-defined]
    return chosen


class _Reservation:
    """The one reservation: its start ``at`` (after now: the job did not fit now) and, for each
    node it holds GPUs of over a non-empty run, that node's free milli-GPUs at ``at`` with the
    reservation taken out."""

    __slots__ = ("at", "least")

    def __init__(self, at: float, least: dict[int, int]) -> None:
        self.at = at
        self.least = least


def _fit(job: JobView, cluster: int | None, groups: dict, placement: Placement, free: list[int],
         reservation: _Reservation | None, view: SchedulerView) -> tuple[tuple[int, ...], int, float] | None:
    """(nodes, share per worker, run time) of ``job`` started now, fastest GPU type first, when
    it fits over its whole run; None when it does not. ``free``: the GPUs free at this instant."""
    now = view.now
    for option in job.options:
        if cluster is not None and option.cluster != cluster:
            continue
        run = view.remaining_time(job, option.speed)
        scratch = free[:]
        # the window [now, now + run) reaches the reservation when it starts before the window ends
        if reservation is not None and reservation.least and reservation.at < now + run:
            for n, least in reservation.least.items():
                if least < scratch[n]:
                    scratch[n] = least
        chosen = _hypothetical(placement, groups[option.cluster, option.gpu_type], option.per_worker, job.workers,
                               scratch)
        if chosen is not None:
            return chosen, option.per_worker, run
    return None


def _reserve(job: JobView, cluster: int | None, groups: dict, placement: Placement, free: list[int],
             zero_runs: list[Release], walk_ends: list[Release], book: RunningEnds, first: int,
             view: SchedulerView) -> tuple[float, tuple[int, ...], int, float, list[int]] | None:
    """The earliest breakpoint t at which ``job`` fits, scanning the non-decreasing profile in
    time order from ``free`` (the GPUs free at this instant; the starts in ``zero_runs`` give
    theirs back right after now): (t, nodes, share, run time, the profile's value at t); None
    when it fits at none."""
    now = view.now
    workers = job.workers
    options = []  # (group key, nodes, per worker, run time)
    for option in job.options:
        if cluster is None or option.cluster == cluster:
            key = (option.cluster, option.gpu_type)
            options.append((key, groups[key], option.per_worker, view.remaining_time(job, option.speed)))
    value = free[:]
    # slots per option: workers of its size that fit on its group's nodes (a placement needs one each)
    slots = [sum(value[n] // per_worker for n in nodes) for _, nodes, per_worker, _ in options]
    node_group = book.node_group
    ends, releases = book.ends, book.releases
    walk_ends = sorted(walk_ends, key=lambda release: release[0])
    i, j = first, 0
    t = now
    pending = zero_runs  # released with the first breakpoint after now
    while True:
        for k, (_, nodes, per_worker, run) in enumerate(options):
            if slots[k] >= workers:
                chosen = _hypothetical(placement, nodes, per_worker, workers, value[:])
                if chosen is not None:
                    return t, chosen, per_worker, run, value
        # the next breakpoint: every release (running or started in this walk) at the next end
        next_running = ends[i] if i < len(ends) else math.inf
        next_walk = walk_ends[j][0] if j < len(walk_ends) else math.inf
        t = min(next_running, next_walk)
        if t == math.inf:
            return None
        while True:
            if pending:
                release = pending.pop()
            elif i < len(ends) and ends[i] == t:
                release = releases[i]
                i += 1
            elif j < len(walk_ends) and walk_ends[j][0] == t:
                release = walk_ends[j]
                j += 1
            else:
                break
            _, nodes_released, share = release
            for n in nodes_released:
                old = value[n]
                value[n] = old + share
                group = node_group[n]
                for k, (key, _, per_worker, _) in enumerate(options):
                    if key == group:
                        slots[k] += (old + share) // per_worker - old // per_worker


class _Resume:
    """What a walk that started nothing leaves for the next one (see :class:`EasyWalk`)."""

    __slots__ = ("now", "free", "length", "last", "failed_now", "reservations", "reservation")

    def __init__(self, now: float, free: Sequence[int], ordered: Sequence[JobView], failed_now: dict,
                 reservations: list, reservation: _Reservation | None) -> None:
        self.now = now
        self.free = free
        self.length = len(ordered)
        self.last = ordered[-1] if ordered else None
        self.failed_now = failed_now
        self.reservations = reservations
        self.reservation = reservation

    def holds_for(self, view: SchedulerView, ordered: Sequence[JobView]) -> bool:
        """Whether only arrivals came since, all sorting after the jobs that walk saw."""
        return (view.now >= self.now and view.free == self.free and len(ordered) >= self.length
                and (self.length == 0 or ordered[self.length - 1] is self.last))


class EasyWalk:
    """:func:`~simsched.policies.reservations.reserving_walk` with ``depth`` 1: the same starts and
    reservations, for one scheduler's decisions in turn (it keeps the running jobs' ends).

    A walk that starts nothing is resumed by the next one when only arrivals came in between and
    they all sort after the jobs it saw (``resumable``: a static ordering and allocation): the same
    GPUs are free and the same jobs run, so every job it saw fails again (the window of a later
    start reaches the same reservation or further, with no more capacity; every built-in
    placement fits only where it would fit on more), the reservation is the same, and only the
    new jobs are walked.
    """

    def __init__(self) -> None:
        self.running_ends = RunningEnds()
        self._resume: _Resume | None = None

    def __call__(self, ordered: Sequence[JobView], cluster_of: Callable[[JobView, SchedulerView], int | None],
                 view: SchedulerView, placement: Placement,
                 resumable: bool = False) -> tuple[list[tuple[str, tuple[int, ...]]],
                                                   list[tuple[str, float, tuple[int, ...]]]]:
        """Starts [(job_id, nodes)] and reservations [(job_id, time, nodes)] of the walk over ``ordered``
        (key order); ``cluster_of(job, view)`` is the job's cluster (None: any), asked once per job in
        order (the allocation's ``cluster_for``)."""
        book = self.running_ends
        groups = view.fleet.groups
        now = view.now
        first = book.sync(view)
        starts: list[tuple[str, tuple[int, ...]]] = []
        started: list[JobView] = []
        free = list(view.free)  # the GPUs free at this instant: the profile's value now, less zero_runs
        zero_runs: list[Release] = []  # this walk's starts that end now: the profile never holds them
        walk_ends: list[Release] = []  # this walk's starts that end after now
        resume, self._resume = self._resume, None
        begin = 0
        if resumable and resume is not None and resume.holds_for(view, ordered):
            begin = resume.length
            # shape -> the least work that did not fit now (as reserving_walk: a longer one fails too)
            failed_now: dict[tuple, float] = resume.failed_now
            reservations: list[tuple[str, float, tuple[int, ...]]] = resume.reservations
            reservation: _Reservation | None = resume.reservation
        else:
            failed_now, reservations, reservation = {}, [], None
        for index in range(begin, len(ordered)):
            job = ordered[index]
            cluster = cluster_of(job, view)
            shape = (cluster, id(job.options), job.workers)
            work = view.remaining_time(job)
            if work >= failed_now.get(shape, math.inf):
                found = None
                if reservations:
                    continue
            else:
                found = _fit(job, cluster, groups, placement, free, reservation, view)
            if found is None:
                failed_now[shape] = min(failed_now.get(shape, math.inf), work)
            else:
                nodes, share, run = found
                end = now + run
                for n in nodes:
                    free[n] -= share
                if end > now:
                    walk_ends.append((end, nodes, share))
                    if reservation is not None and reservation.least and end > reservation.at:
                        least = reservation.least
                        for n in nodes:
                            if n in least:
                                least[n] -= share
                else:
                    zero_runs.append((end, nodes, share))
                starts.append((job.job_id, nodes))
                started.append(job)
                continue
            if not reservations:
                slot = _reserve(job, cluster, groups, placement, free, list(zero_runs), walk_ends, book, first, view)
                if slot is not None:
                    at, nodes, share, run, value = slot
                    reservations.append((job.job_id, at, nodes))
                    least: dict[int, int] = {}
                    if at + run > at:  # an empty run reserves nothing
                        for n in nodes:
                            least[n] = least.get(n, value[n]) - share
                    reservation = _Reservation(at, least)
        book.started(started)
        if resumable and not starts:
            self._resume = _Resume(now, view.free, ordered, failed_now, reservations, reservation)
        return starts, list(reservations)


__all__ = ["EasyWalk", "RunningEnds"]
