"""Backfilling with reservations without a profile array: the fast path of
:func:`simsched.policies.reservations.reserving_walk` (``backfill = "easy"`` with any
``reserve_depth``, and ``"conservative"``; docs/engine.md "Backfill modes"). The reference
walk stays the definition; tests/test_easy_fast.py checks at every decision of random runs
that both give the same starts and reservations.

Why the reference's profile array is not needed. The profile is the free milli-GPUs of every
node over time. Before the walk reserves anything, it is the GPUs free now, plus each running
job's release at its end, minus each job started in this walk until its end: it never
decreases over time. So a window [t, t + run) has its least free capacity at t: a job fits
now exactly when it fits in the GPUs left now, and a reservation is the first breakpoint t
(now, a running job's end, or the end of a job this walk started) at which the job fits in
the profile's values at t, which one scan over the releases in time order gives. Each
reservation then takes its nodes' GPUs over [at, at + run): the profile decreases only where
a reservation starts, and only on that reservation's nodes. So over a window [s, e), a
node's least free capacity is its value at s or at the start of one of its reservations in
(s, e): each reservation keeps its nodes' values at its start (updated as later starts and
reservations take GPUs then), and a check is a copy of one list and a few ``min``. With one
reservation this is the classic EASY test (a backfilled job ends by the shadow time, or uses
only GPUs spare at the shadow time), node by node, with the placement rule choosing on it.

The running jobs' releases are kept sorted between decisions (:class:`RunningEnds`): each
decision drops the jobs that ended and adds the ones the last decision started, instead of
reading every running job again.

Two details of the reference are kept exactly: a start whose end equals now (zero run time)
holds its GPUs at this instant only (later jobs of the walk cannot have them now; the profile
after now never holds them); and every placement call is a trial (round robin's pointer is
restored). The reservation scan calls the placement only at breakpoints where the group has
a slot per worker, which every placement that does not over-allocate needs.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence

from simsched.core.contract import JobView, SchedulerView
from simsched.policies.placement import Placement

#: one release: (end time, nodes (one entry per worker), milli-GPUs per worker)
Release = tuple[float, tuple[int, ...], int]


def _end_of(job: JobView) -> float:
    # the very float the engine's completion fires at (simsched.core.engine.start; Profile.of)
    return job.run_start + (job.run_penalty + job.remaining_work / job.run_speed)


class RunningEnds:
    """The running jobs' releases in end order, kept between one scheduler's decisions.

    :meth:`sync` brings it up to the view: the jobs with an end at or before now have
    finished (completions fire before decisions), and the jobs :meth:`started` noted at the
    last decision run now. Then it checks that the kept jobs are the view's running jobs;
    when not, it is rebuilt from the view. A count of jobs would not do: a decision not
    applied, a scheduler reused on another run, or a wrapper that starts and preempts jobs
    behind the walk's back (the quota wrapper's reclaim step starts one job and preempts
    another: the same count, a wrong release; issue 39) all keep it. The check:

    - with the engine's count of starts, finishes and preemptions (``view.running_changes``):
      it grew by exactly the kept jobs that ended plus the noted starts, each of which runs
      since the noted time. Any other change adds to the count (a preemption of a kept job
      that then ended counts as its finish: it is gone either way). O(starts);
    - otherwise (a view without the count, such as a wrapper's sub-view), by identity: one
      set of the running jobs' ids, built in C.

    A job noted as started that is still kept (it was preempted and restarted out of the walk's
    sight) forces a rebuild: its kept release is that of its earlier run.
    """

    __slots__ = ("ends", "releases", "owners", "members", "rebuilt", "_started", "_now", "_changes", "_fleet",
                 "node_group")

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.releases: list[Release] = []
        self.owners: list[int] = []  # id() of each release's job, in the same order
        self.members: set[int] = set()  # the ids in owners
        self.rebuilt = True  # whether the last sync rebuilt it (the running jobs changed out of its sight)
        self._started: list[JobView] = []
        self._now = -math.inf
        self._changes: int | None = None  # the view's running_changes at the last sync
        self._fleet: object = None
        self.node_group: list[tuple[int, str]] = []  # (cluster, gpu type) of each node

    def started(self, jobs: Sequence[JobView]) -> None:
        """Jobs this decision starts (the engine applies it before the next one)."""
        self._started.extend(jobs)

    def _insert(self, job: JobView) -> None:
        end = _end_of(job)
        i = bisect_right(self.ends, end)
        self.ends.insert(i, end)
        self.releases.insert(i, (end, tuple(job.running_nodes), job.run_share))
        self.owners.insert(i, id(job))
        self.members.add(id(job))

    def _rebuild(self, running: Sequence[JobView]) -> None:
        self.ends, self.releases, self.owners, self.members = [], [], [], set()
        for job in running:
            self._insert(job)

    def sync(self, view: SchedulerView) -> int:
        """Up to date with ``view``; returns the index of the first release after now."""
        now = view.now
        if view.fleet is not self._fleet:
            self._fleet = view.fleet
            self.node_group = list(zip(view.fleet.node_cluster, view.fleet.node_type))
        started, self._started = self._started, []
        changes = getattr(view, "running_changes", None)
        known, self._changes = self._changes, changes
        then, self._now = self._now, now
        stale = now < then
        if not stale:
            members = self.members
            for job in started:
                if id(job) in members:  # restarted while its earlier run is still kept
                    stale = True
                    break
                self._insert(job)
            done = bisect_right(self.ends, now)
            if done and not stale:
                members.difference_update(self.owners[:done])
                del self.ends[:done]
                del self.releases[:done]
                del self.owners[:done]
            if not stale:
                if changes is not None and known is not None and changes == known + len(started) + done:
                    for job in started:
                        if job.run_start != then:  # not started then (the decision was not applied as walked)
                            stale = True
                            break
                else:
                    running = view.running
                    stale = len(self.ends) != len(running) or self.members != set(map(id, running))
        self.rebuilt = stale
        if stale:
            self._rebuild(view.running)
        return bisect_right(self.ends, now)


def hypothetical(placement: Placement) -> Placement:
    """``placement`` for trial calls on scratch lists: a stateful rule such as round robin keeps its
    pointer as it was after each call (as reservations._place); a stateless one is itself."""
    if getattr(placement, "_pointer", None) is None:
        return placement

    def trial(nodes: Sequence[int], per_worker: int, workers: int, free: list[int]) -> tuple[int, ...] | None:
        saved = dict(placement._pointer)  # type: ignore[attr-defined]
        chosen = placement(nodes, per_worker, workers, free)
        placement._pointer = saved  # type: ignore[attr-defined]
        return chosen

    return trial


class _Reservation:
    """A reservation over a non-empty run [at, end) (after now: the job did not fit now), one
    ``share`` per entry of ``nodes``; ``least``: each of its nodes' free milli-GPUs in the profile
    at ``at`` (this reservation and everything else held then taken out)."""

    __slots__ = ("at", "end", "nodes", "share", "least")

    def __init__(self, at: float, end: float, nodes: tuple[int, ...], share: int, least: dict[int, int]) -> None:
        self.at = at
        self.end = end
        self.nodes = nodes
        self.share = share
        self.least = least


class _Plan:
    """One walk's profile, without the array: the GPUs free at this instant, this walk's starts and
    its reservations (the running jobs' ends are in the :class:`RunningEnds`).

    The profile after now is the free GPUs plus every release (a running job's or this walk's
    start's end) up to t, less the reservations holding at t: it decreases only where a
    reservation starts, and only on its nodes. So a node's least free capacity over a window
    [s, e) is its value at s, or at the start of one of its reservations inside the window.
    """

    __slots__ = ("now", "free", "zero_runs", "booked", "booked_at", "made", "change_at", "changes")

    def __init__(self, now: float, free: list[int]) -> None:
        self.now = now
        self.free = free  # at this instant: the profile's value now less the zero runs
        self.zero_runs: list[Release] = []  # starts that end now: the profile after now never holds them
        self.booked: list[_Reservation] = []  # by start time
        self.booked_at: list[float] = []
        self.made: list[tuple[str, float, tuple[int, ...]]] = []  # every reservation (job_id, time, nodes)
        # this walk's changes to the profile after now, in time order (kept sorted as they come, not
        # sorted at every scan: with conservative, a scan per queued job): its starts' ends (+share)
        # and its reservations' starts (-share) and finite ends (+share)
        self.change_at: list[float] = []
        self.changes: list[Release] = []

    def _change(self, at: float, nodes: tuple[int, ...], share: int) -> None:
        i = bisect_right(self.change_at, at)
        self.change_at.insert(i, at)
        self.changes.insert(i, (at, nodes, share))

    def _least(self, values: list[int], after: float, before: float) -> list[int]:
        """``values`` (a copy) lowered to each reserved node's value at the start of its
        reservations that start in (after, before)."""
        scratch = values[:]
        booked = self.booked
        for i in range(bisect_right(self.booked_at, after), len(booked)):
            reservation = booked[i]
            if reservation.at >= before:
                break
            for n, least in reservation.least.items():
                if least < scratch[n]:
                    scratch[n] = least
        return scratch

    def fit_now(self, job: JobView, cluster: int | None, groups: dict, placement: Placement,
                view: SchedulerView) -> tuple[tuple[int, ...], int, float] | bool:
        """(nodes, share per worker, run time) of ``job`` started now, fastest GPU type first, when
        it fits over its whole run. When it does not: False if no option fits even the GPUs free
        now (no reservation in its window lowered them), so that no job of its shape fits now
        whatever its run time, until this walk's end (the GPUs free now only shrink; every
        built-in placement that fails on some free GPUs fails on fewer); True otherwise."""
        now = self.now
        booked, booked_at = self.booked, self.booked_at
        lowered = False
        for option in job.options:
            if cluster is not None and option.cluster != cluster:
                continue
            run = view.remaining_time(job, option.speed)
            if booked:
                scratch = self._least(self.free, now, now + run)
                i = bisect_right(booked_at, now)
                if i < len(booked) and booked[i].at < now + run:
                    lowered = True
            else:
                scratch = self.free[:]
            chosen = placement(groups[option.cluster, option.gpu_type], option.per_worker, job.workers, scratch)
            if chosen is not None:
                return chosen, option.per_worker, run
        return lowered

    def start(self, nodes: tuple[int, ...], share: int, run: float) -> None:
        """Take a start now out of the profile."""
        end = self.now + run
        free = self.free
        for n in nodes:
            free[n] -= share
        if not end > self.now:
            self.zero_runs.append((end, nodes, share))
            return
        self._change(end, nodes, share)
        for reservation in self.booked:  # it holds its nodes at each reservation's start before its end
            if reservation.at >= end:
                break
            least = reservation.least
            for n in nodes:
                if n in least:
                    least[n] -= share

    def reserve(self, job: JobView, cluster: int | None, groups: dict, placement: Placement,
                view: SchedulerView, running: RunningEnds, first: int) -> None:
        """Reserve ``job`` at the earliest breakpoint where it fits over its whole run, if any."""
        slot = self._scan(job, cluster, groups, placement, view, running, first)
        if slot is None:
            return
        at, nodes, share, run, value = slot
        self.made.append((job.job_id, at, nodes))
        end = at + run
        if not end > at:  # an empty run reserves nothing
            return
        booked = self.booked
        for k in range(bisect_left(self.booked_at, at), len(booked)):  # the reservations it spans (starting
            reservation = booked[k]  # in [at, end)): it holds its nodes at their start
            if reservation.at >= end:
                break
            least = reservation.least
            for n in nodes:
                if n in least:
                    least[n] -= share
        least_here: dict[int, int] = {}
        for n in nodes:
            least_here[n] = least_here.get(n, value[n]) - share
        i = bisect_right(self.booked_at, at)
        self.booked_at.insert(i, at)
        self.booked.insert(i, _Reservation(at, end, nodes, share, least_here))
        self._change(at, nodes, -share)
        if math.isfinite(end):
            self._change(end, nodes, share)

    def _scan(self, job: JobView, cluster: int | None, groups: dict, placement: Placement,
              view: SchedulerView, running: RunningEnds,
              first: int) -> tuple[float, tuple[int, ...], int, float, list[int]] | None:
        """The earliest breakpoint t (now, a release, a reservation's start or end) at which ``job``
        fits over its whole run: (t, nodes, share, run time, the profile's value at t); None when it
        fits at none. Walks the profile's changes in time order, from the GPUs free at this instant."""
        now = self.now
        workers = job.workers
        options = []  # (group key, nodes, per worker, run time)
        for option in job.options:
            if cluster is None or option.cluster == cluster:
                key = (option.cluster, option.gpu_type)
                options.append((key, groups[key], option.per_worker, view.remaining_time(job, option.speed)))
        value = self.free[:]
        # slots per option: workers of its size that fit on its group's nodes at t (a placement needs one
        # each, and the window's least is no more than the value at t)
        slots = [sum(value[n] // per_worker for n in nodes) for _, nodes, per_worker, _ in options]
        of_group: dict[tuple, list[tuple[int, int]]] = {}  # group -> (option index, per worker) on it
        for k, (key, _, per_worker, _) in enumerate(options):
            of_group.setdefault(key, []).append((k, per_worker))
        node_group = running.node_group
        ends, releases = running.ends, running.releases
        # this walk's changes after now, in time order (the order of changes at one time does not
        # matter: all of them are applied before the next test)
        changes, change_at = self.changes, self.change_at
        i, j = first, 0
        n_ends, n_changes = len(ends), len(change_at)  # (neither changes during a scan)
        inf = math.inf
        booked = self.booked
        t = now
        pending = list(self.zero_runs)  # given back with the first breakpoint after now
        while True:
            for k, (_, nodes, per_worker, run) in enumerate(options):
                if slots[k] >= workers:
                    scratch = self._least(value, t, t + run) if booked else value[:]
                    chosen = placement(nodes, per_worker, workers, scratch)
                    if chosen is not None:
                        return t, chosen, per_worker, run, value
            next_running = ends[i] if i < n_ends else inf
            next_change = change_at[j] if j < n_changes else inf
            t = next_running if next_running < next_change else next_change
            if t == inf:
                return None
            while True:  # every change at t
                if pending:
                    change = pending.pop()
                elif i < n_ends and ends[i] == t:
                    change = releases[i]
                    i += 1
                elif j < n_changes and change_at[j] == t:
                    change = changes[j]
                    j += 1
                else:
                    break
                _, changed, share = change
                for n in changed:
                    old = value[n]
                    new = value[n] = old + share
                    hits = of_group.get(node_group[n])
                    if hits is not None:
                        for k, per_worker in hits:
                            slots[k] += new // per_worker - old // per_worker


class _Resume:
    """What a walk that started nothing leaves for the next one (see :class:`ReservingWalk`)."""

    __slots__ = ("now", "free", "seen", "length", "last", "failed_now", "plan")

    def __init__(self, view: SchedulerView, ordered: Sequence[JobView], failed_now: dict, plan: _Plan) -> None:
        self.now = view.now
        self.free = view.free
        self.seen = list(ordered)  # (a copy: the scheduler's sorted queue changes in place)
        self.length = len(ordered)
        self.last = ordered[-1] if ordered else None
        self.failed_now = failed_now
        self.plan = plan

    def holds_for(self, view: SchedulerView, ordered: Sequence[JobView]) -> bool:
        """Whether only arrivals came since, all sorting after the jobs that walk saw: ``ordered``
        begins with the very jobs that walk saw, in its order (one comparison of identities, in C;
        a list that merely grew to the same last job will not do: the starvation guard's front, or a
        wrapper's sub-queue, may hold other jobs before it)."""
        length = self.length
        return (view.now >= self.now and view.free == self.free and len(ordered) >= length
                and (length == 0 or ordered[length - 1] is self.last) and ordered[:length] == self.seen)


class ReservingWalk:
    """:func:`~simsched.policies.reservations.reserving_walk` with reservations for the first
    ``depth`` jobs that cannot start (``easy``: ``reserve_depth``; ``conservative``: all): the same
    starts and reservations, for one scheduler's decisions in turn (it keeps the running jobs' ends).

    A walk that starts nothing is resumed by the next one when only arrivals came in between and
    they all sort after the jobs it saw (``resumable``: a static ordering and allocation): the same
    GPUs are free and the same jobs run, so every job it saw fails again (the window of a later
    start reaches the same reservations or more, with no more capacity; every built-in
    placement fits only where it would fit on more), the reservations are the same, and only the
    new jobs are walked.

    With ``resumable`` it also keeps each queued job's cluster, shape and remaining work between
    decisions (``cluster_for`` of a static allocation sticks, and a queued job's remaining time
    changes only when it runs): a job seen before costs one look-up, not three calls. A job's
    facts are dropped when the walk starts it, and all of them when the running jobs changed out
    of the walk's sight (a preempted job comes back with less work; its queue number, checked too,
    also moves).
    """

    def __init__(self, depth: float = 1) -> None:
        self.depth = depth
        self.running_ends = RunningEnds()
        self._resume: _Resume | None = None
        # id(job) -> (job, queue_seq, cluster, shape, remaining time): see the class docstring
        self._facts: dict[int, tuple] = {}

    def __call__(self, ordered: Sequence[JobView], cluster_of: Callable[[JobView, SchedulerView], int | None],
                 view: SchedulerView, placement: Placement,
                 resumable: bool = False) -> tuple[list[tuple[str, tuple[int, ...]]],
                                                   list[tuple[str, float, tuple[int, ...]]]]:
        """Starts [(job_id, nodes)] and reservations [(job_id, time, nodes)] of the walk over ``ordered``
        (key order); ``cluster_of(job, view)`` is the job's cluster (None: any), asked once per job in
        order (the allocation's ``cluster_for``)."""
        if not ordered:  # nothing to walk (the running ends catch up at the next walk)
            self._resume = None
            return [], []
        running = self.running_ends
        first = running.sync(view)
        groups = view.fleet.groups
        depth = self.depth
        placement = hypothetical(placement)  # every placement below is a trial on a scratch list
        remaining_time = view.remaining_time
        starts: list[tuple[str, tuple[int, ...]]] = []
        started: list[JobView] = []
        resume, self._resume = self._resume, None
        # (a rebuild: jobs started or stopped out of the walk's sight, which the free GPUs may not show)
        if resumable and resume is not None and not running.rebuilt and resume.holds_for(view, ordered):
            begin, failed_now, plan = resume.length, resume.failed_now, resume.plan
            plan.now = view.now
        else:
            # shape -> the least work that did not fit now (as reserving_walk: a longer one fails too;
            # -inf: it did not fit the GPUs free now, with no reservation in its window: none fits)
            failed_now: dict[tuple, float] = {}
            begin, plan = 0, _Plan(view.now, list(view.free))
        made = plan.made
        fit_now = plan.fit_now
        if not resumable or running.rebuilt:
            self._facts = {}
        facts = self._facts if resumable else None
        for index in range(begin, len(ordered)):
            job = ordered[index]
            known = None if facts is None else facts.get(id(job))
            if known is not None and known[0] is job and known[1] == job.queue_seq:
                cluster, shape, work = known[2], known[3], known[4]
            else:
                cluster = cluster_of(job, view)
                shape = (cluster, id(job.options), job.workers)
                work = remaining_time(job)
                if facts is not None:
                    facts[id(job)] = (job, job.queue_seq, cluster, shape, work)
            if work >= failed_now.get(shape, math.inf):
                found = None
                if len(made) >= depth:
                    continue
            else:
                found = fit_now(job, cluster, groups, placement, view)
                if found is False:  # no job of its shape fits now: the same as the reference's memo
                    failed_now[shape] = -math.inf  # of a shorter one would give, without trying
                    found = None
                elif found is True:
                    found = None
            if found is None:
                failed_now[shape] = min(failed_now.get(shape, math.inf), work)
                if len(made) < depth:
                    plan.reserve(job, cluster, groups, placement, view, running, first)
                continue
            nodes, share, run = found
            plan.start(nodes, share, run)
            starts.append((job.job_id, nodes))
            started.append(job)
            if facts is not None:
                del facts[id(job)]
        running.started(started)
        if resumable and not starts:
            self._resume = _Resume(view, ordered, failed_now, plan)
        return starts, list(made)


__all__ = ["ReservingWalk", "RunningEnds"]
