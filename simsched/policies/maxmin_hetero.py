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
program.

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
within it; step 2 hands out the rest). The solver is
scipy (``pip install simsched[test]``), imported when the policy is built.
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


def _linprog():
    try:
        from scipy.optimize import linprog
    except ImportError:  # the core stays importable without scipy
        raise InputError('scheduler.policy = "maxmin-hetero" needs scipy for its linear programs; '
                         f'install it with: {install_hint("test")} (or pip install scipy)') from None
    return linprog


def maxmin_allocation(throughput: np.ndarray, capacity: np.ndarray, demand: np.ndarray,
                      weights: np.ndarray, served: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The max-min fair allocation (module docstring): ``throughput`` a[t, r] (tenants x groups),
    ``capacity`` C_r, ``demand`` D_t (requested GPUs), ``weights`` w_t and ``served`` s[t, r], the
    requested GPUs one GPU of r serves (1 without memory scaling; default all 1). Returns x[t, r]
    (GPUs held) and each tenant's normalised throughput level."""
    linprog = _linprog()
    a = np.asarray(throughput, dtype=float)
    n, m = a.shape
    capacity = np.asarray(capacity, dtype=float)
    demand = np.asarray(demand, dtype=float)
    weights = np.asarray(weights, dtype=float)
    equal = a @ capacity * weights / weights.sum()  # E_t
    levels = np.full(n, np.nan)
    usable = equal > 0
    levels[~usable] = 0.0  # a tenant that can use nothing (or is entitled to nothing) gets nothing
    bounds = [(0.0, 0.0 if a[t, r] <= 0 or not usable[t] else None) for t in range(n) for r in range(m)]
    # shared rows: groups' capacity, tenants' demand
    cap_rows = np.zeros((m, n * m))
    for r in range(m):
        cap_rows[r, r::m] = 1.0
    served = np.ones_like(a) if served is None else np.asarray(served, dtype=float)
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
            res = _level_program(linprog, a, equal, levels, free_t, fixed_t, shared, shared_b, bounds, slack)
            if res.status != 2:  # infeasible only by round-off: the last level was a hair too high
                break
        if res.status != 0:
            raise AssertionError(f"maxmin-hetero: the water-filling program failed: {res.message}")
        z = float(res.x[-1])
        duals = res.ineqlin.marginals[:len(free_t)]
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
            cost[t * m:(t + 1) * m] = -a[t] / equal[t]
        for slack in _SLACKS:
            res = linprog(cost, A_ub=np.vstack((rows, shared)),
                          b_ub=np.concatenate((-_floor(levels[fixed_t] * equal[fixed_t], slack), shared_b)),
                          bounds=bounds, method="highs")
            if res.status == 0:
                x = res.x
                break
    x = np.maximum(np.asarray(x).reshape(n, m), 0.0)
    return x, levels



def _floor(throughput, slack: float):
    """A fixed tenant's throughput floor, ``slack`` (relative) below its level, against round-off."""
    return throughput * (1 - slack)


def _level_program(linprog, a, equal, levels, free_t, fixed_t, shared, shared_b, bounds, slack: float):
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
    return linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=[*bounds, (0.0, None)], method="highs")


class MaxMinHeteroScheduler(QuotaSource):
    """Gavel-style heterogeneity-aware max-min fairness between tenants (module docstring)."""

    name = "maxmin-hetero"
    # the walk checks quotas as it places (simsched.policies.quota), so a start that would break its
    # tenant's quota is never chosen, and nothing is preempted for it
    supports_admission = True
    by_tenant = False
    #: False: try every job, even of a kind that already failed (the reference, for tests)
    remember_failures = True

    def __init__(self, placement: Placement, allocation: Allocation, backfill: bool = True,
                 interval_s: float | None = None) -> None:
        super().__init__()
        _linprog()  # fail at build time, with one clear line, when scipy is missing
        self.placement = placement
        self.allocation = allocation
        self.backfill = backfill
        self.interval_s = DEFAULT_ROUND_S if interval_s is None else interval_s
        self._cache: tuple | None = None  # (inputs, x, levels, round) of the last water-filling
        self._acted = True
        self._t_index: dict = {}
        self._stale = False  # the last decision used its round's allocation, not one of the jobs then
        self.programs = 0  # water-fillings solved (not cached), for tests and benchmarks

    # -- the allocation ---------------------------------------------------------------
    @staticmethod
    def _speed(job: JobView, option) -> float:
        """The job's speed factor on ``option``'s GPU type: the one place this policy reads speeds
        (the per-type speedups, simsched.core.model.speed_factor)."""
        return option.speed

    def targets(self, view: SchedulerView):
        """(tenants, groups, x, levels, a, equal): the max-min fair allocation for the jobs now."""
        groups = sorted(view.fleet.groups)
        index = {g: i for i, g in enumerate(groups)}
        # tenant -> [Σ_j g_j a_jr, Σ_j g_j s_jr (per group), Σ_j g_j]; s_jr = g_j / GPUs held on r
        # (Python floats, summed in job order: the same IEEE sums as numpy's, without its per-element cost)
        stats: dict[str | None, list] = {}
        m = len(groups)
        speed = self._speed
        cluster_for = self.allocation.cluster_for
        for job in (*view.running, *view.queue):
            entry = stats.get(job.tenant)
            if entry is None:
                entry = stats[job.tenant] = [[0.0] * m, [0.0] * m, 0.0]
            cluster = job.running_cluster if job.running_nodes else cluster_for(job, view)
            gpus = job.gpus
            rates, served_sum = entry[0], entry[1]
            for option in job.options:
                if cluster is not None and option.cluster != cluster:
                    continue
                r = index[option.cluster, option.gpu_type]
                served = gpus / (option.per_worker * job.workers / MILLI)  # (option_gpus, inlined)
                rates[r] += gpus * speed(job, option) * served
                served_sum[r] += gpus * served
            entry[2] += gpus
        tenants = sorted(stats, key=tenant_order)
        a = np.array([np.array(stats[t][0]) / stats[t][2] if stats[t][2] > 0 else stats[t][0] for t in tenants])
        served = np.array([np.array(stats[t][1]) / stats[t][2] if stats[t][2] > 0 else stats[t][1]
                           for t in tenants])
        capacity = group_gpus(view)
        cap = np.array([capacity[g] for g in groups])
        demand = np.array([stats[t][2] for t in tenants])
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
            x, levels = cache[1], cache[2]
            self._stale = cache[0] != key
        else:
            x, levels = maxmin_allocation(a, cap, demand, weights, served) if weights.sum() > 0 else (
                np.zeros_like(a), np.zeros(len(tenants)))
            self.programs += 1
            self._cache = (key, x, levels, round_k)
            self._stale = False
        equal = a @ cap * weights / weights.sum() if weights.sum() > 0 else np.zeros(len(tenants))
        return tenants, groups, x, levels, a, equal

    # -- one decision ---------------------------------------------------------------------
    def decide(self, view: SchedulerView) -> Decision:
        queue = view.queue
        if not queue:
            self._acted = False
            return EMPTY_DECISION
        plan_clusters(self.allocation, view, sorted(queue, key=lambda j: (j.submit, j.index)))
        tenants, groups, x, levels, a, equal = self.targets(view)
        t_index = self._t_index = {t: i for i, t in enumerate(tenants)}
        g_index = {g: i for i, g in enumerate(groups)}
        fleet = view.fleet
        usage = np.zeros_like(x)
        running_on: dict[int, list[JobView]] = {}
        for job in view.running:
            r = g_index[fleet.node_cluster[job.running_nodes[0]], fleet.node_type[job.running_nodes[0]]]
            usage[t_index[job.tenant], r] += held_gpus(job)
            running_on.setdefault(r, []).append(job)
        waiting: dict[str | None, list[JobView]] = {}
        for job in queue:
            waiting.setdefault(job.tenant, []).append(job)
        for jobs in waiting.values():
            jobs.sort(key=lambda j: (j.submit, j.index))
        free = list(view.free)
        starts: list[Start] = []
        preempts: list[str] = []
        started: set[str] = set()

        cluster_for = self.allocation.cluster_for
        remember = self.remember_failures

        def level(t: int) -> float:  # normalised throughput now
            return float(a[t] @ usage[t] / equal[t]) if equal[t] > 0 else math.inf

        # each queued job's kind (cluster, options, workers), per tenant in its jobs' order, and how
        # many kinds each tenant has
        kinds_of = {tenant: [(cluster_for(job, view), id(job.options), job.workers) for job in jobs]
                    for tenant, jobs in waiting.items()}
        every: dict[str | None, int] = {}  # per tenant: how many kinds its queued jobs are (0: no backfill)
        for within in (True, False):
            heap = []
            for tenant, jobs in waiting.items():
                if started:
                    kept = [i for i, j in enumerate(jobs) if j.job_id not in started]
                    if len(kept) < len(jobs):
                        kinds = kinds_of[tenant]
                        jobs = waiting[tenant] = [jobs[i] for i in kept]
                        kinds_of[tenant] = [kinds[i] for i in kept]
                if jobs:
                    heap.append((level(t_index[tenant]), jobs[0].submit, jobs[0].index, t_index[tenant], 0))
                    every[tenant] = len(set(kinds_of[tenant])) if self.backfill and remember else 0
            heapq.heapify(heap)
            # kinds of job that did not start, per tenant: in the leftovers pass nothing is preempted
            # (free GPUs and quota rooms only shrink), so they fail again for the rest of the pass;
            # within allocations a preemption may make room, so only for the rest of the tenant's turn
            # (nothing changes until it starts a job, which ends its turn). Once all of a tenant's kinds
            # failed, its turn ends (with backfill: its other jobs would fail too)
            failed_of: dict[int, set] = {}
            while heap:
                _, _, _, t, position = heapq.heappop(heap)
                tenant = tenants[t]
                jobs, kinds = waiting[tenant], kinds_of[tenant]
                failed = failed_of.get(t) if not within else None
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
                            if len(failed) == all_kinds:
                                break  # (every kind of its jobs fails: so do the rest)
                    if start is not None:
                        starts.append(start)
                        started.add(job.job_id)
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
