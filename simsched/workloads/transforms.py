"""Plain functions on canonical job tables (SPEC §5): field synthesis, filters, load scaling.

Every function returns a new table and leaves its input untouched. Times
keep their meaning: when submit times move, absolute deadlines move with
them so each job keeps its slack (deadline - submit).

Offered load (used by :func:`offered_load` and :func:`scale_to_load`) is
the GPU work over the GPU capacity of the arrival span::

    load = sum(g * d) / (total_gpus * (last submit - first submit))
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from simsched.core.errors import InputError
from simsched.workloads.table import normalize


def synthesize_fields(
    df: pd.DataFrame,
    rng: np.random.Generator,
    *,
    deadline_slack: tuple[float, float] = (1.5, 4.0),
    weight_range: tuple[int, int] = (1, 5),
    only_missing: bool = True,
) -> pd.DataFrame:
    """Deadline = submit + duration x k, k ~ U[lo, hi]; weight ~ U{lo..hi} (SPEC §5).

    One k and one weight are drawn for every row, in row order, whether or not
    the row needs them, so which rows are filled does not shift the stream.
    With ``only_missing`` only NaN deadlines and NA weights are replaced.
    """
    slack_lo, slack_hi = deadline_slack
    if not 0 < slack_lo <= slack_hi:
        raise InputError(f"deadline_slack must be 0 < lo <= hi, got {deadline_slack!r}")
    weight_lo, weight_hi = weight_range
    if not 1 <= weight_lo <= weight_hi:
        raise InputError(f"weight_range must be 1 <= lo <= hi, got {weight_range!r}")
    out = df.copy()
    n = len(out)
    slack = rng.uniform(slack_lo, slack_hi, size=n)
    weights = rng.integers(weight_lo, weight_hi + 1, size=n)
    deadlines = out["submit"].to_numpy(float) + out["duration"].to_numpy(float) * slack
    if only_missing:
        fill_deadline = out["deadline"].isna().to_numpy()
        fill_weight = out["weight"].isna().to_numpy()
    else:
        fill_deadline = fill_weight = np.ones(n, dtype=bool)
    out["deadline"] = np.where(fill_deadline, deadlines, out["deadline"].to_numpy(float))
    old_weights = out["weight"].to_numpy(dtype="float64", na_value=np.nan)
    out["weight"] = pd.array(np.where(fill_weight, weights, old_weights).astype("int64"), dtype="Int64")
    return out


def limit_jobs(df: pd.DataFrame, n: int) -> pd.DataFrame:
    """The first ``n`` jobs in submit order (the table is kept sorted by submit)."""
    if n < 0:
        raise InputError(f"jobs_limit must be >= 0, got {n}")
    return df.iloc[:n].reset_index(drop=True)


def time_window(df: pd.DataFrame, start: float, end: float, *, rezero: bool = True) -> pd.DataFrame:
    """Jobs with ``start <= submit < end``.

    With ``rezero`` (default) times are shifted so the earliest kept job
    submits at 0, matching the table's convention for traces ("seconds since
    the earliest kept job"); deadlines shift by the same amount.
    """
    if not start < end:
        raise InputError(f"time window must have start < end, got [{start}, {end})")
    kept = df[(df["submit"] >= start) & (df["submit"] < end)].reset_index(drop=True)
    if rezero and len(kept):
        kept = _shift(kept, -float(kept["submit"].iloc[0]))
    return kept


def select_clusters(df: pd.DataFrame, names: Iterable[str]) -> pd.DataFrame:
    """Jobs whose ``home_cluster`` (a cluster or Philly VC) is one of ``names``."""
    wanted = list(names)
    present = set(df["home_cluster"].dropna())
    missing = [name for name in wanted if name not in present]
    if missing:
        valid = ", ".join(sorted(map(str, present))) or "(no job has a home_cluster)"
        raise InputError(f"cluster/VC {missing[0]!r} has no jobs in this workload; valid: {valid}")
    return df[df["home_cluster"].isin(wanted)].reset_index(drop=True)


def offered_load(df: pd.DataFrame, total_gpus: float) -> float:
    """sum(g d) / (total_gpus x arrival span); inf when all jobs arrive at once, 0 if empty."""
    if total_gpus <= 0:
        raise InputError(f"total_gpus must be > 0, got {total_gpus}")
    work = float((df["gpus"] * df["duration"]).sum())
    if len(df) == 0 or work == 0:
        return 0.0
    span = float(df["submit"].max() - df["submit"].min())
    return work / (total_gpus * span) if span > 0 else math.inf


def scale_to_load(df: pd.DataFrame, total_gpus: float, load: float) -> pd.DataFrame:
    """Stretch or squeeze submit times about the first one so the offered load equals ``load``.

    Durations and GPU counts stay; each deadline keeps its slack.
    """
    if not load > 0:
        raise InputError(f"load must be > 0, got {load}")
    current = offered_load(df, total_gpus)
    if current == 0 or math.isinf(current):
        raise InputError("cannot scale the load of a workload with no work or a zero arrival span")
    factor = current / load
    first = float(df["submit"].min())
    out = df.copy()
    slack = out["deadline"] - out["submit"]
    out["submit"] = first + (out["submit"] - first) * factor
    out["deadline"] = out["submit"] + slack
    return normalize(out)


def _shift(df: pd.DataFrame, delta: float) -> pd.DataFrame:
    out = df.copy()
    out["submit"] = out["submit"] + delta
    out["deadline"] = out["deadline"] + delta
    return out


def assign_tenants(df: pd.DataFrame, mix: tuple[tuple[str, float], ...], rng: np.random.Generator) -> pd.DataFrame:
    """Give every job without a tenant one drawn from ``mix`` (tenant, weight), independently per job.

    One draw per job from its own stream (``"tenants"``), so adding a mix moves no other draw;
    jobs that already have a tenant (a trace's VC) keep it and still consume their draw.
    """
    names = [name for name, _ in mix]
    weights = np.array([w for _, w in mix], dtype=float)
    drawn = rng.choice(len(names), size=len(df), p=weights / weights.sum())
    picked = np.array(names, dtype=object)[drawn]
    tenants = df["tenant"].to_numpy(object)
    missing = pd.isna(df["tenant"]).to_numpy(bool)
    out = df.copy()
    out["tenant"] = np.where(missing, picked, tenants)
    return out


def assign_models(df: pd.DataFrame, mix: tuple[tuple[str, float], ...], rng: np.random.Generator) -> pd.DataFrame:
    """Give every job without a model one drawn from ``mix`` (model, weight), independently per job
    (issue 38). Its own stream (``"models"``), so a mix moves no other draw; jobs that name a model
    (a trace's ``model`` column) keep it and still consume their draw."""
    names = [name for name, _ in mix]
    weights = np.array([w for _, w in mix], dtype=float)
    drawn = rng.choice(len(names), size=len(df), p=weights / weights.sum())
    picked = np.array(names, dtype=object)[drawn]
    missing = pd.isna(df["model"]).to_numpy(bool)
    out = df.copy()
    out["model"] = np.where(missing, picked, df["model"].to_numpy(object))
    return out
