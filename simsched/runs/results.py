"""The notebook API's results, as data: runs, comparisons and experiments and their tidy frames.

- :func:`compare` -> :class:`Comparison` (``simsched.compare(...)``): the comparison's tables as
  pandas frames (``.df`` is the tidy one: one row per run and metric);
- :func:`run_experiment` / :func:`load_experiment` -> :class:`ExperimentResult`: an experiment's
  rows and statistics, from a spec or from its store folder;
- :func:`load_run`: a run's output folder (CSV or Parquet) back as a
  :class:`~simsched.runs.single.RunResult`.

What they look like -- their HTML views (``_repr_html_``) and figures (``plot``), drawn by the same
functions as ``simsched plot`` -- is the presentation layer's (:mod:`simsched.present.notebook`),
reached through :mod:`simsched.runs.display`, so this module imports neither matplotlib nor rich.
Each ``plot`` returns a matplotlib ``Figure``. [docs/notebook.md](../notebook.md) describes it all.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.core import arguments
from simsched.core.atomic import check_out_dir, subfolder
from simsched.core.errors import InputError, warn
from simsched.core.extras import install_hint
from simsched.core.outputs import read_csv_checked, require_format
from simsched.runs import display
from simsched.runs.compare import METRIC_KEYS, compare_spec, run_compare, warnings_of
from simsched.runs.experiment.lock import FolderLock
from simsched.runs.experiment.runner import run_experiment as run_spec
from simsched.runs.experiment.spec import load_spec
from simsched.runs.experiment.stats import compute
from simsched.runs.experiment.store import read_jobs, read_planned, stale_notice
from simsched.runs.single import RunResult, scenario_of

CONFIDENCE = 0.95


# -- one run -------------------------------------------------------------------------------
def load_run(out_dir: str | Path) -> RunResult:
    """The :class:`~simsched.runs.single.RunResult` a run wrote into ``out_dir`` (``--out``), in CSV or
    Parquet (``--format``), every table with its documented column types."""
    return RunResult.load(arguments.path(out_dir, "out_dir", "simsched.load_run"))


# -- a comparison ----------------------------------------------------------------------------
def t_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The Student-t confidence interval of the mean (scipy.stats.t); (nan, nan) below two values,
    the mean itself when every value is the same."""
    import numpy as np

    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if len(values) < 2:
        return math.nan, math.nan
    mean = float(values.mean())
    sem = float(values.std(ddof=1)) / math.sqrt(len(values))
    if sem == 0:
        return mean, mean
    try:
        from scipy import stats
    except ImportError:
        raise InputError(f"confidence intervals need scipy, which is not installed: {install_hint('plots')}") \
            from None
    low, high = stats.t.interval(confidence, len(values) - 1, loc=mean, scale=sem)
    return float(low), float(high)

@dataclass
class Comparison:
    """What ``simsched.compare(...)`` returns: the comparison's tables as pandas frames.

    - ``df`` (also ``to_frame()``): the tidy table, one row per (instance, seed, scheduler, metric)
      with its ``value``; the metric ``rank`` is the run's rank in its case by ``rank_by``;
    - ``summary``: one row per (scheduler, metric): mean, std, n, the 95% Student-t CI of the
      mean over cases, whether it is the best mean;
    - ``runs``: one row per run, a column per metric (compare_runs.csv); ``ranks``: rank per case
      (NaN where the run failed); ``standing``: per scheduler, cases completed and failed, mean rank
      and place (a scheduler that failed any case is placed after all that completed every case);
    - ``failed``: the runs whose policy failed (with ``keep_going``).
    """

    result: Any  # simsched.runs.compare.CompareResult
    confidence: float = CONFIDENCE
    _df: pd.DataFrame | None = field(default=None, repr=False)
    _summary: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def runs(self) -> pd.DataFrame:
        return self.result.runs

    @property
    def ranks(self) -> pd.DataFrame:
        return self.result.ranks

    @property
    def standing(self) -> pd.DataFrame:
        return self.result.standing

    @property
    def schedulers(self) -> tuple[str, ...]:
        return tuple(self.result.spec.schedulers)

    @property
    def failed(self) -> pd.DataFrame:
        return pd.DataFrame(self.result.failed, columns=["instance", "seed", "scheduler", "error"])

    @property
    def jobs(self) -> dict[str, list[pd.DataFrame]]:
        """Per scheduler, the per-job table of each of its runs (``keep_jobs=True``), in run order."""
        if self.result.jobs is None:
            raise InputError("Comparison.jobs: run simsched.compare(..., keep_jobs=True) to keep per-job tables")
        out: dict[str, list[pd.DataFrame]] = {}
        for name, table in zip(self.runs["scheduler"], self.result.jobs):
            out.setdefault(name, []).append(table)
        return out

    @property
    def df(self) -> pd.DataFrame:
        """The tidy table: instance, seed, scheduler, metric, value (a row per run and metric)."""
        if self._df is None:
            metrics = [m for m in (*METRIC_KEYS, "rank") if m in self.runs.columns]
            long = self.runs.melt(id_vars=["instance", "seed", "scheduler"], value_vars=metrics,
                                  var_name="metric", value_name="value")
            long["value"] = long["value"].astype(float)
            self._df = long.reset_index(drop=True)
        return self._df

    def to_frame(self) -> pd.DataFrame:
        """:attr:`df`."""
        return self.df

    @property
    def summary(self) -> pd.DataFrame:
        """Per (scheduler, metric): label, mean, std, n, ci_low, ci_high (Student-t), best,
        higher_is_better, unfinished_runs, failed_runs (the compare table, compare.csv, with the CI)."""
        if self._summary is None:
            table = self.result.table.copy()
            intervals = []
            for row in table.itertuples(index=False):
                values = self.runs.loc[self.runs["scheduler"] == row.scheduler, row.metric].to_numpy(float)
                intervals.append(t_interval(values, self.confidence))
            table["ci_low"] = [low for low, _ in intervals]
            table["ci_high"] = [high for _, high in intervals]
            columns = ["metric", "label", "scheduler", "mean", "std", "n", "ci_low", "ci_high", "best",
                       "higher_is_better", "unfinished_runs", "failed_runs"]
            self._summary = table[[c for c in columns if c in table.columns]]
        return self._summary

    def write(self, out_dir: str | Path) -> list[Path]:
        """compare.csv, compare_runs.csv, compare.md (as ``compare --out``; ``simsched plot`` draws them)."""
        return self.result.write(out_dir)

    def __repr__(self) -> str:
        cases = self.runs[["instance", "seed"]].drop_duplicates().shape[0]
        return (f"<Comparison {', '.join(self.schedulers)} on {self.result.spec.scenario.name}: {len(self.runs)} runs, "
                f"{cases} case(s), ranked by {self.result.spec.rank_by}>")

    def _repr_html_(self) -> str:
        """A notebook's view: the mean (± half-width of its CI) per metric and scheduler, and the ranks."""
        return display.html("comparison", self)

    def plot(self, kind: str = "metrics", metric: str | None = None) -> Any:
        """A matplotlib Figure: ``"metrics"`` (a box per scheduler for the main metrics), ``"metric"``
        (one metric, ``metric=``, default ``rank_by``), ``"ranks"`` (rank per case), ``"jct"`` (JCT
        CDF per scheduler; needs ``keep_jobs=True``)."""
        return display.plot("comparison", self, kind, metric)


def compare(scenario: str | Path, schedulers: Sequence[str] | None = None, *, seeds: int | None = None,
            jobs_limit: int | None = None, overrides: Mapping[str, Any] | None = None, rank_by: str | None = None,
            workers: int | None = None, keep_jobs: bool = False, keep_going: bool = False,
            decide_timeout: float | None = None, out: str | Path | None = None, format: str = "csv") -> Comparison:
    """Compare ``schedulers`` on ``scenario`` (a TOML path or an example name) over ``seeds`` seeds,
    as ``simsched compare`` does; returns a :class:`Comparison` (``.df``: the tidy table).

    ``schedulers``: names or ``file.py:Class`` (default: the scenario's ``[compare]`` table).
    ``overrides``: dotted scenario keys for every run, validated like ``--set``. ``workers``: local
    processes (default: the CPU count; 1 runs in this process). ``out``: also write the files of
    ``compare --out`` there (the per-job tables of ``keep_jobs`` in ``format``: csv or parquet).
    ``keep_going``/``decide_timeout``: as the command's flags.

    What the command prints before its tables (the runs' warnings, the schedulers that left jobs
    unfinished) is issued with :func:`warnings.warn` as a :class:`~simsched.core.errors.SimschedWarning`.
    """
    # every argument is checked here, with the CLI's one-line errors (simsched.core.arguments)
    caller = "simsched.compare"
    require_format(format, "simsched.compare(format=...)")
    path = scenario_of(scenario, caller).path
    schedulers = scheduler_names(schedulers, caller)
    seeds = arguments.optional_whole(seeds, "seeds", caller)
    jobs_limit = arguments.optional_whole(jobs_limit, "jobs_limit", caller)
    workers = arguments.optional_whole(workers, "workers", caller)
    keep_jobs = arguments.flag(keep_jobs, "keep_jobs", caller)
    keep_going = arguments.flag(keep_going, "keep_going", caller)
    if decide_timeout is not None:
        decide_timeout = arguments.seconds(decide_timeout, "decide_timeout", caller,
                                           maximum=arguments.MAX_DECIDE_TIMEOUT_S)
    if rank_by is not None and not isinstance(rank_by, str):
        raise InputError(f"{caller}: rank_by must be a metric name such as 'avg_jct', got {rank_by!r}")
    if out is not None:  # as compare --out: a folder, its jobs/ and plots/ no links (simsched.core.atomic)
        out = check_out_dir(arguments.path(out, "out", caller), f"{caller}: out")
        for folder in ("jobs", "plots"):
            subfolder(out / folder, create=False)
    if overrides is not None and not isinstance(overrides, Mapping):
        raise InputError("simsched.compare: overrides must be a dict of dotted scenario keys, "
                         "e.g. {'workload.load': 0.8}")
    for key in overrides or {}:
        if not isinstance(key, str) or "." not in key:
            raise InputError(f"simsched.compare(overrides=...): {key!r}: give a dotted scenario key, "
                             "e.g. workload.load or scheduler.policy")
    spec = compare_spec(path, schedulers=schedulers, seeds=seeds, jobs=jobs_limit, rank_by=rank_by,
                        settings=dict(overrides or {}))
    # one comparison per folder at a time, as the command holds it (simsched.runs.experiment.lock)
    with FolderLock(out, "out folder") if out is not None else nullcontext() as lock:
        if lock is not None and lock.warning:
            warn(lock.warning)
        result = run_compare(spec, workers=workers, keep_jobs=keep_jobs, keep_going=keep_going,
                             decide_timeout=decide_timeout)
        if out is not None:
            result.write(out, format=format)
    for text in warnings_of(result):  # the CLI prints them; the API warns (SimschedWarning)
        warn(text)
    return Comparison(result)


def scheduler_names(schedulers: Any, caller: str) -> list[str] | None:
    """``schedulers=`` of :func:`compare`: None (the scenario's), a comma-separated text, or a
    non-empty list of names (``"sjf"``, ``"my_policy.py:MyPolicy"``)."""
    if schedulers is None:
        return None
    if isinstance(schedulers, str):
        names = [name.strip() for name in schedulers.split(",") if name.strip()]
    elif isinstance(schedulers, Sequence) or hasattr(schedulers, "__iter__") and not isinstance(schedulers, type):
        names = list(schedulers)
    else:
        names = [schedulers]
    for name in names:
        if isinstance(name, type) or (not isinstance(name, str) and callable(getattr(name, "decide", None))):
            label = name.__name__ if isinstance(name, type) else type(name).__name__
            raise InputError(f"{caller}: {label} is a policy object; compare runs each policy in its own "
                             "process from a file, so save the class to a file and pass 'my_policy.py:"
                             f"{label}' (docs/notebook.md; simsched.run takes the object itself)")
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{caller}: schedulers must be names such as 'sjf' or 'my_policy.py:MyPolicy', "
                             f"got {name!r}")
    if not names:
        raise InputError(f"{caller}: schedulers is empty; give at least one name, or None for the scenario's "
                         "[compare] schedulers")
    return [name.strip() for name in names]


# -- an experiment ---------------------------------------------------------------------------
@dataclass
class ExperimentResult:
    """An experiment's rows and statistics (``simsched.run_experiment`` or ``load_experiment``).

    - ``results``: one row per run of the plan (results.csv, in plan order);
    - ``summary``: per sweep point and scheduler: n, mean, 95% bootstrap CI, mean rank and its CI
      (summary.csv), ``tests``: headline against each baseline (tests.csv), when computed;
    - ``df`` (also ``to_frame()``): the tidy table, one row per run and metric.
    """

    folder: Path
    results: pd.DataFrame
    metric: str
    summary: pd.DataFrame | None = None
    tests: pd.DataFrame | None = None
    decisions: pd.DataFrame | None = None
    name: str = ""
    schedulers: tuple[str, ...] = ()

    @property
    def df(self) -> pd.DataFrame:
        """The tidy table: the case and sweep columns, scheduler, metric, value."""
        metrics = [m for m in METRIC_KEYS if m in self.results.columns]
        keys = [c for c in self.results.columns if c not in metrics and not c.startswith("_")
                and c not in ("wall_time_s",)]
        long = self.results.melt(id_vars=keys, value_vars=metrics, var_name="metric", value_name="value")
        long["value"] = long["value"].astype(float)
        return long

    def to_frame(self) -> pd.DataFrame:
        return self.df

    def __repr__(self) -> str:
        return f"<ExperimentResult {self.name or self.folder.name}: {len(self.results)} runs, metric {self.metric}>"

    def _repr_html_(self) -> str:
        """A notebook's view: folder, runs, metric and the summary (summary.csv)."""
        return display.html("experiment", self)

    def plot(self, kind: str = "ranks", metric: str | None = None, key: str | None = None) -> Any:
        """A matplotlib Figure: ``"ranks"`` (mean rank per scheduler with its 95% CI), ``"metric"``
        (a box per scheduler of ``metric``), ``"sweep"`` (``metric`` against the swept ``key``),
        ``"decision_time"`` (needs recorded decisions)."""
        return display.plot("experiment", self, kind, metric, key)


def run_experiment(spec: str | Path, out: str | Path, *, preset: str | None = None, workers: int | None = None,
                   resume: bool = False, format: str = "csv") -> ExperimentResult:
    """Run an experiment spec into the store folder ``out`` (as ``simsched experiment SPEC --out OUT``:
    results.csv and the statistics tables) and return its :class:`ExperimentResult`; ``format`` is
    that of the per-job tables the spec records (csv or parquet). The notices the command prints
    on stderr are issued with :func:`warnings.warn` as a :class:`~simsched.core.errors.SimschedWarning`."""
    caller = "simsched.run_experiment"
    spec = arguments.path(spec, "spec", caller)
    out = arguments.path(out, "out", caller)
    if preset is not None and not isinstance(preset, str):
        raise InputError(f"{caller}: preset must be a preset's name, got {preset!r}")
    workers = arguments.optional_whole(workers, "workers", caller)
    resume = arguments.flag(resume, "resume", caller)
    require_format(format, f"{caller}(format=...)")
    loaded = load_spec(spec, preset)
    notices: list[str] = []
    run = run_spec(loaded, out, workers=workers, resume=resume, jobs_format=format, notify=notices.append)
    if run.stale:
        notices.append(stale_notice(out, run.stale))
    for text in notices:  # the CLI prints them on stderr; the API warns (SimschedWarning)
        warn(text)
    jobs = read_jobs(out, run.results, loaded.sweep_keys) if "jobs" in loaded.record else None
    stats = compute(run.results, loaded, run.decisions, jobs)
    title = loaded.name + (f" (preset {loaded.preset})" if loaded.preset else "")
    display.render("experiment_stats", "write", stats, loaded, out, title)  # simsched.present.experiment_tables
    decisions = run.decisions if len(run.decisions) else None
    return ExperimentResult(Path(out), run.results, loaded.metric, stats.summary, stats.tests, decisions,
                            loaded.name, tuple(loaded.scheduler_names))


def load_experiment(folder: str | Path, spec: str | Path | None = None, *, metric: str | None = None,
                    preset: str | None = None) -> ExperimentResult:
    """An experiment's store folder (results.csv, and summary.csv / tests.csv when the experiment
    wrote them) as an :class:`ExperimentResult`; only the runs of its plan (plan.csv) count.

    The metric is ``metric``, else the spec's (``spec``, with ``preset``), else the one the
    folder's report.md names, else ``objective``."""
    caller = "simsched.load_experiment"
    folder = arguments.path(folder, "folder", caller)
    if spec is not None:
        spec = arguments.path(spec, "spec", caller)
    if metric is not None and not isinstance(metric, str):
        raise InputError(f"{caller}: metric must be a metric name such as 'avg_jct', got {metric!r}")
    if not (folder / "results.csv").is_file():
        raise InputError(f"simsched.load_experiment: {folder}: no results.csv (an experiment --out folder holds it)")
    order: list[str] | None = None
    name = folder.name
    if spec is not None:
        loaded = load_spec(spec, preset)
        metric = metric or loaded.metric
        order, name = list(loaded.scheduler_names), loaded.name
    if metric is None and (folder / "report.md").is_file():
        found = re.search(r"^Metric: `([A-Za-z_]+)`", (folder / "report.md").read_text(encoding="utf-8"), re.M)
        metric = found.group(1) if found else None
    data = read_experiment(folder, metric, order)
    required = {"summary": ("scheduler", "n", "mean"), "tests": ("headline", "baseline", "p_value")}
    tables = {table: read_csv_checked(folder / f"{table}.csv", f"an experiment's {table}.csv", required[table])
              if (folder / f"{table}.csv").is_file() else None for table in ("summary", "tests")}
    return ExperimentResult(folder, data["results"], data["metric"], tables["summary"], tables["tests"],
                            data["decisions"], name, tuple(dict.fromkeys(data["results"]["scheduler"])))


def read_experiment(folder: str | Path, metric: str | None = None,
                    schedulers: list[str] | None = None) -> dict[str, Any]:
    """results.csv and decisions.csv of an experiment folder; ``metric`` defaults to ``objective``
    (the experiment spec's default), else ``avg_jct``, else the first float column. Rows are
    recorded as runs finish (in any order), so the figures order schedulers by ``schedulers`` (the
    spec's order) or by name: the same folder always gives the same figures. Only the runs listed in
    plan.csv count (``stale``: how many results rows were left out). ``simsched plot`` draws these
    (:func:`simsched.present.plots.experiment.load_experiment` is this function)."""
    folder = Path(folder)
    results, decisions, stale = read_planned(folder)
    if not len(decisions) or "seconds" not in decisions.columns:
        decisions = None
    if metric is None:
        metric = next((m for m in ("objective", "avg_jct") if m in results.columns), None) or next(
            c for c in results.columns if pd.api.types.is_float_dtype(results[c]))
    elif metric not in results.columns:
        raise InputError(f"{folder / 'results.csv'}: no column {metric!r} to plot; metrics there: "
                         + ", ".join(c for c in results.columns if pd.api.types.is_float_dtype(results[c])))
    names = sorted(results["scheduler"].unique())
    order = [n for n in (schedulers or []) if n in names] + [n for n in names if n not in (schedulers or [])]
    results = _in_order(results, order)
    if decisions is not None and "scheduler" in decisions.columns:
        decisions = _in_order(decisions, order, keys=["queued"])
    return {"results": results, "decisions": decisions, "metric": metric, "sweep_keys": sweep_keys(results),
            "stale": stale}


def _in_order(frame: pd.DataFrame, order: list[str], keys: list[str] | None = None) -> pd.DataFrame:
    """Rows sorted by scheduler (in ``order``), then the case columns, deterministically."""
    rank = frame["scheduler"].map({name: i for i, name in enumerate(order)})
    columns = keys if keys is not None else [c for c in ("scenario", "instance", "seed", "ea_stream",
                                                           *sweep_keys(frame)) if c in frame.columns]
    return (frame.assign(_order=rank).sort_values(["_order", *columns], kind="stable")
            .drop(columns="_order").reset_index(drop=True))


def sweep_keys(results: pd.DataFrame) -> list[str]:
    """Swept scenario keys: dotted column names (``workload.load``) that take more than one value."""
    return [c for c in results.columns if "." in c and results[c].nunique() > 1]
