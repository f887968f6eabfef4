"""The objective's floor: a value no assignment can beat, and when the EA may stop at it.

When every job can start now, the wait terms of Eq. 5 (and 16) are at their
lowest. If, besides, a job's duration and work do not depend on its cluster,
the work sum is the same for every assignment and the latest finish is at its
lowest too, so the whole objective is at a floor that no assignment goes
below. :func:`objective_floor` computes that floor, or says it cannot be
proven, for an allocation instance:

    sum u q  >= sum_fixed + sum_j u_j q_j(now)        (every S_j >= now)
    max u q  >= max(max_fixed, max_j u_j q_j(now))
    sum work  = sum_fixed + sum_j work_j                (work_j the same on every cluster)
    max F    >= max(now, max_fixed, max_j now + d_j)
    count     = count_fixed + |jobs with a feasible cluster|

and combines them with :func:`~simsched.evo.objective._combine`, as the EA's
fitness does. The bound holds in floating point, not only in exact
arithmetic, when every term is an integer and every sum that any assignment
can form stays below 2**53: then each per-cluster and total sum is exact
whatever the grouping, and ``_combine`` is monotone in each sum (divisions
and products by the same non-negative operands, correctly rounded; the
weights are non-negative; the latest finish is past ``now``). The paper's
instances meet this: arrivals and durations are whole seconds, priorities
1-3 and GPU counts integers, so every event time is a whole second.

**Why the EA may stop.** :func:`simsched.evo.ea.evolve` keeps the best n of
parents and children with parents winning ties, and reads its answer from
the first row of the sorted population. If the best initial individual is at
the floor, no child can be strictly better, so that row is the answer after
any number of generations. Skipping the generations is faithful when the
random numbers they would have drawn are drawn all the same (``evolve``
does), so later decisions see the same stream: the same assignment, the same
objective and the same random state as the full run (tests/test_evo_floor.py
checks all three against the full EA).
"""

from __future__ import annotations

import numpy as np

from simsched.evo.instance import _Kernel
from simsched.evo.objective import _combine

#: below this every integer is a float64 and integer sums are exact
EXACT = float(2**53)


def _integral(values: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(values)) and np.all(values == np.floor(values)))


def objective_floor(k: _Kernel) -> float | None:
    """The objective no assignment can go below (see the module docstring), or None when unproven.

    None when: a weight is negative; some job's duration or work differs
    between its feasible clusters (GPU speeds, a restart penalty on other
    clusters); a term is not a whole number; a sum might reach 2**53; or
    nothing runs past now.
    """
    if not (np.all(np.isfinite(k.weights)) and np.all(k.weights >= 0.0)):
        return None
    placeable = k.feasible.any(axis=1)
    feasible = k.feasible[placeable]
    duration = k.duration[placeable]
    work = k.work[placeable]
    first = np.argmax(feasible, axis=1)
    rows = np.arange(first.shape[0])
    d = duration[rows, first]
    g = work[rows, first]
    if np.any(feasible & (duration != d[:, None])) or np.any(feasible & (work != g[:, None])):
        return None
    u = k.weight[placeable]
    q0 = k.queued[placeable]
    fixed = k.fixed_sums
    fixed_max_uq = fixed[:, 1][np.isfinite(fixed[:, 1])]  # -inf: a cluster with no running job
    if not (_integral(np.array([k.now, k.total_capacity])) and all(
            _integral(x) for x in (u, q0, d, g, fixed[:, 0], fixed_max_uq, fixed[:, 2], fixed[:, 3], fixed[:, 4]))):
        return None
    if np.any(u < 0) or np.any(q0 < 0) or np.any(d < 0) or np.any(g < 0):
        return None
    # The largest sum any assignment can form: no job starts later than after every other job
    # and every running job (a serial plan), so its u q stays below u (q0 + that horizon).
    horizon = float(d.sum()) + max(float(fixed[:, 3].max(initial=k.now)) - k.now, 0.0)
    largest = (float(np.abs(fixed[:, 0]).sum()) + float((u * q0).sum()) + float(u.sum()) * horizon,
               float(np.abs(fixed[:, 2]).sum()) + float(g.sum()),
               abs(k.now) + horizon + float(np.abs(fixed[:, 3]).max(initial=0.0)))
    if max(largest) >= EXACT:
        return None
    uq = u * q0
    sum_uq = float(fixed[:, 0].sum() + uq.sum())
    max_uq = float(max(fixed[:, 1].max(initial=-np.inf), uq.max(initial=-np.inf)))
    sum_gd = float(fixed[:, 2].sum() + g.sum())
    max_f = float(max(k.now, fixed[:, 3].max(initial=k.now), (k.now + d).max(initial=k.now)))
    count = float(fixed[:, 4].sum() + placeable.sum())
    if not max_f > k.now:
        return None
    return float(_combine(k.now, sum_uq, max_uq, sum_gd, max_f, count, k.total_capacity,
                          k.weights[0], k.weights[1], k.weights[2], k.weights[3]))
