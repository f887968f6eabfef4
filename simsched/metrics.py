"""Per-job records -> DataFrame, and the summary metrics (SPEC §7).

:func:`summarize` is a pure function of the jobs table, so metrics recomputed
from a written ``jobs.csv`` equal ``summary.json`` (a property the tests check).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

JOB_OUTPUT_COLUMNS = (
    "job_id", "submit", "start", "end", "wait", "jct", "cluster", "gpu_type", "preemptions",
    "gpus", "workers", "weight", "duration", "deadline", "gpu_seconds", "status", "reason",
    "home_cluster", "nodes", "share", "runs",
)  # fmt: skip


#: the §7 summary metrics shown to people: key, label, higher is better, number format
SUMMARY_METRICS: tuple[tuple[str, str, bool, str], ...] = (
    ("completed", "Completed jobs", True, "{:,.0f}"),
    ("unscheduled", "Unscheduled jobs", False, "{:,.0f}"),
    ("avg_jct", "Avg JCT (s)", False, "{:,.1f}"),
    ("weighted_jct", "Weighted JCT (s)", False, "{:,.1f}"),
    ("avg_wait", "Avg wait (s)", False, "{:,.1f}"),
    ("max_wait", "Max wait (s)", False, "{:,.1f}"),
    ("cq_avg", "C_q,avg (s)", False, "{:,.1f}"),
    ("weighted_wait", "Weighted avg wait (s)", False, "{:,.1f}"),
    ("cq_max", "C_q,max (s)", False, "{:,.1f}"),
    ("utilization", "GPU-time utilization", True, "{:.3f}"),
    ("deadline_miss_rate", "Deadline miss rate", False, "{:.3f}"),
    ("preemptions", "Preemptions", False, "{:,.0f}"),
    ("makespan", "Makespan (s)", False, "{:,.0f}"),
    ("objective", "Objective", False, "{:,.2f}"),
)


def jobs_frame(records: Sequence, cluster_names: Sequence[str],
               spell_nodes: Sequence[str] | None = None, runs: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per job in input order; start empty (NaN) when it never started, end when it
    did not finish (unscheduled, or still running in a partial run).

    ``spell_nodes`` and ``runs`` (per job, in record order) come from the run
    spells (:func:`simsched.outputs.job_spell_columns`); without them ``nodes``
    is empty and ``runs`` 0. ``share`` is the milli-GPUs per worker of the last
    spell (0 when the job never ran). ``records`` may be the engine's
    :class:`simsched.jobstore.JobStore`, whose columns give the same table
    without making a record per job.
    """
    n = len(records)
    rows = {c: [] for c in JOB_OUTPUT_COLUMNS if c not in ("nodes", "runs")}
    columnar = getattr(records, "output_columns", None)  # the engine's JobStore: no per-job objects
    if columnar is not None and n:
        rows = columnar(cluster_names)
        records = ()
    for job in records:
        done = job.status == "done"
        rows["job_id"].append(job.job_id)
        rows["submit"].append(job.submit)
        rows["start"].append(job.first_start)  # NaN when it never started
        rows["end"].append(job.end if done else math.nan)
        rows["wait"].append(job.wait_so_far if done else math.nan)
        rows["jct"].append(job.end - job.submit if done else math.nan)
        rows["cluster"].append("|".join(cluster_names[c] for c in job.clusters))
        rows["gpu_type"].append(job.gpu_type_used or "")
        rows["preemptions"].append(job.preemptions)
        rows["gpus"].append(job.gpus)
        rows["workers"].append(job.workers)
        rows["weight"].append(job.weight)
        rows["duration"].append(job.duration)
        rows["deadline"].append(math.nan if job.deadline is None else job.deadline)
        rows["gpu_seconds"].append(job.gpu_seconds)
        rows["status"].append(job.status)
        rows["reason"].append(job.reason)
        rows["home_cluster"].append("" if job.home_cluster is None else cluster_names[job.home_cluster])
        rows["share"].append(job.run_share)
    rows["nodes"] = list(spell_nodes) if spell_nodes is not None else [""] * n
    rows["runs"] = np.asarray(runs if runs is not None else np.zeros(n), dtype=np.int64)
    # from the store every column is a new array or an input column that never changes: no copy
    return pd.DataFrame(rows, columns=list(JOB_OUTPUT_COLUMNS), copy=False if columnar is not None else None)


def _block(df: pd.DataFrame, gpus: float, makespan: float, weights: tuple[float, float, float],
           kind: str = "eq5", w: float = 0.5) -> dict:
    done = df[df["status"] == "done"]
    u = done["weight"].to_numpy(float)
    jct = done["jct"].to_numpy(float)
    wait = done["wait"].to_numpy(float)
    has_deadline = done["deadline"].notna().to_numpy()
    util = float(df["gpu_seconds"].sum()) / (gpus * makespan) if gpus > 0 and makespan > 0 else 0.0
    cq_avg = float(np.mean(u * wait)) if len(done) else 0.0
    cq_max = float(np.max(u * wait)) if len(done) else 0.0
    w1, w2, w3 = weights
    avg_jct = float(jct.mean()) if len(done) else 0.0
    max_wait = float(wait.max()) if len(done) else 0.0
    return {
        "jobs": int(len(df)),
        "completed": int(len(done)),
        "unscheduled": int((df["status"] == "unscheduled").sum()),
        "avg_jct": avg_jct,
        "weighted_jct": float((u * jct).sum() / u.sum()) if len(done) else 0.0,
        "avg_wait": float(wait.mean()) if len(done) else 0.0,
        "max_wait": max_wait,
        "cq_avg": cq_avg,
        # the course's "average weighted wait": sum(u q) / sum(u), next to C_q,avg = mean(u q)
        "weighted_wait": float((u * wait).sum() / u.sum()) if len(done) else 0.0,
        "cq_max": cq_max,
        "utilization": util,
        "deadline_miss_rate": float((done["end"].to_numpy(float)[has_deadline]
                                     > done["deadline"].to_numpy(float)[has_deadline]).mean())
        if has_deadline.any() else None,  # n/a, not 0: no completed job has a deadline
        "preemptions": int(df["preemptions"].sum()),
        "objective": (w * avg_jct + (1.0 - w) * max_wait) if kind == "eq16"
        else w1 * cq_avg + w2 * cq_max + w3 * (1.0 - util),
    }


def summarize(df: pd.DataFrame, cluster_gpus: dict[str, float],
              weights: tuple[float, float, float] = (1.0, 1.0, 1.0), *, kind: str = "eq5",
              w: float = 0.5) -> dict:
    """Every §7 metric over the whole run and per cluster (a job counts for the last cluster it ran in).

    Utilisation is GPU-seconds held by jobs / (GPUs x makespan), makespan = last
    end - first submit; C_q,avg and C_q,max are mean and max of weight x wait
    over completed jobs; the objective is Eq. 5 with these three terms, or with
    ``kind = "eq16"`` Eq. 16 = w avg_jct + (1 - w) max_wait (unweighted, completed jobs).
    """
    ends = df["end"].dropna()
    makespan = float(ends.max() - df["submit"].min()) if len(ends) else 0.0
    summary = _block(df, float(sum(cluster_gpus.values())), makespan, weights, kind, w)
    summary["makespan"] = makespan
    last_cluster = last_clusters(df)
    summary["per_cluster"] = {}
    for name, gpus in cluster_gpus.items():
        in_cluster = last_cluster == name
        rows = df if in_cluster.all() else df[in_cluster]  # no copy of a one-cluster run's table
        summary["per_cluster"][name] = _block(rows, gpus, makespan, weights, kind, w)
    return summary


def last_clusters(df: pd.DataFrame) -> np.ndarray:
    """The last cluster each job ran in (the ``cluster`` column's last ``|`` part); split only
    where a job ran in several (a million-row split makes a list per row)."""
    cluster = df["cluster"].fillna("").astype(str).to_numpy(object)
    moved = np.flatnonzero(pd.Series(cluster).str.contains("|", regex=False).to_numpy(bool))
    for i in moved.tolist():
        cluster[i] = cluster[i].rsplit("|", 1)[-1]
    return cluster
