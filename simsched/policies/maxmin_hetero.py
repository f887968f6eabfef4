"""``maxmin-hetero``: heterogeneity-aware max-min fairness between tenants, after Gavel
(Narayanan et al., OSDI 2020, §4.1 "max-min fairness" and §5 "round-based scheduling").

Gavel allocates each job a fraction of time on every accelerator type so as
to maximise the minimum, over jobs, of the job's *effective throughput*
(Σ over types of throughput on the type x time share) divided by what it
would get from an equal 1/N share of every type. simsched applies that to
tenants and GPU counts. For every node group r (a GPU type in a cluster), with
C_r GPUs, and every active tenant t:

* a[t, r] = effective throughput per GPU held on r: over t's queued and
  running jobs, weighted by their GPUs, the job's speed factor on r (the
  per-type speedups, simsched.core.model.speed_factor) x its GPUs / the GPUs it holds
  there (memory scaling makes a 32 GB job hold two 16 GB GPUs per worker,
  halving its throughput per GPU); 0 where its jobs have no option;
* D[t] = the GPUs its queued and running jobs ask for (its demand);
* w[t] = its entitlement (quotas summed over clusters; 1 each without quotas);
* E[t] = Σ_r a[t, r] C_r w[t] / Σ w, its effective throughput on an equal
  (weighted) share of every group.

The allocation x[t, r] >= 0 (GPUs of r given to t) is the max-min fair one of
the normalised throughputs Σ_r a[t, r] x[t, r] / E[t], subject to
Σ_t x[t, r] <= C_r and Σ_r s[t, r] x[t, r] <= D[t], where s[t, r] is the
requested GPUs one held GPU of r serves (1/2 for a job that holds two GPUs
per requested one there). It is computed by water-filling
with linear programs (:func:`maxmin_allocation`, scipy's HiGHS): maximise the
common level z over the tenants not yet fixed; every tenant whose level
constraint has a non-zero dual value is at z in *every* optimal solution
(complementary slackness), so it is fixed at z; the dual values of the level
constraints sum to 1, so at least one tenant is fixed per program, and the
loop ends after at most N programs. A last program spends what is left
(maximises the total normalised throughput with every tenant at its level).
The result is exact max-min fairness, not only the minimum of Gavel's single
program. Tenants identical in (a-row, s-row, D, w) (with a tenant per job:
the jobs of one shape) are one class in the programs, each member holding an
equal share of the class's GPUs (exact: the proof is in
:func:`maxmin_allocation`), so the programs grow with the kinds of tenant,
not their number. The programs go straight to scipy's HiGHS
(simsched.policies.linear_program: linprog's very result, without its
per-call Python), and a scheduler remembers its last 1,024 water-fillings by
their inputs. A decision solves its round's water-filling only when its walk
reads x: within allocations, for a tenant with queued jobs that holds GPUs, or
one whose bound on its largest x[t, r] (its class's best group's GPUs over the
class's size, a little more for the solver's tolerance: ``_room_bounds``) does
not rule out every job of it; leftovers never read x. With a tenant per job
and a deep queue, most decisions solve nothing. The inputs (each job's rates,
kept per job) are gathered at every decision all the same: which inputs a
round's allocation is of does not change.

**Rounds** (the periodic decisions ``las`` uses; ``interval_s``, default 360
s, Gavel's 6-minute rounds). The allocation is computed once per round, at
its first decision, from the jobs queued and running then; later decisions in
the round (arrivals, finishes) keep it, unless a tenant without one appears
or the quotas change (then it is computed again at once). Each decision turns
the fractional allocation into whole jobs, tenants with the lowest normalised
throughput first:

1. *within allocation*: a tenant starts its first queued job (submit order)
   on a group where it stays within x[t, r]; when the GPUs are not free it
   preempts jobs of tenants above their allocation on that group, newest
   start first, but only jobs whose tenant stays at or above its allocation
   without them (so nobody preempts back) and only if that lets the job
   start now;
2. *leftovers*: GPUs still free go to any queued job (work conservation),
   again lowest normalised throughput first; such borrowed GPUs are taken
   back by step 1 at a later decision.

Under ``quota = "borrow"`` the quota wrapper (simsched.policies.quota) asks
twice: the first pass admits only starts within the tenants' quotas and may
preempt as above, but only borrowed GPUs: a victim's tenant must also hold
more than its quota (``Admission.may_preempt``, the wrapper's own reclaim
rule), so a tenant within its quota is never preempted, even when it is above
its allocation (a stale round's, or on one GPU type), while another borrows
(issue 36: 14 of 382 preemptions on course/philly_vc took a VC's own GPUs,
one of a VC holding 3 of its 24 while another was 37 over its quota); the
second (borrowing) pass lends idle GPUs only, so step 1 preempts nobody there.

Deviations from Gavel: tenants, not jobs, are the entities (jobs of a tenant
go in submit order); Gavel's time shares become whole GPUs held until a job
ends or is preempted (no space-sharing, no per-round lease of every job); the
per-type throughput of a tenant (and s) is a GPU-weighted mean of its jobs'; a
fractional allocation is met with whole jobs (step 1 starts a job only
within it; step 2 hands out the rest); identical tenants split their class's
GPUs equally (when one GPU is shared by several, step 2 hands it out). The
solver is scipy (``pip install simsched[test]``), imported when the policy is built.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from simsched.core.contract import EMPTY_DECISION, Decision, JobView, SchedulerView, Start
from simsched.core.errors import InputError
from simsched.core.extras import install_hint
from simsched.core.model import MILLI
from simsched.policies.allocation import Allocation
from simsched.policies.linear_program import solve
from simsched.policies.placement import Placement, trial
from simsched.policies.queue import _over_quota
from simsched.policies.registry import common_builder, register
from simsched.policies.shares import (
    QuotaSource,
    entitlements,
    group_gpus,
    has_quotas,
    held_gpus,
    option_gpus,
    plan_clusters,
    tenant_order,
)

DEFAULT_ROUND_S = 360.0
_TOL = 1e-9
#: how far below its level a fixed tenant's throughput may fall (relative), tried in turn: HiGHS meets
#: constraints within its feasibility tolerance (1e-7), so a level found by one program can be a hair
#: above what the next can keep; 1e-9 is tried first (the allocations every golden rests on), and a
#: program infeasible by that round-off only is solved again with the next slack
_SLACKS = (1e-9, 1e-7, 1e-5)
#: water-fillings a scheduler remembers by their inputs (maxmin_allocation's memo)
MEMO_SIZE = 1024


def _linprog():
    try:
        from scipy.optimize import linprog
    except ImportError:  # the core stays importable without scipy
        raise InputError('scheduler.policy = "maxmin-hetero" needs scipy for its linear programs; '
                         f'install it with: {install_hint("test")} (or pip install scipy)') from None
    return linprog


def maxmin_allocation(throughput: np.ndarray, capacity: np.ndarray, demand: np.ndarray,
                      weights: np.ndarray, served: np.ndarray | None = None, *,
                      merge: bool = True, memo: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The max-min fair allocation (module docstring): ``throughput`` a[t, r] (tenants x groups),
    ``capacity`` C_r, ``demand`` D_t (requested GPUs), ``weights`` w_t and ``served`` s[t, r], the
    requested GPUs one GPU of r serves (1 without memory scaling; default all 1). Returns x[t, r]
    (GPUs held) and each tenant's normalised throughput level.

    **Identical tenants are one class** (``merge``; False solves the program of every tenant, the
    reference). Tenants with the same a-row, s-row, D and w (a tenant per job: every job of a
    shape) have the same level in the max-min fair allocation, so the water-filling runs over
    classes, and each member of a class of k holds 1/k of the class's GPUs. Why that is exact:

    1. *Equal levels.* The vector of levels u_t = Σ_r a[t, r] x[t, r] / E_t ranges over a convex
       set U (a linear image of the polytope of feasible x). Its max-min fair point (the leximin
       optimum, which the water-filling computes) is unique in U: if two points u != v were both
       leximin-optimal, (u + v) / 2 is in U and leximin-better than both. Swapping the x-rows of two
       identical tenants keeps x feasible (the same capacity, demand and bound rows) and swaps their
       levels; so the swapped optimum is optimal too, hence the same point: their levels are equal.
    2. *The class program.* A class c of k identical tenants (row a_c, s_c, D_c, level scale E_c)
       becomes one entity with y_c[r] = Σ_{t in c} x[t, r], demand k D_c and level scale k E_c:
       Σ_r a_c y_c / (k E_c) is the mean of its members' levels. Summing a feasible x over each
       class gives a feasible y with that mean; splitting a feasible y equally (x = y / k) gives a
       feasible x with every member at the class's level. With (1), every program of the
       water-filling has the same optimum z over classes as over tenants (the tenants' optimum can
       be averaged within each class, keeping feasibility, levels at or above z and the floors of
       fixed tenants), and a class whose level constraint has a non-zero dual is at z in every
       optimal solution, as a tenant is. The last program's objective Σ_t a_t x_t / E_t is
       Σ_c a_c y_c / E_c. So the levels are the same (up to the solver's round-off: a different
       program), and x is an optimal allocation: the equal split of each class's GPUs.

    x itself is not unique when tenants are identical: the program over every tenant returns the
    vertex HiGHS stops at (one member with whole GPUs, another with none), the class program the
    equal split. Without identical tenants nothing is merged and the programs are the same as
    ``merge=False``'s, to the bit.

    ``memo`` (a dict the caller keeps) remembers water-fillings by their inputs (tenants, or classes
    and their sizes), up to :data:`MEMO_SIZE`: the programs are deterministic, so a remembered
    allocation is the one they would compute again."""
    a = np.asarray(throughput, dtype=float)
    n = a.shape[0]
    capacity = np.asarray(capacity, dtype=float)
    demand = np.asarray(demand, dtype=float)
    weights = np.asarray(weights, dtype=float)
    served = np.ones_like(a) if served is None else np.asarray(served, dtype=float)
    equal = a @ capacity * weights / weights.sum()  # E_t
    rows = np.column_stack((a, served, demand, weights))
    if merge and n > 1:
        width = rows.shape[1] * rows.itemsize
        flat = rows.tobytes()
        members: dict[bytes, list[int]] = {}  # a row's bytes -> its tenants
        for t in range(n):
            members.setdefault(flat[t * width:(t + 1) * width], []).append(t)
        if len(members) < n:
            classes = sorted(members)  # (one order for the same classes: the memo's key)
            first = np.array([members[c][0] for c in classes])
            k = np.array([len(members[c]) for c in classes], dtype=float)
            key = ("classes", tuple(classes), k.tobytes(), capacity.tobytes())
            found = None if memo is None else memo.get(key)
            if found is None:
                found = _water_fill(a[first], capacity, demand[first] * k, served[first], equal[first] * k,
                                    equal[first])
                _remember(memo, key, found)
            y, class_levels = found
            of = np.empty(n, dtype=np.intp)  # each tenant's class
            for i, c in enumerate(classes):
                of[members[c]] = i
            return y[of] / k[of, None], class_levels[of]
    key = ("tenants", rows.shape, rows.tobytes(), capacity.tobytes())
    found = None if memo is None else memo.get(key)
    if found is None:
        found = _water_fill(a, capacity, demand, served, equal, equal)
        _remember(memo, key, found)
    return found


def _remember(memo: dict | None, key: tuple, found: tuple[np.ndarray, np.ndarray]) -> None:
    """Keep a water-filling (read-only arrays) in ``memo``, the oldest dropped beyond MEMO_SIZE."""
    if memo is None:
        return
    for array in found:
        array.flags.writeable = False
    if len(memo) >= MEMO_SIZE:
        del memo[next(iter(memo))]
    memo[key] = found


def _water_fill(a: np.ndarray, capacity: np.ndarray, demand: np.ndarray, served: np.ndarray,
                equal: np.ndarray, scale: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The water-filling of :func:`maxmin_allocation` over entities (tenants, or classes of identical
    tenants): level constraints Σ_r a x >= z ``equal``; the last program maximises Σ a x / ``scale``
    (a class's member's E_t, ``equal`` being k E_t; ``scale`` is ``equal`` for tenants)."""
    n, m = a.shape
    levels = np.full(n, np.nan)
    usable = equal > 0
    levels[~usable] = 0.0  # a tenant that can use nothing (or is entitled to nothing) gets nothing
    bounds = [(0.0, 0.0 if a[t, r] <= 0 or not usable[t] else None) for t in range(n) for r in range(m)]
    # shared rows: groups' capacity, tenants' demand
    cap_rows = np.zeros((m, n * m))
    for r in range(m):
        cap_rows[r, r::m] = 1.0
    dem_rows = np.zeros((n, n * m))
    for t in range(n):
        dem_rows[t, t * m:(t + 1) * m] = served[t]
    shared = np.vstack((cap_rows, dem_rows))
    shared_b = np.concatenate((capacity, demand))
    x = np.zeros(n * m)
    while np.isnan(levels).any():
        free_t = [t for t in range(n) if np.isnan(levels[t])]
        fixed_t = [t for t in range(n) if not np.isnan(levels[t]) and usable[t]]
        for slack in _SLACKS:
            res = _level_program(a, equal, levels, free_t, fixed_t, shared, shared_b, bounds, slack)
            if res.status != 2:  # infeasible only by round-off: the last level was a hair too high
                break
        if res.status != 0:
            raise AssertionError(f"maxmin-hetero: the water-filling program failed: {res.message}")
        z = float(res.x[-1])
        duals = res.marginals[:len(free_t)]
        blocked = [t for t, d in zip(free_t, duals) if d < -_TOL]
        for t in blocked or free_t:
            levels[t] = z
        x = res.x[:-1]
    # spend what is left: the most total normalised throughput with every tenant at its level
    fixed_t = [t for t in range(n) if usable[t]]
    if fixed_t:
        rows = np.zeros((len(fixed_t), n * m))
        for i, t in enumerate(fixed_t):
            rows[i, t * m:(t + 1) * m] = -a[t]
        cost = np.zeros(n * m)
        for t in fixed_t:
            cost[t * m:(t + 1) * m] = -a[t] / scale[t]
        for slack in _SLACKS:
            res = solve(cost, np.vstack((rows, shared)),
                        np.concatenate((-_floor(levels[fixed_t] * equal[fixed_t], slack), shared_b)), bounds)
            if res.status == 0:
                x = res.x
                break
    x = np.maximum(np.asarray(x).reshape(n, m), 0.0)
    return x, levels


def _may_start_within(room: float, jobs: list[JobView], least_need: dict) -> bool:
    """Whether a tenant holding nothing, whose largest x[t, r] + tol is ``room`` (or more), might
    start one of ``jobs`` within its allocation: False when every job's fewest GPUs over its options
    exceeds it (then MaxMinHeteroScheduler._start's within test fails on every option: 0 + need >
    x + tol). ``least_need`` keeps the fewest GPUs by (options, workers)."""
    for job in jobs:
        shape = (id(job.options), job.workers)
        need = least_need.get(shape)
        if need is None:  # (monotone in per_worker: at most option_gpus of every option)
            need = least_need[shape] = min(o.per_worker for o in job.options) * job.workers / MILLI
        if need <= room:
            return True
    return False


def _room_bounds(filling: _WaterFilling) -> np.ndarray:
    """An upper bound, per tenant, on its largest x[t, r] + tol in ``filling``'s allocation, without
    solving it: a tenant in a class of k identical tenants (maxmin_allocation merges them) holds 1/k
    of the class's GPUs, and a class holds at most C_r of a group (a bit more: the programs' results
    are checked within 3.2e-4 per row and bound, so at most (entities + 1) x 3.2e-4 over C_r after
    the clip at 0), and about nothing of a group where its a-row is 0 (bounds (0, 0))."""
    a = filling.a
    n = len(a)
    if not n or not a.shape[1]:
        return np.full(n, -math.inf)
    rows = np.ascontiguousarray(np.column_stack((a, filling.served, filling.demand, filling.weights)))
    # (rows compared as bytes, as maxmin_allocation merges them)
    _, of, counts = np.unique(rows.view(np.dtype((np.void, rows.shape[1] * rows.itemsize))).ravel(),
                              return_inverse=True, return_counts=True)
    k = counts[of.ravel()].astype(float)
    most = np.where(a > 0, filling.capacity, 0.0).max(axis=1)
    return (most + (n + 1) * 1e-3) / k + _TOL


def _nothing_fits(waiting: dict[str | None, list[JobView]], free: list[int]) -> bool:
    """Whether no node has the free milli-GPUs of one worker of any queued job (then no placement
    can start one: a placement puts each worker on one node with that much free)."""
    most = max(free, default=0)
    seen: set[int] = set()
    for jobs in waiting.values():
        for job in jobs:
            if id(job.options) not in seen:
                seen.add(id(job.options))
                if any(option.per_worker <= most for option in job.options):
                    return False
    return True


def _floor(throughput, slack: float):
    """A fixed tenant's throughput floor, ``slack`` (relative) below its level, against round-off."""
    return throughput * (1 - slack)


def _level_program(a, equal, levels, free_t, fixed_t, shared, shared_b, bounds, slack: float):
    """One water-filling program: maximise z with every free tenant at or above z x E_t and every
    fixed tenant at or above its level (``slack`` below it)."""
    n, m = a.shape
    rows, rhs = [], []
    for t in free_t:  # z E_t - thr_t <= 0
        row = np.zeros(n * m + 1)
        row[t * m:(t + 1) * m] = -a[t]
        row[-1] = equal[t]
        rows.append(row)
        rhs.append(0.0)
    for t in fixed_t:  # thr_t >= level_t E_t (a hair below)
        row = np.zeros(n * m + 1)
        row[t * m:(t + 1) * m] = -a[t]
        rows.append(row)
        rhs.append(-_floor(levels[t] * equal[t], slack))
    a_ub = np.vstack((np.array(rows), np.hstack((shared, np.zeros((len(shared), 1))))))
    b_ub = np.concatenate((rhs, shared_b))
    cost = np.zeros(n * m + 1)
    cost[-1] = -1.0
    return solve(cost, a_ub, b_ub, [*bounds, (0.0, None)])


class _WaterFilling:
    """A water-filling's inputs and, once read, its result (x, levels): a decision whose walk reads
    no allocation solves no program (MaxMinHeteroScheduler._room_bounds)."""

    __slots__ = ("a", "capacity", "demand", "weights", "served", "result")

    def __init__(self, a: np.ndarray, capacity: np.ndarray, demand: np.ndarray, weights: np.ndarray,
                 served: np.ndarray) -> None:
        self.a, self.capacity, self.demand, self.weights, self.served = a, capacity, demand, weights, served
        self.result: tuple[np.ndarray, np.ndarray] | None = None


class MaxMinHeteroScheduler(QuotaSource):
    """Gavel-style heterogeneity-aware max-min fairness between tenants (module docstring)."""

    name = "maxmin-hetero"
    # the walk checks quotas as it places (simsched.policies.quota), so a start that would break its
    # tenant's quota is never chosen, and nothing is preempted for it
    supports_admission = True
    by_tenant = False
    #: False: try every job, even of a kind that already failed, and every tenant within allocations
    #: (the reference, for tests)
    remember_failures = True

    def __init__(self, placement: Placement, allocation: Allocation, backfill: bool = True,
                 interval_s: float | None = None) -> None:
        super().__init__()
        _linprog()  # fail at build time, with one clear line, when scipy is missing
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        self.interval_s = DEFAULT_ROUND_S if interval_s is None else interval_s
        self._cache: tuple | None = None  # (inputs, _WaterFilling, None, round) of the last water-filling
        self._groups: tuple | None = None  # (the fleet's groups, them sorted, group -> index)
        self._contributions: dict[str, tuple] = {}  # job id -> what it adds to its tenant's sums (_inputs)
        self._acted = True
        self._t_index: dict = {}
        self._stale = False  # the last decision used its round's allocation, not one of the jobs then
        self.programs = 0  # water-fillings solved (not cached), for tests and benchmarks
        self._memo: dict = {}  # water-fillings by their inputs (maxmin_allocation)

    # -- the allocation ---------------------------------------------------------------
    @staticmethod
    def _speed(job: JobView, option) -> float:
        """The job's speed factor on ``option``'s GPU type: the one place this policy reads speeds
        (the per-type speedups, simsched.core.model.speed_factor)."""
        return option.speed

    def targets(self, view: SchedulerView):
        """(tenants, groups, x, levels, a, equal): the max-min fair allocation for the jobs now."""
        tenants, groups, a, equal, filling, _, _ = self._inputs(view)
        x, levels = self._solved(filling)
        return tenants, groups, x, levels, a, equal

    def _contribution(self, job: JobView, cluster, index: dict, m: int) -> tuple:
        """What ``job`` adds to its tenant's sums in :meth:`_inputs` (on ``cluster``, None: any):
        (job, cluster, Σ g a_r and Σ g s_r as a fresh tenant's rows would hold them, the terms in
        option order, g, its kind for the walk: (cluster, options, workers)). Kept per job while its
        cluster stays: a job's options, GPUs and speeds never change."""
        gpus = job.gpus
        rates, served_sum = [0.0] * m, [0.0] * m
        terms = []
        speed = self._speed
        for option in job.options:
            if cluster is not None and option.cluster != cluster:
                continue
            r = index[option.cluster, option.gpu_type]
            served = gpus / (option.per_worker * job.workers / MILLI)  # (option_gpus, inlined)
            rate, serving = gpus * speed(job, option) * served, gpus * served
            rates[r] += rate
            served_sum[r] += serving
            terms.append((r, rate, serving))
        return job, cluster, rates, served_sum, tuple(terms), gpus, (cluster, id(job.options), job.workers)

    def _inputs(self, view: SchedulerView):
        """(tenants, groups, a, equal, water-filling, waiting, first of kind): the inputs of the
        allocation for the jobs now, the round's water-filling (:class:`_WaterFilling`, solved when
        first read), and, gathered in the same pass, each tenant's queued jobs (queue order) and
        each queued kind's first job."""
        groups = view.fleet.groups
        if self._groups is None or self._groups[0] is not groups:
            ordered = sorted(groups)
            self._groups = (groups, ordered, {g: i for i, g in enumerate(ordered)})
            self._contributions = {}
        groups, index = self._groups[1], self._groups[2]
        # tenant -> [Σ_j g_j a_jr, Σ_j g_j s_jr (per group), Σ_j g_j]; s_jr = g_j / GPUs held on r
        # (Python floats, summed in job order: the same IEEE sums as numpy's, without its per-element
        # cost). A tenant's first job gives its rows as they are (0.0 + v is v); a second one copies
        # them and adds its terms in option order, as one loop over every job's options would
        stats: dict[str | None, list] = {}
        m = len(groups)
        cluster_for = self.allocation.cluster_for
        known = self._contributions
        jobs = 0
        waiting: dict[str | None, list[JobView]] = {}
        first_of_kind: dict[tuple, JobView] = {}
        for queued, these in ((False, view.running), (True, view.queue)):
            for job in these:
                jobs += 1
                cluster = job.running_cluster if job.running_nodes else cluster_for(job, view)
                part = known.get(job.job_id)
                if part is None or part[0] is not job or part[1] != cluster:
                    part = known[job.job_id] = self._contribution(job, cluster, index, m)
                tenant = job.tenant
                if queued:
                    mine = waiting.get(tenant)
                    if mine is None:
                        waiting[tenant] = [job]
                    else:
                        mine.append(job)
                    if part[6] not in first_of_kind:
                        first_of_kind[part[6]] = job
                entry = stats.get(tenant)
                if entry is None:
                    stats[tenant] = [part[2], part[3], part[5], False]  # (shared rows: not written)
                    continue
                if not entry[3]:
                    entry[0], entry[1], entry[3] = list(entry[0]), list(entry[1]), True
                rates, served_sum = entry[0], entry[1]
                for r, rate, serving in part[4]:
                    rates[r] += rate
                    served_sum[r] += serving
                entry[2] += part[5]
        if len(known) > 2 * jobs + 1024:  # forget the jobs that ended
            present = {job.job_id for job in (*view.running, *view.queue)}
            self._contributions = {j: part for j, part in known.items() if j in present}
        if None not in stats and all(type(tenant) is str for tenant in stats):
            tenants = sorted(stats)  # (tenant_order's order, compared in C)
        else:
            tenants = sorted(stats, key=tenant_order)
        demand = np.array([stats[t][2] for t in tenants])
        a = np.array([stats[t][0] for t in tenants], dtype=float).reshape(len(tenants), m)
        served = np.array([stats[t][1] for t in tenants], dtype=float).reshape(len(tenants), m)
        held = demand > 0  # per tenant: the sums over its GPUs, divided by them (row by row, the same floats)
        a[held] /= demand[held, None]
        served[held] /= demand[held, None]
        capacity = group_gpus(view)
        cap = np.array([capacity[g] for g in groups])
        quotas = self.quotas(view)
        if has_quotas(view, quotas):
            ent = entitlements(view, quotas, tenants)
            weights = np.array([sum(ent[t]) for t in tenants])
        else:
            weights = np.ones(len(tenants))
        key = (tuple(tenants), a.tobytes(), served.tobytes(), cap.tobytes(), demand.tobytes(), weights.tobytes())
        round_k = math.floor(view.now / self.interval_s) if self.interval_s > 0 else view.now
        cache = self._cache
        if cache is not None and (cache[0] == key or (cache[3] == round_k and cache[0][0] == key[0]
                                                      and cache[0][3] == key[3] and cache[0][5] == key[5])):
            # the same inputs; or the same round, tenants, capacity and weights (quotas): the round's
            # allocation stands (once per round, as Gavel; a tenant that appears gets one at once)
            filling = cache[1]
            self._stale = cache[0] != key
        else:
            filling = _WaterFilling(a, cap, demand, weights, served)
            self._cache = (key, filling, None, round_k)
            self._stale = False
        equal = a @ cap * weights / weights.sum() if weights.sum() > 0 else np.zeros(len(tenants))
        return tenants, groups, a, equal, filling, waiting, first_of_kind

    def _solved(self, filling: _WaterFilling) -> tuple[np.ndarray, np.ndarray]:
        """The water-filling's (x, levels), solved on first read (maxmin_allocation, with the memo)."""
        if filling.result is None:
            if filling.weights.sum() > 0:
                filling.result = maxmin_allocation(filling.a, filling.capacity, filling.demand, filling.weights,
                                                   filling.served, memo=self._memo)
            else:
                filling.result = (np.zeros_like(filling.a), np.zeros(len(filling.a)))
            self.programs += 1
        return filling.result

    # -- one decision ---------------------------------------------------------------------
    def decide(self, view: SchedulerView) -> Decision:
        queue = view.queue
        if not queue:
            self._acted = False
            return EMPTY_DECISION
        plan_clusters(self.allocation, view, queue)
        tenants, groups, a, equal, filling, waiting, first_of_kind = self._inputs(view)
        remember = self.remember_failures
        # the allocation is solved when the walk first reads it: within allocations, for a tenant
        # that holds GPUs or one that the bound on its room (_room_bounds) does not rule out
        x = None if remember else self._solved(filling)[0]
        roomiest = bounds = None
        t_index = self._t_index = {t: i for i, t in enumerate(tenants)}
        g_index = {g: i for i, g in enumerate(groups)}
        fleet = view.fleet
        usage = np.zeros(a.shape)
        running_on: dict[int, list[JobView]] = {}
        touched: set[int] = set()  # tenants whose usage row is not all zero (held GPUs, starts)
        for job in view.running:
            r = g_index[fleet.node_cluster[job.running_nodes[0]], fleet.node_type[job.running_nodes[0]]]
            t = t_index[job.tenant]
            usage[t, r] += held_gpus(job)
            touched.add(t)
            running_on.setdefault(r, []).append(job)
        known = self._contributions  # (each queued job's kind, as _inputs found it in this decision)
        least_need: dict = {}  # (options, workers) -> the fewest GPUs a job of them holds (_may_start_within)
        fewest = math.inf  # over the queue
        for job in first_of_kind.values():
            shape = (id(job.options), job.workers)
            if shape not in least_need:
                need = least_need[shape] = min(o.per_worker for o in job.options) * job.workers / MILLI
                fewest = min(fewest, need)
        for jobs in waiting.values():
            if len(jobs) > 1:
                jobs.sort(key=lambda j: (j.submit, j.index))
        free = list(view.free)
        starts: list[Start] = []
        preempts: list[str] = []
        started: set[str] = set()

        def level(t: int) -> float:  # normalised throughput now (0 with a row of zeros: a >= 0)
            if equal[t] <= 0:
                return math.inf
            return float(a[t] @ usage[t] / equal[t]) if t in touched else 0.0

        # within allocations, a tenant holding nothing starts a job only where x[t, r] + tol covers
        # its GPUs (0 + need = need); a tenant none of whose kinds needs as few GPUs as its largest
        # x[t, r] + tol fails every job there, with no effect (no placement tried): it sits that pass out

        # each queued job's kind (cluster, options, workers), per tenant in its jobs' order (made when
        # the tenant first joins a pass), and how many kinds each tenant has
        kinds_of: dict[str | None, list] = {}
        every: dict[str | None, int] = {}  # per tenant: how many kinds its queued jobs are (0: no backfill)
        kind_sets: dict[str | None, set] = {}
        admission = getattr(view, "admission", None)
        for within in (True, False):
            if not within and remember and _nothing_fits(waiting, free):
                break  # (a leftover start takes free GPUs only: none is left that fits a worker)
            heap = []
            if within and x is None:
                if any(job.tenant in waiting for job in view.running):
                    x = self._solved(filling)[0]  # (a tenant with queued jobs holds GPUs: it reads it)
                else:
                    # no tenant with queued jobs holds GPUs; when even the roomiest bound covers no
                    # queued job, nobody starts within its allocation (the pass is empty), none is solved
                    bounds = _room_bounds(filling)
                    if not len(bounds) or bounds.max() < fewest:
                        continue
            # leftovers without admission: a kind that cannot be placed on the free GPUs at the pass's
            # start fails throughout (free GPUs only shrink; a placement that fails with some fails with
            # fewer), so a tenant all of whose kinds are such starts nothing and leaves the pass unread
            alive: dict | None = None
            if not within and remember and admission is None:
                most = max(free, default=0)
                alive = {kind: self._fits(job, kind[0], view, free, most) for kind, job in first_of_kind.items()}
                if not any(alive.values()):
                    break  # (no queued kind can be placed: nobody starts)
            for tenant, jobs in waiting.items():
                if within and x is None:  # (remember: the reference solved it above)
                    if t_index[tenant] not in touched:
                        if not _may_start_within(bounds[t_index[tenant]], jobs, least_need):
                            continue  # (nor within its allocation, which is at most the bound)
                    x = self._solved(filling)[0]
                if within and remember and t_index[tenant] not in touched:
                    if roomiest is None:
                        roomiest = (x + _TOL).max(axis=1) if x.shape[1] else np.full(len(x), -math.inf)
                    if not _may_start_within(roomiest[t_index[tenant]], jobs, least_need):
                        continue
                if started:
                    kept = [i for i, j in enumerate(jobs) if j.job_id not in started]
                    if len(kept) < len(jobs):
                        jobs = waiting[tenant] = [jobs[i] for i in kept]
                        if tenant in kinds_of:
                            kinds = kinds_of[tenant]
                            kinds_of[tenant] = [kinds[i] for i in kept]
                if jobs:
                    if tenant not in kinds_of:  # (as _inputs found them in this decision)
                        kinds_of[tenant] = [known[job.job_id][6] for job in jobs]
                    if alive is not None:
                        for kind in kinds_of[tenant]:
                            if alive[kind]:
                                break
                        else:
                            continue
                    heap.append((level(t_index[tenant]), jobs[0].submit, jobs[0].index, t_index[tenant], 0))
                    kind_sets[tenant] = set(kinds_of[tenant])
                    every[tenant] = len(kind_sets[tenant]) if self.backfill and remember else 0
            heapq.heapify(heap)
            # kinds of job that did not start, per tenant: in the leftovers pass nothing is preempted
            # (free GPUs and quota rooms only shrink), so they fail again for the rest of the pass;
            # within allocations a preemption may make room, so only for the rest of the tenant's turn
            # (nothing changes until it starts a job, which ends its turn). Once all of a tenant's kinds
            # failed, its turn ends (with backfill: its other jobs would fail too). Without admission
            # (no quotas, or the wrapper's borrowing pass) a leftover start depends on the kind and the
            # free GPUs alone, so a kind that failed fails for every tenant: one set for all
            failed_of: dict[int, set] = {}
            shared = set() if not within and admission is None else None
            while heap:
                _, _, _, t, position = heapq.heappop(heap)
                tenant = tenants[t]
                jobs, kinds = waiting[tenant], kinds_of[tenant]
                failed = shared if shared is not None else failed_of.get(t) if not within else None
                if failed is None:
                    failed = failed_of[t] = set()
                all_kinds = every[tenant]
                while position < len(jobs):
                    job = jobs[position]
                    kind = kinds[position]
                    position += 1
                    if kind in failed:
                        start = None
                    else:
                        start = self._start(job, t, view, within, x, usage, free, running_on, g_index, preempts)
                        if start is None and remember:
                            failed.add(kind)
                            if all_kinds and (len(failed) == all_kinds if shared is None
                                              else len(failed) >= all_kinds and kind_sets[tenant] <= failed):
                                break  # (every kind of its jobs fails: so do the rest)
                    if start is not None:
                        starts.append(start)
                        started.add(job.job_id)
                        touched.add(t)
                        if position < len(jobs):
                            nxt = jobs[position]
                            heapq.heappush(heap, (level(t), nxt.submit, nxt.index, t, position))
                        break
                    if not self.backfill and not _over_quota(job, self.allocation.cluster_for(job, view),
                                                             getattr(view, "admission", None)):
                        break  # (a job over its tenant's quota waits for it and holds no line)
        self._acted = bool(starts or preempts)
        return Decision(tuple(starts), tuple(preempts))

    def _start(self, job: JobView, t: int, view: SchedulerView, within: bool, x: np.ndarray, usage: np.ndarray,
               free: list[int], running_on: dict, g_index: dict, preempts: list[str]) -> Start | None:
        """Start ``job`` of tenant ``t`` (within its allocation, preempting if need be; or on any free GPUs)."""
        groups = view.fleet.groups
        cluster = self.allocation.cluster_for(job, view)
        admission = getattr(view, "admission", None)
        # the quota wrapper's borrowing pass (quotas, but no admission: simsched.policies.quota, step 3)
        # lends idle GPUs only: a job beyond its tenant's quota preempts nobody
        may_preempt = admission is not None or getattr(view, "tenants", None) is None
        for option in job.options:
            if cluster is not None and option.cluster != cluster:
                continue
            if admission is not None and not admission.admits(job, option):
                continue
            r = g_index[option.cluster, option.gpu_type]
            need = option_gpus(job, option)
            if within and usage[t, r] + need > x[t, r] + _TOL:
                continue
            group = groups[option.cluster, option.gpu_type]
            nodes = self.placement(group, option.per_worker, job.workers, free)
            if nodes is None and within and may_preempt:
                nodes = self._reclaim(job, option, group, r, x, usage, free, running_on, view, preempts)
            if nodes is not None:
                usage[t, r] += need
                if admission is not None:
                    admission.take(job, option)
                return Start(job.job_id, nodes)
        return None

    def _fits(self, job: JobView, cluster: int | None, view: SchedulerView, free: list[int], most: int) -> bool:
        """Whether a leftover start (no admission) could place ``job`` on ``free`` (on ``cluster``,
        None: any), as :meth:`_start` tries it; ``most`` is the most free milli-GPUs on one node. A
        trial: no placement state moves."""
        groups = view.fleet.groups
        place = trial(self.placement)
        for option in job.options:
            if (cluster is not None and option.cluster != cluster) or option.per_worker > most:
                continue  # (each worker goes on one node with that much free)
            if place(groups[option.cluster, option.gpu_type], option.per_worker, job.workers, list(free)) is not None:
                return True
        return False

    def _reclaim(self, job: JobView, option, group, r: int, x: np.ndarray, usage: np.ndarray, free: list[int],
                 running_on: dict, view: SchedulerView, preempts: list[str]) -> tuple[int, ...] | None:
        """Preempt jobs on group ``r`` of tenants above their allocation there (each staying at or above
        it without the job), newest start first, if that lets ``job`` start now; its nodes, or None."""
        t_of = self._t_index
        admission = getattr(view, "admission", None)  # (under borrow: only borrowed GPUs are taken back)
        place = trial(self.placement)  # trials on scratch lists: round robin's pointer stays (the start moves it)
        scratch = list(free)
        held = usage[:, r].copy()
        chosen: list[JobView] = []
        nodes = None
        for victim in sorted(running_on.get(r, ()), key=lambda v: (-v.run_start, -v.index)):
            v = t_of[victim.tenant]
            gpus = held_gpus(victim)
            if held[v] - gpus < x[v, r] - _TOL:
                continue
            if admission is not None and not admission.may_preempt([*chosen, victim]):
                continue  # its tenant is within its quota (quota = "borrow")
            held[v] -= gpus
            for n in victim.running_nodes:
                scratch[n] += victim.run_share
            chosen.append(victim)
            nodes = place(group, option.per_worker, job.workers, list(scratch))
            if nodes is not None:
                break
        if nodes is None:
            return None
        used = set(nodes)
        victims = [v for v in chosen if used.intersection(v.running_nodes)]
        check = list(free)
        for victim in victims:
            for n in victim.running_nodes:
                check[n] += victim.run_share
        if place(group, option.per_worker, job.workers, list(check)) is None:
            victims = chosen
        for victim in victims:
            for n in victim.running_nodes:
                free[n] += victim.run_share
            usage[t_of[victim.tenant], r] -= held_gpus(victim)
            running_on[r].remove(victim)
            preempts.append(victim.job_id)
            if admission is not None:  # its tenant's quota room grows back in this decision (once:
                admission.release(victim)  # the quota wrapper does not give it back again)
        return self.placement(group, option.per_worker, job.workers, free)

    def quiet_until(self, view: SchedulerView) -> float:
        """After a decision that did nothing, rounds decide nothing until an arrival, a finish, a
        quota change or (when it used its round's allocation while the jobs had changed) the next
        round: the allocation depends only on which jobs are queued and running."""
        if self._acted:
            return view.now
        if self._stale:  # the next round computes a new allocation, which may act
            at = (self._cache[3] + 1) * self.interval_s
            return at - (1e-7 * abs(at) + 1e-3)  # at or before the engine's round (float sums)
        bound = self._bound
        if bound is not None and getattr(view, "tenants", None) is None:
            later = [t for t in bound.change_times if t > view.now]
            return later[0] if later else math.inf
        return math.inf


def build_maxmin_hetero(options, *, placement: Placement, allocation: Allocation, backfill: bool,
                        interval_s: float | None = None) -> MaxMinHeteroScheduler:
    return MaxMinHeteroScheduler(placement, allocation, backfill, interval_s)


register("maxmin-hetero", no_reservations="walks the queue tenant by tenant")(common_builder(build_maxmin_hetero))
