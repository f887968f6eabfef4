"""Statistics of an experiment (scipy.stats): means with bootstrap CIs, ranks, wins, Wilcoxon.

Definitions (docs/experiment.md):

- A *case* is one (scenario, instance, seed) at one grid point. Runs of one
  case that differ only in the EA stream are averaged first (the
  ``ea_streams`` axis is averaged over, as the issue asks).
- *Mean and 95% CI* of the spec's metric per scheduler: the mean over cases,
  with a percentile bootstrap CI (cases resampled with replacement,
  ``scipy.stats.bootstrap``, 2,000 resamples, a fixed generator so the
  tables are reproducible).
- *Case ranks*: schedulers ranked within each case (1 = best, ties share the
  mean rank); a run that left feasible jobs unfinished ranks after every run
  that finished all of them, whatever the metric (:mod:`simsched.runs.ranking`);
  the mean rank gets the same bootstrap CI. ``place`` orders the schedulers:
  one with fewer cases than the others (a run missing) after every one with all
  of them, then by cases, then by mean rank (the rule compare uses for failed runs).
- *Instance ranks* (the paper's Fig. 4): the metric averaged over seeds per
  instance, then ranked; ``first`` counts the instances where a scheduler
  ranks first (shared firsts count for each).
- *Spread over EA streams* (only when a scheduler ran several streams per
  case): per case, the streams' mean, standard deviation, minimum and
  maximum of the metric, and the rank each single stream would take against
  the other schedulers' stream-averaged values (``best_rank``, ``worst_rank``,
  ``first_streams``: how many streams rank first, shared firsts included).
- *Paired tests*: for the headline scheduler against each other one, over
  the common cases: wins / ties / losses, the mean difference (headline
  minus baseline), and the two-sided Wilcoxon signed-rank p-value on the
  untied pairs (``scipy.stats.wilcoxon``: the exact distribution up to 50
  untied pairs, the normal approximation above; NaN when every pair ties).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from simsched.core.errors import InputError
from simsched.runs.experiment.spec import METRICS, ExperimentSpec
from simsched.runs.ranking import UNFINISHED, case_ranks, incomplete, standing

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20260101
CASE = ("scenario", "instance", "seed")


@dataclass
class ExperimentStats:
    """Tables of one experiment; each is a DataFrame with one column per swept key first."""

    cases: pd.DataFrame  # one row per (point, case, scheduler): metrics averaged over EA streams, rank
    summary: pd.DataFrame  # per (point, scheduler): n, mean, CI, mean rank + CI, first (instance wins)
    instance_ranks: pd.DataFrame  # per (point, scenario, instance, scheduler): seed-mean metric, rank
    tests: pd.DataFrame  # per (point, baseline): headline vs baseline, wins/ties/losses, Wilcoxon
    by_priority: pd.DataFrame | None = None  # per (point, scheduler, weight): job queue-time stats
    decision_time: pd.DataFrame | None = None  # per (scheduler, queued bin): decision seconds
    streams: pd.DataFrame | None = None  # per (point, case, scheduler) run over several EA streams: spread


def bootstrap_ci(values: np.ndarray, seed: int = BOOTSTRAP_SEED) -> tuple[float, float]:
    """95% percentile bootstrap CI of the mean; (nan, nan) for fewer than two values."""
    from scipy import stats

    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float("nan"), float("nan")
    if np.all(values == values[0]):
        return float(values[0]), float(values[0])
    result = stats.bootstrap((values,), np.mean, n_resamples=BOOTSTRAP_RESAMPLES, method="percentile",
                             rng=np.random.default_rng(seed), vectorized=True)
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def _point_keys(spec: ExperimentSpec) -> list[str]:
    return list(spec.sweep_keys)


def collapse_streams(results: pd.DataFrame, point: Sequence[str]) -> pd.DataFrame:
    """One row per (point, case, scheduler): numeric metrics averaged over EA streams, plan order kept.
    ``point`` names the swept columns (a spec's ``sweep_keys``)."""
    keys = list(point) + [c for c in CASE if c in results.columns] + ["scheduler"]
    value_columns = [c for c in results.columns if c not in keys and c not in
                     ("run_id", "ea_stream", "scenario_hash") and pd.api.types.is_numeric_dtype(results[c])]
    grouped = results.groupby(keys, sort=False, dropna=False)
    out = grouped[value_columns].mean().reset_index()
    # streams that all give one value average to exactly that value: a float mean of k equal numbers
    # can differ in the last bit (0.7750292349667665 x 15 -> ...662), which split ties with the
    # deterministic schedulers' single runs in the instance ranks
    first = grouped[value_columns].transform("first")
    same = (results[value_columns].eq(first) | (results[value_columns].isna() & first.isna()))
    uniform = same.groupby([results[k] for k in keys], sort=False, dropna=False).all().reset_index(drop=True)
    firsts = grouped[value_columns].first().reset_index(drop=True)
    for column in value_columns:
        out[column] = out[column].where(~uniform[column], firsts[column])
    out["ea_streams"] = grouped.size().to_numpy()
    return out


def compute(results: pd.DataFrame, spec: ExperimentSpec, decisions: pd.DataFrame | None = None,
            jobs: pd.DataFrame | None = None) -> ExperimentStats:
    """Every table of the experiment from its rows (in plan order)."""
    metric = spec.metric
    if metric not in results.columns:
        raise InputError(f"results.csv has no column {metric!r} (its runs were recorded before that metric, or "
                         "by a spec that named another tenant): run the experiment into another --out folder")
    ascending = not METRICS[metric]
    point = _point_keys(spec)
    cases = collapse_streams(results, point)
    case_keys = point + list(CASE)
    # runs that left jobs unfinished rank after every run that finished all its feasible jobs (simsched.runs.ranking)
    cases["rank"] = case_ranks(cases, case_keys, metric, not ascending)
    averaged = [metric] + ([UNFINISHED] if UNFINISHED in cases.columns and metric != UNFINISHED else [])
    inst = (cases.groupby(point + ["scenario", "instance", "scheduler"], sort=False, dropna=False)[averaged]
            .mean().reset_index())
    inst["rank"] = case_ranks(inst, point + ["scenario", "instance"], metric, not ascending)
    best = inst.groupby(point + ["scenario", "instance"], sort=False, dropna=False)["rank"].transform("min")
    inst["first"] = inst["rank"] == best
    order = {name: i for i, name in enumerate(spec.scheduler_names)}
    records = []
    for key, group in cases.groupby(point + ["scheduler"], sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        values = group[metric].to_numpy(float)
        ranks = group["rank"].to_numpy(float)
        low, high = bootstrap_ci(values)
        rank_low, rank_high = bootstrap_ci(ranks)
        selector = np.ones(len(inst), dtype=bool)
        for column, value in zip(point + ["scheduler"], key):
            selector &= _equal(inst[column], value)
        first = int(inst.loc[selector, "first"].sum())
        unfinished = int(incomplete(group).sum())
        records.append({**dict(zip(point + ["scheduler"], key)), "n": len(values), "mean": float(values.mean()),
                        "unfinished_cases": unfinished,
                        "ci_low": low, "ci_high": high, "mean_rank": float(ranks.mean()), "rank_ci_low": rank_low,
                        "rank_ci_high": rank_high, "first": first,
                        "instances": int(selector.sum())})
    summary = pd.DataFrame(records)
    # a scheduler with fewer cases than the others is placed after all that have every case (simsched.runs.ranking)
    summary["place"] = np.nan
    groups = [group for _, group in summary.groupby(point, sort=False, dropna=False)] if point else [summary]
    for group in groups:
        summary.loc[group.index, "place"] = standing(group["n"], int(group["n"].max()), group["mean_rank"])
    summary["_order"] = summary["scheduler"].map(order)
    summary = summary.sort_values(point + ["_order"], kind="stable").drop(columns="_order").reset_index(drop=True)
    tests = paired_tests(cases, spec)
    by_priority = priority_table(jobs, spec) if jobs is not None and len(jobs) else None
    decision_time = decision_table(decisions) if decisions is not None and len(decisions) else None
    streams = stream_spread(results, cases, spec)
    return ExperimentStats(cases, summary, inst, tests, by_priority, decision_time, streams)


def stream_spread(results: pd.DataFrame, cases: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame | None:
    """How much one EA stream differs from the average of the streams (see the module docstring);
    None when no scheduler ran more than one stream in a case."""
    if "ea_stream" not in results.columns or results["ea_stream"].isna().all():
        return None
    metric = spec.metric
    keys = _point_keys(spec) + list(CASE)
    runs = results[keys + ["scheduler", metric] + ([UNFINISHED] if UNFINISHED in results.columns else [])]
    counts = runs.groupby(keys + ["scheduler"], sort=False, dropna=False)[metric].transform("size")
    several = runs[counts > 1]
    if several.empty:
        return None
    columns = [metric] + ([UNFINISHED] if UNFINISHED in cases.columns else [])
    # one ranking group per single run: that run against every other scheduler's stream average
    pieces = []
    for group, (index, run) in enumerate(several.iterrows()):
        selector = np.ones(len(cases), dtype=bool)
        for column in keys:
            selector &= _equal(cases[column], run[column]).to_numpy()
        others = cases.loc[selector & (cases["scheduler"] != run["scheduler"]).to_numpy(), columns].copy()
        alone = pd.DataFrame([{c: run[c] for c in columns}])
        frame = pd.concat([alone.assign(_own=True), others.assign(_own=False)])
        frame["_group"] = group
        frame["_run"] = index
        pieces.append(frame)
    everything = pd.concat(pieces, ignore_index=True)
    everything["_rank"] = case_ranks(everything, ["_group"], metric, METRICS[metric])
    best = everything.groupby("_group")["_rank"].min()
    own = everything[everything["_own"]].set_index("_run")
    ranked = several.assign(_rank=own["_rank"].reindex(several.index).to_numpy(),
                            _first=(own["_rank"].to_numpy() == best.loc[own["_group"]].to_numpy()))
    grouped = ranked.groupby(keys + ["scheduler"], sort=False, dropna=False)
    out = grouped[metric].agg(streams="size", mean="mean", std="std", min="min", max="max").reset_index()
    out["best_rank"] = grouped["_rank"].min().to_numpy()
    out["worst_rank"] = grouped["_rank"].max().to_numpy()
    out["first_streams"] = grouped["_first"].sum().astype(int).to_numpy()
    return out


def _equal(column: pd.Series, value: object) -> pd.Series:
    if isinstance(value, float) and np.isnan(value):
        return column.isna()
    return column == value


def paired_tests(cases: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """Headline vs each baseline over the common cases at each grid point (Wilcoxon signed-rank)."""
    point = _point_keys(spec)
    metric = spec.metric
    better_sign = 1.0 if METRICS[metric] else -1.0
    records = []
    groups = cases.groupby(point, sort=False, dropna=False) if point else [((), cases)]
    for key, frame in groups:
        key = key if isinstance(key, tuple) else (key,)
        wide = frame.pivot_table(index=list(CASE), columns="scheduler", values=metric, sort=False)
        if spec.headline not in wide.columns:
            continue
        for baseline in spec.scheduler_names:
            if baseline == spec.headline or baseline not in wide.columns:
                continue
            pair = wide[[spec.headline, baseline]].dropna()
            diff = (pair[spec.headline] - pair[baseline]).to_numpy(float)
            wins = int((better_sign * diff > 0).sum())
            losses = int((better_sign * diff < 0).sum())
            statistic, p_value, method = signed_rank(diff)
            records.append({**dict(zip(point, key)), "headline": spec.headline, "baseline": baseline,
                            "n": len(diff), "wins": wins, "ties": len(diff) - wins - losses, "losses": losses,
                            "mean_difference": float(diff.mean()) if len(diff) else float("nan"),
                            "wilcoxon_statistic": statistic, "p_value": p_value, "n_untied": wins + losses,
                            "test": method})
    table = pd.DataFrame(records)
    if not table.empty:  # Holm across the baselines of each grid point (the family of one claim)
        keys = point if point else None
        groups_p = table.groupby(keys, sort=False, dropna=False)["p_value"] if keys else [(None, table["p_value"])]
        table["p_holm"] = float("nan")
        for _, values in groups_p:
            table.loc[values.index, "p_holm"] = holm(values.to_numpy(float))
    return table


#: at most this many untied pairs get the exact signed-rank distribution; more, the normal approximation
EXACT_UP_TO = 50


def signed_rank(diff: np.ndarray) -> tuple[float, float, str]:
    """(statistic, two-sided p, method) of the Wilcoxon signed-rank test on the untied pairs (the
    non-zero differences; ties carry no sign): the exact null distribution up to
    :data:`EXACT_UP_TO` pairs, the normal approximation above. NaN and "" when every pair ties."""
    untied = diff[diff != 0]
    if not len(untied):
        return float("nan"), float("nan"), ""
    from scipy import stats  # the experiment extra: loaded when a statistic is computed

    method = "exact" if len(untied) <= EXACT_UP_TO else "approx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's note on tied magnitudes under the exact distribution
        test = stats.wilcoxon(untied, method=method)
    return float(test.statistic), float(test.pvalue), method


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjustment of a family of p-values (NaN entries, no test, stay NaN and do
    not count in the family): the k-th smallest of m is multiplied by m - k + 1, then made
    non-decreasing and capped at 1. scipy.stats has no Holm (it has Benjamini-Hochberg only)."""
    p_values = np.asarray(p_values, float)
    adjusted = np.full(p_values.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p_values))
    if not len(tested):
        return adjusted
    order = tested[np.argsort(p_values[tested], kind="stable")]
    m = len(order)
    scaled = np.minimum(1.0, np.maximum.accumulate(p_values[order] * (m - np.arange(m))))
    adjusted[order] = scaled
    return adjusted


def priority_table(jobs: pd.DataFrame, spec: ExperimentSpec) -> pd.DataFrame:
    """Queue time (wait) of completed jobs per grid point, scheduler and priority class (weight)."""
    point = _point_keys(spec)
    done = jobs[jobs["status"] == "done"]
    grouped = done.groupby(point + ["scheduler", "weight"], sort=False, dropna=False)["wait"]
    table = grouped.agg(jobs="count", mean="mean", median="median",
                        p90=lambda s: float(np.quantile(s, 0.9)), max="max").reset_index()
    order = {name: i for i, name in enumerate(spec.scheduler_names)}
    table["_order"] = table["scheduler"].map(order)
    return table.sort_values(point + ["_order", "weight"], kind="stable").drop(columns="_order").reset_index(
        drop=True)


#: queued-job bins of the decision-time table (Fig. 12): lower edges
QUEUE_BINS = (0, 1, 10, 25, 50, 100, 200, 400, 800, 1600)


def decision_table(decisions: pd.DataFrame) -> pd.DataFrame:
    """Decision wall time per scheduler and bin of queued jobs: count, median, p90, max (seconds).

    The first decision of every run is left out: it pays for loading (or compiling) the numba
    planner kernel in that process, which is not a cost of the decision (it stays in decisions.csv).
    """
    edges = list(QUEUE_BINS) + [np.inf]
    labels = [f"{lo}-{hi - 1}" if np.isfinite(hi) else f">={lo}" for lo, hi in zip(edges[:-1], edges[1:])]
    frame = decisions[decisions.groupby("run_id", sort=False).cumcount() > 0].copy()
    frame["queued_bin"] = pd.cut(frame["queued"], bins=edges, right=False, labels=labels)
    table = frame.groupby(["scheduler", "queued_bin"], sort=False, observed=True)["seconds"].agg(
        decisions="count", median="median", p90=lambda s: float(np.quantile(s, 0.9)), max="max").reset_index()
    table["queued_bin"] = table["queued_bin"].astype(str)
    table["_bin"] = table["queued_bin"].map({label: i for i, label in enumerate(labels)})
    order = {name: i for i, name in enumerate(dict.fromkeys(decisions["scheduler"]))}
    table["_order"] = table["scheduler"].map(order)
    return table.sort_values(["_order", "_bin"]).drop(columns=["_order", "_bin"]).reset_index(drop=True)
