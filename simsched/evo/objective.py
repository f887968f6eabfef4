"""The scheduling objective of a plan (Eq. 2-5; SPEC §6), minimised.

It is computed over every unfinished job of all clusters. A running job is
passed with ``start = now``: its queued time stays what it has accumulated,
and it finishes at ``now + remaining``. A planned job passes its planned start.

    q_j     = queued_j + (S_j - now)                         (Eq. 2)
    C_q,avg = mean_j u_j q_j                                 (Eq. 2)
    C_q,max = max_j u_j q_j                                  (Eq. 3)
    C_u     = sum_j g_j d_j / (G_total (max_j F_j - now))    (Eq. 4), F_j = S_j + d_j
    f       = w1 C_q,avg + w2 C_q,max + w3 (1 - C_u)         (Eq. 5)

Eq. 16 (``[objective] kind = "eq16"``, the paper's single-cluster objective)
is planned as

    f = w mean_j (q_j + d_j) + (1 - w) max_j q_j             (Eq. 16)

with q_j as above but unweighted (u_j = 1): q_j + d_j = q_j(t) + (F_j - now)
is the job's completion time counted from now plus the time it has queued so
far (time it already ran before a preemption is a constant and left out, so
it changes no decision). Both forms are one linear combination of the
per-cluster sums, ``_combine``'s (w1, w2, w3, w4): Eq. 5 is (w1, w2, w3, 0)
with work g_j d_j; Eq. 16 is (w, 1 - w, 0, w) with u_j = 1 and work d_j, where
w4 multiplies the mean work sum_j work_j / |J|.

g_j and G_total are in the same units (GPUs or milli-GPUs; only their ratio
matters). Edge cases: with no jobs both queue terms are 0; when nothing runs
past ``now`` (max F <= now), C_u = 1 (no idle capacity is planned). A job
that never starts (S = inf) makes f infinite.

The per-cluster sums (sum u q, max u q, sum g d, max F, count) combine across
clusters, which lets the EA cache them per cluster.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from simsched.core.errors import InputError

#: (w1, w2, w3), the paper's default.
DEFAULT_WEIGHTS: tuple[float, float, float] = (1.0, 1.0, 1.0)
#: ``[objective] kind`` values
KINDS: tuple[str, ...] = ("eq5", "eq16")


def combine_weights(kind: str, weights: tuple[float, float, float], w: float) -> tuple[float, float, float, float]:
    """(w1, w2, w3, w4) of ``_combine`` for an objective kind (see the module docstring)."""
    if kind == "eq5":
        if len(weights) != 3:
            raise InputError(f'objective: "weights" must be (w1, w2, w3), got {weights!r}')
        return float(weights[0]), float(weights[1]), float(weights[2]), 0.0
    if kind == "eq16":
        if not 0.0 <= w <= 1.0:
            raise InputError(f'objective: "w" must be in [0, 1], got {w!r}')
        return float(w), 1.0 - float(w), 0.0, float(w)
    raise InputError(f'objective: unknown kind {kind!r}; valid: {", ".join(KINDS)}')


@njit(cache=True)
def _combine(
    now: float,
    sum_uq: float,
    max_uq: float,
    sum_gd: float,
    max_finish: float,
    count: float,
    total_capacity: float,
    w1: float,
    w2: float,
    w3: float,
    w4: float = 0.0,
) -> float:
    """Eq. 5 (w4 = 0) or Eq. 16 from the running sums of Eq. 2-4 (``sum_gd`` is the work sum)."""
    if max_uq == np.inf or max_finish == np.inf:
        return np.inf
    c_avg = sum_uq / count if count > 0 else 0.0
    c_max = max_uq if count > 0 else 0.0
    horizon = max_finish - now
    c_u = sum_gd / (total_capacity * horizon) if horizon > 0 and total_capacity > 0 else 1.0
    f = w1 * c_avg + w2 * c_max + w3 * (1.0 - c_u)
    if w4 != 0.0:
        f += w4 * (sum_gd / count if count > 0 else 0.0)
    return f


def objective(
    now: float,
    weight: np.ndarray,
    queued: np.ndarray,
    start: np.ndarray,
    remaining: np.ndarray,
    gpus: np.ndarray,
    total_capacity: float,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
    kind: str = "eq5",
    w: float = 0.5,
    useful: np.ndarray | None = None,
) -> float:
    """Eq. 5 (or Eq. 16 with ``kind = "eq16"``) over all unfinished jobs (running ones with ``start = now``).

    ``weight`` is u_j, ``queued`` the queued time accumulated so far, ``remaining``
    d_j(now), ``gpus`` g_j, ``total_capacity`` the sum over clusters of G_p N_p.
    Eq. 16 ignores ``weight``, ``gpus`` and ``weights``. ``useful`` (default
    ``remaining``) is the part of ``remaining`` that is useful work, the d_j of C_u
    (a restart penalty holds GPUs but is not useful work).
    """
    u = np.asarray(weight, dtype=np.float64)
    q0 = np.asarray(queued, dtype=np.float64)
    s = np.asarray(start, dtype=np.float64)
    d = np.asarray(remaining, dtype=np.float64)
    g = np.asarray(gpus, dtype=np.float64)
    if not (u.shape == q0.shape == s.shape == d.shape == g.shape):
        raise InputError("objective: weight, queued, start, remaining and gpus need one shape")
    w1, w2, w3, w4 = combine_weights(kind, weights, w)
    if np.any(np.isinf(s)):
        return math.inf
    work = g * (d if useful is None else np.asarray(useful, dtype=np.float64))
    if kind == "eq16":
        u = np.ones_like(u)
        work = d
    uq = u * (q0 + (s - now))  # Eq. 2
    finish = s + d
    return float(
        _combine(
            float(now),
            float(uq.sum()),
            float(uq.max(initial=-np.inf)),
            float(work.sum()),
            float(finish.max(initial=now)),
            float(u.size),
            float(total_capacity),
            w1,
            w2,
            w3,
            w4,
        )
    )
