"""Figures of an experiment folder (``python -m simsched experiment``): ranks, sweeps, decision time,
and the EVO-GP objective's terms (the paper's Fig. 6) when the runs record them.

Input contract (the experiment command's outputs):

- ``results.csv``: one row per run; columns include ``scheduler``, ``seed``,
  the case columns (``scenario``, ``instance``, ``ea_stream`` when present),
  every summary metric (``avg_jct`` ...), and one column per swept key, named
  by its dotted scenario path (``workload.load``);
- ``decisions.csv`` (optional): one row per scheduling decision: ``scheduler``
  (or ``run_id``), ``queued`` (jobs in the queue) and ``seconds`` (wall time of
  the decision).
- ``plan.csv`` (when present): the runs of the experiment's current grid. Only
  those rows of results.csv and decisions.csv are drawn; rows of runs of an
  earlier grid (left by a ``--resume`` with a changed spec) are left out, and
  ``load_experiment`` (:func:`simsched.runs.results.read_experiment`) reports how many (``stale``).

Confidence intervals are 95% bootstrap intervals of the mean
(``scipy.stats.bootstrap``, percentile method, 2000 resamples, a fixed
resampling seed so the same data give the same figure).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from simsched.core.metrics import SUMMARY_METRICS
from simsched.present.plots.style import colors, figure
from simsched.runs.experiment.stats import collapse_streams
from simsched.runs.ranking import case_ranks
from simsched.runs.results import read_experiment, sweep_keys

#: an experiment folder's results and decisions, for the figures: read by the runs layer
load_experiment = read_experiment

BOOTSTRAP_RESAMPLES = 2000


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and its bootstrap confidence interval; the interval is the mean itself for fewer than two
    values or when every value is the same."""
    values = np.asarray(values, dtype=float)
    mean = float(values.mean()) if len(values) else float("nan")
    if len(values) < 2 or np.all(values == values[0]):
        return mean, mean, mean
    from scipy.stats import bootstrap  # scipy (the plots extra): imported when an interval is drawn

    result = bootstrap((values,), np.mean, confidence_level=confidence, n_resamples=BOOTSTRAP_RESAMPLES,
                       method="percentile", rng=np.random.default_rng(0))
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


def metric_higher_is_better(metric: str) -> bool:
    """Whether a larger value of a summary metric is better (utilisation, completed jobs)."""
    return next((higher for key, _, higher, _ in SUMMARY_METRICS if key == metric), False)


def ranks(results: pd.DataFrame, metric: str, higher_is_better: bool | None = None) -> pd.DataFrame:
    """Each scheduler's rank in each case (1 = best; ties share the mean rank), as the experiment's
    report.md ranks them: a case is one (scenario, instance, seed) at one sweep point, runs differing only
    in ``ea_stream`` are averaged first (streams that agree average to exactly their value), and a run
    that left jobs unfinished ranks after every run that finished them (the same functions:
    :func:`simsched.runs.experiment.stats.collapse_streams`, :func:`simsched.runs.ranking.case_ranks`)."""
    if higher_is_better is None:
        higher_is_better = metric_higher_is_better(metric)
    point = sweep_keys(results)
    frame = collapse_streams(results, point)
    case = [c for c in (*point, "scenario", "instance", "seed") if c in frame.columns]
    frame["rank"] = case_ranks(frame, case, metric, higher_is_better)
    return frame


def rank_bar_figure(results: pd.DataFrame, metric: str, higher_is_better: bool | None = None) -> Any:
    """Mean rank per scheduler over every case, with its 95% bootstrap CI; best (lowest) first."""
    ranked = ranks(results, metric, higher_is_better)
    stats = {name: mean_ci(group["rank"].to_numpy(float)) for name, group in ranked.groupby("scheduler", sort=False)}
    order = sorted(stats, key=lambda name: stats[name][0])
    means = np.array([stats[n][0] for n in order])
    low = means - np.array([stats[n][1] for n in order])
    high = np.array([stats[n][2] for n in order]) - means
    fig, axes = figure(width=max(5.0, 0.8 * len(order) + 2.5))
    ax = axes[0, 0]
    first_seen = list(dict.fromkeys(results["scheduler"]))  # the same colour per scheduler in every figure
    palette = dict(zip(first_seen, colors(len(first_seen))))
    ax.bar(range(len(order)), means, yerr=np.vstack([low, high]), capsize=4, color=[palette[n] for n in order])
    ax.set_xticks(range(len(order)))
    ax.set_xticklabels(order, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel(f"mean rank by {metric} (1 = best)")
    cases = len(ranked) // max(1, len(order))
    ax.set_title(f"Mean rank over {cases} case(s), 95% bootstrap CI")
    ax.set_ylim(0, len(order) + 0.5)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def sweep_figure(results: pd.DataFrame, key: str, metric: str) -> Any:
    """``metric`` against the swept ``key``: mean per scheduler and value, 95% bootstrap CI as a band."""
    fig, axes = figure()
    ax = axes[0, 0]
    names = list(dict.fromkeys(results["scheduler"]))
    for name, color in zip(names, colors(len(names))):
        rows = results[results["scheduler"] == name]
        xs = sorted(rows[key].unique())
        stats = [mean_ci(rows.loc[rows[key] == x, metric].to_numpy(float)) for x in xs]
        ax.plot(xs, [s[0] for s in stats], marker="o", color=color, label=name)
        ax.fill_between(xs, [s[1] for s in stats], [s[2] for s in stats], color=color, alpha=0.15)
    ax.set_xlabel(key)
    ax.set_ylabel(metric)
    ax.set_title(f"{metric} against {key} (mean, 95% bootstrap CI)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    return fig


def decision_time_figure(decisions: pd.DataFrame, bins: int = 12) -> Any:
    """Wall time of each decision against the queue length it saw (log y), per scheduler; the line is the
    median per queue-length bin."""
    by = "scheduler" if "scheduler" in decisions.columns else "run_id"
    fig, axes = figure()
    ax = axes[0, 0]
    names = list(dict.fromkeys(decisions[by].astype(str)))
    edges = np.unique(np.quantile(decisions["queued"].to_numpy(float), np.linspace(0, 1, bins + 1)))
    for name, color in zip(names, colors(len(names))):
        rows = decisions[decisions[by].astype(str) == name]
        queued, seconds = rows["queued"].to_numpy(float), rows["seconds"].to_numpy(float)
        ax.plot(queued, seconds, linestyle="none", marker=".", markersize=3, alpha=0.3, color=color)
        if len(edges) > 1:
            which = np.clip(np.digitize(queued, edges[1:-1]), 0, len(edges) - 2)
            centres, medians = [], []
            for b in range(len(edges) - 1):
                mask = which == b
                if mask.any():
                    centres.append(float(np.median(queued[mask])))
                    medians.append(float(np.median(seconds[mask])))
            ax.plot(centres, medians, color=color, marker="o", markersize=4, label=f"{name} (median)")
        else:
            ax.plot([], [], color=color, label=name)
    positive = decisions["seconds"] > 0
    if positive.any():
        ax.set_yscale("log")
    ax.set_xlabel("queued jobs at the decision")
    ax.set_ylabel("decision wall time (s)")
    ax.set_title("Decision time against queue length")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize="small")
    return fig


#: the terms of Eq. 5 (w = 1, 1, 1): objective = C_q,avg + C_q,max + (1 - C_u)
OBJECTIVE_TERMS = (("cq_avg", "C_q,avg (s)"), ("cq_max", "C_q,max (s)"), ("utilization", "C_u (GPU-time utilization)"),
                   ("objective", "objective (Eq. 5)"))


def objective_terms(results: pd.DataFrame) -> pd.DataFrame:
    """Per (instance, scheduler), averaged over seeds and EA streams: C_q,avg, C_q,max, C_u, the
    objective, and ``cq_max_share`` = C_q,max / (C_q,avg + C_q,max + 1 - C_u) (NaN when all three are 0)."""
    columns = [c for c, _ in OBJECTIVE_TERMS]
    keys = [c for c in ("scenario", "instance", *sweep_keys(results)) if c in results.columns]
    frame = results.groupby(keys + ["scheduler"], sort=False, dropna=False)[columns].mean().reset_index()
    total = frame["cq_avg"] + frame["cq_max"] + (1.0 - frame["utilization"])
    frame["cq_max_share"] = (frame["cq_max"] / total).where(total > 0)
    return frame


def representative_instance(terms: pd.DataFrame) -> str:
    """The instance the paper's Fig. 6 is drawn for: among the instances where some job waits under
    some scheduler, the one whose mean objective (over the schedulers) is the median (the lower of
    the two middle ones); the median of all instances when no job waits anywhere."""
    means = terms.groupby("instance", sort=False)["objective"].mean()
    waiting = terms.groupby("instance", sort=False)["cq_max"].max() > 0
    pool = means[waiting] if waiting.any() else means
    ordered = pool.sort_values(kind="stable")
    return str(ordered.index[(len(ordered) - 1) // 2])


def objective_terms_figure(results: pd.DataFrame, instance: str | None = None) -> Any:
    """Four bar panels, one per term of Eq. 5 and the objective, for one instance (the paper's
    Fig. 6; :func:`representative_instance` by default)."""
    terms = objective_terms(results)
    instance = instance or representative_instance(terms)
    rows = terms[terms["instance"] == instance]
    names = list(dict.fromkeys(results["scheduler"]))
    palette = dict(zip(names, colors(len(names))))
    fig, axes = figure(rows=1, cols=4, width=13.0, height=3.8)
    for ax, (column, label) in zip(axes[0], OBJECTIVE_TERMS):
        values = [float(rows.loc[rows["scheduler"] == n, column].mean()) for n in names]
        ax.bar(range(len(names)), values, color=[palette[n] for n in names])
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names, rotation=40, ha="right", fontsize="x-small")
        ax.set_title(label, fontsize="small")
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle(f"The objective's terms on {instance} (mean over seeds and EA streams)", fontsize="medium")
    return fig


def experiment_figures(data: dict[str, Any]) -> dict[str, Any]:
    """Rank bars, one sweep figure per swept key, decision time when decisions.csv is there, and
    the objective's terms when the experiment ranks by the objective (Eq. 5; the paper's stores)."""
    results, metric = data["results"], data["metric"]
    figures = {"ranks": rank_bar_figure(results, metric)}
    for key in data.get("sweep_keys", []):
        figures[f"sweep_{key.replace('.', '_')}"] = sweep_figure(results, key, metric)
    if metric == "objective" and all(c in results.columns and results[c].notna().any() for c, _ in OBJECTIVE_TERMS):
        figures["objective_terms"] = objective_terms_figure(results)
    if data.get("decisions") is not None and len(data["decisions"]):
        figures["decision_time"] = decision_time_figure(data["decisions"])
    return figures
