"""Per-job records -> DataFrame, and the summary metrics (SPEC §7).

:func:`summarize` is a pure function of the jobs table, so metrics recomputed
from a written ``jobs.csv`` equal ``summary.json`` (a property the tests check).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from simsched.core.errors import InputError, control_characters, visible
from simsched.core.fairness import QuotaBook, has_tenants, tenant_summary
from simsched.core.model import ClusterSpec, NodeGroup

JOB_OUTPUT_COLUMNS = (
    "job_id", "submit", "start", "end", "wait", "jct", "cluster", "gpu_type", "preemptions",
    "gpus", "workers", "weight", "duration", "deadline", "gpu_seconds", "status", "reason",
    "home_cluster", "tenant", "nodes", "share", "runs",
)  # fmt: skip


#: the §7 summary metrics shown to people: key, label, higher is better, number format
SUMMARY_METRICS: tuple[tuple[str, str, bool, str], ...] = (
    ("completed", "Completed jobs", True, "{:,.0f}"),
    ("unfinished", "Unfinished jobs", False, "{:,.0f}"),
    ("infeasible", "Infeasible jobs", False, "{:,.0f}"),
    ("avg_jct", "Avg JCT (s)", False, "{:,.2f}"),
    ("weighted_jct", "Weighted JCT (s)", False, "{:,.2f}"),
    ("avg_wait", "Avg wait (s)", False, "{:,.2f}"),
    ("max_wait", "Max wait (s)", False, "{:,.2f}"),
    ("cq_avg", "C_q,avg (s)", False, "{:,.2f}"),
    ("weighted_wait", "Weighted avg wait (s)", False, "{:,.2f}"),
    ("cq_max", "C_q,max (s)", False, "{:,.2f}"),
    ("utilization", "GPU-time utilization", True, "{:.3f}"),
    ("deadline_miss_rate", "Deadline miss rate", False, "{:.3f}"),
    ("preemptions", "Preemptions", False, "{:,.0f}"),
    ("makespan", "Makespan (s)", False, "{:,.0f}"),
    ("objective", "Objective", False, "{:,.2f}"),
)

#: metrics taken over the counted jobs (completed + unfinished): shown with that count beside them
MEAN_METRICS = ("avg_jct", "weighted_jct", "avg_wait", "max_wait", "cq_avg", "weighted_wait", "cq_max",
                "deadline_miss_rate", "objective")

#: old metric names still accepted where a metric is named (rank_by, experiment metric). Ranking by
#: ``unscheduled`` (infeasible + unfinished) is ranking by ``unfinished``: the infeasible jobs are the
#: same for every policy of one case.
METRIC_ALIASES = {"unscheduled": "unfinished"}


#: who waits and who is treated fairly (issue 21 starvation, issue 20 fairness), flat keys of the
#: summary's ``starvation`` block and fairness figures as :func:`flat_metrics` gives them: key,
#: label, higher is better, number format. compare shows them in a second table, experiment
#: records them in results.csv; ``max_wait`` is a §7 metric already.
STARVATION_METRICS: tuple[tuple[str, str, bool, str], ...] = (
    ("p99_wait", "p99 wait (s)", False, "{:,.2f}"),
    ("avg_wait_1gpu", "Avg wait, 1-GPU jobs (s)", False, "{:,.2f}"),
    ("avg_wait_2_8gpu", "Avg wait, 2-8-GPU jobs (s)", False, "{:,.2f}"),
    ("avg_wait_over_8gpu", "Avg wait, >8-GPU jobs (s)", False, "{:,.2f}"),
    ("large_late_share", "Share of >8-GPU GPU-h waiting >24 h", False, "{:.3f}"),
)
FAIRNESS_METRICS: tuple[tuple[str, str, bool, str], ...] = (
    ("jain_slowdown", "Jain's index of tenants' mean slowdown", True, "{:.3f}"),
    ("ftf_rho_max", "Max finish-time fairness rho", False, "{:,.2f}"),
    ("ftf_rho_share_above_1", "Share of jobs with rho > 1", False, "{:.3f}"),
)

#: every metric a comparison or an experiment can rank by: the §7 summary, then who waits and fairness
RANKABLE: tuple[str, ...] = tuple(key for key, _, _, _ in SUMMARY_METRICS + STARVATION_METRICS + FAIRNESS_METRICS)
#: a tenant's mean wait is the metric ``avg_wait@<tenant>`` (``avg_wait@(no tenant)`` for jobs without one)
TENANT_WAIT = "avg_wait@"
#: the metrics a run has only when it has tenants (docs/engine.md "Tenant fairness"), besides ``avg_wait@<tenant>``
TENANT_METRICS: tuple[str, ...] = tuple(key for key, *_ in FAIRNESS_METRICS)


def metric_name(text: object, where: str) -> str:
    """The metric ``text`` names where a metric ranks runs (``compare --rank-by``, ``[compare] rank_by``,
    ``simsched.compare(rank_by=)``, an experiment's ``metric``): one grammar for all of them. A key of
    :data:`RANKABLE`, an old name of :data:`METRIC_ALIASES` (returned as its new name), or
    ``avg_wait@<tenant>``; whether the runs have that tenant, or tenants at all for
    :func:`needs_tenants`, is checked against the instances (:mod:`simsched.runs.metric_check`).
    Else one :class:`InputError` line starting with ``where``."""
    if isinstance(text, str) and text in RANKABLE:
        return text
    if isinstance(text, str) and text in METRIC_ALIASES:
        return METRIC_ALIASES[text]
    if isinstance(text, str) and text.startswith(TENANT_WAIT) and len(text) > len(TENANT_WAIT):
        tenant = text[len(TENANT_WAIT):]
        if not control_characters(tenant):
            return text
        raise InputError(f"{where}: {visible(text)!r}: a tenant name holds no control characters "
                         f"({', '.join(control_characters(tenant))})")
    shown = repr(visible(text)) if isinstance(text, str) else f"{text!r} (a {type(text).__name__}, not text)"
    raise InputError(f"{where}: unknown metric {shown}; valid: {', '.join(RANKABLE + tuple(METRIC_ALIASES))}, "
                     f"or {TENANT_WAIT}<tenant> (a tenant's mean wait)")


def needs_tenants(metric: str) -> bool:
    """Whether ``metric`` (as :func:`metric_name` returns it) has a value only in a run with tenants."""
    return metric in TENANT_METRICS or metric.startswith(TENANT_WAIT)


def higher_is_better(metric: str) -> bool:
    """Whether a larger value of ``metric`` (as :func:`metric_name` returns it) is better."""
    if metric.startswith(TENANT_WAIT):
        return False
    return next(higher for key, _, higher, _ in SUMMARY_METRICS + STARVATION_METRICS + FAIRNESS_METRICS
                if key == metric)


def flat_metrics(summary: dict) -> dict[str, float | None]:
    """The starvation and fairness figures of a run summary as flat metrics (None: n/a): every
    STARVATION_METRICS and FAIRNESS_METRICS key (the fairness ones None for a run without tenants),
    then ``avg_wait@<tenant>`` per tenant, in the tenants' order."""
    starved = summary.get("starvation") or {}
    by_size = starved.get("wait_by_size") or {}
    flat: dict[str, float | None] = {
        "p99_wait": starved.get("p99_wait"),
        "avg_wait_1gpu": (by_size.get("1") or {}).get("mean_wait"),
        "avg_wait_2_8gpu": (by_size.get("2-8") or {}).get("mean_wait"),
        "avg_wait_over_8gpu": (by_size.get(">8") or {}).get("mean_wait"),
        "large_late_share": starved.get("large_gpu_hours_late_share"),
    }
    for key, *_ in FAIRNESS_METRICS:
        flat[key] = summary.get(key)
    for tenant, block in (summary.get("tenants") or {}).items():
        flat[TENANT_WAIT + tenant] = block.get("mean_wait")
    return flat


def jobs_frame(records: Sequence, cluster_names: Sequence[str],
               spell_nodes: Sequence[str] | None = None, runs: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per job in input order; start empty (NaN) when it never started, end when it
    did not finish (unscheduled, or still running in a partial run).

    ``spell_nodes`` and ``runs`` (per job, in record order) come from the run
    spells (:func:`simsched.core.outputs.job_spell_columns`); without them ``nodes``
    is empty and ``runs`` 0. ``share`` is the milli-GPUs per worker of the last
    spell (0 when the job never ran). ``records`` may be the engine's
    :class:`simsched.core.jobstore.JobStore`, whose columns give the same table
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
        counted = done or job.status == "unfinished"  # wait and JCT censored at the run's end
        rows["job_id"].append(job.job_id)
        rows["submit"].append(job.submit)
        rows["start"].append(job.first_start)  # NaN when it never started
        rows["end"].append(job.end if done else math.nan)
        rows["wait"].append(job.wait_so_far if counted else math.nan)
        rows["jct"].append(job.end - job.submit if counted else math.nan)
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
        rows["tenant"].append(getattr(job, "tenant", None) or "")
        rows["share"].append(job.run_share)
    rows["nodes"] = list(spell_nodes) if spell_nodes is not None else [""] * n
    rows["runs"] = np.asarray(runs if runs is not None else np.zeros(n), dtype=np.int64)
    # from the store every column is a new array or an input column that never changes: no copy
    return pd.DataFrame(rows, columns=list(JOB_OUTPUT_COLUMNS), copy=False if columnar is not None else None)


def _block(df: pd.DataFrame, gpus: float, makespan: float, weights: tuple[float, float, float],
           kind: str = "eq5", w: float = 0.5) -> dict:
    """The metrics of one set of jobs. Every mean and max is over the *counted* jobs: completed
    and unfinished (their wait and JCT censored at the end of the run), never over the
    infeasible ones; over zero jobs it is None (shown "n/a"), never 0."""
    status = df["status"]
    counted_rows = df[status.isin(("done", "unfinished"))]
    done = status == "done"
    unfinished = int((status == "unfinished").sum())
    infeasible = int((status == "infeasible").sum())
    n = len(counted_rows)
    u = counted_rows["weight"].to_numpy(float)
    jct = counted_rows["jct"].to_numpy(float)
    wait = counted_rows["wait"].to_numpy(float)
    has_deadline = counted_rows["deadline"].notna().to_numpy()
    util = float(df["gpu_seconds"].sum()) / (gpus * makespan) if gpus > 0 and makespan > 0 else None
    cq_avg = float(np.mean(u * wait)) if n else None
    cq_max = float(np.max(u * wait)) if n else None
    avg_jct = float(jct.mean()) if n else None
    max_wait = float(wait.max()) if n else None
    if kind == "eq16":
        objective = None if avg_jct is None else w * avg_jct + (1.0 - w) * max_wait
    else:
        w1, w2, w3 = weights
        objective = None if cq_avg is None else w1 * cq_avg + w2 * cq_max + w3 * (1.0 - (util or 0.0))
    # an unfinished job never meets its deadline: it counts as a miss
    ends = np.where(counted_rows["status"].to_numpy() == "done", counted_rows["end"].to_numpy(float), np.inf)
    return {
        "jobs": int(len(df)),
        "completed": int(done.sum()),
        "unfinished": unfinished,
        "infeasible": infeasible,
        "unscheduled": infeasible + unfinished,  # the old key (every job that did not complete)
        "counted": n,  # the jobs every mean and max below is over
        "avg_jct": avg_jct,
        "weighted_jct": float((u * jct).sum() / u.sum()) if n else None,
        "avg_wait": float(wait.mean()) if n else None,
        "max_wait": max_wait,
        "cq_avg": cq_avg,
        # the course's "average weighted wait": sum(u q) / sum(u), next to C_q,avg = mean(u q)
        "weighted_wait": float((u * wait).sum() / u.sum()) if n else None,
        "cq_max": cq_max,
        "utilization": util,
        "deadline_miss_rate": float((ends[has_deadline] > counted_rows["deadline"].to_numpy(float)[has_deadline]).mean())
        if has_deadline.any() else None,  # n/a, not 0: no counted job has a deadline
        "preemptions": int(df["preemptions"].sum()),
        "objective": objective,
    }


def summarize(df: pd.DataFrame, cluster_gpus: dict[str, float],
              weights: tuple[float, float, float] = (1.0, 1.0, 1.0), *, kind: str = "eq5",
              w: float = 0.5, quotas: QuotaBook | None = None, exec_s: np.ndarray | None = None) -> dict:
    """Every §7 metric over the whole run and per cluster (a job counts for the last cluster it
    ran in; an unfinished job that never ran, for its home cluster if it has one).

    Utilisation is GPU-seconds held by jobs / (GPUs x makespan), makespan = the run's end (the
    last completion, or the end of the run when jobs are left unfinished) - first submit;
    C_q,avg and C_q,max are mean and max of weight x wait over the counted jobs (completed and
    unfinished, docs/engine.md "Every job counts"); the objective is Eq. 5 with these three terms,
    or with ``kind = "eq16"`` Eq. 16 = w avg_jct + (1 - w) max_wait (unweighted).

    A run with tenants (a job with one, or a cluster with quotas in ``quotas``) also gets the
    ``tenants`` block and the overall fairness figures (:func:`simsched.core.fairness.tenant_summary`);
    ``exec_s`` is each job's execution time as run (without it, its duration: the run time on
    its reference type). A run without tenants gets neither.
    """
    ends = df["end"].dropna()
    unfinished = df["status"] == "unfinished"
    if unfinished.any():  # jobs.csv leaves their end empty; submit + censored JCT = the run's end
        ends = pd.concat([ends, df.loc[unfinished, "submit"] + df.loc[unfinished, "jct"]])
    makespan = float(ends.max() - df["submit"].min()) if len(ends) else 0.0
    summary = _block(df, float(sum(cluster_gpus.values())), makespan, weights, kind, w)
    summary["makespan"] = makespan
    summary["starvation"] = starvation(df)
    last_cluster = last_clusters(df)
    unplaced = (last_cluster == "") & (df["status"] == "unfinished").to_numpy(bool)
    if unplaced.any():
        last_cluster = last_cluster.copy()
        last_cluster[unplaced] = df["home_cluster"].fillna("").astype(str).to_numpy(object)[unplaced]
    summary["per_cluster"] = {}
    for name, gpus in cluster_gpus.items():
        in_cluster = last_cluster == name
        rows = df if in_cluster.all() else df[in_cluster]  # no copy of a one-cluster run's table
        summary["per_cluster"][name] = _block(rows, gpus, makespan, weights, kind, w)
    if has_tenants(df, quotas):
        book = quotas if quotas is not None else QuotaBook(())
        if not book.clusters:  # no cluster specs: every cluster without quotas
            book = QuotaBook(tuple(ClusterSpec(name, (NodeGroup(1, gpus, ""),)) for name, gpus in cluster_gpus.items()))
        first = float(df["submit"].min()) if len(df) else 0.0
        summary.update(tenant_summary(df, df["duration"].to_numpy(float) if exec_s is None else exec_s,
                                      last_cluster, book, first, first + makespan))
    return summary


def migrations(df: pd.DataFrame) -> int:
    """Moves: restarts of a preempted job in another cluster than the one it last ran in (the
    paper's migrations), counted apart from preemptions that restart where the job was. A job's
    ``cluster`` cell lists the clusters it ran in, in order, each change once ("c00|c03")."""
    if "cluster" not in df or not len(df):
        return 0
    return int(df["cluster"].fillna("").astype(str).str.count(r"\|").sum())


#: job-size classes of the starvation block: (label, fewest GPUs, most GPUs)
SIZE_CLASSES = (("1", 0.0, 1.0), ("2-8", 1.0 + 1e-9, 8.0), (">8", 8.0 + 1e-9, math.inf))
#: a large job (more GPUs than this) that waited longer than LATE_S counts as starved
LARGE_GPUS = 8
LATE_S = 24 * 3600.0


def starvation(df: pd.DataFrame) -> dict:
    """Who waits: the p99 and max wait, the mean wait per job-size class (1 GPU or less, 2-8,
    more than 8 GPUs) and the share of the GPU-hours of jobs of more than 8 GPUs that belong to
    jobs which waited over 24 h; over the counted jobs (completed and unfinished, censored).
    A class with no job is None (n/a)."""
    counted = df[df["status"].isin(("done", "unfinished"))]
    wait = counted["wait"].to_numpy(float)
    gpus = counted["gpus"].to_numpy(float)
    by_size = {}
    for label, low, high in SIZE_CLASSES:
        inside = (gpus >= low) & (gpus <= high)
        by_size[label] = {"jobs": int(inside.sum()), "mean_wait": float(wait[inside].mean()) if inside.any() else None}
    large = gpus > LARGE_GPUS
    gpu_hours = (counted["duration"].to_numpy(float) * gpus)[large]
    late = wait[large] > LATE_S
    return {
        "p99_wait": float(np.quantile(wait, 0.99)) if len(wait) else None,
        "max_wait": float(wait.max()) if len(wait) else None,
        "wait_by_size": by_size,
        "large_gpu_hours_late_share": float(gpu_hours[late].sum() / gpu_hours.sum()) if gpu_hours.sum() > 0 else None,
    }


def last_clusters(df: pd.DataFrame) -> np.ndarray:
    """The last cluster each job ran in (the ``cluster`` column's last ``|`` part); split only
    where a job ran in several (a million-row split makes a list per row)."""
    cluster = df["cluster"].fillna("").astype(str).to_numpy(object)
    moved = np.flatnonzero(pd.Series(cluster).str.contains("|", regex=False).to_numpy(bool))
    for i in moved.tolist():
        cluster[i] = cluster[i].rsplit("|", 1)[-1]
    return cluster
