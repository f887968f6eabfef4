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
reading every running job again. And when everything went as the last walk planned, its plan
is carried on: the kept jobs' reservations stand, and only the jobs after them are walked
(:class:`ReservingWalk`, "carried").

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

    __slots__ = ("ends", "releases", "owners", "members", "rebuilt", "counted", "_started", "_now", "_changes",
                 "_fleet", "node_group", "shapes")

    def __init__(self) -> None:
        self.ends: list[float] = []
        self.releases: list[Release] = []
        self.owners: list[int] = []  # id() of each release's job, in the same order
        self.members: set[int] = set()  # the ids in owners
        self.rebuilt = True  # whether the last sync rebuilt it (the running jobs changed out of its sight)
        # whether the last sync saw by the count that exactly the noted starts began (then) and the kept
        # jobs that ended did (not by identity: a wrapper's sub-view may leave out a job started in the
        # same decision, which would then look ended)
        self.counted = False
        self._started: list[JobView] = []
        self._now = -math.inf
        self._changes: int | None = None  # the view's running_changes at the last sync
        self._fleet: object = None
        self.node_group: list[tuple[int, str]] = []  # (cluster, gpu type) of each node
        # (cluster, id(options)) -> what a reservation scan reads of a job of those options in that cluster,
        # for this fleet (see _scan_shape); the options tuple is kept in it, so its id is not reused
        self.shapes: dict[tuple, tuple] = {}

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
            self.shapes = {}
        started, self._started = self._started, []
        changes = getattr(view, "running_changes", None)
        known, self._changes = self._changes, changes
        then, self._now = self._now, now
        stale = now < then
        counted = False
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
                    counted = True
                    for job in started:
                        if job.run_start != then:  # not started then (the decision was not applied as walked)
                            stale = True
                            break
                else:
                    running = view.running
                    stale = len(self.ends) != len(running) or self.members != set(map(id, running))
        self.rebuilt = stale
        self.counted = counted and not stale
        if stale:
            self._rebuild(view.running)
            return bisect_right(self.ends, now)
        return 0  # (the releases up to now are gone)


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

    __slots__ = ("at", "end", "nodes", "share", "least", "job", "ends", "order", "chose")

    def __init__(self, at: float, end: float, nodes: tuple[int, ...], share: int, least: dict[int, int],
                 job: JobView, ends: Release | None, order: int, chose: tuple) -> None:
        self.at = at
        self.end = end
        self.nodes = nodes
        self.share = share
        self.least = least
        self.job = job
        self.ends = ends  # its end in the plan's changes (None: it never ends)
        self.order = order  # its place in walk order among the plan's reservations
        # (placement, group, workers, values, window): the call that chose its nodes, on the least free GPUs
        # of its window then (the jobs before it in walk order held), kept apart: ``values``, the profile's
        # value at ``at``; ``window``, [time, {node: least}] of each reservation then starting inside its
        # run (after ``at``), which lowers the least on its nodes (_Plan._least). See still_chosen
        self.chose = chose

    def still_chosen(self, end: float, nodes: tuple[int, ...], share: int) -> bool:
        """Whether a job that runs from now (before ``at``) to ``end`` (after ``at``) on ``nodes``, started
        after this one was reserved by a job after it in walk order, leaves this one's choice as it was.
        A walk made later sees it running when it reserves this one: the profile at ``at`` drops by
        its share on its nodes, and so does each reservation's least in the window that starts before
        ``end`` (the later ones are as they were); the placement must choose the same nodes on the
        window's least free GPUs so lowered (the time stays: less capacity fits no earlier, and the
        nodes still fit)."""
        placement, group, workers, values, window = self.chose
        for n in nodes:
            values[n] -= share
        scratch = values[:]
        for at, least in window:
            if at < end:
                for n in nodes:
                    if n in least:
                        least[n] -= share
            for n, value in least.items():
                if value < scratch[n]:
                    scratch[n] = value
        return placement(group, self.share, workers, scratch) == self.nodes


class _Plan:
    """One walk's profile, without the array: the GPUs free at this instant, this walk's starts and
    its reservations (the running jobs' ends are in the :class:`RunningEnds`).

    The profile after now is the free GPUs plus every release (a running job's or this walk's
    start's end) up to t, less the reservations holding at t: it decreases only where a
    reservation starts, and only on its nodes. So a node's least free capacity over a window
    [s, e) is its value at s, or at the start of one of its reservations inside the window.
    """

    __slots__ = ("now", "free", "zero_runs", "booked", "booked_at", "made", "change_at", "changes", "start_ends",
                 "empty_at", "overlapped", "reserved", "marks", "marked", "skips")

    def __init__(self, now: float, free: list[int]) -> None:
        self.now = now
        self.free = free  # at this instant: the profile's value now less the zero runs
        self.zero_runs: list[Release] = []  # starts that end now: the profile after now never holds them
        self.booked: list[_Reservation] = []  # by start time
        self.booked_at: list[float] = []
        # every reservation, in walk order: job_id -> (job_id, time, nodes)
        self.made: dict[str, tuple[str, float, tuple[int, ...]]] = {}
        self.empty_at = math.inf  # the earliest reservation of an empty run (made, not booked)
        # whether a job after a booked one in walk order started while that one's run would overlap it:
        # a walk made later would see it running when it reserves the earlier job, where this one did
        # not, and a placement rule may then choose other nodes (best fit: a tighter one)
        self.overlapped = False
        self.reserved = 0  # reservations booked so far (each one's walk order)
        # the profile's value at some breakpoints after now (marks, ascending; marked, the values), kept
        # up to date as changes come: a scan that need not test before a time starts from the last mark
        # before it instead of from now
        self.marks: list[float] = []
        self.marked: list[list[int]] = []
        # shape -> [(work, time)]: a job of that shape with at least that work fits at no breakpoint
        # before that time (an earlier job's scan failed there, on at least as much capacity, over a
        # window no longer; inf: it fits nowhere). Pairs by ascending work, times ascending.
        self.skips: dict[tuple, list[tuple[float, float]]] = {}
        # this walk's changes to the profile after now, in time order (kept sorted as they come, not
        # sorted at every scan: with conservative, a scan per queued job): its starts' ends (+share)
        # and its reservations' starts (-share) and finite ends (+share)
        self.change_at: list[float] = []
        self.changes: list[Release] = []
        # this walk's starts' ends among the changes (next walk, they are running jobs' releases)
        self.start_ends: list[Release] = []

    def _change(self, at: float, nodes: tuple[int, ...], share: int) -> Release:
        i = bisect_right(self.change_at, at)
        change = (at, nodes, share)
        self.change_at.insert(i, at)
        self.changes.insert(i, change)
        marked = self.marked
        for k in range(bisect_left(self.marks, at), len(marked)):
            values = marked[k]
            for n in nodes:
                values[n] += share
        return change

    def skip_for(self, shape: tuple, work: float) -> float:
        """The time before which a job of ``shape`` and ``work`` fits at no breakpoint (see skips)."""
        pairs = self.skips.get(shape)
        if not pairs:
            return -math.inf
        k = bisect_right(pairs, (work, math.inf)) - 1
        return pairs[k][1] if k >= 0 else -math.inf

    def _skipped(self, shape: tuple, work: float, at: float) -> None:
        if self.skip_for(shape, work) >= at:
            return
        pairs = self.skips.setdefault(shape, [])
        k = bisect_left(pairs, (work, -math.inf))
        end = k
        while end < len(pairs) and pairs[end][1] <= at:  # (those with more work and no later time)
            end += 1
        pairs[k:end] = [(work, at)]

    def _drop(self, change: Release) -> None:
        i = bisect_left(self.change_at, change[0])
        while self.changes[i] is not change:
            i += 1
        del self.change_at[i]
        del self.changes[i]

    def predicted_free(self, released: Sequence[Release], until: float) -> list[int]:
        """The GPUs free at ``until`` (>= now, before any change after it) if everything goes as
        planned: the free GPUs now, plus the releases up to ``until`` (``released``: the running
        jobs'; and this walk's starts'), less nothing reserved (a reservation at ``until`` has not
        started yet)."""
        free = self.free[:]
        for _, nodes, share in self.zero_runs:
            for n in nodes:
                free[n] += share
        for _, nodes, share in released:
            for n in nodes:
                free[n] += share
        for end, nodes, share in self.start_ends:
            if end <= until:
                for n in nodes:
                    free[n] += share
        return free

    def advance(self, now: float, free: Sequence[int]) -> list[_Reservation]:
        """Move the plan to ``now``, where the GPUs free are ``free`` as planned (see
        :meth:`ReservingWalk.__call__`): the last walk's starts run (their ends leave the changes:
        they are running jobs' releases now); the reservations at ``now`` start, in walk order
        (returned; their ends become this walk's starts' ends); the rest stay as they were."""
        for change in self.start_ends:
            self._drop(change)
        self.start_ends = []
        self.zero_runs = []
        booked, booked_at = self.booked, self.booked_at
        due = bisect_right(booked_at, now)
        starting = booked[:due]
        del booked[:due]
        del booked_at[:due]
        self.free = list(free)
        for reservation in starting:  # (a start now of the same nodes over the same run)
            for n in reservation.nodes:
                self.free[n] -= reservation.share
            del self.made[reservation.job.job_id]
            if reservation.ends is not None:
                self.start_ends.append(reservation.ends)
        gone = bisect_right(self.change_at, now)  # (the reservations' starts at now: in the free GPUs now)
        del self.change_at[:gone]
        del self.changes[:gone]
        gone = bisect_right(self.marks, now)  # (the rest hold: the profile from now on is the planned one)
        del self.marks[:gone]
        del self.marked[:gone]
        self.now = now
        return starting

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
                view: SchedulerView, work: float) -> tuple[tuple[int, ...], int, float] | bool:
        """(nodes, share per worker, run time) of ``job`` started now, fastest GPU type first, when
        it fits over its whole run. When it does not: False if no option fits even the GPUs free
        now (no reservation in its window lowered them), so that no job of its shape fits now
        whatever its run time, until this walk's end (the GPUs free now only shrink; every
        built-in placement that fails on some free GPUs fails on fewer); True otherwise. ``work``: its
        remaining time at speed 1 (``view.remaining_time(job)``), the run time of an option of that speed."""
        now, free = self.now, self.free
        booked = self.booked
        # (the reservations after now, in start order: those starting inside the run lower its window; as _least)
        after = bisect_right(self.booked_at, now) if booked else 0
        count = len(booked)
        lowered = False
        for option in job.options:
            if cluster is not None and option.cluster != cluster:
                continue
            run = work if option.speed == 1.0 else view.remaining_time(job, option.speed)
            scratch = free[:]
            end = now + run
            k = after
            while k < count:
                reservation = booked[k]
                if reservation.at >= end:
                    break
                for n, least in reservation.least.items():
                    if least < scratch[n]:
                        scratch[n] = least
                k += 1
            if k > after:
                lowered = True
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
        for values in self.marked:  # (all after now; the end's change gives it back to those after it)
            for n in nodes:
                values[n] -= share
        self.start_ends.append(self._change(end, nodes, share))
        for reservation in self.booked:  # it holds its nodes at each reservation's start before its end
            if reservation.at >= end:
                break
            # (every booked job is before it in walk order: see _Reservation.still_chosen)
            if not self.overlapped and not reservation.still_chosen(end, nodes, share):
                self.overlapped = True
            least = reservation.least
            for n in nodes:
                if n in least:
                    least[n] -= share

    def reserve(self, job: JobView, cluster: int | None, groups: dict, placement: Placement,
                view: SchedulerView, running: RunningEnds, first: int, shape: tuple, work: float) -> None:
        """Reserve ``job`` (of ``shape`` and ``work``) at the earliest breakpoint where it fits over its
        whole run, if any."""
        skip = self.skip_for(shape, work)
        slot = None if skip == math.inf else self._scan(job, cluster, groups, placement, view, running, first, skip,
                                                                      work)
        if not self.zero_runs:  # (else it failed now on GPUs held at this instant only, which a breakpoint
            self._skipped(shape, work, math.inf if slot is None else slot[0])  # made later just after now has)
        if slot is None:
            return
        at, nodes, share, run, value, chose = slot
        self.made[job.job_id] = (job.job_id, at, nodes)
        end = at + run
        if not end > at:  # an empty run reserves nothing
            self.empty_at = min(self.empty_at, at)
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
        self._change(at, nodes, -share)
        ends = self._change(end, nodes, share) if math.isfinite(end) else None
        i = bisect_right(self.booked_at, at)  # (after those at the same time: booked is in walk order there)
        self.booked_at.insert(i, at)
        self.booked.insert(i, _Reservation(at, end, nodes, share, least_here, job, ends, self.reserved,
                                                  chose))
        self.reserved += 1

    def _scan(self, job: JobView, cluster: int | None, groups: dict, placement: Placement,
              view: SchedulerView, running: RunningEnds, first: int, skip: float,
              work: float) -> tuple[float, tuple[int, ...], int, float, list[int], tuple] | None:
        """The earliest breakpoint t (now, a release, a reservation's start or end) at which ``job``
        fits over its whole run: (t, nodes, share, run time, the profile's value at t, the placement's
        call: see _Reservation.chose); None when it
        fits at none. Walks the profile's changes in time order, from the GPUs free at this instant, or
        from the last mark at or before ``skip`` (no breakpoint before it is tested). ``work``: as
        :meth:`fit_now`'s."""
        now = self.now
        workers = job.workers
        known = running.shapes.get((cluster, id(job.options)))
        if known is None or known[0] is not job.options:
            known = _scan_shape(job.options, cluster, groups, running)
        # (group nodes, per worker, run time) per option in the cluster; per node, (option index, per
        # worker) of the options on its group (None: none)
        options = [(nodes, per_worker, work if speed == 1.0 else view.remaining_time(job, speed))
                   for nodes, per_worker, speed in known[1]]
        hits_of_node = known[2]
        marks = self.marks
        m = bisect_right(marks, skip) - 1 if skip > now else -1
        if m >= 0:  # (marks are after now: the zero runs are given back there)
            t = marks[m]
            value = self.marked[m][:]
            i, j = bisect_right(running.ends, t), bisect_right(self.change_at, t)
            pending = []
        else:
            t = now
            value = self.free[:]
            i, j = first, 0
            pending = list(self.zero_runs)  # given back with the first breakpoint after now
        # slots per option: workers of its size that fit on its group's nodes at t (a placement needs one
        # each, and the window's least is no more than the value at t)
        slots = [sum(value[n] // per_worker for n in nodes) for nodes, per_worker, _ in options]
        ends, releases = running.ends, running.releases
        # this walk's changes after now, in time order (the order of changes at one time does not
        # matter: all of them are applied before the next test)
        changes, change_at = self.changes, self.change_at
        n_ends, n_changes = len(ends), len(change_at)  # (neither changes during a scan)
        inf = math.inf
        booked = self.booked
        applied = 0  # changes applied since the last mark (or the start)
        while True:
            if applied >= 24:  # a mark at t, the profile's value there (t > now: changes were applied)
                applied = 0
                m = bisect_left(marks, t)
                if m == len(marks) or marks[m] != t:
                    marks.insert(m, t)
                    self.marked.insert(m, value[:])
            for k, (nodes, per_worker, run) in enumerate(options):
                if slots[k] >= workers and t >= skip:
                    scratch = self._least(value, t, t + run) if booked else value[:]
                    chosen = placement(nodes, per_worker, workers, scratch)
                    if chosen is not None:  # (the call, kept with the reservation: see _Reservation.chose)
                        window = []
                        if booked:
                            booked_at = self.booked_at
                            for q in range(bisect_right(booked_at, t), len(booked)):
                                reservation = booked[q]
                                if reservation.at >= t + run:
                                    break
                                window.append((reservation.at, dict(reservation.least)))
                        return t, chosen, per_worker, run, value, (placement, nodes, workers, value[:], window)
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
                applied += 1
                for n in changed:
                    old = value[n]
                    new = value[n] = old + share
                    hits = hits_of_node[n]  # (a list index: no tuple hashed per node and change)
                    if hits is not None:
                        for k, per_worker in hits:
                            slots[k] += new // per_worker - old // per_worker


def _scan_shape(options: tuple, cluster: int | None, groups: dict, running: RunningEnds) -> tuple:
    """What :meth:`_Plan._scan` reads of a job of ``options`` in ``cluster`` (None: any): (options,
    [(group nodes, per worker, speed)] of its options there, per node [(option index, per worker)]
    of the options on the node's group, or None), kept in ``running.shapes`` for the fleet's life."""
    chosen = []
    of_group: dict[tuple, list[tuple[int, int]]] = {}  # group -> (option index, per worker) on it
    for option in options:
        if cluster is None or option.cluster == cluster:
            key = (option.cluster, option.gpu_type)
            of_group.setdefault(key, []).append((len(chosen), option.per_worker))
            chosen.append((groups[key], option.per_worker, option.speed))
    known = (options, chosen, [of_group.get(group) for group in running.node_group])
    running.shapes[cluster, id(options)] = known
    return known


#: no job started (_Resume.gone)
_NONE_GONE: frozenset[int] = frozenset()


class _Resume:
    """What a walk leaves for the next one (see :class:`ReservingWalk`; filled by :meth:`keep`)."""

    __slots__ = ("now", "free", "seen", "length", "last", "failed_now", "plan", "started", "kept", "prefix_failed",
                 "full", "gone")

    def keep(self, view: SchedulerView, ordered: Sequence[JobView], failed_now: dict, plan: _Plan,
             started: list[JobView], prefix_end: int, prefix_failed: dict, full: bool) -> _Resume:
        """This object, now holding what the walk over ``ordered`` leaves (one per :class:`ReservingWalk`,
        refilled at each walk's end: the walk has read the last one's by then)."""
        self.now = view.now
        self.free = view.free
        self.seen = list(ordered)  # (a copy: the scheduler's sorted queue changes in place)
        self.length = len(ordered)
        self.last = ordered[-1] if ordered else None
        self.failed_now = failed_now
        self.plan = plan
        self.started = bool(started)
        # the jobs up to the one whose reservation used the last of the depth (all of them while
        # reservations remain), less those started: the jobs whose fate a later walk may keep
        if started:
            gone = self.gone = set(map(id, started))
            self.kept = [job for job in ordered[:prefix_end] if id(job) not in gone]
        else:
            self.gone = _NONE_GONE
            self.kept = self.seen[:prefix_end]
        self.prefix_failed = prefix_failed  # the least work per shape of their jobs that did not fit now
        self.full = full  # whether the reservations used the depth
        return self

    def holds_for(self, view: SchedulerView, ordered: Sequence[JobView]) -> bool:
        """Whether that walk started nothing, and only arrivals came since, all sorting after the jobs
        that walk saw: ``ordered`` begins with the very jobs that walk saw, in its order (one
        comparison of identities, in C; a list that merely grew to the same last job will not do:
        the starvation guard's front, or a wrapper's sub-queue, may hold other jobs before it)."""
        length = self.length
        return (not self.started and view.now >= self.now and view.free == self.free and len(ordered) >= length
                and (length == 0 or ordered[length - 1] is self.last) and ordered[:length] == self.seen)

    def carries_to(self, view: SchedulerView, ordered: Sequence[JobView],
                   released: Sequence[Release]) -> int | None:
        """Whether the plan holds from ``view.now`` on, unchanged (see :class:`ReservingWalk`): no
        reservation before now (one at now starts now); ``ordered`` begins with the kept jobs; the GPUs free now are the planned ones, the
        running jobs' releases in (then, now] given back (``released``; the running jobs themselves
        checked by the caller). None when it does not; else how many jobs of ``ordered`` that walk
        decided for good: the kept ones, or, when nothing was given back and no reservation is at
        now (the profile from then to now did not change), every job it saw but did not start."""
        now, plan = view.now, self.plan
        # (an empty run reserved holds nothing: later starts may move it; a start that ended at once held
        # its GPUs then, which the reservations after it in that walk had to wait for)
        if now < self.now or plan.empty_at < math.inf or plan.zero_runs or plan.overlapped:
            return None
        booked_at = plan.booked_at
        if booked_at and booked_at[0] < now:
            return None
        kept = self.kept
        length = len(kept)
        if len(ordered) < length or (length and ordered[length - 1] is not kept[-1]) or ordered[:length] != kept:
            return None
        if plan.predicted_free(released, now) != list(view.free):
            return None
        if booked_at and booked_at[0] == now:
            # those reserved at now start now: each must leave the choice of every job before it in walk
            # order whose run it would overlap as it was (a later walk sees it running when it reserves
            # that job; see _Reservation.still_chosen). (Last: the check spends the plan when it fails.)
            booked = plan.booked
            due = bisect_right(booked_at, now)
            last = max(reservation.order for reservation in booked[:due])
            end = max(reservation.end for reservation in booked[:due])
            for k in range(due, len(booked)):
                reservation = booked[k]
                if reservation.at >= end:
                    break
                if reservation.order < last:
                    for r in booked[:due]:
                        if (r.order > reservation.order and r.end > reservation.at
                                and not reservation.still_chosen(r.end, r.nodes, r.share)):
                            return None
            return length
        if (self.full and not released and all(end > now for end, _, _ in plan.start_ends)):
            gone = self.gone
            left = [job for job in self.seen if id(job) not in gone] if gone else self.seen
            if len(ordered) >= len(left) and ordered[:len(left)] == left:
                return len(left)
        return length


class ReservingWalk:
    """:func:`~simsched.policies.reservations.reserving_walk` with reservations for the first
    ``depth`` jobs that cannot start (``easy``: ``reserve_depth``; ``conservative``: all): the same
    starts and reservations, for one scheduler's decisions in turn (it keeps the running jobs' ends).

    With ``resumable`` (a static ordering and allocation) a walk builds on the last one's plan:

    - **resumed**: when the last walk started nothing and only arrivals came in between, all
      sorting after the jobs it saw, the same GPUs are free and the same jobs run, so every job it
      saw fails again (the window of a later start reaches the same reservations or more, with no
      more capacity; every built-in placement fits only where it would fit on more), the
      reservations are the same, and only the new jobs are walked;
    - **carried**: when everything went as planned since (the last walk's starts run, the running
      jobs that ended did so at their planned ends, the GPUs free now are the planned ones, no
      reservation's time has passed, and the jobs it kept begin the queue), the profile from now on
      is the last walk's. So each kept job's reservation is found again at the same time on the
      same nodes (the breakpoints it failed at are gone or fail again, for the same reason as
      above), and one reserved at now starts now on its nodes: the profile after now is the same
      whether it holds them as a reservation or as a start. Only the jobs after the kept ones are
      walked: with ``easy``, those after the job whose reservation used the depth (they may fit now
      where they did not then; when reservations came due, the depth they used goes to the first of
      them that does not fit now, as in a walk made afresh), with ``conservative`` the arrivals. This is
      what keeps a conservative decision about the changes, not the queue times its reservations.
      The jobs' failures to start now are kept only for the kept jobs still waiting (the least
      work per shape), and forgotten when one of them starts now. A job walked again that failed
      in the last walk (a job of its shape with no more work did) fails again, without a placement
      call, when no node given back since (by a running job's end or a start of the last walk that
      ended) has as many free milli-GPUs now as its options' least per worker: elsewhere its window
      has no more capacity than then (the free GPUs only went down, and no reservation left it,
      none being due), and a placement reads only the nodes with a slot per worker (as the
      reservation scan assumes). Not when a reservation starts now (``conservative``).

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
        self._kept = _Resume()  # what _resume holds when it is not None
        # id(job) -> (job, queue_seq, cluster, shape, remaining time): see the class docstring
        self._facts: dict[int, tuple] = {}
        self.carried = 0  # decisions that carried the last walk's plan (for tests and benches)
        self.carried_due = 0  # those of them in which reservations came due (they start; the same)
        self.failed_again = 0  # jobs of carried walks known to fail again without a placement call (the same)
        self.last_started: list[JobView] = []  # the jobs the last walk started, in walk order
        # shape -> (its options, the least milli-GPUs per worker of its options in its cluster)
        self._least_shares: dict[tuple, tuple[tuple, int]] = {}

    def __call__(self, ordered: Sequence[JobView], cluster_of: Callable[[JobView, SchedulerView], int | None],
                 view: SchedulerView, placement: Placement,
                 resumable: bool = False) -> tuple[list[tuple[str, tuple[int, ...]]],
                                                   list[tuple[str, float, tuple[int, ...]]]]:
        """Starts [(job_id, nodes)] and reservations [(job_id, time, nodes)] of the walk over ``ordered``
        (key order); ``cluster_of(job, view)`` is the job's cluster (None: any), asked once per job in
        order (the allocation's ``cluster_for``)."""
        if not ordered:  # nothing to walk (the running ends catch up at the next walk)
            self._resume = None
            self.last_started = []
            return [], []
        running = self.running_ends
        resume, self._resume = self._resume, None
        if not resumable:
            resume = None
        released: list[Release] = []
        if resume is not None and view.now >= resume.now:  # the kept releases in (then, now], before sync drops them
            ends = running.ends
            released = running.releases[bisect_right(ends, resume.now):bisect_right(ends, view.now)]
        first = running.sync(view)
        groups = view.fleet.groups
        depth = self.depth
        # (a stateful rule, round robin, may choose otherwise once the engine moved its pointer: no carry)
        stateless = getattr(placement, "_pointer", None) is None
        if not stateless:
            placement = hypothetical(placement)  # every placement below is a trial on a scratch list
        remaining_time = view.remaining_time
        starts: list[tuple[str, tuple[int, ...]]] = []
        started: list[JobView] = []
        if not resumable or running.rebuilt:
            self._facts = {}
        facts = self._facts if resumable else None
        # (a rebuild: jobs started or stopped out of the walk's sight, which the free GPUs may not show)
        if resume is not None and running.rebuilt:
            resume = None
        prefix_end: int | None = None  # the walk's index after the job whose reservation used the depth
        # a carried walk after GPUs were given back: the last walk's failures (shape -> least work), and the
        # most free milli-GPUs now on a node given back (see the loop)
        before: dict[tuple, float] | None = None
        most_given = -1
        if resume is not None and resume.holds_for(view, ordered):
            begin, failed_now, plan = resume.length, resume.failed_now, resume.plan
            prefix_failed = resume.prefix_failed
            plan.now = view.now
            if resume.full:
                prefix_end = len(resume.kept)
        elif (resume is not None and running.counted and stateless
              and (done := resume.carries_to(view, ordered, released)) is not None):
            plan = resume.plan
            begin = done  # (those reserved at now among them, still queued, start now)
            if done == len(resume.kept):
                # the nodes given back since: the running jobs' releases and the last walk's starts' ends
                free_now, now = view.free, view.now
                for _, nodes, _ in released:
                    for n in nodes:
                        if free_now[n] > most_given:
                            most_given = free_now[n]
                for end, nodes, _ in plan.start_ends:
                    if end <= now:
                        for n in nodes:
                            if free_now[n] > most_given:
                                most_given = free_now[n]
                before = resume.failed_now
            for reservation in plan.advance(view.now, view.free):
                job = reservation.job
                starts.append((job.job_id, reservation.nodes))
                started.append(job)
                if facts is not None:
                    facts.pop(id(job), None)
            if started:
                before = None
                self.carried_due += 1
            # the kept jobs' failures now (all of them still fail now) unless one of them starts now;
            # all the seen jobs' when they all stay as they were
            prefix_failed = {} if started else resume.prefix_failed
            failed_now = resume.failed_now if done > len(resume.kept) else dict(prefix_failed)
            if resume.full and len(plan.made) >= depth:  # (else a reservation at now freed some of the depth)
                prefix_end = len(resume.kept)
            self.carried += 1
        else:
            # shape -> the least work that did not fit now (as reserving_walk: a longer one fails too;
            # -inf: it did not fit the GPUs free now, with no reservation in its window: none fits)
            failed_now: dict[tuple, float] = {}
            prefix_failed = {}  # the same as work, for the jobs up to prefix_end
            begin, plan = 0, _Plan(view.now, list(view.free))
        made = plan.made
        fit_now = plan.fit_now
        inf = math.inf
        least_shares = self._least_shares
        # whether the reservations used the depth (only plan.reserve adds to ``made`` in the loop): then a
        # job that does not fit now is passed by, and one whose shape failed with no more work is passed
        # by at once (most of a carried walk's jobs: a look-up of its facts and one of its shape)
        used = len(made) >= depth
        for index in range(begin, len(ordered)):
            job = ordered[index]
            known = None if facts is None else facts.get(id(job))
            if known is not None and known[0] is job and known[1] == job.queue_seq:
                shape, work = known[3], known[4]
                if used and work >= failed_now.get(shape, inf):
                    continue
                cluster, least_share = known[2], known[5]
            else:
                cluster = cluster_of(job, view)
                options = job.options
                shape = (cluster, id(options), job.workers)
                work = remaining_time(job)
                least = least_shares.get(shape)
                if least is None or least[0] is not options:  # (the options kept: their id is not reused)
                    least = least_shares[shape] = (options, min(
                        (option.per_worker for option in options if cluster is None or option.cluster == cluster),
                        default=0))
                least_share = least[1]
                if facts is not None:
                    facts[id(job)] = (job, job.queue_seq, cluster, shape, work, least_share)
            if work >= failed_now.get(shape, inf):
                found = None
                if used:
                    continue
            elif most_given < least_share and before is not None and work >= before.get(shape, inf):
                # it failed in the last walk (a job of its shape and no more work did) and no node given
                # back since has a slot for it: it fails now (the class docstring, "carried")
                found = None
                self.failed_again += 1
            else:
                found = fit_now(job, cluster, groups, placement, view, work)
                if found is False:  # no job of its shape fits now: the same as the reference's memo
                    failed_now[shape] = -math.inf  # of a shorter one would give, without trying
                    found = None
                elif found is True:
                    found = None
            if found is None:
                if work < failed_now.get(shape, inf):
                    failed_now[shape] = work
                if not used:
                    prefix_failed[shape] = min(prefix_failed.get(shape, inf), work)
                    plan.reserve(job, cluster, groups, placement, view, running, first, shape, work)
                    if len(made) >= depth:
                        used = True
                        prefix_end = index + 1
                continue
            nodes, share, run = found
            plan.start(nodes, share, run)
            starts.append((job.job_id, nodes))
            started.append(job)
            if facts is not None:
                del facts[id(job)]
        running.started(started)
        self.last_started = started
        if resumable:
            self._resume = self._kept.keep(view, ordered, failed_now, plan, started,
                                           len(ordered) if prefix_end is None else prefix_end, prefix_failed,
                                           prefix_end is not None)
        return starts, list(made.values())


__all__ = ["ReservingWalk", "RunningEnds"]
