"""The EVO-GP workload simulator (PAPER.md, Table II): the ``paper`` generator.

Per cluster p (N_p nodes of G_p GPUs): the Table II job types that cluster
can host (constraint (10) plus g/r <= G_p) are sampled by their weights,
renormalised; durations are exponential with the type's mean, whole seconds
(fractions dropped, at least 1 s); priorities (``weight``) are uniform in
{1, 2, 3}; ``jobs_per_node`` x N_p jobs arrive as a Poisson process with rate
lambda ~ U[lambda_max/4, lambda_max], lambda_max = N_p G_p / E[d g] (d in
seconds, E over the cluster's feasible-type distribution); ``home_cluster``
is the cluster. ``arrival = "uniform"`` instead spaces the jobs exactly
``interval_s`` apart (the paper's load-pressure sweep, Fig. 9a).

Choices the paper leaves open: submit times are the Poisson arrival times
floored to whole seconds (the first arrival is one inter-arrival after 0,
as in a process started at 0; the uniform mode starts at 0); a mixed
cluster counts its nodes as N_p, its largest node as G_p for feasibility
and its total GPUs in place of N_p G_p for lambda_max. Each cluster draws
from its own child stream (``rng.spawn``), so one cluster's draws do not
depend on how many jobs another cluster got.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, Fleet
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import JOB_COLUMNS, empty_table, normalize


@dataclass(frozen=True, slots=True)
class JobType:
    """One row of Table II: r_j workers, g_j GPUs in total, mean duration, sampling weight."""

    workers: int
    gpus: int
    mean_hours: float
    weight: float

    @property
    def mean_seconds(self) -> float:
        return self.mean_hours * 3600.0


#: Table II of the EVO-GP paper (PAPER.md), in the paper's order.
JOB_TYPES: tuple[JobType, ...] = (
    JobType(1, 1, 1.499136, 2.44e-1),
    JobType(1, 2, 0.906435, 1.23e-1),
    JobType(1, 4, 1.050502, 8.20e-2),
    JobType(1, 8, 3.285060, 4.29e-1),
    JobType(2, 2, 1.701724, 3.00e-2),
    JobType(2, 4, 1.348965, 1.00e-3),
    JobType(2, 8, 0.167778, 1.80e-4),
    JobType(2, 16, 6.448247, 2.40e-2),
    JobType(3, 24, 0.277222, 3.70e-4),
    JobType(4, 4, 0.039333, 2.64e-4),
    JobType(4, 32, 4.548746, 2.90e-2),
    JobType(6, 48, 5.659565, 3.30e-3),
    JobType(8, 8, 0.751250, 4.00e-4),
    JobType(8, 64, 11.871677, 1.93e-2),
    JobType(10, 80, 6.448889, 8.50e-4),
    JobType(12, 96, 0.449074, 1.70e-4),
    JobType(16, 16, 0.135417, 1.00e-3),
    JobType(16, 64, 0.036111, 5.30e-5),
    JobType(16, 128, 12.898697, 3.91e-2),
    JobType(24, 192, 0.198611, 5.30e-5),
    JobType(32, 256, 12.730382, 8.60e-4),
)

ARRIVALS = ("poisson", "uniform")


def cluster_shape(cluster: ClusterSpec) -> tuple[int, int, int]:
    """(N_p nodes, G_p GPUs of the largest node, total GPUs) of one cluster."""
    nodes = sum(group.count for group in cluster.nodes)
    largest = max((group.gpus for group in cluster.nodes if group.count > 0), default=0)
    return nodes, largest, cluster.total_gpus


def feasible(job_type: JobType, nodes: int, gpus_per_node: int) -> bool:
    """Constraint (10), floor(G r / g) N >= r, and one worker fits a node: g / r <= G."""
    r, g = job_type.workers, job_type.gpus
    return g <= gpus_per_node * r and (gpus_per_node * r // g) * nodes >= r


def type_distribution(nodes: int, gpus_per_node: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices into :data:`JOB_TYPES` feasible on the cluster and their renormalised probabilities."""
    index = np.array(
        [i for i, t in enumerate(JOB_TYPES) if feasible(t, nodes, gpus_per_node)], dtype=int
    )
    weights = np.array([JOB_TYPES[i].weight for i in index], dtype=float)
    return index, weights / weights.sum() if len(index) else weights


def lambda_max(nodes: int, gpus_per_node: int, total_gpus: int) -> float:
    """lambda_max = N_p G_p / E[d g] in jobs per second (total GPUs stand in for N_p G_p)."""
    index, probabilities = type_distribution(nodes, gpus_per_node)
    mean_work = sum(p * JOB_TYPES[i].mean_seconds * JOB_TYPES[i].gpus for i, p in zip(index, probabilities))
    return total_gpus / mean_work


@generator("paper")
def generate_paper(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """The Table II workload, one arrival stream per cluster of ``fleet``."""
    jobs_per_node = params.get("jobs_per_node", int, 10, min_value=1)
    limits.check_memory(f"{params.file}: {params.key('jobs_per_node')}", "jobs",
                        jobs_per_node * sum(g.count for c in fleet.clusters for g in c.nodes), limits.BYTES_PER_JOB)
    arrival = params.get("arrival", str, "poisson", choices=ARRIVALS)
    if arrival == "uniform":
        interval_s = params.get("interval_s", float, min_value=0.0, exclusive_min=True, max_value=1e9)
        if params.has("load"):
            raise params.error("load", 'is only used with arrival = "poisson"; set interval_s instead')
        load = 1.0
    else:
        if params.has("interval_s"):
            raise params.error("interval_s", 'is only used with arrival = "uniform"')
        interval_s = 0.0
        load = params.get("load", float, 1.0, min_value=0.0, exclusive_min=True, max_value=limits.MAX_LOAD)
    params.finish()

    streams = rng.spawn(len(fleet.clusters))
    tables = []
    for cluster, stream in zip(fleet.clusters, streams):
        nodes, gpus_per_node, total_gpus = cluster_shape(cluster)
        if nodes == 0:
            continue
        index, probabilities = type_distribution(nodes, gpus_per_node)
        if len(index) == 0:
            raise InputError(
                f"{params.file}: cluster {cluster.name!r} ({nodes} x {gpus_per_node} GPUs) "
                f"can host no job type of the paper workload"
            )
        n_jobs = jobs_per_node * nodes
        # Fixed draw order per stream: rate, types, durations, priorities, gaps.
        top = lambda_max(nodes, gpus_per_node, total_gpus)
        rate = stream.uniform(top / 4.0, top) * load
        chosen = index[stream.choice(len(index), size=n_jobs, p=probabilities)]
        means = np.array([JOB_TYPES[i].mean_seconds for i in chosen])
        durations = np.maximum(np.floor(stream.exponential(means)), 1.0)
        priorities = stream.integers(1, 4, size=n_jobs)
        if arrival == "poisson":
            submits = np.floor(np.cumsum(stream.exponential(1.0 / rate, size=n_jobs)))
        else:
            submits = np.arange(n_jobs) * interval_s
        tables.append(
            pd.DataFrame(
                {
                    "job_id": [f"{cluster.name}-{k}" for k in range(n_jobs)],
                    "submit": submits,
                    "duration": durations,
                    "gpus": [float(JOB_TYPES[i].gpus) for i in chosen],
                    "workers": [JOB_TYPES[i].workers for i in chosen],
                    "weight": priorities,
                    "home_cluster": cluster.name,
                }
            )
        )
    if not tables:
        return empty_table()
    table = normalize(pd.concat(tables, ignore_index=True))
    return table[list(JOB_COLUMNS)]
