"""The allocation EA (Algorithm 1): initial population, crossover, mutation, selection.

An individual is one cluster index per schedulable job. Init: each job on a
uniformly drawn feasible cluster (plus the MCT and/or current assignment with
``seed_with``). Each generation draws two parents at random per pair of
children, cuts them at one point, mutates both children with probability r
(move one job to another feasible cluster, or swap two jobs' clusters), scores
them (:mod:`simsched.evo.fitness`, exact cache) and keeps the best n of
parents and children. Offspring, scores and selection run in one numba call per
generation (:func:`_generation`); the random numbers are drawn in Python, in
the same stream order as always.

When the best initial individual is already at the objective's floor
(:mod:`simsched.evo.floor`: every job starts now and nothing else can
differ), no generation can change the answer; ``evolve`` then draws the
generations' random numbers without using them and returns that individual
(``stop_reason = "floor"``): the same assignment, objective and random state
as the full run, without its 200 x n evaluations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from simsched.core.errors import InputError
from simsched.evo.fitness import _Cache, _evaluate_population, _new_cache, _Workspace, _workspace
from simsched.evo.floor import objective_floor
from simsched.evo.instance import AllocationInstance, _Kernel
from simsched.evo.mct import mct_assign

SEED_OPTIONS: tuple[str, ...] = ("mct", "current")


@njit(cache=True)
def _pick(u: float, count: int) -> int:
    """A uniform draw in [0, 1) to an index in [0, count)."""
    i = int(u * count)
    return i if i < count else count - 1


@njit(cache=True)
def _before(a: float, b: float) -> bool:
    """``a`` sorts before ``b`` in numpy's order for floats (NaN last)."""
    return a < b or (np.isnan(b) and not np.isnan(a))


@njit(cache=True)
def _generation(
    k: _Kernel,
    ws: _Workspace,
    cache: _Cache,
    use_cache: bool,
    population: np.ndarray,
    fitness: np.ndarray,
    uniforms: np.ndarray,
    mutation_rate: float,
    children: np.ndarray,
    child_fitness: np.ndarray,
    child_order: np.ndarray,
    out_population: np.ndarray,
    out_fitness: np.ndarray,
) -> None:
    """One EA generation: offspring, their objectives, and the best n of parents and offspring.

    The selection is ``np.argsort(concat(fitness, child_fitness), kind="stable")[:n]``
    (parents win ties), computed as a merge: ``population`` is sorted by ``fitness``
    already (every generation leaves it so), the children are sorted stably here.
    """
    _offspring(k, population, uniforms, mutation_rate, children)
    _evaluate_population(k, ws, cache, use_cache, children, child_fitness)
    _select(population, fitness, children, child_fitness, child_order, out_population, out_fitness)


@njit(cache=True)
def _select(
    population: np.ndarray,
    fitness: np.ndarray,
    children: np.ndarray,
    child_fitness: np.ndarray,
    child_order: np.ndarray,
    out_population: np.ndarray,
    out_fitness: np.ndarray,
) -> None:
    """The best n of parents (sorted by ``fitness``) and children, as numpy's stable argsort
    of the concatenation (NaN last, parents win ties) would keep them, in that order."""
    m = child_fitness.shape[0]
    for c in range(m):  # stable insertion sort of the children by fitness
        value = child_fitness[c]
        pos = c
        while pos > 0 and _before(value, child_fitness[child_order[pos - 1]]):
            child_order[pos] = child_order[pos - 1]
            pos -= 1
        child_order[pos] = c
    n = population.shape[0]
    i = 0
    c = 0
    for slot in range(n):
        if c < m and (i >= n or _before(child_fitness[child_order[c]], fitness[i])):
            out_population[slot] = children[child_order[c]]
            out_fitness[slot] = child_fitness[child_order[c]]
            c += 1
        else:
            out_population[slot] = population[i]
            out_fitness[slot] = fitness[i]
            i += 1


@njit(cache=True)
def _random_init(k: _Kernel, uniforms: np.ndarray, out: np.ndarray) -> None:
    """Feasibility-aware init: each job on a uniformly drawn feasible cluster (-1 if none)."""
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            lo = k.feasible_offset[j]
            count = k.feasible_offset[j + 1] - lo
            out[i, j] = k.feasible_list[lo + _pick(uniforms[i, j], count)] if count > 0 else -1


@njit(cache=True)
def _mutate(k: _Kernel, child: np.ndarray, u_kind: float, u_job: float, u_choice: float) -> None:
    """Half the time move one job to another feasible cluster, else swap two jobs' clusters."""
    n_mobile = k.mobile.shape[0]
    if n_mobile == 0:
        return
    j = k.mobile[_pick(u_job, n_mobile)]
    p = child[j]
    if u_kind < 0.5:
        lo = k.feasible_offset[j]
        count = k.feasible_offset[j + 1] - lo
        m = _pick(u_choice, count - 1)
        for f in range(lo, lo + count):
            q = k.feasible_list[f]
            if q == p:
                continue
            if m == 0:
                child[j] = q
                return
            m -= 1
        return
    # Swap: a job on another of j's feasible clusters that may itself run on p.
    candidates = 0
    for other in range(child.shape[0]):
        q = child[other]
        if q >= 0 and q != p and k.feasible[j, q] and k.feasible[other, p]:
            candidates += 1
    if candidates == 0:
        return
    m = _pick(u_choice, candidates)
    for other in range(child.shape[0]):
        q = child[other]
        if q >= 0 and q != p and k.feasible[j, q] and k.feasible[other, p]:
            if m == 0:
                child[j] = q
                child[other] = p
                return
            m -= 1


@njit(cache=True)
def _offspring(
    k: _Kernel, population: np.ndarray, uniforms: np.ndarray, mutation_rate: float, out: np.ndarray
) -> None:
    """Two children per row of ``uniforms``: random parents, single-point crossover, mutation."""
    n = population.shape[0]
    n_jobs = population.shape[1]
    for i in range(uniforms.shape[0]):
        u = uniforms[i]
        first = population[_pick(u[0], n)]
        second = population[_pick(u[1], n)]
        cut = 1 + _pick(u[2], n_jobs - 1) if n_jobs >= 2 else n_jobs
        c1 = out[2 * i]
        c2 = out[2 * i + 1]
        for j in range(n_jobs):
            if j < cut:
                c1[j] = first[j]
                c2[j] = second[j]
            else:
                c1[j] = second[j]
                c2[j] = first[j]
        if u[3] < mutation_rate:
            _mutate(k, c1, u[4], u[5], u[6])
            _mutate(k, c2, u[7], u[8], u[9])


@dataclass(frozen=True, slots=True, eq=False)
class EvolveResult:
    """Outcome of :func:`evolve`. ``history[0]`` is the best after init, then one per generation."""

    assignment: np.ndarray
    objective: float
    history: np.ndarray
    generations: int
    evaluations: int
    cluster_plans: int
    cache_hits: int
    seeded: tuple[str, ...]
    stop_reason: str
    elapsed_s: float


def _skip_doubles(rng: np.random.Generator, count: int) -> None:
    """Move ``rng`` on as ``count`` calls of ``rng.random()`` would (in any grouping: each double is the
    next draw of one sequential stream). PCG64's ``advance`` does it in O(1) when no 32-bit half-draw
    is buffered (doubles never use that buffer; ``advance`` clears it); other generators draw."""
    bits = rng.bit_generator
    if isinstance(bits, (np.random.PCG64, np.random.PCG64DXSM)) and not bits.state["has_uint32"]:
        bits.advance(count)
        return
    while count > 0:
        rng.random(min(count, 1 << 16))
        count -= 1 << 16


def _at_floor(best: np.ndarray, bound: float, rng: np.random.Generator, generations: int,
              stagnation: int | None, n_pairs: int, table: _Cache, seeded: list[str],
              started: float) -> EvolveResult:
    """:func:`evolve`'s result when an initial individual is at the objective's floor: that
    individual, after drawing the random numbers the generations would have drawn."""
    runs = generations if stagnation is None else min(generations, stagnation)
    _skip_doubles(rng, runs * n_pairs * 10)
    return EvolveResult(
        assignment=best.copy(),
        objective=float(bound),
        history=np.full(runs + 1, float(bound)),
        generations=runs,
        evaluations=int(table.stats[0]),
        cluster_plans=int(table.stats[1]),
        cache_hits=int(table.stats[2]),
        seeded=tuple(seeded),
        stop_reason="floor",
        elapsed_s=time.perf_counter() - started,
    )


def evolve(
    instance: AllocationInstance,
    rng: np.random.Generator,
    n: int = 100,
    generations: int = 200,
    mutation_rate: float = 0.1,
    time_budget_s: float | None = None,
    stagnation: int | None = None,
    seed_with: tuple[str, ...] = (),
    cache: bool = True,
    floor: bool = True,
) -> EvolveResult:
    """The allocation EA (Algorithm 1): the best assignment found, its Eq. 5 value and the history.

    ``time_budget_s`` stops before a generation once that much wall time has
    passed. ``stagnation`` stops after that many generations without
    improvement. ``seed_with`` puts the MCT and/or the current assignment into
    the initial population (jobs with no current cluster keep their random gene).
    ``floor = False`` runs every generation even when the best initial individual is
    at the objective's floor (for tests and measurements; the answer is the same).
    """
    started = time.perf_counter()
    if n < 2:
        raise InputError(f'evolve: "n" must be >= 2, got {n}')
    if generations < 0:
        raise InputError(f'evolve: "generations" must be >= 0, got {generations}')
    if not 0.0 <= mutation_rate <= 1.0:
        raise InputError(f'evolve: "mutation_rate" must be in [0, 1], got {mutation_rate}')
    if stagnation is not None and stagnation < 1:
        raise InputError(f'evolve: "stagnation" must be >= 1, got {stagnation}')
    unknown = [s for s in seed_with if s not in SEED_OPTIONS]
    if unknown:
        raise InputError(
            f'evolve: unknown "seed_with" entries {unknown}; valid: {", ".join(SEED_OPTIONS)}'
        )
    if "current" in seed_with and instance.current is None:
        raise InputError('evolve: seed_with "current" needs the instance\'s "current" assignment')

    k = instance.kernel
    n_jobs = instance.n_jobs
    ws = _workspace(k)
    population = np.empty((n, n_jobs), dtype=np.int64)
    _random_init(k, rng.random((n, n_jobs)), population)
    seeded: list[str] = []
    for name in dict.fromkeys(seed_with):
        row = len(seeded)
        if name == "mct":
            population[row] = mct_assign(instance)
        else:
            current = instance.current
            ok = (current >= 0) & instance.feasible[np.arange(n_jobs), np.maximum(current, 0)]
            population[row, ok] = current[ok]
        seeded.append(name)
    fitness = np.empty(n)
    n_pairs = (n + 1) // 2
    bound = objective_floor(k) if floor and time_budget_s is None and generations > 0 else None
    scored = 0
    table = None
    if bound is not None:
        table = _new_cache(n_jobs, k.capacity.shape[0] * n if cache else 0)
        # Rows in order: the first one at the floor heads the stably sorted population whatever the
        # later rows score (none scores lower), and no child can displace it (parents win ties).
        while scored < n:
            _evaluate_population(k, ws, table, cache, population[scored:scored + 1], fitness[scored:scored + 1])
            scored += 1
            if fitness[scored - 1] == bound:
                return _at_floor(population[scored - 1], bound, rng, generations, stagnation, n_pairs,
                                 table, seeded, started)
    # the exact cache only saves work: a fresh, larger one for the generations changes no value
    scan, table = table, _new_cache(n_jobs, k.capacity.shape[0] * n * (generations + 1) if cache else 0)
    if scan is not None:
        table.stats[:3] += scan.stats[:3]  # evaluations, cluster plans, cache hits so far
    _evaluate_population(k, ws, table, cache, population[scored:], fitness[scored:])
    keep = np.argsort(fitness, kind="stable")
    population, fitness = population[keep], fitness[keep]

    history = [float(fitness[0])]
    children = np.empty((2 * n_pairs, n_jobs), dtype=np.int64)
    child_fitness = np.empty(2 * n_pairs)
    child_order = np.empty(2 * n_pairs, dtype=np.int64)
    next_population = np.empty_like(population)
    next_fitness = np.empty_like(fitness)
    stop_reason = "generations"
    since_improvement = 0
    done = 0
    while done < generations:
        if time_budget_s is not None and time.perf_counter() - started >= time_budget_s:
            stop_reason = "time_budget"
            break
        if stagnation is not None and since_improvement >= stagnation:
            stop_reason = "stagnation"
            break
        _generation(k, ws, table, cache, population, fitness, rng.random((n_pairs, 10)), mutation_rate,
                    children, child_fitness, child_order, next_population, next_fitness)
        population, next_population = next_population, population
        fitness, next_fitness = next_fitness, fitness
        since_improvement = since_improvement + 1 if fitness[0] >= history[-1] else 0
        history.append(float(fitness[0]))
        done += 1
    return EvolveResult(
        assignment=population[0].copy(),
        objective=float(fitness[0]),
        history=np.asarray(history),
        generations=done,
        evaluations=int(table.stats[0]),
        cluster_plans=int(table.stats[1]),
        cache_hits=int(table.stats[2]),
        seeded=tuple(seeded),
        stop_reason=stop_reason,
        elapsed_s=time.perf_counter() - started,
    )
