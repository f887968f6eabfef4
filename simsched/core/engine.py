"""The SimPy engine (SPEC §3): the only place that changes simulation state.

Arrival and queueing are engine bookkeeping (an arrival feeder process
releases jobs at their submit times into the queue). Each job's run is one
process (``job_lifecycle``), spawned at its first start: it runs until its
completion event or an interrupt (preemption), waits in the queue for its
next start, and so on until it finishes. Spawning at the first start rather
than at arrival saves one event per job (about 15% of run time) and changes
no result. Each node's GPUs are a :class:`NodeGpus` container of milli-GPUs.
One scheduler process waits for wake-ups and asks the policy for a decision.

Memory: a job has a Python record only while it is in play (from its arrival
until it finishes or is reported unscheduled); the jobs' inputs and final
fields live in numpy columns (:class:`simsched.core.jobstore.JobStore`) and the
event log in compact columns (:class:`simsched.core.eventlog.EventLog`), so a
million-job run holds a few hundred bytes per job.

Same-timestamp order (SPEC §3) comes from SimPy's (time, priority, id)
event order: completions are scheduled URGENT, arrivals NORMAL, and the
decision wake-up at :data:`DECISION_PRIORITY` (after both), at most once
until it has run.
"""

from __future__ import annotations

import gc
import itertools
import math
import time
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from heapq import heappush

import numpy as np
import simpy
from simpy.core import EmptySchedule
from simpy.events import NORMAL, URGENT, Event

from simsched.core.contract import Decision, Option, Scheduler
from simsched.core.errors import DecisionError
from simsched.core.eventlog import ARRIVE, FINISH, PREEMPT, START, EventLog
from simsched.core.eventlog import UNSCHEDULED as UNSCHEDULED_EVENT
from simsched.core.jobstore import (
    DONE,
    INFEASIBLE,
    PENDING,
    QUEUED,
    RUNNING,
    UNFINISHED,
    UNSCHEDULED,
    JobRecord,
    JobStore,
)
from simsched.core.model import MILLI, Fleet, JobSpec, speed_factor, to_milli, worker_share
from simsched.core.tenancy import Tenancy

__all__ = ["DONE", "INFEASIBLE", "PENDING", "QUEUED", "RUNNING", "UNFINISHED", "UNSCHEDULED", "Engine", "EngineConfig",
           "JobRecord", "View"]

#: SimPy priority of the decision wake-up: after completions (URGENT=0) and arrivals (NORMAL=1).
DECISION_PRIORITY = 2
#: each engine's base for ``running_changes``: 2**48 changes apart (View)
_ENGINE_SERIALS = itertools.count(1)

class Completion(Event):
    """A timeout that fires before same-time arrivals (URGENT priority)."""

    def __init__(self, env: simpy.Environment, delay: float) -> None:
        super().__init__(env)
        self._ok = True
        self._value = None
        env.schedule(self, URGENT, delay)


class NodeGpus(simpy.Container):
    """A node's GPUs: a SimPy container of milli-GPUs with immediate take/give.

    The engine only takes capacity it has checked is free, so it needs no Get
    event to wait on; ``take``/``give`` change the level at once and save the
    two events per job that ``get``/``put`` would schedule (about 10% of a run).
    ``get``/``put`` still work for any other process, and ``give`` wakes their
    waiting gets.
    """

    def take(self, amount: int) -> None:
        if amount > self._level:
            raise DecisionError(f"node container: taking {amount} of {self._level} milli-GPUs")
        self._level -= amount

    def give(self, amount: int) -> None:
        if self._level + amount > self._capacity:
            raise DecisionError(f"node container: giving back {amount} would exceed {self._capacity}")
        self._level += amount
        if self.get_queue:
            self._trigger_get(None)


@dataclass(frozen=True)
class FleetState:
    """Static node facts handed to policies (implements ``FleetView``)."""

    node_cluster: tuple[int, ...]
    node_type: tuple[str, ...]
    node_capacity: tuple[int, ...]
    cluster_names: tuple[str, ...]
    groups: dict[tuple[int, str], tuple[int, ...]]
    heterogeneous: bool


class View:
    """The read-only state passed to ``Scheduler.decide`` (implements ``SchedulerView``).

    ``queue`` and ``running`` are built on first use: many decisions never look at
    all of them, and the queue may hold thousands of jobs. ``running_changes`` (not part of
    the ``SchedulerView`` protocol; None when not known) counts the starts, finishes and
    preemptions of its engine, from a base of its own: a policy that mirrors the running jobs
    between decisions (simsched.policies.easy.RunningEnds) checks its mirror with it.
    """

    __slots__ = ("now", "fleet", "free", "_queue", "_queue_tuple", "_running", "_running_tuple", "tenants",
                 "running_changes")

    def __init__(self, now: float, fleet: FleetState, queue: dict[str, JobRecord],
                 running: dict[str, JobRecord], free: Sequence[int], tenants: Tenancy | None = None,
                 running_changes: int | None = None) -> None:
        self.running_changes = running_changes
        self.now = now
        self.fleet = fleet
        self.free = free
        self.tenants = tenants  # quotas and usage per tenant (simsched.core.tenancy), None without quotas
        self._queue = queue
        self._queue_tuple: tuple[JobRecord, ...] | None = None
        self._running = running
        self._running_tuple: tuple[JobRecord, ...] | None = None

    @property
    def queue(self) -> tuple[JobRecord, ...]:
        """Queued jobs in the order they (re-)entered the queue."""
        if self._queue_tuple is None:
            self._queue_tuple = tuple(self._queue.values())
        return self._queue_tuple

    @property
    def queue_length(self) -> int:
        return len(self._queue)

    def queued_after(self, seq: int) -> list[JobRecord]:
        """Jobs that entered the queue after ``queue_seq`` ``seq``, newest first (cheap: reads the tail)."""
        out = []
        for job in reversed(self._queue.values()):
            if job.queue_seq <= seq:
                break
            out.append(job)
        return out

    @property
    def running(self) -> tuple[JobRecord, ...]:
        """Running jobs in start order."""
        if self._running_tuple is None:
            self._running_tuple = tuple(self._running.values())
        return self._running_tuple

    def queued_time(self, job: JobRecord) -> float:
        if job.status == QUEUED:
            return job.wait_so_far + (self.now - job.queued_since)
        return job.wait_so_far

    def remaining_time(self, job: JobRecord, speed: float = 1.0) -> float:
        if job.status == RUNNING:
            done = max(0.0, self.now - job.run_start - job.run_penalty) * job.run_speed
            return max(0.0, job.remaining_work - done) / speed
        return job.remaining_work / speed


@dataclass(frozen=True)
class EngineConfig:
    heterogeneous: bool = False
    restrict_to_home: bool = False
    restart_penalty_s: float = 0.0
    interval_s: float | None = None


@dataclass(frozen=True)
class Progress:
    """A snapshot for progress displays (the core never prints)."""

    now: float
    horizon: float
    finished: int
    total: int
    queued: int
    running: int
    events: int
    wall_s: float


def job_lifecycle(env: simpy.Environment, engine: Engine, job: JobRecord, run_time: float):
    """run -> (preempted -> queue -> run)* -> finish; the engine starts it at the job's first start."""
    while True:
        try:
            yield Completion(env, run_time)
            break
        except simpy.Interrupt:
            pass
        while True:  # preempted: wait in the queue for the next start
            try:
                run_time = yield job.wakeup
                break
            except simpy.Interrupt:
                continue
    engine.finish(job)


def arrival_feeder(env: simpy.Environment, engine: Engine, submit: np.ndarray, chunk: int = 4096):
    """Releases jobs at their submit times, in input order within one timestamp.

    ``submit`` is the numpy column of submit times; the order is made a chunk at a time.
    """
    order = np.argsort(submit, kind="stable")  # by (submit, index)
    record = engine.jobs.record
    for first in range(0, len(order), chunk):
        indices = order[first:first + chunk]
        for index, at in zip(indices.tolist(), submit[indices].tolist()):
            if at > env.now:
                yield env.timeout(at - env.now)
            engine.arrive(record(index))


def scheduler_loop(env: simpy.Environment, engine: Engine):
    """The one scheduler process: wait for a wake-up, decide, repeat."""
    while True:
        yield engine.next_wakeup()
        engine.decide()


def periodic_rounds(env: simpy.Environment, engine: Engine, interval_s: float):
    """Asks for a decision every ``interval_s`` while jobs are outstanding."""
    while engine.outstanding > 0:
        yield env.timeout(interval_s)
        if not engine.running and engine.arrivals_left == 0 and not engine._wakeup_pending:
            # nothing can change any more: a round would decide the same again (with a decision
            # pending, e.g. after the last running job finished at this very time, it may start jobs)
            return
        engine.request_decision()


def quota_changes(env: simpy.Environment, engine: Engine, times: Sequence[float]):
    """Asks for a decision whenever dated quotas change, while jobs are outstanding."""
    for at in times:
        if at <= env.now:
            continue
        if engine.outstanding <= 0:
            return
        yield env.timeout(at - env.now)
        engine.request_decision()


def _event_at(env: simpy.Environment, when: float) -> Event:
    """A timeout that fires at exactly ``when``. ``env.timeout(delay)`` fires at ``now + delay``,
    and with ties rounded to even some float times are no such sum; this schedules the event as
    a Timeout is scheduled (NORMAL priority, the next event id), at the given time."""
    event = Event(env)
    event._ok = True
    event._value = None
    heappush(env._queue, (when, NORMAL, next(env._eid), event))
    return event


def skipping_rounds(env: simpy.Environment, engine: Engine, interval_s: float):
    """:func:`periodic_rounds` for a scheduler with ``quiet_until`` (``las``): the same rounds at the
    same times (``now + interval_s`` again and again), but a round that would decide nothing is
    counted (``Engine.decisions``) instead of run.

    After a decision the scheduler says, about the state that decision left, the earliest
    time its decisions can start or preempt anything by themselves (``quiet_until(view)``);
    until then and until the next scheduled event (an arrival, a finish) the state is fixed
    and every round would decide nothing. Rounds at those grid times are skipped;
    the process wakes at the next one and applies :func:`periodic_rounds`' stop rule; it asks
    for a decision unless nothing happened since the last decision and that one was quiet
    past this round.
    """
    if engine.outstanding <= 0:
        return
    while True:  # periodic_rounds' loop condition is tested where it tests it: after each round's request
        now = env.now
        at = now + interval_s
        quiet = engine.quiet_until()
        if at < quiet and (engine.running or engine.arrivals_left):
            counted = 1 if engine.queue or engine.running else 0  # Engine.decide counts these
            horizon = min(quiet, env.peek())  # an event is always scheduled while jobs run or arrive
            while at < horizon:
                engine.rounds += 1
                engine.decisions += counted
                at = at + interval_s
        engine.rounds += 1
        yield env.timeout(interval_s) if at == now + interval_s else _event_at(env, at)
        if not engine.running and not engine._wakeup_pending and engine.rounds_end_at(engine.rounds - 1, at, interval_s):
            return
        if not engine._wakeup_pending and env.peek() > at and at < engine.quiet_until():
            # nothing happened since the last decision (every event asks for one) nor will at this
            # time, and that decision did nothing and was quiet past this round: so would this one
            engine.decisions += 1 if engine.queue or engine.running else 0
            if engine.outstanding <= 0:
                return
            continue
        engine.request_decision()
        last = engine.outstanding <= 0  # periodic_rounds tests its loop condition before the decision
        yield engine.next_wakeup()  # after the scheduler loop, which waits on it first, has decided
        if last:
            return


@contextmanager
def fewer_gc_passes() -> Iterator[None]:
    """Raise the cyclic GC's generation-0 threshold for a while.

    Building and running a simulation allocates millions of short-lived,
    acyclic objects (records, events); at the default threshold (700) the GC
    runs thousands of times for nothing, about 15% of a run.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], 20_000), *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)


class Engine:
    """Holds the SimPy environment, node containers, queue and job records."""

    def __init__(self, fleet: Fleet, jobs: Sequence[JobSpec], scheduler: Scheduler,
                 config: EngineConfig = EngineConfig(), tenancy: Tenancy | None = None) -> None:
        self.env = simpy.Environment()
        self.fleet = fleet
        self.config = config
        self.scheduler = scheduler
        names = fleet.cluster_names
        capacity = tuple(n.gpus * MILLI for n in fleet.nodes)
        groups: dict[tuple[int, str], list[int]] = {}
        for node in fleet.nodes:
            groups.setdefault((node.cluster, node.gpu_type), []).append(node.index)
        self.fleet_state = FleetState(
            node_cluster=tuple(n.cluster for n in fleet.nodes),
            node_type=tuple(n.gpu_type for n in fleet.nodes),
            node_capacity=capacity,
            cluster_names=names,
            groups={k: tuple(v) for k, v in groups.items()},
            heterogeneous=config.heterogeneous,
        )
        self.containers = [NodeGpus(self.env, capacity=c, init=c) for c in capacity]
        self.free = list(capacity)  # mirrors the containers' levels for cheap reads
        self._options_by_shape: dict[tuple, tuple[Option, ...]] = {}
        with fewer_gc_passes():
            self.jobs = JobStore(jobs, self._home, self._options_for_spec)
        self.queue: dict[str, JobRecord] = {}  # insertion order = queue order
        self._queue_seq = -1
        self.running: dict[str, JobRecord] = {}
        # starts + finishes + preemptions, from a base no other engine of this process uses (View)
        self.running_changes = next(_ENGINE_SERIALS) << 48
        self.events = EventLog(self.jobs.job_ids)
        self.outstanding = len(self.jobs)
        self.arrivals_left = len(self.jobs)
        self.finished = 0
        self.decisions = 0
        self._wakeup: Event = self.env.event()
        self._wakeup_pending = False
        self.env.process(arrival_feeder(self.env, self, self.jobs.submit))
        self.env.process(scheduler_loop(self.env, self))
        interval = config.interval_s or getattr(scheduler, "interval_s", None)
        self._quiet = getattr(scheduler, "quiet_until", None)  # see skipping_rounds
        self._quiet_view: View | None = None  # the last decision's view if it did nothing, else None
        self._quiet_always = False  # the last decision found nothing queued or running
        self.rounds = 0  # periodic rounds so far, skipped ones too
        self._arrivals: tuple[array, list[bool]] | None = None  # see _arrival_table
        self.tenancy = tenancy  # tenants' quotas and usage; None: nobody is limited (quota = "none")
        if tenancy is not None and tenancy.change_times:
            self.env.process(quota_changes(self.env, self, tenancy.change_times))
        if interval:
            rounds = skipping_rounds if callable(self._quiet) else periodic_rounds
            self.env.process(rounds(self.env, self, float(interval)))

    # -- setup ---------------------------------------------------------------
    @property
    def by_id(self) -> Mapping[str, JobRecord]:
        """job id -> record, for any job (see :class:`JobStore`)."""
        return self.jobs.by_id

    def _home(self, spec: JobSpec) -> int | None:
        names = self.fleet_state.cluster_names
        if spec.home_cluster is not None and spec.home_cluster in names:
            return names.index(spec.home_cluster)
        return 0 if len(names) == 1 else None

    def _options_for_spec(self, spec: JobSpec, home: int | None) -> tuple[Option, ...]:
        restrict = home if self.config.restrict_to_home else None
        shape = (spec.gpu_type, spec.gpus, spec.workers, spec.allowed_types, restrict, spec.model)
        options = self._options_by_shape.get(shape)
        if options is None:
            options = self._options_by_shape[shape] = self._options(spec, home)
        return options

    def _options(self, spec: JobSpec, home: int | None) -> tuple[Option, ...]:
        """Every (cluster, type) where all workers fit on empty nodes; fastest type first."""
        types = self.fleet.gpu_types
        ref = types.get(spec.gpu_type) if spec.gpu_type else None
        options = []
        for (cluster, type_name), nodes in self.fleet_state.groups.items():
            if self.config.restrict_to_home and home is not None and cluster != home:
                continue
            share = worker_share(spec, types[type_name], ref, self.config.heterogeneous)
            if share is None:
                continue
            per_worker = to_milli(share)
            slots = sum(self.fleet_state.node_capacity[n] // per_worker for n in nodes)
            if slots >= spec.workers:
                options.append(Option(cluster, type_name, per_worker,
                                      speed_factor(types[type_name], ref, spec.model)))
        options.sort(key=lambda o: (-o.speed, o.cluster))
        return tuple(options)

    # -- events ----------------------------------------------------------------
    def arrive(self, job: JobRecord) -> None:
        now = self.env.now
        self.arrivals_left -= 1
        self.events.add(now, ARRIVE, job.index)
        if not job.options:
            job.status = INFEASIBLE
            job.reason = "fits no allowed node (too large or no allowed GPU type)"
            self.events.add(now, UNSCHEDULED_EVENT, job.index, reason=job.reason)
            self.outstanding -= 1
            self.jobs.retire(job)
            return
        job.status = QUEUED
        job.queued_since = now
        self._enqueue(job)
        self.request_decision()

    def _enqueue(self, job: JobRecord) -> None:
        job.queue_seq = self._queue_seq = self._queue_seq + 1
        self.queue[job.job_id] = job

    def finish(self, job: JobRecord) -> None:
        now = self.env.now
        self._account_run(job, now)
        job.remaining_work = 0.0
        self._release(job)
        job.status = DONE
        job.end = now
        job.process = job.wakeup = None  # a finished job's SimPy objects are garbage (memory on long runs)
        del self.running[job.job_id]
        self.running_changes += 1
        self.outstanding -= 1
        self.finished += 1
        self.events.add(now, FINISH, job.index)
        self.jobs.retire(job)  # its fields move to the columns; the record is dropped
        self.request_decision()

    def request_decision(self) -> None:
        """Schedule one decision after every completion and arrival at this timestamp."""
        if not self._wakeup_pending:
            self._wakeup_pending = True
            wakeup = self._wakeup
            wakeup._ok = True
            wakeup._value = None
            self.env.schedule(wakeup, DECISION_PRIORITY)

    def next_wakeup(self) -> Event:
        """The event the scheduler process waits on (possibly already triggered)."""
        return self._wakeup

    # -- decisions -------------------------------------------------------------
    def decide(self) -> None:
        self._wakeup = self.env.event()
        self._wakeup_pending = False
        self._quiet_view = None
        self._quiet_always = not self.queue and not self.running
        if self._quiet_always:
            return
        tenancy = self.tenancy
        if tenancy is not None:
            tenancy.update(self.env.now)
        view = View(self.env.now, self.fleet_state, self.queue, self.running, tuple(self.free), tenancy,
                    self.running_changes)
        decision = self.scheduler.decide(view)
        self.decisions += 1
        if decision.preempts or decision.starts:
            self.apply(decision)
            if self._quiet is not None:  # quiet_until is asked about the state the decision left
                self._quiet_view = View(self.env.now, self.fleet_state, self.queue, self.running, tuple(self.free),
                                        tenancy, self.running_changes)
        else:
            self._quiet_view = view

    def quiet_until(self) -> float:
        """Until when decisions would change nothing if no event came first (see
        :func:`skipping_rounds`): from the scheduler, about the state the last decision left."""
        if self._quiet_always:
            return math.inf
        if self._quiet_view is None:
            return -math.inf
        return self._quiet(self._quiet_view)

    def rounds_end_at(self, k: int, at: float, interval_s: float) -> bool:
        """Whether :func:`periodic_rounds` ends the rounds at its round ``k`` (from 0, at time
        ``at``) when nothing runs and this process saw no decision due: it sees no arrival left
        (:meth:`arrivals_left_at_round`), and none of the arrivals at this very time that it saw
        asked for a decision (an arrival does unless its job fits nowhere; this process, whose
        timeouts were made at other times, may fire before them where that one fires after)."""
        if self.arrivals_left_at_round(k, at, interval_s):
            return False
        times, fits = self._arrival_table()
        return not any(fits[bisect_left(times, at):bisect_right(times, at)])

    def arrivals_left_at_round(self, k: int, at: float, interval_s: float) -> int:
        """Arrivals still to come as :func:`periodic_rounds` would see them at its round ``k``
        (from 0, at time ``at``), with nothing running.

        There, a round that finds nothing running, no arrival left and no decision due (an
        arrival asks for one unless its job fits nowhere) ends the rounds. When
        the last arrivals fall exactly on the round's time, whether the round sees them
        depends on SimPy's order of the two timeouts: the one created first fires first.
        The arrival's was created at the previous arrival time, the round's at the
        previous round; at a tie the same question goes one step back, and at time 0 the
        arrival feeder started first.
        """
        times = self._arrival_table()[0]
        after = len(times) - bisect_right(times, at)
        on_time = bisect_right(times, at) - bisect_left(times, at)
        if not on_time or after:
            return after + on_time
        resumes = sorted({t for t in times if t > 0.0})  # when the feeder wakes from a timeout
        rounds, t = [], 0.0  # the rounds' times, as the repeated timeouts produce them (a rare case)
        for _ in range(k + 1):
            t = t + interval_s
            rounds.append(t)
        j = bisect_left(resumes, at)
        while True:  # does the arrival timeout for resumes[j] fire before the round at rounds[k]?
            if j == 0:
                return after  # created at time 0, before the rounds' process started
            if k == 0:
                return after + on_time  # the round's was created at time 0, the arrival's later
            arrival_made, round_made = resumes[j - 1], rounds[k - 1]
            if arrival_made != round_made:
                return after if arrival_made < round_made else after + on_time
            j, k = j - 1, k - 1

    def infeasible(self) -> np.ndarray:
        """Indices (input order) of the jobs no node can ever hold under this run's placement
        rules: they are taken out at arrival (known before the run starts)."""
        jobs = self.jobs
        empty = np.array([len(options) == 0 for options in jobs.option_sets], dtype=bool)
        return np.flatnonzero(empty[jobs.option_set]) if len(jobs) else np.zeros(0, np.int64)

    def _arrival_table(self) -> tuple[array, list[bool]]:
        """Each job's arrival time as :func:`arrival_feeder` produces it (sorted), and whether
        that arrival's job fits somewhere (it then asks for a decision)."""
        if self._arrivals is None:
            now, times = 0.0, array("d")
            jobs = self.jobs
            order = np.argsort(jobs.submit, kind="stable")  # the feeder's order; columns, no records
            for at in jobs.submit[order].tolist():
                if at > now:
                    now = now + (at - now)
                times.append(now)
            fits = np.array([len(options) > 0 for options in jobs.option_sets], dtype=bool)
            self._arrivals = (times, fits[jobs.option_set[order]].tolist())
        return self._arrivals

    def apply(self, decision: Decision) -> None:
        """Validate and carry out a decision; refuse anything that over-allocates."""
        if not isinstance(decision, Decision):
            raise DecisionError(f"scheduler returned {type(decision).__name__}, expected a Decision")
        for job_id in decision.preempts:
            job = self.running.get(job_id) if isinstance(job_id, str) else None
            if job is None or job.status != RUNNING:
                raise DecisionError(f"cannot preempt job {job_id!r}: it is not running")
            self.preempt(job)
        for start in decision.starts:
            job = self.queue.pop(start.job_id, None)
            if job is None:
                raise DecisionError(f"cannot start job {start.job_id!r}: it is not queued")
            self.start(job, start.nodes)

    def _option_for(self, job: JobRecord, nodes: tuple[int, ...]) -> Option:
        fleet = self.fleet_state
        if len(nodes) != job.workers:
            raise DecisionError(f"job {job.job_id!r} needs {job.workers} nodes (one per worker), got {len(nodes)}")
        first = nodes[0]
        if not 0 <= first < len(fleet.node_type):
            raise DecisionError(f"job {job.job_id!r}: node {first} does not exist")
        cluster, type_name = fleet.node_cluster[first], fleet.node_type[first]
        for option in job.options:
            if option.cluster == cluster and option.gpu_type == type_name:
                break
        else:
            raise DecisionError(f"job {job.job_id!r} may not run on node {first} "
                                f"({type_name} in cluster {fleet.cluster_names[cluster]})")
        for n in nodes:
            if not 0 <= n < len(fleet.node_type):
                raise DecisionError(f"job {job.job_id!r}: node {n} does not exist")
            if fleet.node_type[n] != type_name or fleet.node_cluster[n] != cluster:
                raise DecisionError(f"job {job.job_id!r}: node {n} differs in GPU type or cluster "
                                    f"from node {first}; all workers run on one type in one cluster")
        return option

    def start(self, job: JobRecord, nodes: tuple[int, ...]) -> None:
        nodes = tuple(nodes)
        option = self._option_for(job, nodes)
        share = option.per_worker
        need: dict[int, int] = {}
        for n in nodes:
            need[n] = need.get(n, 0) + share
        free = self.free
        for n, amount in need.items():
            if amount > free[n]:
                raise DecisionError(f"starting job {job.job_id!r} would over-allocate node {n}: "
                                    f"needs {amount / MILLI:g} GPUs, {free[n] / MILLI:g} free")
        for n, amount in need.items():
            free[n] -= amount
            self.containers[n].take(amount)
        now = self.env.now
        job.wait_so_far += now - job.queued_since
        if job.status == QUEUED and math.isnan(job.first_start):
            job.first_start = now
        penalty = self.config.restart_penalty_s if job.preemptions else 0.0
        job.status = RUNNING
        job.running_nodes = nodes
        job.running_cluster = option.cluster
        job.run_start = now
        job.run_speed = option.speed
        job.run_share = share
        job.run_penalty = penalty
        if not job.clusters or job.clusters[-1] != option.cluster:
            job.clusters.append(option.cluster)
        job.gpu_type_used = option.gpu_type
        if self.tenancy is not None:
            self.tenancy.hold(job.tenant, option.cluster, option.gpu_type, share * job.workers)
        self.running[job.job_id] = job
        self.running_changes += 1
        self.events.add(now, START, job.index, nodes)
        run_time = penalty + job.remaining_work / option.speed
        if job.process is None:
            job.process = self.env.process(job_lifecycle(self.env, self, job, run_time))
        else:
            job.wakeup.succeed(run_time)

    def preempt(self, job: JobRecord) -> None:
        """Stop a running job, keep its finished work, and put it back in the queue."""
        now = self.env.now
        self._account_run(job, now)
        self._release(job)
        del self.running[job.job_id]
        self.running_changes += 1
        job.status = QUEUED
        job.preemptions += 1
        job.queued_since = now
        job.wakeup = self.env.event()
        job.process.interrupt("preempted")
        self._enqueue(job)
        self.events.add(now, PREEMPT, job.index)

    def _account_run(self, job: JobRecord, now: float) -> None:
        elapsed = now - job.run_start
        useful = max(0.0, elapsed - job.run_penalty)
        job.remaining_work = max(0.0, job.remaining_work - useful * job.run_speed)
        gpus_held = job.run_share * job.workers / MILLI
        job.gpu_seconds += elapsed * gpus_held
        job.attained_service += elapsed * job.gpus

    def _release(self, job: JobRecord) -> None:
        share = job.run_share
        if self.tenancy is not None:
            self.tenancy.release(job.tenant, job.running_cluster, job.gpu_type_used, share * job.workers)
        for n in job.running_nodes:
            self.free[n] += share
            self.containers[n].give(share)
        job.running_nodes = ()
        job.running_cluster = None

    # -- running -----------------------------------------------------------------
    def run(self, progress: Callable[[Progress], None] | None = None,
            refresh_s: float = 0.1) -> bool:
        """Run to the end; returns False when interrupted (Ctrl-C) with a partial state.

        ``progress`` gets a snapshot about every ``refresh_s`` seconds of wall time (the
        clock is read every few events: an event may be a slow decision, e.g. MCT's).
        """
        env = self.env
        step = env.step
        horizon = float(self.jobs.submit.max()) if len(self.jobs) else 0.0
        started = last = time.perf_counter()
        every = 20000 if progress is None else 16  # events between clock reads
        clock = time.perf_counter
        events = 0
        done_in_chunk = 0
        try:
            with fewer_gc_passes():
                while True:
                    for done_in_chunk in range(every):  # noqa: B007 (read after EmptySchedule)
                        step()
                    events += every
                    if progress is not None and clock() - last >= refresh_s:
                        last = clock()
                        progress(self.snapshot(horizon, events, started))
        except EmptySchedule:
            events += done_in_chunk
        except KeyboardInterrupt:
            return False
        self._close_unfinished()
        if progress is not None:
            progress(self.snapshot(horizon, events, started))
        return True

    def snapshot(self, horizon: float, events: int, started: float) -> Progress:
        return Progress(self.env.now, horizon, self.finished, len(self.jobs), len(self.queue),
                        len(self.running), events, time.perf_counter() - started)

    def _close_unfinished(self) -> None:
        """Jobs still queued when nothing is left to happen are ``unfinished``: their wait runs to
        the end of the run and ``end`` holds that time (wait and JCT are censored there, docs/engine.md)."""
        now = self.env.now
        for job in self.queue.values():
            job.status = UNFINISHED
            job.wait_so_far += now - job.queued_since
            job.end = now
            job.reason = ("never started (the scheduler left it queued until the end)" if job.preemptions == 0
                          else "preempted and never restarted (the scheduler left it queued until the end)")
            self.events.add(self.env.now, UNSCHEDULED_EVENT, job.index, reason=job.reason)
            self.jobs.retire(job)
        self.queue = {}
