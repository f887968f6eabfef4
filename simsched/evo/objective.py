"""The scheduling objective of a plan (Eq. 2-5; SPEC §6), minimised.

It is computed over every unfinished job of all clusters. A running job is
passed with ``start = now``: its queued time stays what it has accumulated,
and it finishes at ``now + remaining``. A planned job passes its planned start.

    q_j     = queued_j + (S_j - now)                         (Eq. 2)
    C_q,avg = mean_j u_j q_j                                 (Eq. 2)
    C_q,max = max_j u_j q_j                                  (Eq. 3)
    C_u     = sum_j g_j d_j / (G_total (max_j F_j - now))    (Eq. 4), F_j = S_j + d_j
    f       = w1 C_q,avg + w2 C_q,max + w3 (1 - C_u)         (Eq. 5)

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

from simsched.errors import InputError

#: (w1, w2, w3), the paper's default.
DEFAULT_WEIGHTS: tuple[float, float, float] = (1.0, 1.0, 1.0)


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
) -> float:
    """Eq. 5 from the running sums of Eq. 2-4."""
    if max_uq == np.inf or max_finish == np.inf:
        return np.inf
    c_avg = sum_uq / count if count > 0 else 0.0
    c_max = max_uq if count > 0 else 0.0
    horizon = max_finish - now
    c_u = sum_gd / (total_capacity * horizon) if horizon > 0 and total_capacity > 0 else 1.0
    return w1 * c_avg + w2 * c_max + w3 * (1.0 - c_u)


def objective(
    now: float,
    weight: np.ndarray,
    queued: np.ndarray,
    start: np.ndarray,
    remaining: np.ndarray,
    gpus: np.ndarray,
    total_capacity: float,
    weights: tuple[float, float, float] = DEFAULT_WEIGHTS,
) -> float:
    """Eq. 5 over all unfinished jobs (running ones with ``start = now``).

    ``weight`` is u_j, ``queued`` the queued time accumulated so far, ``remaining``
    d_j(now), ``gpus`` g_j, ``total_capacity`` the sum over clusters of G_p N_p.
    """
    u = np.asarray(weight, dtype=np.float64)
    q0 = np.asarray(queued, dtype=np.float64)
    s = np.asarray(start, dtype=np.float64)
    d = np.asarray(remaining, dtype=np.float64)
    g = np.asarray(gpus, dtype=np.float64)
    if not (u.shape == q0.shape == s.shape == d.shape == g.shape):
        raise InputError("objective: weight, queued, start, remaining and gpus need one shape")
    if len(weights) != 3:
        raise InputError(f'objective: "weights" must be (w1, w2, w3), got {weights!r}')
    if np.any(np.isinf(s)):
        return math.inf
    uq = u * (q0 + (s - now))  # Eq. 2
    finish = s + d
    return float(
        _combine(
            float(now),
            float(uq.sum()),
            float(uq.max(initial=-np.inf)),
            float((g * d).sum()),
            float(finish.max(initial=now)),
            float(u.size),
            float(total_capacity),
            float(weights[0]),
            float(weights[1]),
            float(weights[2]),
        )
    )
