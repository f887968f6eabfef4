"""EVO-GP online (SPEC §4, §6): the planner-driven schedulers and the MCT allocation.

The planner works on *groups*: the nodes of one GPU type in one cluster (a
homogeneous cluster is one group). A group is the paper's cluster p, so the
allocation chooses a group per job and heterogeneous fleets need no special
case: per-group units per worker and run times differ.

- :class:`PlannerScheduler` (``mct-gp``, ``evo-gp``): each decision computes
  the priority f(j) of every schedulable job, assigns jobs to groups by MCT or
  by the allocation EA (Algorithm 1), plans every group (Algorithm 2) and
  starts the jobs planned at ``now`` on their planned nodes.
- :class:`MctAllocation` (``allocation = "mct"``, ``mct-spark`` ...): the
  classic pipeline with MCT choosing each queued job's cluster at each decision,
  by the planner's finish time, the queue order giving the planner's priority.
- :class:`GpOrdering` (``policy = "gp"``): a queue ordering by a priority graph.

When plans are made (``decide_on``, docs/evo.md "The trigger"): with ``"event"`` (the
default) every decision, after any arrival or completion, allocates and plans anew. With
``"arrival"`` (the paper: the scheduler "is triggered upon each job arrival") the allocation
and the planner run only at a decision whose queue holds a job the last plan did not place (a
new arrival; planner schedulers preempt only their own moved jobs, which the plan places).
Between arrivals each planned job starts at its planned start S_j on its planned nodes. Every
S_j is ``now`` or the finish time of a job the plan placed before it (Eq. 12), run times are
known and the engine decides after every completion, so each S_j is a decision time and the
plan stays exact until the next arrival; a planned job whose nodes are not yet free at its S_j
(float rounding of equal times, or a zero-duration job's nodes held until its finish event at
the same instant) starts at the next decision that finds them free. For ``mct-<policy>``
``"arrival"`` re-decides the MCT clusters only when the queue holds a job it has not allocated
(an arrival, or a job a preemptive policy put back); the policy dispatches at every event.

Who may move (SPEC §6): queued jobs always; a running job only under
``evo-gp`` with ``migrate = true`` (the default), only if it runs outside its
home cluster (running at home = not preemptible). With ``migrate = false``
every running job keeps its nodes, so evo-gp never preempts. A running job that stays in its group keeps its nodes; one
assigned elsewhere is preempted (progress kept) and starts in its new group
when the plan puts it at ``now``.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx
import numpy as np

from simsched.core.contract import Decision, JobView, SchedulerView, Start
from simsched.evo.allocation import AllocationInstance, ClusterState, evolve, mct_assign
from simsched.evo.gp_kernel import compiled_source, kernel_source
from simsched.evo.instance import trusted_state
from simsched.evo.planner import plan_trusted
from simsched.evo.priority import Evaluator, infix, load_priority
from simsched.policies.allocation import Allocation

#: a group's stand-in units per worker for a job that may not run there (masked by ``allowed``)
_NOT_ALLOWED = 1 << 40


@dataclass(frozen=True, slots=True)
class Group:
    cluster: int
    gpu_type: str
    nodes: tuple[int, ...]


def groups_of(view: SchedulerView) -> tuple[Group, ...]:
    return tuple(Group(c, t, nodes) for (c, t), nodes in view.fleet.groups.items())


def features(jobs: Sequence[JobView], view: SchedulerView) -> dict[str, np.ndarray]:
    """The GP terminals per job: d remaining duration (reference s), q queued time, u weight, g GPUs."""
    return {
        "d": np.array([view.remaining_time(j) for j in jobs], dtype=np.float64),
        "q": np.array([view.queued_time(j) for j in jobs], dtype=np.float64),
        "u": np.array([j.weight for j in jobs], dtype=np.float64),
        "g": np.array([j.gpus for j in jobs], dtype=np.float64),
    }


class Layout:
    """The fleet's groups as the planner sees them: static, so a scheduler builds this once
    (:meth:`of`) instead of at every decision. ``capacity`` arrays are shared: read only."""

    __slots__ = ("fleet", "groups", "index", "group_of_node", "position", "capacity")

    def __init__(self, view: SchedulerView) -> None:
        self.fleet = view.fleet
        self.groups = groups_of(view)
        self.index = {(g.cluster, g.gpu_type): p for p, g in enumerate(self.groups)}
        self.group_of_node = {n: p for p, g in enumerate(self.groups) for n in g.nodes}
        self.position = [{n: i for i, n in enumerate(g.nodes)} for g in self.groups]
        self.capacity = [np.array([view.fleet.node_capacity[n] for n in g.nodes], dtype=np.int64)
                         for g in self.groups]

    @staticmethod
    def of(view: SchedulerView, last: Layout | None) -> Layout:
        """``last`` when it is this view's fleet's, else a new one."""
        return last if last is not None and last.fleet is view.fleet else Layout(view)


class Problem:
    """One decision's planning data over the fleet's groups."""

    def __init__(self, view: SchedulerView, jobs: Sequence[JobView], priority: np.ndarray,
                 weights: tuple[float, float, float], fixed: Sequence[JobView], kind: str = "eq5",
                 w: float = 0.5, restart_penalty_s: float = 0.0, layout: Layout | None = None) -> None:
        self.view = view
        self.layout = layout = Layout.of(view, layout)
        self.groups = layout.groups
        self.jobs = list(jobs)
        self.priority = np.asarray(priority, dtype=np.float64)
        index = layout.index
        self.group_of_node = layout.group_of_node
        n_jobs, n_groups = len(self.jobs), len(self.groups)
        self.per_worker = np.full((n_jobs, n_groups), _NOT_ALLOWED, dtype=np.int64)
        self.duration = np.zeros((n_jobs, n_groups), dtype=np.float64)
        self.allowed = np.zeros((n_jobs, n_groups), dtype=bool)
        self.overhead = np.zeros((n_jobs, n_groups), dtype=np.float64)
        for j, job in enumerate(self.jobs):
            remaining = view.remaining_time(job)
            here = self.group_of_node[job.running_nodes[0]] if job.running_nodes else -1
            for option in job.options:
                p = index[option.cluster, option.gpu_type]
                self.per_worker[j, p] = option.per_worker
                self.duration[j, p] = remaining / option.speed
                # the engine charges restart_penalty_s to every restart after a preemption: to a
                # preempted queued job anywhere, to a running job moved out of its group
                if restart_penalty_s and ((here < 0 and job.preemptions) or (here >= 0 and p != here)):
                    self.duration[j, p] += restart_penalty_s
                    self.overhead[j, p] = restart_penalty_s
                self.allowed[j, p] = True
        self.workers = np.array([j.workers for j in self.jobs], dtype=np.int64)
        self.weight = np.array([j.weight for j in self.jobs], dtype=np.float64)
        self.queued = np.array([view.queued_time(j) for j in self.jobs], dtype=np.float64)
        self.current = np.array([self.group_of_node[j.running_nodes[0]] if j.running_nodes else -1
                                 for j in self.jobs], dtype=np.int64)
        self.weights = weights
        self.kind = kind
        self.w = w
        self.fixed = list(fixed)
        self._fixed_states: tuple[ClusterState | None, ...] | None = None  # set by instance()

    def cluster_states(self, fixed: Sequence[JobView], only: set[int] | None = None) -> tuple[ClusterState | None, ...]:
        """Per group: node capacities and the running jobs that keep their nodes there
        (with ``only``, those groups; None for the others)."""
        view = self.view
        by_group: list[list[JobView]] = [[] for _ in self.groups]
        for job in fixed:
            by_group[self.group_of_node[job.running_nodes[0]]].append(job)
        states: list[ClusterState | None] = []
        for p, (g, jobs) in enumerate(zip(self.groups, by_group)):
            if only is not None and p not in only:
                states.append(None)
                continue
            position = self.layout.position[p]
            usage = np.zeros((len(jobs), len(g.nodes)), dtype=np.int64)
            for k, job in enumerate(jobs):
                for n in job.running_nodes:
                    usage[k, position[n]] += job.run_share
            states.append(trusted_state(  # (arrays of its types, built here: its checks would pass)
                self.layout.capacity[p],
                np.array([view.now + _time_left(job, view) for job in jobs], dtype=np.float64),
                usage,
                np.array([job.weight for job in jobs], dtype=np.float64),
                np.array([view.queued_time(job) for job in jobs], dtype=np.float64),
            ))
        return tuple(states)

    def instance(self) -> AllocationInstance:
        self._fixed_states = self.cluster_states(self.fixed)  # decision() reuses the groups it leaves as they are
        return AllocationInstance(
            now=self.view.now, clusters=self._fixed_states, per_worker=self.per_worker,
            workers=self.workers, duration=self.duration, weight=self.weight, queued=self.queued,
            priority=self.priority, allowed=self.allowed, current=self.current, weights=self.weights,
            kind=self.kind, w=self.w, overhead=self.overhead,
        )

    def decision(self, assignment: np.ndarray, later: list[Planned] | None = None) -> Decision:
        """Preempt moved running jobs; start every job the final per-group plan puts at now.
        With ``later`` (a list), append every job the plan starts after now to it.

        A job of zero duration planned at ``now`` holds no capacity in the plan (its
        interval [now, now) is empty, Eq. 12), but the engine holds its nodes until its
        finish event, at the same instant. When the jobs planned at ``now`` do not all fit
        in the engine's free capacity for that reason, only the zero-duration ones start
        (those that fit, in priority order); their finish events bring the next decision at
        the same time, whose plan puts the other jobs at ``now`` again (the zero-duration
        jobs never took capacity in the plan). So no job starts later than planned.
        """
        now = self.view.now
        moved = [j for j, job in enumerate(self.jobs)
                 if self.current[j] >= 0 and assignment[j] != self.current[j]]
        staying = [self.jobs[j] for j in range(len(self.jobs))
                   if self.current[j] >= 0 and assignment[j] == self.current[j]]
        # the groups the final plan places jobs in; a group no staying job runs in has the fixed
        # jobs' state that instance() built (the same arrays: the same jobs in the same order)
        planned = {int(p) for j, p in enumerate(assignment) if p >= 0 and self.current[j] != p}
        changed = {self.group_of_node[job.running_nodes[0]] for job in staying}
        cached = self._fixed_states
        states = self.cluster_states([*self.fixed, *staying], planned if cached is None else planned & changed)
        if cached is not None:
            states = tuple(cached[p] if p in planned and p not in changed else state
                           for p, state in enumerate(states))
        order_all = np.lexsort((np.arange(len(self.jobs)), self.priority))
        rank = np.empty(len(self.jobs), dtype=np.int64)
        rank[order_all] = np.arange(len(self.jobs))
        starts: list[tuple[Start, int, bool]] = []  # start, units per worker, zero duration
        ranks: list[int] = []  # each start's place in the priority order
        for p, (group, state) in enumerate(zip(self.groups, states)):
            order = np.array([j for j in order_all if assignment[j] == p and self.current[j] != p],
                             dtype=np.int64)
            if order.size == 0:
                continue
            plan = plan_trusted(now, state.capacity, state.fixed_finish, state.fixed_usage,
                               self.per_worker[:, p], self.workers, self.duration[:, p], order)
            for j in order:
                if plan.start[j] == now:
                    nodes = tuple(group.nodes[int(i)] for i in plan.nodes(int(j)))
                    starts.append((Start(self.jobs[j].job_id, nodes), int(self.per_worker[j, p]),
                                   not plan.finish[j] > now))
                    ranks.append(int(rank[j]))
                elif later is not None:
                    nodes = tuple(group.nodes[int(i)] for i in plan.nodes(int(j)))
                    later.append(Planned(float(plan.start[j]), int(rank[j]), self.jobs[j].job_id, nodes,
                                         int(self.per_worker[j, p])))
        chosen = self._startable(starts, moved)
        if later is not None and len(chosen) < len(starts):  # planned at now, started at a later decision
            started = {start.job_id for start in chosen}
            later.extend(Planned(now, r, start.job_id, start.nodes, units)
                         for (start, units, _), r in zip(starts, ranks) if start.job_id not in started)
        return Decision(chosen, tuple(self.jobs[j].job_id for j in moved))

    def _startable(self, starts: list[tuple[Start, int, bool]], moved: list[int]) -> tuple[Start, ...]:
        """All ``starts``, or only the zero-duration ones that fit when they do not all fit (see decision)."""
        if not any(zero for _, _, zero in starts):
            return tuple(start for start, _, _ in starts)
        free = list(self.view.free)
        for j in moved:  # preemptions are applied before the starts
            for n in self.jobs[j].running_nodes:
                free[n] += self.jobs[j].run_share
        left = list(free)
        for start, units, _ in starts:
            for n in start.nodes:
                left[n] -= units
        if min(left, default=0) >= 0:
            return tuple(start for start, _, _ in starts)
        chosen = []
        for start, units, zero in starts:
            if not zero:
                continue
            for n in start.nodes:
                free[n] -= units
            if any(free[n] < 0 for n in start.nodes):
                for n in start.nodes:
                    free[n] += units
                continue
            chosen.append(start)
        return tuple(chosen)


@dataclass(frozen=True, slots=True, order=True)
class Planned:
    """A job a plan starts after ``now``: at ``start`` (S_j) on ``nodes``, ``units`` per worker;
    ``rank`` is its place in the priority order (ties at one start time go in that order)."""

    start: float
    rank: int
    job_id: str
    nodes: tuple[int, ...]
    units: int


def _time_left(job: JobView, view: SchedulerView) -> float:
    """Seconds until a running job finishes at its current speed (restart penalty included)."""
    penalty_left = max(0.0, job.run_start + job.run_penalty - view.now)
    return penalty_left + view.remaining_time(job, job.run_speed)


class PlannerScheduler:
    """``mct-gp`` / ``evo-gp``: priority graph + MCT or EA allocation + the Algorithm 2 planner."""

    def __init__(self, priority: nx.DiGraph, *, allocation: str = "mct",
                 weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
                 rng: np.random.Generator | None = None, population: int = 100, generations: int = 200,
                 mutation_rate: float = 0.1, time_budget_s: float | None = None,
                 stagnation: int | None = None, seed_with: tuple[str, ...] = (), migrate: bool = True,
                 kind: str = "eq5", w: float = 0.5, restart_penalty_s: float = 0.0,
                 decide_on: str = "event") -> None:
        if allocation not in ("mct", "evo"):
            raise ValueError(f"allocation must be 'mct' or 'evo', got {allocation!r}")
        if allocation == "evo" and rng is None:
            raise ValueError("the evo allocation needs a random Generator")
        self.priority = priority
        self._evaluate = Evaluator(priority)  # validated here once, evaluated at every plan
        self.allocation = allocation
        self.weights = weights
        self.rng = rng
        self.migrate = migrate
        self.kind = kind
        self.w = w
        self.restart_penalty_s = restart_penalty_s
        self.ea_options = dict(n=population, generations=generations, mutation_rate=mutation_rate,
                               time_budget_s=time_budget_s, stagnation=stagnation, seed_with=tuple(seed_with))
        if decide_on not in ("event", "arrival"):
            raise ValueError(f"decide_on must be 'event' or 'arrival', got {decide_on!r}")
        self.decide_on = decide_on
        #: decide_on = "arrival": the last plan's later starts, by (start, rank), not yet started
        self.planned: list[Planned] = []
        self._planned_ids: set[str] = set()  # job ids the last plan placed (started or not)
        self._seen_seq = -1  # the largest queue_seq the last decision saw
        self._layout: Layout | None = None  # the fleet's groups (static), from the first plan on
        self.stats = {"decisions": 0, "ea_runs": 0, "ea_floor_stops": 0, "ea_seconds": 0.0, "migrations": 0,
                      "plans": 0}

    def describe(self) -> str:
        return f"{self.allocation}-gp, f = {infix(self.priority)}"

    def decide(self, view: SchedulerView) -> Decision:
        self.stats["decisions"] += 1
        if self.decide_on == "arrival":
            fresh = view.queued_after(self._seen_seq)
            if fresh:
                self._seen_seq = fresh[0].queue_seq
            if not any(job.job_id not in self._planned_ids for job in fresh):
                return self._follow(view)
        queued = list(view.queue)
        movable: list[JobView] = []
        fixed: list[JobView] = []
        for job in view.running:
            home = job.home_cluster
            if self.allocation == "evo" and self.migrate and home is not None and job.running_cluster != home:
                movable.append(job)
            else:
                fixed.append(job)
        if not queued:
            return Decision()
        jobs = queued + movable
        priority = self._evaluate(features(jobs, view))
        problem = Problem(view, jobs, priority, self.weights, fixed, self.kind, self.w, self.restart_penalty_s,
                          self._layout)
        self._layout = problem.layout
        instance = problem.instance()
        if self.allocation == "mct" or len(jobs) == 1:
            assignment = mct_assign(instance)
        else:
            result = evolve(instance, self.rng, **self.ea_options)
            self.stats["ea_runs"] += 1
            self.stats["ea_floor_stops"] += result.stop_reason == "floor"
            self.stats["ea_seconds"] += result.elapsed_s
            assignment = result.assignment
        self.stats["plans"] += 1
        if self.decide_on == "arrival":
            later: list[Planned] = []
            decision = problem.decision(assignment, later)
            self.planned = sorted(later)
            self._planned_ids = {job.job_id for job in jobs}
        else:
            decision = problem.decision(assignment)
        self.stats["migrations"] += len(decision.preempts)
        return decision

    def _follow(self, view: SchedulerView) -> Decision:
        """``decide_on = "arrival"`` between arrivals: start the planned jobs due now (S_j <= now,
        up to float rounding) whose planned nodes are free, in priority order; the others wait."""
        if not self.planned:
            return Decision()
        now = view.now
        due_end = bisect.bisect_right(self.planned, now + 1e-9 * max(1.0, abs(now)),
                                      key=lambda planned: planned.start)
        if due_end == 0:
            return Decision()
        due = sorted(self.planned[:due_end], key=lambda planned: planned.rank)
        free = list(view.free)
        starts, waiting = [], []
        for planned in due:
            if all(free[n] >= planned.units * planned.nodes.count(n) for n in planned.nodes):
                for n in planned.nodes:
                    free[n] -= planned.units
                starts.append(Start(planned.job_id, planned.nodes))
            else:
                waiting.append(planned)
        self.planned = sorted(waiting) + self.planned[due_end:]
        return Decision(tuple(starts))


class MctAllocation(Allocation):
    """MCT (SPEC §4): at each decision, every queued job goes to the cluster where the
    planner finishes it earliest, taking jobs in the queue's order."""

    name = "mct"

    def __init__(self, rng: np.random.Generator | None = None, decide_on: str = "event") -> None:
        super().__init__(rng)
        self._decided: dict[str, int] = {}
        self._layout: Layout | None = None  # the fleet's groups (static), from the first plan on
        self.decide_on = decide_on

    def prepare(self, view: SchedulerView, ordered: Sequence[JobView]) -> None:
        if self.decide_on == "arrival" and all(job.job_id in self._decided for job in ordered):
            return  # no job it has not allocated: the clusters of the last allocation stand
        self._decided = {}
        if not ordered:
            return
        if len(view.fleet.cluster_names) == 1:
            self._decided = dict.fromkeys((j.job_id for j in ordered), 0)
            return
        problem = Problem(view, ordered, np.arange(len(ordered), dtype=np.float64), (1.0, 1.0, 1.0),
                          list(view.running), layout=self._layout)
        self._layout = problem.layout
        assignment = mct_assign(problem.instance())
        for job, p in zip(ordered, assignment):
            self._decided[job.job_id] = problem.groups[int(p)].cluster

    def cluster_for(self, job: JobView, view: SchedulerView) -> int:
        """The planned cluster; a job the plan did not cover (a running job a preemptive
        policy puts back into its walk) stays in its current cluster."""
        cluster = self._decided.get(job.job_id)
        if cluster is None:
            cluster = job.running_cluster if job.running_cluster is not None else self.feasible(job)[0]
        return cluster


class GpOrdering:
    """Queue order by a priority graph, smaller f(j) first (``policy = "gp"``).

    The graph is turned once into a list of numpy steps (children first), which
    compute exactly what :func:`~simsched.evo.priority.evaluate` does without
    re-validating and re-sorting the graph at every decision. ``vector`` gives
    f for queued jobs from columns of their fields (see simsched/policies/ordering.py);
    ``vector_min`` also finds the first minimum. Once the numpy path has evaluated
    ``compile_after`` rows (a deep queue; or at once when this graph is already
    compiled in the process), the graph is compiled into one numba loop
    (:mod:`simsched.evo.gp_kernel`, about half a second) that evaluates buckets of
    at least ``compiled_from`` rows from then on. Both give the same values bit for
    bit, so the walk is the same; a short run never pays the compilation.
    """

    static = False
    columns = ("remaining_work", "wait_so_far", "queued_since", "weight", "gpus")
    compiled_from = 64
    compile_after = 2_000_000

    def __init__(self, graph: nx.DiGraph, compiled_from: int | None = None, compile_after: int | None = None,
                 ) -> None:
        self._evaluator = Evaluator(graph)  # validates it
        if compiled_from is not None:
            self.compiled_from = compiled_from
        if compile_after is not None:
            self.compile_after = compile_after
        self._numpy_rows = 0  # rows evaluated by numpy so far
        self._source: str | None = None  # the kernel's source (simsched.evo.gp_kernel)
        self._kernel = None
        self.graph = graph
        self.name = "gp"
        self.description = f"priority graph f = {infix(graph)}"

    def evaluate(self, features: dict[str, np.ndarray]) -> np.ndarray:
        """f for every job at once, as :func:`~simsched.evo.priority.evaluate` computes it."""
        return self._evaluator(features)

    def vector(self, columns, now: float) -> np.ndarray:
        """f of queued jobs from their field columns (the terminals of :func:`features`)."""
        return self.evaluate({
            "d": columns["remaining_work"],  # remaining_time(job) = remaining_work / 1.0, the same value
            "q": columns["wait_so_far"] + (now - columns["queued_since"]),
            "u": columns["weight"],
            "g": columns["gpus"],
        })

    def vector_min(self, columns, n: int, now: float, out: np.ndarray) -> int:
        """Fill ``out[:n]`` with f of the first ``n`` rows of ``columns``; the index of the
        first minimum, or -1 when a key is NaN (the contract of simsched/policies/ordering.py)."""
        if n >= self.compiled_from:
            if self._kernel is None:
                if self._source is None:
                    self._source = kernel_source(self.graph)
                self._kernel = compiled_source(self._source, self._numpy_rows >= self.compile_after)
            if self._kernel is not None:
                return int(self._kernel(columns["remaining_work"], columns["wait_so_far"],
                                        columns["queued_since"], columns["weight"], columns["gpus"], float(now),
                                        n, out))
        self._numpy_rows += n
        keys = out[:n]
        keys[:] = self.vector({k: c[:n] for k, c in columns.items()}, now)
        i = int(keys.argmin())  # a NaN is the minimum of argmin
        return -1 if keys[i] != keys[i] else i

    def sort(self, jobs: Sequence[JobView], view: SchedulerView) -> list[JobView]:
        jobs = list(jobs)
        if not jobs:
            return jobs
        values = self.evaluate(features(jobs, view))
        order = sorted(range(len(jobs)), key=lambda i: (values[i], jobs[i].submit, jobs[i].index))
        return [jobs[i] for i in order]


def make_planner_scheduler(priority: nx.DiGraph | str, allocation: str = "mct",
                           weights: tuple[float, float, float] = (1.0, 1.0, 1.0),
                           rng: np.random.Generator | None = None, kind: str = "eq5", w: float = 0.5,
                           **ea_options) -> PlannerScheduler:
    """A ``mct-gp``/``evo-gp`` scheduler from a graph, a built-in name, a file or an infix expression."""
    graph = load_priority(priority) if isinstance(priority, str) else priority
    return PlannerScheduler(graph, allocation=allocation, weights=weights, rng=rng, kind=kind, w=w, **ea_options)
