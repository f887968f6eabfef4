"""MCT allocation (SPEC §4): jobs in priority order, each to the cluster of earliest planned finish."""

from __future__ import annotations

import numpy as np
from numba import njit

from simsched.evo.fitness import _reset_cluster, _Workspace, _workspace
from simsched.evo.instance import AllocationInstance, _Kernel
from simsched.evo.planner import _commit, _earliest


@njit(cache=True)
def _mct(k: _Kernel, ws: _Workspace, out: np.ndarray) -> None:
    """Jobs in priority order, each to the cluster where its planned finish is earliest."""
    n_clusters = k.capacity.shape[0]
    b, f, o, en, eu, bf, c = ws.states
    for p in range(n_clusters):
        _reset_cluster(k, ws, p)
    starts = np.empty(n_clusters)
    now = k.now
    for i in range(k.order.shape[0]):
        j = k.order[i]
        best = -1
        best_finish = np.inf
        for g in range(k.feasible_offset[j], k.feasible_offset[j + 1]):
            p = k.feasible_list[g]
            t = _earliest(
                now,
                k.per_worker[j, p],
                k.workers[j],
                b[p],
                f[p],
                o[p],
                en[p],
                eu[p],
                bf[p],
                c[p],
                ws.sigma[p],
            )
            starts[p] = t
            fin = t + k.duration[j, p]
            if fin < best_finish:
                best_finish = fin
                best = p
        out[j] = best
        if best >= 0:
            p = best
            _commit(
                now,
                starts[p],
                k.duration[j, p],
                k.per_worker[j, p],
                k.workers[j],
                ws.sigma[p],
                b[p],
                f[p],
                o[p],
                en[p],
                eu[p],
                bf[p],
                c[p],
                ws.nodes,
            )


def mct_assign(instance: AllocationInstance) -> np.ndarray:
    """MCT allocation (SPEC §4): the cluster of earliest planned finish, jobs in priority order.

    Ties go to the lowest cluster index; a job with no feasible cluster gets -1.
    """
    out = np.full(instance.n_jobs, -1, dtype=np.int64)
    if instance.n_jobs:
        _mct(instance.kernel, _workspace(instance.kernel), out)
    return out
