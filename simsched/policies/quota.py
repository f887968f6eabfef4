"""Quota semantics (SPEC §3, ``scheduler.quota`` and ``scheduler.reclaim``) around any policy.

:class:`QuotaScheduler` wraps the scenario's policy (FIFO, SJF, EVO-GP's planner,
a user's ``my_policy.py:MyPolicy``...), so that every ordering runs inside a
tenant's share. One decision is:

1. **Within quota.** The policy decides over the jobs whose tenant still has
   room for them; a start that would take its tenant over its quota (two jobs
   of one tenant that each fit the room, but not both) is dropped, in the
   order the policy gave its starts. The built-in queue walk
   (:class:`~simsched.policies.queue.QueueScheduler`) checks each placement
   against the room itself (``view.admission``), so it passes over a job that
   does not fit its tenant's room and goes on, exactly as it passes over a job
   that does not fit the free GPUs.
2. ``quota = "borrow"`` only, with ``reclaim = "preempt"``: every job still
   queued that fits its tenant's quota but not the free GPUs (oldest first)
   takes GPUs back from tenants above their quota (the restart penalty
   applies): :func:`find_victims` searches node by node for the cheapest set of
   victims that makes room (fewest GPUs preempted, then fewest victims), then
   across nodes, so a reclaim that exists is found.
3. ``quota = "borrow"`` only: the policy decides again over every queued job
   with the GPUs left (idle GPUs may be used beyond a quota). With
   ``reclaim = "wait"`` the GPUs held for waiting owners are not among them
   (:meth:`QuotaScheduler.owner_holds`: each in-quota owner job that waits
   holds, like an EASY reservation in its tenant's name, the GPUs of its
   earliest fit), so GPUs that borrowed work frees go to the owner, whatever
   the width of its job, and nobody borrows them until it starts.

The policy is asked once per decision under ``strict`` and twice under
``borrow`` (once when step 3 is left out: below); it never sees a job it may
not start in step 1. The built-in queue walk does steps 2 and 3 more cheaply
when no reclaim can succeed (no waiting job has an option its tenant's room
admits in a cluster with quotas, which is what a reclaim needs): step 3 then
continues the walk over its own buckets (``QueueScheduler.borrow_pass``), with
the same starts. For any other policy, with ``reclaim = "preempt"``, the
wrapper keeps the queued jobs by kind between decisions (:class:`_Needs`: the
jobs that arrived join, those it started leave): step 2 is left out when no
quota key's room admits the least that its queued kinds' options ask (the pass
would look at nobody), and step 3 when the policy says that a decision in
which no job fits changes nothing (``idle_without_fit``: ftf and drf with the
home allocation) and no queued kind's GPUs per worker are free on a node of
its group. Only the engine changes state: this returns a Decision, and
:class:`~simsched.core.tenancy.Tenancy` changes when the engine applies it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import combinations

from simsched.core.contract import Decision, JobView, Option, Scheduler, SchedulerView, Start
from simsched.core.tenancy import OTHER, Staged
from simsched.policies.placement import Placement, best_fit, commit, trial
from simsched.policies.queue import QueueScheduler


class SubView:
    """A view over part of the state a decision starts from (implements ``SchedulerView``):
    some of the queued jobs, the running ones and the free GPUs after the starts already chosen."""

    __slots__ = ("now", "fleet", "free", "_queue", "_running", "_without", "tenants", "admission", "_base",
                 "_fresh")

    def __init__(self, base: SchedulerView, queue: Sequence[JobView] | None, running: Sequence[JobView] | None,
                 free: Sequence[int], admission: Admission | None, without: set[str] | None = None,
                 fresh: bool = False) -> None:
        """``queue`` / ``running`` None: the base view's (read on use); ``without``: the ids of queued
        jobs of the base view to leave out of its queue (read on use). ``fresh``: every queued job
        counts as new to :meth:`queued_after` (below)."""
        self._base = base
        self._fresh = fresh
        self.now = base.now
        self.fleet = base.fleet
        self.tenants = base.tenants
        self._queue = None if queue is None else tuple(queue)
        self._running = None if running is None else tuple(running)
        self._without = without or None
        self.free = free if isinstance(free, tuple) else tuple(free)
        self.admission = admission  # see QueueScheduler: the walk checks placements against quotas

    @property
    def queue(self) -> tuple[JobView, ...]:
        if self._queue is None:
            if self._without is None:
                return self._base.queue
            self._queue = tuple(job for job in self._base.queue if job.job_id not in self._without)
        return self._queue

    @property
    def running(self) -> tuple[JobView, ...]:
        return self._base.running if self._running is None else self._running

    @property
    def queue_length(self) -> int:
        if self._queue is None:
            return self._base.queue_length - (0 if self._without is None else len(self._without))
        return len(self._queue)

    def queued_after(self, seq: int) -> list[JobView]:
        """The queued jobs after ``seq``, newest first. A ``fresh`` view (a policy that does not check
        quotas itself sees part of the queue, another part in the same decision, and jobs the wrapper
        started) gives every queued job: a policy that mirrors the queue between decisions (las, the
        reservation walks) checks its mirror by counting, which such a queue can fool (a job it did
        not start gone, an older one it never saw there), and would start a job twice; given every
        job, it rebuilds its mirror."""
        if self._fresh:
            return sorted(self.queue, key=lambda job: job.queue_seq, reverse=True)
        if self._queue is None:
            out = self._base.queued_after(seq)
            return out if self._without is None else [job for job in out if job.job_id not in self._without]
        out = []
        for job in reversed(self._queue):
            if job.queue_seq <= seq:
                break
            out.append(job)
        return out

    def queued_time(self, job: JobView) -> float:
        return self._base.queued_time(job)

    def remaining_time(self, job: JobView, speed: float = 1.0) -> float:
        return self._base.remaining_time(job, speed)


class Admission:
    """Quota checks for a walk that places jobs itself: ``admits`` before it tries an option,
    ``take`` when it placed a job there, ``may_preempt`` before it preempts, ``release`` when it
    preempted a running job (``take`` and ``release`` are charged to the decision's :class:`Staged`
    usage, once: the wrapper does not charge them again). ``borrow``: the quota mode is "borrow"."""

    __slots__ = ("staged", "borrow", "taken", "released", "asked", "refused")

    def __init__(self, staged: Staged, borrow: bool = False) -> None:
        self.staged = staged
        self.borrow = borrow
        self.taken: dict[str, Option] = {}  # job_id -> the option it was placed on (for the wrapper)
        self.released: set[str] = set()  # ids of the running jobs it preempted and gave back already
        # options asked about and refused so far (a walk tells from them why a job did not start)
        self.asked = 0
        self.refused = 0

    def admits(self, job: JobView, option: Option) -> bool:
        self.asked += 1
        if self.staged.admits(job.tenant, option.cluster, option.gpu_type, option.per_worker * job.workers):
            return True
        self.refused += 1
        return False

    def take(self, job: JobView, option: Option) -> None:
        self.staged.add(job.tenant, option.cluster, option.gpu_type, option.per_worker * job.workers)
        self.taken[job.job_id] = option

    def may_preempt(self, victims: Sequence[JobView]) -> bool:
        """Whether a walk may preempt all of ``victims`` in this decision (with those it preempted
        already given back). Under ``borrow`` only borrowed GPUs are taken back: each victim's
        tenant must hold more than its quota just before its preemption (smallest first), the rule
        of the wrapper's own reclaim (:func:`find_victims`), so a tenant within its quota keeps its
        GPUs whatever the policy's own rule says (issue 36). Under ``strict`` nobody holds more
        than its quota, and the policy's rule alone decides."""
        return not self.borrow or _still_borrowing(victims, self.staged)

    def release(self, victim: JobView) -> None:
        """The walk preempts the running ``victim``: its tenant's room grows back in this decision."""
        if victim.job_id not in self.released:
            self.released.add(victim.job_id)
            self.staged.add(victim.tenant, victim.running_cluster, victim.gpu_type_used,
                            -victim.run_share * victim.workers)


def option_on(job: JobView, nodes: Sequence[int], fleet) -> Option | None:
    """The option of ``job`` whose cluster and GPU type hold ``nodes[0]``."""
    if not nodes:
        return None
    first = nodes[0]
    if not 0 <= first < len(fleet.node_type):
        return None
    cluster, gpu_type = fleet.node_cluster[first], fleet.node_type[first]
    for option in job.options:
        if option.cluster == cluster and option.gpu_type == gpu_type:
            return option
    return None


class QuotaScheduler:
    """``policy`` run inside the tenants' quotas (see the module docstring)."""

    #: the reclaim pass first asks the queued jobs' least needs, kept between decisions, whether
    #: any job may reclaim (False: it looks at every job, as the tests' reference does)
    keep_needs = True

    def __init__(self, policy: Scheduler, mode: str, reclaim: str = "preempt",
                 placement: Placement = best_fit) -> None:
        if mode not in ("strict", "borrow"):
            raise ValueError(f'QuotaScheduler: "mode" must be "strict" or "borrow", got {mode!r}')
        self.policy = policy
        self.mode = mode
        self.reclaim = reclaim
        self.placement = placement
        # the built-in queue walk checks quotas while it places (no filtered queue, no rebuilds)
        self.native = bool(getattr(policy, "supports_admission", False))
        if self.native:
            policy.by_tenant = True  # jobs of different tenants no longer fit or fail together
        # the queue walk takes the admission directly (no view around the decision's to carry it),
        # unless a subclass decides otherwise
        self._admitted = (policy.decide_admitted if self.native and isinstance(policy, QueueScheduler)
                          and type(policy).decide is QueueScheduler.decide else None)
        # a walk that keeps the queue between decisions is told of the jobs the reclaim step starts
        self._forget = getattr(policy, "forget", None) if self.native else None
        # a walk that can continue over its own queue for step 3 (QueueScheduler.borrow_pass)
        self._continues = self.native and mode == "borrow" and hasattr(policy, "borrow_pass")
        interval = getattr(policy, "interval_s", None)
        if interval:
            self.interval_s = interval
        self.name = getattr(policy, "name", None) or type(policy).__name__
        self._holds: _Holds | None = None  # the owners' holds of the latest decision (reclaim = "wait")
        self._needs: _Needs | None = None  # the queued jobs by kind (the reclaim pass, step 3)

    def __getattr__(self, name: str):
        if name in ("policy", "interval_s", "quiet_until", "_holds", "_needs"):  # quiet_until: quotas change what a round decides
            raise AttributeError(name)
        return getattr(self.policy, name)

    def bind(self, fleet_view) -> None:
        bind = getattr(self.policy, "bind", None)
        if bind is not None:
            bind(fleet_view)

    def decide(self, view: SchedulerView) -> Decision:
        tenancy = view.tenants
        if tenancy is None:  # no quotas anywhere: the policy as it is
            return self.policy.decide(view)
        staged = Staged(tenancy)
        admitted = self._admitted
        if self.native and self.mode == "strict":  # 1. within quota: the walk admits every start itself
            if admitted is not None:
                return admitted(view, Admission(staged))
            return self.policy.decide(SubView(view, None, None, view.free, Admission(staged)))
        # 1. within quota
        admission = None
        if self.native:
            admission = Admission(staged, borrow=self.mode == "borrow")
            decision = (admitted(view, admission) if admitted is not None
                        else self.policy.decide(SubView(view, None, None, view.free, admission)))
            fast = self._borrow_after_walk(decision, view, staged, admission) if self._continues else None
            if fast is not None:
                return fast
        free = list(view.free)
        fleet = view.fleet
        starts: list[Start] = []
        preempts: list[str] = []
        started: set[str] = set()
        queue = view.queue  # (built on first use: the quick path above never needs it)
        if not self.native:
            eligible = [job for job in queue if any(
                staged.admits(job.tenant, o.cluster, o.gpu_type, o.per_worker * job.workers) for o in job.options)]
            decision = self.policy.decide(SubView(view, eligible, None, free, None, fresh=True))
        running = list(view.running)
        # (a walk with an admission gave its victims' GPUs back to ``staged`` itself: not twice)
        self._take_preempts(decision, view, staged, free, running, preempts,
                            admission.released if admission is not None else ())
        by_id = {job.job_id: job for job in queue} if decision.starts and not self.native else {}
        for start in decision.starts:
            if self.native:  # the walk charged it already, and says on which option
                option = admission.taken.get(start.job_id)
                if option is not None and option_on_nodes(option, start.nodes, fleet):
                    _take(free, start.nodes, option.per_worker)
                starts.append(start)
                started.add(start.job_id)
                continue
            job = by_id.get(start.job_id)
            option = None if job is None else option_on(job, start.nodes, fleet)
            if option is None:  # not a job of this view, or a bad placement: the engine says what is wrong
                starts.append(start)
                started.add(start.job_id)
                continue
            need = option.per_worker * job.workers
            if not staged.admits(job.tenant, option.cluster, option.gpu_type, need):
                continue  # it would take its tenant over the quota: it waits
            staged.add(job.tenant, option.cluster, option.gpu_type, need)
            _take(free, start.nodes, option.per_worker)
            starts.append(start)
            started.add(start.job_id)
        if self.mode == "strict":
            return Decision(tuple(starts), tuple(preempts))
        # 2. reclaim borrowed GPUs for owners
        if self.reclaim == "preempt":
            before = len(starts)
            self._reclaim_pass(queue, view, staged, free, running, preempts, starts, started)
            if len(starts) > before and self._forget is not None:  # (queued jobs the policy did not start)
                self._forget([start.job_id for start in starts[before:]])
        # 3. borrow idle GPUs, but not those held for waiting owners (reclaim = "wait")
        if self.reclaim == "wait" and view.queue_length > len(started) and any(free):  # (none free: no step 3)
            held = self.owner_holds(view, staged, free, running, started)
            if held is not None:
                free = [max(0, f - h) for f, h in zip(free, held)]
        if view.queue_length > len(started) and any(free) and not self._nothing_fits(view, free):
            # (``started``: jobs of the queue, as the engine checks; ``running`` changed only by preemptions)
            second = SubView(view, None, running if preempts else None, free, None, started, fresh=not self.native)
            decision = self.policy.decide(second)
            self._take_preempts(decision, view, staged, free, running, preempts)
            for start in decision.starts:
                starts.append(start)
        if self._needs is not None and self._needs.view is view:  # (they leave the queue)
            self._needs.leave([start.job_id for start in starts])
        return Decision(tuple(starts), tuple(preempts))

    def _borrow_after_walk(self, decision: Decision, view: SchedulerView, staged: Staged,
                           admission: Admission) -> Decision | None:
        """Steps 2 and 3 straight after the queue walk's step 1, when they can be cheap: no reclaim
        can succeed (no waiting job has an option in a cluster with quotas that its tenant's room
        admits: the only kind :meth:`_reclaim` starts), so step 3 continues the walk over its own
        buckets (``QueueScheduler.borrow_pass``). The same starts as the steps below; None when this
        does not apply (the walk preempted, a reclaim may succeed, or the walk cannot continue)."""
        policy = self.policy
        if decision.preempts:
            return None
        if self.reclaim == "preempt":
            kinds = policy.waiting_kinds()
            if kinds is None:
                return None
            limited = staged.tenancy._limited
            for job in kinds:
                workers = job.workers
                for o in job.options:
                    if limited[o.cluster] and staged.admits(job.tenant, o.cluster, o.gpu_type, o.per_worker * workers):
                        return None
        held = None
        tries = getattr(policy, "borrow_tries", None)  # (False: the pass starts nothing, holds or not)
        if self.reclaim == "wait" and (tries is None or tries(view)):  # the GPUs held for waiting owners
            free = list(view.free)
            for start in decision.starts:
                option = admission.taken.get(start.job_id)
                if option is not None:
                    _take(free, start.nodes, option.per_worker)
            held = self.owner_holds(view, staged, free, view.running, {start.job_id for start in decision.starts})
        more = policy.borrow_pass(view, held)
        if more is None:
            return None
        return Decision(decision.starts + more) if more else decision

    def _reclaim_pass(self, queue: Sequence[JobView], view: SchedulerView, staged: Staged, free: list[int],
                      running: list[JobView], preempts: list[str], starts: list[Start], started: set[str]) -> None:
        """Step 2: every waiting job, oldest first, tries :meth:`_reclaim`.

        Only a job with an option that fits its tenant's room can reclaim, and only in a cluster
        with quotas (nobody borrows elsewhere): so first the tenants with room left (a job needs
        at least one milli-GPU), then their jobs with such an option. The others are passed over
        without a look, which changes nothing: their reclaim would fail and change nothing.
        Rooms change only when a reclaim succeeds; then the look starts again after that job.
        """
        # (a walk that continues over its own buckets asks them in most decisions instead, and comes
        # here when a reclaim may succeed: kinds kept here would be made anew at each such decision)
        if self.keep_needs and not self._continues and self._no_reclaim(view, staged, started):
            return
        after = None  # (submit, index) of the last job that reclaimed
        while True:
            roomy = staged.roomy_tenants()
            if not roomy:
                return
            # (a pool of unlisted tenants with room: look at everyone)
            waiting = [job for job in queue if job.tenant in roomy] if None not in roomy else list(queue)
            if not waiting:
                return
            # a job no option of which fits its tenant's room fails without a look (and rooms change
            # only when a reclaim succeeds); jobs of one tenant, options and workers are asked once
            roomy_for: dict[tuple, bool] = {}
            waiting = sorted((job for job in waiting if job.job_id not in started
                              and (after is None or (job.submit, job.index) > after)
                              and _has_room(job, staged, roomy_for)),
                             key=lambda j: (j.submit, j.index))
            # a failed reclaim changes nothing, so a job of the same tenant with the same options and
            # workers fails too, until some reclaim succeeds (exact; the engine shares options tuples)
            failed: set[tuple] = set()
            for job in waiting:
                same = (job.tenant, id(job.options), job.workers)
                if same in failed:
                    continue
                placed = self._reclaim(job, view, staged, free, running, preempts)
                if placed is None:
                    failed.add(same)
                    continue
                starts.append(placed)
                started.add(job.job_id)
                after = (job.submit, job.index)
                break
            else:
                return

    def _no_reclaim(self, view: SchedulerView, staged: Staged, started: set[str]) -> bool:
        """Whether no queued job but those ``started`` has an option its tenant's room admits (then
        the reclaim pass looks at nobody and starts nothing), told from the queued jobs' kinds kept
        between decisions (:class:`_Needs`): rooms admit less the more is asked, so when no key's
        room admits the least that its kinds' options ask there, no job's option is admitted."""
        needs = self._needs
        tenancy = staged.tenancy
        if needs is None or needs.tenancy is not tenancy or not needs.take_arrivals(view):
            needs = self._needs = _Needs(tenancy, view)
        if started:  # (they leave the queue)
            needs.leave(started)
        return not needs.admitted(staged)

    def _nothing_fits(self, view: SchedulerView, free: Sequence[int]) -> bool:
        """Whether step 3 may be left out: the policy says that a decision in which no queued job fits
        changes nothing (``idle_without_fit``), and no queued job but those started in this decision
        has an option whose GPUs per worker are free on a node of its group (every placement puts a
        worker on a node with room for it, placement.py's contract), by the queued kinds the
        reclaim pass brought up to date in this decision (:class:`_Needs`; a job the pass started
        counts still, which can only keep step 3 in)."""
        needs = self._needs
        if needs is None or needs.view is not view or not getattr(self.policy, "idle_without_fit", False):
            return False
        return not needs.fits(free, view.fleet.groups)

    def owner_holds(self, view: SchedulerView, staged: Staged, free: Sequence[int], running: Sequence[JobView],
                    started: set[str]) -> list[int] | None:
        """``reclaim = "wait"``: the milli-GPUs per node held for waiting owners, which step 3 may not
        borrow (None: nothing held). Every waiting job that its tenant's room admits in a cluster with
        quotas, oldest first, gets a reservation in its tenant's name, as EASY's: the earliest time at
        which it fits if running jobs end at their known ends, on the nodes the placement rule then
        picks, after the holds of the owners before it; its GPUs there are held (those free now and
        those that free up), and its tenant's room is charged for it (a tenant's holds never exceed
        its room). So GPUs that borrowed work frees go to the owner, and nobody borrows them until
        its job starts (docs/scenarios.md "The owner guarantee").

        Kept between decisions (:class:`_Holds`): while nothing started or stopped and no quota
        moved (the ledger's version), the free GPUs are the same and every running job still ends
        after now, the holds of the jobs already seen are those computed before (each depends on
        the jobs before it, the free GPUs, the running jobs' ends and the rooms; ``now`` only
        through ties with a running job's end, which cannot occur while every end is later), and
        jobs that arrived since sort after them: only they are reserved, on top. Otherwise, or in a
        decision that starts or preempts before this step, the holds are computed from scratch
        (tests/test_quota_walk.py: equal to those at every decision, and to its plain reference's)."""
        memo = self._holds
        tenancy = staged.tenancy
        if (memo is not None and not started and not staged._delta and not staged._type_delta
                and memo.staged.tenancy is tenancy and memo.version == tenancy.version and memo.now_before(view.now) and memo.free == tuple(free)):
            extended = memo.extend(self, view)
            if extended is not False:
                return None if extended is None else list(extended)
        self._holds = None
        roomy = staged.roomy_tenants()
        if not roomy or view.queue_length <= len(started):
            return None
        owners = _Owners(tenancy, roomy)
        # (submit, index) order by a native tuple sort (indexes are unique: jobs never compared)
        queue = view.queue
        eligible = {tenant for tenant in {job.tenant for job in queue} if owners(tenant)}  # (asked per tenant)
        if not eligible:
            waiting = []
        elif started:
            waiting = [job for _, _, job in sorted([(job.submit, job.index, job) for job in queue
                                                    if job.tenant in eligible and job.job_id not in started])]
        else:
            waiting = [job for _, _, job in sorted([(job.submit, job.index, job) for job in queue
                                                    if job.tenant in eligible])]
        keep = (not started and not staged._delta and not staged._type_delta
                and trial(self.placement) is self.placement)  # (a stateful rule's trials move with it)
        memo = _Holds(tenancy.version, tuple(free), roomy, _copy(staged), view) if keep else None
        if not waiting:
            if memo is not None:
                self._holds = memo
            return None
        scratch = memo if memo is not None else _Holds(tenancy.version, tuple(free), roomy, _copy(staged), None)
        scratch.reserve_all(self, view, waiting, free, running)
        if memo is not None:
            self._holds = memo
        return None if scratch.held is None else list(scratch.held)

    @staticmethod
    def _take_preempts(decision: Decision, view: SchedulerView, staged: Staged, free: list[int],
                       running: list[JobView], preempts: list[str], released=()) -> None:
        """The policy's own preemptions are kept (they only give GPUs back). ``released``: the ids
        of those the policy's walk already gave back to ``staged`` (``Admission.release``)."""
        if not decision.preempts:
            return
        gone = set(decision.preempts)
        for job in list(running):
            if job.job_id in gone:
                if job.job_id in released:
                    for n in job.running_nodes:
                        free[n] += job.run_share
                else:
                    _release(job, staged, free)
                running.remove(job)
        preempts.extend(decision.preempts)

    def _reclaim(self, job: JobView, view: SchedulerView, staged: Staged, free: list[int],
                 running: list[JobView], preempts: list[str]) -> Start | None:
        """Start ``job`` within its quota by preempting jobs of tenants above theirs, if that works."""
        groups = view.fleet.groups
        # every placement below is a trial (round robin's pointer stays): only the start, if any, moves
        # it, so a failed reclaim changes nothing at all (the reclaim pass relies on that)
        place = trial(self.placement)
        for option in job.options:
            need = option.per_worker * job.workers
            if not staged.admits(job.tenant, option.cluster, option.gpu_type, need):
                continue
            group = groups[option.cluster, option.gpu_type]
            scratch = list(free)
            if place(group, option.per_worker, job.workers, list(scratch)) is not None:
                return None  # it fits without anyone's GPUs: the borrowing pass will start it
            victims, nodes = find_victims(group, option.cluster, option.per_worker, job.workers, free, running, staged, place)
            if nodes is None:
                continue
            for victim in victims:
                _release(victim, staged, free)
                running.remove(victim)
                preempts.append(victim.job_id)
            _take(free, nodes, option.per_worker)
            staged.add(job.tenant, option.cluster, option.gpu_type, need)
            commit(self.placement, group, nodes)
            return Start(job.job_id, nodes)
        return None


def option_on_nodes(option: Option, nodes: Sequence[int], fleet) -> bool:
    """Whether ``nodes[0]`` is of ``option``'s cluster and GPU type (as :func:`option_on` finds it)."""
    if not nodes or not 0 <= nodes[0] < len(fleet.node_type):
        return False
    return fleet.node_cluster[nodes[0]] == option.cluster and fleet.node_type[nodes[0]] == option.gpu_type


def _take(free: list[int], nodes: Sequence[int], per_worker: int) -> None:
    for n in nodes:
        free[n] -= per_worker


def _fits(nodes: Sequence[int], per_worker: int, free: Sequence[int]) -> bool:
    need: dict[int, int] = {}
    for n in nodes:
        need[n] = need.get(n, 0) + per_worker
    return all(free[n] >= amount for n, amount in need.items())


def _has_room(job: JobView, staged: Staged, known: dict[tuple, bool]) -> bool:
    """Whether some option of ``job`` fits its tenant's room (``staged``); ``known``: the answers so far
    by (tenant, options, workers), the same for every such job while the rooms stand."""
    same = (job.tenant, id(job.options), job.workers)
    answer = known.get(same)
    if answer is None:
        answer = known[same] = any(staged.admits(job.tenant, o.cluster, o.gpu_type, o.per_worker * job.workers)
                                   for o in job.options)
    return answer


def _release(job: JobView, staged: Staged, free: list[int]) -> None:
    for n in job.running_nodes:
        free[n] += job.run_share
    staged.add(job.tenant, job.running_cluster, job.gpu_type_used, -job.run_share * job.workers)


def _copy(staged: Staged) -> Staged:
    out = Staged(staged.tenancy)
    out._delta = dict(staged._delta)
    out._type_delta = dict(staged._type_delta)
    return out


# -- reclaim by preemption: the victim search (``reclaim = "preempt"``) ------------------------------
#: a node with more candidate victims than this is searched greedily, not over every subset
EXACT_VICTIMS = 10


def _eligible(group: Sequence[int], cluster: int, running: Sequence[JobView], staged: Staged) -> list[JobView]:
    """The running jobs on ``group``'s nodes whose tenant holds more than its quota there, newest
    start first (ties: later input first)."""
    members = set(group)
    return sorted((r for r in running if r.running_cluster == cluster and members.intersection(r.running_nodes)
                   and staged.borrowing(r.tenant, r.running_cluster, r.gpu_type_used)),
                  key=lambda r: (-r.run_start, -r.index))


def _held_milli(job: JobView) -> int:
    return job.run_share * job.workers


def _still_borrowing(victims: Sequence[JobView], staged: Staged) -> bool:
    """Whether ``victims`` may all be preempted: taken smallest first, each one's tenant still holds
    more than its quota just before (a reclaim takes back borrowed GPUs, never a tenant's own)."""
    scratch = _copy(staged)
    for victim in sorted(victims, key=_held_milli):
        if not scratch.borrowing(victim.tenant, victim.running_cluster, victim.gpu_type_used):
            return False
        scratch.add(victim.tenant, victim.running_cluster, victim.gpu_type_used, -_held_milli(victim))
    return True


def _on_node(job: JobView, node: int) -> int:
    return job.run_share * job.running_nodes.count(node)


def _cost(subset: Sequence[JobView]) -> tuple:
    """A victim set's cost: milli-GPUs preempted (each pays the restart penalty), victims, then the
    newest start among them first (the least work since a start, as newest-first chose before)."""
    return (sum(_held_milli(r) for r in subset), len(subset),
            min((-r.run_start, -r.index) for r in subset))


def _node_subsets(on: list[JobView], node: int, deficit: int):
    """Subsets of the victims ``on`` a node that free at least ``deficit`` milli-GPUs there, cheapest
    first (:func:`_cost`: fewest milli-GPUs preempted in all, each paying its restart penalty on every
    GPU, then fewest victims, then the newest start among them). Every subset when there are at most :data:`EXACT_VICTIMS`, else the one greedy
    subset (largest share on the node first)."""
    if len(on) > EXACT_VICTIMS:
        chosen, freed = [], 0
        for victim in sorted(on, key=lambda r: -_on_node(r, node)):
            if freed >= deficit:
                break
            chosen.append(victim)
            freed += _on_node(victim, node)
        return [chosen] if freed >= deficit else []
    found = []
    for size in range(1, len(on) + 1):
        for subset in combinations(on, size):
            if sum(_on_node(r, node) for r in subset) >= deficit:
                found.append((_cost(subset), list(subset)))
    found.sort(key=lambda item: item[0])  # the whole cost, so the newest-start tie-break holds too
    return [subset for _, subset in found]


def find_victims(group: Sequence[int], cluster: int, per_worker: int, workers: int, free: Sequence[int],
                 running: Sequence[JobView], staged: Staged, place: Placement
                 ) -> tuple[list[JobView], tuple[int, ...] | None]:
    """The running jobs to preempt so that a job (``workers`` x ``per_worker`` milli-GPUs) fits on
    ``group``, and the nodes it then takes; ``([], None)`` when no such set exists (SPEC §3,
    docs/scenarios.md "Reclaim"). Only jobs of tenants above their quota are victims, and only while
    their tenant stays above it before each preemption.

    1. **One node.** For every node of the group, the cheapest set of victims running there that
       frees enough GPUs on it for the whole job (fewest GPUs preempted, then fewest victims, then
       the newest start among them); the node with the cheapest set wins (ties: the lowest index),
       and the job goes on that node.
    2. **Across nodes** (a job wider than any node, or none frees enough alone): nodes with the
       most GPUs free or borrowed first, on each the victims with the largest share there first,
       until the placement rule fits the job on the group; of those only the victims on the nodes
       it takes are preempted (all of them, when the job would not fit without the others).
    """
    eligible = _eligible(group, cluster, running, staged)
    if not eligible:
        return [], None
    need = per_worker * workers
    best = None  # (milli-GPUs preempted, victims, node, subset)
    for n in group:
        deficit = need - free[n]
        on = [r for r in eligible if n in r.running_nodes]
        if not on or sum(_on_node(r, n) for r in on) < deficit:
            continue
        for subset in _node_subsets(on, n, deficit):
            cost = _cost(subset)
            if best is not None and cost >= best[:3]:
                break  # (cheapest first: nothing later on this node beats the best)
            if not _still_borrowing(subset, staged):
                continue
            scratch = list(free)
            for victim in subset:
                for m in victim.running_nodes:
                    scratch[m] += victim.run_share
            nodes = place((n,), per_worker, workers, scratch)
            if nodes is not None:
                best = (*cost, subset, nodes)
                break
    if best is not None:
        return best[3], best[4]
    # 2. across nodes
    room = {n: free[n] for n in group}
    for r in eligible:
        for m in r.running_nodes:
            if m in room:
                room[m] += r.run_share
    order = sorted(group, key=lambda m: (-room[m], m))
    scratch = list(free)
    trial_staged = _copy(staged)
    chosen: list[JobView] = []
    seen: set[str] = set()
    nodes = None
    for n in order:
        for victim in sorted((r for r in eligible if n in r.running_nodes), key=lambda r: -_on_node(r, n)):
            if victim.job_id in seen or not trial_staged.borrowing(victim.tenant, victim.running_cluster,
                                                                    victim.gpu_type_used):
                continue
            seen.add(victim.job_id)
            _release(victim, trial_staged, scratch)
            chosen.append(victim)
            nodes = place(group, per_worker, workers, list(scratch))
            if nodes is not None:
                break
        if nodes is not None:
            break
    if nodes is None:
        return [], None
    used = set(nodes)
    victims = [v for v in chosen if used.intersection(v.running_nodes)]
    check = list(free)
    for victim in victims:
        for m in victim.running_nodes:
            check[m] += victim.run_share
    if not _fits(nodes, per_worker, check):
        victims = chosen
    return victims, nodes


class _Needs:
    """The queued jobs by kind (tenant, options, workers), kept between decisions: for each (cluster
    with quotas, quota key, GPU type) the milli-GPUs its kinds' options ask (``least``), for each
    (cluster, GPU type) group the milli-GPUs per worker (``per_worker``), each as a count of kinds
    per amount (the least amount is the key with the smallest value), and how many kinds have an
    option in a cluster without quotas (``open``: its tenant's room always admits it).

    It follows the engine's queue: the jobs that entered it since (``queued_after``) join, and the
    jobs the wrapper starts leave (:meth:`leave`; they are queued no more at the next decision).
    When the queue's length says that it changed otherwise (a decision the wrapper did not see to
    its end, or a view the engine did not make), it is made anew from the queue."""

    __slots__ = ("tenancy", "view", "seq", "least", "per_worker", "open", "_kind_of", "_kinds")

    def __init__(self, tenancy, view: SchedulerView) -> None:
        self.tenancy = tenancy
        self.view = view  # the view of the decision it was last brought up to date in
        self.least: dict[tuple, dict[int, int]] = {}
        self.per_worker: dict[tuple, dict[int, int]] = {}
        self.open = 0
        self._kind_of: dict[str, tuple] = {}  # queued job id -> its kind
        # kind -> [queued jobs of it, its options] (the options kept alive, so that no other tuple takes
        # their id while the kind is here: the engine shares options tuples)
        self._kinds: dict[tuple, list] = {}
        queue = view.queue
        self.seq = max((job.queue_seq for job in queue), default=-1)
        self._join(queue)

    def _join(self, jobs) -> None:
        kind_of, kinds = self._kind_of, self._kinds
        for job in jobs:
            kind = (job.tenant, id(job.options), job.workers)
            kind_of[job.job_id] = kind
            entry = kinds.get(kind)
            if entry is not None:
                entry[0] += 1
                continue
            kinds[kind] = [1, job.options]
            self._count(job.tenant, job.options, job.workers, 1)

    def leave(self, job_ids) -> None:
        """The jobs ``job_ids`` leave the queue (started in this decision); ids not here are passed over."""
        kind_of, kinds = self._kind_of, self._kinds
        for job_id in job_ids:
            kind = kind_of.pop(job_id, None)
            if kind is None:
                continue
            entry = kinds[kind]
            entry[0] -= 1
            if not entry[0]:
                del kinds[kind]
                self._count(kind[0], entry[1], kind[2], -1)

    def _count(self, tenant, options, workers: int, step: int) -> None:
        """A kind of these options joins (``step`` 1) or leaves (-1) the amounts."""
        tenancy = self.tenancy
        limited, listed = tenancy._limited, tenancy._listed
        for o in options:
            c = o.cluster
            _bump(self.per_worker, (c, o.gpu_type), o.per_worker, step)
            if not limited[c]:
                self.open += step
                continue
            # (the key stands for its tenants: a listed name keys itself, and OTHER (None) is no listed
            # name, so Staged.admits reads the same room for it)
            _bump(self.least, (c, tenant if tenant in listed[c] else OTHER, o.gpu_type), o.per_worker * workers, step)

    def take_arrivals(self, view: SchedulerView) -> bool:
        """Take in the jobs that entered the queue since; False when the queue changed otherwise."""
        new = view.queued_after(self.seq)  # (newest first)
        if view.queue_length != len(self._kind_of) + len(new):
            return False
        if new:
            self.seq = new[0].queue_seq
            self._join(new)
        self.view = view
        return True

    def admitted(self, staged: Staged) -> bool:
        """Whether some key's room admits a queued kind's option (always, when ``open``): rooms admit
        less the more is asked, so the least amount per key tells."""
        if self.open:
            return True
        admits = staged.admits
        return any(admits(key, c, gpu_type, min(amounts)) for (c, key, gpu_type), amounts in self.least.items())

    def fits(self, free: Sequence[int], groups) -> bool:
        """Whether some queued kind's option has its GPUs per worker free on a node of its group."""
        for group, amounts in self.per_worker.items():
            least = min(amounts)
            for n in groups[group]:
                if free[n] >= least:
                    return True
        return False


def _bump(table: dict[tuple, dict[int, int]], key: tuple, amount: int, step: int) -> None:
    amounts = table.get(key)
    if amounts is None:
        amounts = table[key] = {}
    count = amounts.get(amount, 0) + step
    if count:
        amounts[amount] = count
    else:
        del amounts[amount]
        if not amounts:
            del table[key]


# -- reclaim by waiting: the owners' reservations (``reclaim = "wait"``) ------------------------------
class _Owners:
    """Whether a tenant's jobs may hold anything: its quota key (its own, or the pool's) has room in
    some cluster with quotas (``roomy``: :meth:`Staged.roomy_tenants`). A job of any other tenant is
    refused by its room on every option, as each needs at least one milli-GPU, so the holds pass
    over it unseen (asked once per tenant)."""

    __slots__ = ("tenancy", "roomy", "seen")

    def __init__(self, tenancy, roomy: set) -> None:
        self.tenancy = tenancy
        self.roomy = roomy
        self.seen: dict[str | None, bool] = {}

    def __call__(self, tenant: str | None) -> bool:
        known = self.seen.get(tenant)
        if known is None:
            tenancy, roomy = self.tenancy, self.roomy
            known = self.seen[tenant] = any(
                limited and (tenant if tenant in tenancy._listed[c] else OTHER) in roomy
                for c, limited in enumerate(tenancy._limited))
        return known


class _Holds:
    """The owners' holds of the latest decision, with what they were computed from (see
    :meth:`QuotaScheduler.owner_holds`): the ledger's version, the free GPUs, the quota keys with room,
    the rooms left after the holds (``staged``), the running jobs' ends, the queue's length and
    newest entry, and the (submit, index) of the last waiting job reserved for."""

    __slots__ = ("version", "free", "owners", "staged", "held", "ends", "first_end", "length", "seq", "last",
                 "failed")

    def __init__(self, version: int, free: tuple[int, ...], roomy: set, staged: Staged,
                 view: SchedulerView | None) -> None:
        self.version = version
        self.free = free
        self.owners = _Owners(staged.tenancy, roomy)
        self.staged = staged
        self.held: list[int] | None = None
        self.ends: list[tuple[float, int, JobView]] | None = None
        self.first_end = math.inf  # the earliest running job's end (once ends are read)
        self.length = -1 if view is None else view.queue_length
        queue = () if view is None else view.queue
        self.seq = queue[-1].queue_seq if queue else -1
        self.last: tuple[float, int] | None = None
        # (tenant, options, workers) of the jobs that got no reservation: rooms only shrink and holds
        # only grow while these holds are kept, so a job of the same tenant, options tuple (the engine
        # shares them) and workers gets none either, without a look (exact)
        self.failed: set[tuple] = set()

    def now_before(self, now: float) -> bool:
        """Whether every running job read still ends after ``now`` (else a tie with ``now`` may
        change which option is the earliest)."""
        return self.first_end > now

    def reserve_all(self, scheduler: QuotaScheduler, view: SchedulerView, waiting: Sequence[JobView],
                    free: Sequence[int], running: Sequence[JobView]) -> None:
        """Reserve for ``waiting`` (in (submit, index) order), after the holds already made."""
        tenancy = self.staged.tenancy
        trial_staged = self.staged
        groups = view.fleet.groups
        place = trial(scheduler.placement)
        held = self.held
        ends = self.ends
        failed = self.failed
        left: list[int] | None = None  # free less held, per node (kept up to date as holds are added)
        clamped: list[int] | None = None  # the same, at least 0
        for job in waiting:
            same = (job.tenant, id(job.options), job.workers)
            if same in failed:
                continue
            best = None
            for option in job.options:
                need = option.per_worker * job.workers
                if not tenancy.limited(option.cluster) or not trial_staged.admits(
                        job.tenant, option.cluster, option.gpu_type, need):
                    continue
                if ends is None:
                    # (end, index, job): a native tuple sort (indexes are unique: jobs never compared)
                    ends = sorted([(run_end(r), r.index, r) for r in running])
                    self.ends = ends
                    self.first_end = ends[0][0] if ends else math.inf
                if left is None:
                    left = list(free) if held is None else [f - h for f, h in zip(free, held)]
                    clamped = [x if x > 0 else 0 for x in left]
                found = reserve(groups[option.cluster, option.gpu_type], option.per_worker, job.workers,
                                left.copy(), clamped.copy(), ends, view.now, place)
                if found is not None and (best is None or found[0] < best[0]):
                    best = (found[0], found[1], option, need)
            if best is None:
                failed.add(same)
                continue
            _, nodes, option, need = best
            if held is None:
                held = self.held = [0] * len(free)
            for n in nodes:
                held[n] += option.per_worker
                if left is not None:
                    left[n] -= option.per_worker
                    clamped[n] = left[n] if left[n] > 0 else 0
            trial_staged.add(job.tenant, option.cluster, option.gpu_type, need)
        if waiting:
            self.last = (waiting[-1].submit, waiting[-1].index)

    def extend(self, scheduler: QuotaScheduler, view: SchedulerView) -> list[int] | None | bool:
        """The holds now, when only arrivals changed the queue since (nothing started or stopped:
        the caller checked the ledger's version): the old holds plus those of the new jobs, which
        sort after every job seen. False when that does not hold (the caller computes anew)."""
        new = view.queued_after(self.seq)  # (newest first)
        if view.queue_length != self.length + len(new):
            return False  # (a job left the queue)
        if new:
            owners = self.owners
            waiting = sorted((job for job in new if owners(job.tenant)),
                             key=lambda j: (j.submit, j.index))
            if waiting and self.last is not None and (waiting[0].submit, waiting[0].index) <= self.last:
                return False
            self.length = view.queue_length
            self.seq = new[0].queue_seq
            if waiting:  # (the running jobs are those of the holds kept: nothing started or stopped)
                self.reserve_all(scheduler, view, waiting, self.free, view.running)
        return self.held


def run_end(job: JobView) -> float:
    """When a running job ends if its known work is exact: the engine's own float (as the EASY
    profile computes it, simsched.policies.reservations.Profile.of)."""
    return job.run_start + (job.run_penalty + job.remaining_work / job.run_speed)


def reserve(group: Sequence[int], per_worker: int, workers: int, scratch: list[int], clamped: list[int],
            ends: Sequence[tuple[float, int, JobView]], now: float, place: Placement
            ) -> tuple[float, tuple[int, ...]] | None:
    """The earliest time (now, or a running job's end) at which a job fits ``group`` by ``place``
    if every running job ends at its known end, on the GPUs neither free to others' holds nor
    taken: (that time, the nodes), None if never. ``scratch``: per node, the free milli-GPUs less
    those held (may be below 0), ``clamped`` the same at least 0: the caller's copies, which this
    changes. ``ends``: (end, index, job), ascending.

    ``place`` is asked only when the group's GPUs left (free less held, at least 0 per node) hold
    as many workers as the job has, counting each node's whole workers (``slots``): a placement puts
    each worker on one node with room for it (placement.py's contract), so with fewer it fails, and
    the trial placement asked here changes nothing when it fails. So the answer is the same as
    asking at every end (the clamped free list and the slots are kept up to date node by node, not
    rebuilt)."""
    members = set(group)
    unit = per_worker if per_worker > 0 else 0  # (no job asks for 0 GPUs a worker: then any node holds any)
    slots = sum(clamped[n] // unit for n in members) if unit else workers
    if slots >= workers:
        nodes = place(group, per_worker, workers, list(clamped))
        if nodes is not None:
            return now, nodes
    i = 0
    count = len(ends)
    while i < count:
        t = ends[i][0]
        grew = False
        while i < count and ends[i][0] == t:
            job = ends[i][2]
            i += 1
            for n in job.running_nodes:
                if n in members:
                    scratch[n] += job.run_share
                    value = scratch[n] if scratch[n] > 0 else 0
                    if unit:
                        slots += value // unit - clamped[n] // unit
                    clamped[n] = value
                    grew = True
        if grew and slots >= workers:
            nodes = place(group, per_worker, workers, list(clamped))
            if nodes is not None:
                return max(t, now), nodes
    return None
