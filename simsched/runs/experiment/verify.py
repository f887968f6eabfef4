"""Re-check a committed experiment: run K of its finished rows again and compare every metric.

``python -m simsched experiment SPEC --preset P --out DIR --verify K [--only instance=I,scheduler=S,seed=N]``
plans the spec exactly as the run that made DIR did, picks K rows of DIR's
results.csv (at random, or those matching ``--only``), runs each again with the
same code path the experiment uses (:func:`simsched.runs.experiment.runner.execute`)
and compares every stored metric with the new value **exactly**, as text the
way the store writes numbers (``repr`` of the float). ``wall_s`` is not a
metric and is not compared, nor an empty counts cell (``plans``, ``ea_runs``, ``moves``,
``moves_per_job``) of a row recorded before those columns existed. The store is only read: nothing in DIR changes.

A row that reproduces is ``ok``; one that does not lists each metric that
differs (stored, now). Then the tables are rebuilt from the stored rows
(:func:`rebuild`) and compared byte for byte with the committed summary.csv,
instance_ranks.csv, tests.csv, decision_time.csv, by_priority.csv and
report.md: a table edited by hand, or left stale by a later row, is a mismatch. Any mismatch makes the command exit with
:data:`MISMATCH_EXIT`. Runs are deterministic given the scenario, seed and EA
stream (evo-gp with a wall-clock ``time_budget_s`` is not, and says so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.core.errors import InputError
from simsched.core.outputs import read_csv_checked
from simsched.runs.experiment.grid import RunTask, plan
from simsched.runs.experiment.runner import execute
from simsched.runs.experiment.spec import ExperimentSpec
from simsched.runs.experiment.stats import compute
from simsched.runs.experiment.store import (
    COUNTS_ADDED_LATER,
    IDENTITY_COLUMNS,
    in_plan_order,
    read_decisions,
    read_jobs,
    read_results,
)

#: exit code of ``--verify`` when a row does not reproduce (docs/experiment.md)
MISMATCH_EXIT = 3
ONLY_KEYS = ("instance", "scheduler", "seed", "ea_stream")


@dataclass(frozen=True, slots=True)
class Check:
    """One re-run row: its identity and the metrics that differ (empty = reproduced)."""

    run_id: str
    instance: str
    scheduler: str
    seed: int
    ea_stream: str
    differences: tuple[tuple[str, str, str], ...]  # (metric, stored, now)


def parse_only(text: str | None, sweep_keys: Sequence[str] = ()) -> dict[str, str]:
    """``instance=I,scheduler=S,seed=N,workload.interval_s=840`` -> {key: value}: the identity keys and
    the spec's swept keys; any other key is bad input."""
    if not text:
        return {}
    valid = (*ONLY_KEYS, *sweep_keys)
    chosen: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise InputError(f"--only {text!r}: give key=value pairs separated by commas, e.g. "
                             "instance=paper-test03-s0,scheduler=evo-gp,seed=0")
        if key not in valid:
            raise InputError(f"--only: unknown key {key!r}; valid: {', '.join(valid)}"
                             + ("" if sweep_keys else " (the spec sweeps no key)"))
        chosen[key] = value
    return chosen


def _matches(column: pd.Series, value: str) -> pd.Series:
    """Cells equal to ``value`` as text, or as numbers when both are numbers (840 matches 840.0)."""
    same = column == value
    try:
        number = float(value)
    except ValueError:
        return same
    numbers = pd.to_numeric(column, errors="coerce")
    return same | (numbers == number)


def _now_text(value: object) -> str:
    """A fresh metric as the store writes it (simsched.runs.experiment.store._text)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def choose(results: pd.DataFrame, count: int, only: dict[str, str], rng: np.random.Generator) -> pd.DataFrame:
    """``count`` rows matching ``only`` (all of them when fewer), picked at random without repeats."""
    rows = results
    for key, value in only.items():
        rows = rows[_matches(rows[key], value)]
    if rows.empty:
        what = ", ".join(f"{k}={v}" for k, v in only.items()) or "any"
        raise InputError(f"--verify: no finished row matches {what}; the store has {len(results)} finished rows")
    count = min(count, len(rows))
    picked = np.sort(rng.choice(len(rows), size=count, replace=False))
    return rows.iloc[picked]


def verify(spec: ExperimentSpec, out: str | Path, count: int, only: dict[str, str] | None = None,
           rng: np.random.Generator | None = None) -> list[Check]:
    """Re-run ``count`` finished rows of the store in ``out`` and compare their metrics exactly."""
    folder = Path(out)
    if not (folder / "results.csv").is_file():
        raise InputError(f"--verify: {folder / 'results.csv'} not found; give the folder of a finished experiment")
    tasks: dict[str, RunTask] = {task.run_id: task for task in plan(spec)}
    # as text, exactly as the store wrote each cell: the comparison is of those characters
    results = read_csv_checked(folder / "results.csv", "an experiment's results.csv", dtype=str,
                               keep_default_na=False)
    results = results[results["run_id"].isin(tasks)].drop_duplicates("run_id")
    if results.empty:
        raise InputError(f"--verify: {folder} has no finished row of this spec's plan (another spec or preset?)")
    rows = choose(results, count, only or {}, rng if rng is not None else np.random.default_rng())
    identity = set(IDENTITY_COLUMNS) | set(spec.sweep_keys)
    checks = []
    for row in rows.to_dict("records"):
        task = tasks[row["run_id"]]
        fresh = execute(task)
        if fresh["partial"]:
            raise KeyboardInterrupt
        metrics = fresh["metrics"]
        differences = []
        for column in results.columns:
            if column in identity:
                continue
            stored, now = row[column], _now_text(metrics.get(column))
            if stored == "" and column in COUNTS_ADDED_LATER:
                continue  # a row recorded before the counts existed (tools/fill_added_later.py fills them)
            if stored != now:
                differences.append((column, stored, now))
        checks.append(Check(task.run_id, task.instance, task.scheduler, task.seed,
                            "" if task.ea_stream is None else str(task.ea_stream), tuple(differences)))
    return checks


def lines(checks: Sequence[Check]) -> list[str]:
    """One line per re-run row, then a verdict line."""
    out = []
    for check in checks:
        where = f"{check.run_id} {check.instance} {check.scheduler} seed {check.seed}" + (
            f" stream {check.ea_stream}" if check.ea_stream else "")
        if not check.differences:
            out.append(f"ok        {where}")
        else:
            shown = "; ".join(f"{metric}: stored {stored}, now {now}" for metric, stored, now in check.differences[:4])
            more = f"; and {len(check.differences) - 4} more" if len(check.differences) > 4 else ""
            out.append(f"MISMATCH  {where}: {shown}{more}")
    bad = sum(1 for check in checks if check.differences)
    out.append(f"{len(checks) - bad} of {len(checks)} rows reproduce exactly" + (
        f"; {bad} do not" if bad else ""))
    return out


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """The statistics of a store's finished rows, as ``experiment`` computes them: over the instances
    whose every planned run has a row, with the store's decision times and per-job tables (when
    recorded and present)."""

    stats: Any
    title: str
    complete: int  # instances with every planned run finished
    instances: int  # instances in the plan
    done: int  # finished runs of the plan
    planned: int  # runs in the plan
    jobs_missing: bool  # record = ["jobs"] but the store holds no per-job table


def rebuild(spec: ExperimentSpec, out: str | Path) -> Rebuilt:
    """The statistics of the finished rows of ``out`` (``--tables-only`` writes them; ``--verify``
    compares them with the committed tables). The title says how much is finished only while the
    experiment is incomplete, so a complete store's tables are the full run's."""
    folder = Path(out)
    if not (folder / "results.csv").is_file():
        raise InputError(f"{folder / 'results.csv'} not found; run the experiment first")
    tasks = plan(spec)
    order = {task.run_id: i for i, task in enumerate(tasks)}
    results = in_plan_order(read_results(folder), order).drop_duplicates("run_id", ignore_index=True)
    done = set(results["run_id"])
    wanted: dict[str, set[str]] = {}
    for task in tasks:
        wanted.setdefault(task.instance, set()).add(task.run_id)
    complete = [name for name, ids in wanted.items() if ids <= done]
    if not complete:
        raise InputError(f"no instance of {spec.name} has all its runs in {folder} yet "
                         f"({len(done)} of {len(tasks)} runs finished)")
    results = results[results["instance"].isin(complete)].reset_index(drop=True)
    decisions = in_plan_order(read_decisions(folder), order)
    decisions = decisions[decisions["run_id"].isin(set(results["run_id"]))].reset_index(drop=True)
    jobs = read_jobs(folder, results, spec.sweep_keys) if "jobs" in spec.record else None
    jobs_missing = jobs is not None and jobs.empty
    stats = compute(results, spec, decisions if len(decisions) else None, None if jobs_missing else jobs)
    title = spec.name + (f" (preset {spec.preset})" if spec.preset else "")
    if len(complete) < len(wanted):
        title += f" -- {len(complete)} of {len(wanted)} instances complete ({len(done)} of {len(tasks)} runs)"
    return Rebuilt(stats, title, len(complete), len(wanted), len(done), len(tasks), jobs_missing)
