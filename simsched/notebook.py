"""The notebook layer: HTML reprs, figures and tidy data frames of runs, comparisons and experiments.

- :func:`run_html` / :func:`plot_run`: what :class:`~simsched.api.RunResult` shows in a notebook
  (``result`` as the last line of a cell) and draws (``result.plot("jct")``);
- :func:`compare` -> :class:`Comparison` (``simsched.compare(...)``): the comparison's tables as
  pandas frames (``.df`` is the tidy one: one row per run and metric), its HTML view and figures;
- :func:`run_experiment` / :func:`load_experiment` -> :class:`ExperimentResult`: an experiment's
  rows and statistics, from a spec or from its store folder;
- :func:`load_run`: a run's output folder (CSV or Parquet) back as a ``RunResult``.

Figures are drawn by the same functions as ``simsched plot`` (:mod:`simsched.plots`); matplotlib
is imported only when a figure is asked for. Each ``plot`` returns the ``Figure`` (closed in
pyplot, so a notebook shows it once: as the cell's value). docs/api.md describes it all.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.errors import InputError, did_you_mean

#: the figures of one run, by ``kind`` (``utilization`` is accepted for ``utilisation``)
RUN_PLOTS = ("jct", "wait", "cdf", "queue", "utilisation", "gantt", "wait_by_weight")
#: the figures of a comparison
COMPARE_PLOTS = ("metrics", "metric", "ranks", "jct")
#: the figures of an experiment
EXPERIMENT_PLOTS = ("ranks", "metric", "sweep", "decision_time")
_ALIASES = {"utilization": "utilisation", "wait_cdf": "wait", "jct_cdf": "jct", "rank": "ranks"}
CONFIDENCE = 0.95


def _kind(kind: str, valid: Sequence[str], what: str) -> str:
    kind = _ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in valid:
        raise InputError(f"{what}.plot: unknown kind {kind!r}{did_you_mean(str(kind), list(valid))}; "
                         f"valid: {', '.join(valid)}")
    return kind


def _shown(fig: Any) -> Any:
    """``fig`` taken out of pyplot's list of open figures: a notebook then shows it once, as the value
    of the cell, not a second time when the cell ends; saving and showing it still work."""
    import matplotlib.pyplot as plt

    plt.close(fig)
    return fig


def _escape(value: Any) -> str:
    return html.escape(str(value))


def _meta_html(title: str, items: Sequence[tuple[str, Any]]) -> str:
    cells = "".join(f"<dt>{_escape(k)}</dt><dd>{_escape(v)}</dd>" for k, v in items if v not in (None, ""))
    return (f'<div class="simsched"><strong>{_escape(title)}</strong>'
            f'<dl style="display:grid;grid-template-columns:max-content auto;gap:0 1em;margin:0.3em 0">'
            f"{cells}</dl>")


def shown_path(path: Any) -> str:
    """A scenario file as a reader wants it: relative to the working folder when inside it, a shipped
    example's path inside the examples (``scenarios/philly_hetero.toml``), else as it is."""
    if not path:
        return ""
    target = Path(str(path))
    try:
        return str(target.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        pass
    try:
        from simsched.examples import root

        return str(target.resolve().relative_to(root().resolve()))
    except (ValueError, OSError, InputError):
        return str(path)


# -- one run -------------------------------------------------------------------------------
def run_html(summary: Mapping[str, Any]) -> str:
    """A run's HTML view: scenario, scheduler, seed, jobs and overrides, then its metric table."""
    from simsched.plots.cli import run_metric_table

    scheduler = summary.get("scheduler", {}) or {}
    overrides = summary.get("overrides") or {}
    items = [("scenario", summary.get("scenario", "")), ("scenario file", shown_path(summary.get("scenario_file"))),
             ("scheduler", scheduler.get("policy", "")), ("seed", summary.get("seed", "")),
             ("jobs", f"{summary.get('jobs', 0):,} ({summary.get('completed', 0):,} completed)"
              if "jobs" in summary else ""),
             ("overrides", ", ".join(f"{k}={v!r}" for k, v in overrides.items())),
             ("partial", "yes: interrupted, the metrics cover finished jobs only" if summary.get("partial") else "")]
    warnings = summary.get("warnings") or []
    notes = "".join(f"<p>warning: {_escape(w)}</p>" for w in warnings)
    return (_meta_html(f"simsched run: {summary.get('scenario', '')}", items)
            + run_metric_table(dict(summary)) + notes + "</div>")


def plot_run(result: Any, kind: str = "jct", **options: Any) -> Any:
    """A figure of one run (``result``: a RunResult): see :data:`RUN_PLOTS`."""
    from simsched.plots import run as figures

    kind = _kind(kind, RUN_PLOTS, "Result")
    if kind in ("jct", "wait"):
        fig = figures.cdf_figure(result.jobs, columns=(kind,))
    elif kind == "cdf":
        fig = figures.cdf_figure(result.jobs)
    elif kind == "queue":
        fig = figures.queue_figure(result.timeline)
    elif kind == "utilisation":
        fig = figures.utilization_figure(result.timeline, result.nodes)
    elif kind == "gantt":
        fig = figures.gantt_figure(result.spells, result.nodes, **options)
    else:
        fig = figures.wait_by_weight_figure(result.jobs)
    return _shown(fig)


def load_run(out_dir: str | Path) -> Any:
    """The :class:`~simsched.api.RunResult` a run wrote into ``out_dir`` (``--out``), in CSV or
    Parquet (``--format``), every table with its documented column types."""
    from simsched.api import RunResult
    from simsched.outputs import read_json_object, read_run_tables

    tables = read_run_tables(out_dir)
    summary = read_json_object(Path(out_dir) / "summary.json", "a run's summary.json")
    result = RunResult(tables["jobs"], tables["events"], summary, tables["nodes"])
    result._spells = tables["spells"]
    result._timeline = tables["timeline"]
    result._jobs_filled = True  # nodes and runs were written with the jobs
    return result


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
        raise InputError("confidence intervals need scipy, which is not installed: pip install -e '.[plots]'") \
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
    - ``runs``: one row per run, a column per metric (compare_runs.csv); ``ranks``: rank per case;
    - ``failed``: the runs whose policy failed (with ``keep_going``).
    """

    result: Any  # simsched.compare.CompareResult
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
            from simsched.compare import METRIC_KEYS

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
        higher_is_better, unfinished_runs (the compare table, compare.csv, with the CI)."""
        if self._summary is None:
            table = self.result.table.copy()
            intervals = []
            for row in table.itertuples(index=False):
                values = self.runs.loc[self.runs["scheduler"] == row.scheduler, row.metric].to_numpy(float)
                intervals.append(t_interval(values, self.confidence))
            table["ci_low"] = [low for low, _ in intervals]
            table["ci_high"] = [high for _, high in intervals]
            columns = ["metric", "label", "scheduler", "mean", "std", "n", "ci_low", "ci_high", "best",
                       "higher_is_better", "unfinished_runs"]
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
        from simsched.compare import METRICS, _fmt, seed_note
        from simsched.plots.report import table_html

        spec = self.result.spec
        cases = self.runs[["instance", "seed"]].drop_duplicates()
        items = [("scenario", shown_path(spec.scenario)), ("instances", ", ".join(dict.fromkeys(self.runs["instance"]))),
                 ("seeds", ", ".join(str(s) for s in sorted(cases["seed"].unique()))),
                 ("cases", len(cases)), ("ranked by", spec.rank_by),
                 ("overrides", ", ".join(f"{k}={v!r}" for k, v in spec.settings.items())),
                 ("note", seed_note(spec))]
        summary = self.summary
        rows = []
        for key, label, _ in METRICS:
            part = summary[summary["metric"] == key].set_index("scheduler")
            row = {"metric": label}
            for name in self.schedulers:
                r = part.loc[name]
                if r["mean"] != r["mean"]:
                    row[name] = "n/a"
                    continue
                text = _fmt(key, r["mean"])
                half = (r["ci_high"] - r["ci_low"]) / 2
                if r["n"] > 1 and half > 0:  # the t interval is symmetric: mean ± its half-width
                    text += f" ± {_fmt(key, half)}"
                row[name] = ("* " if r["best"] else "") + text
            rows.append(row)
        interval = (f" ± half-width of its {self.confidence:.0%} CI over the cases (Student-t; summary has "
                    "ci_low, ci_high)") if len(cases) > 1 else ""
        ranks = self.ranks.copy()
        ranks.index.name = "scheduler"
        failed = "".join(f"<p>failed (not ranked): {_escape(f['scheduler'])} on {_escape(f['instance'])} "
                         f"(seed {_escape(f['seed'])}): {_escape(f['error'])}</p>" for f in self.result.failed)
        return (_meta_html(f"simsched compare: {', '.join(self.schedulers)}", items)
                + table_html(pd.DataFrame(rows), f"mean{interval}; * best") + failed
                + table_html(ranks, f"rank by {spec.rank_by} per case (1 = best)", index=True) + "</div>")

    def plot(self, kind: str = "metrics", metric: str | None = None) -> Any:
        """A matplotlib Figure: ``"metrics"`` (a box per scheduler for the main metrics), ``"metric"``
        (one metric, ``metric=``, default ``rank_by``), ``"ranks"`` (rank per case), ``"jct"`` (JCT
        CDF per scheduler; needs ``keep_jobs=True``)."""
        from simsched.plots import compare as figures

        kind = _kind(kind, COMPARE_PLOTS, "Comparison")
        if kind == "metrics":
            return _shown(figures.metric_box_figure(self.runs))
        if kind == "metric":
            from simsched.compare import METRICS

            metric = metric or self.result.spec.rank_by
            labels = {key: label for key, label, _ in METRICS}
            if metric not in labels:
                raise InputError(f"Comparison.plot: unknown metric {metric!r}{did_you_mean(metric, list(labels))}; "
                                 f"valid: {', '.join(labels)}")
            return _shown(figures.metric_box_figure(self.runs, ((metric, labels[metric]),)))
        if kind == "ranks":
            return _shown(figures.rank_heatmap_figure(self.runs))
        return _shown(figures.jct_cdf_figure(self.jobs))


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
    """
    from simsched.api import scenario_of
    from simsched.compare import compare_spec, run_compare
    from simsched.outputs import require_format

    require_format(format, "simsched.compare(format=...)")
    path = scenario_of(scenario, "simsched.compare").path
    if isinstance(schedulers, str):
        schedulers = [name.strip() for name in schedulers.split(",") if name.strip()]
    if overrides is not None and not isinstance(overrides, Mapping):
        raise InputError("simsched.compare: overrides must be a dict of dotted scenario keys, "
                         "e.g. {'workload.load': 0.8}")
    for key in overrides or {}:
        if not isinstance(key, str) or "." not in key:
            raise InputError(f"simsched.compare(overrides=...): {key!r}: give a dotted scenario key, "
                             "e.g. workload.load or scheduler.policy")
    spec = compare_spec(path, schedulers=schedulers, seeds=seeds, jobs=jobs_limit, rank_by=rank_by,
                        settings=dict(overrides or {}))
    result = run_compare(spec, workers=workers, keep_jobs=keep_jobs, keep_going=keep_going,
                         decide_timeout=decide_timeout)
    if out is not None:
        result.write(out, format=format)
    return Comparison(result)


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
        from simsched.compare import METRIC_KEYS

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
        from simsched.plots.report import table_html

        results = self.results
        items = [("folder", self.folder), ("runs", len(results)), ("metric", self.metric)]
        for column in ("scenario", "seed"):
            if column in results:
                items.append((column + "s", ", ".join(str(v) for v in dict.fromkeys(results[column]))))
        if self.summary is not None and len(self.summary):
            table = table_html(self.summary, f"{self.metric}: mean, 95% bootstrap CI, mean rank (summary.csv)")
        else:
            grouped = results.groupby("scheduler", sort=False)[self.metric].agg(["mean", "std", "count"])
            grouped.index.name = "scheduler"
            table = table_html(grouped, f"{self.metric} per scheduler over every run", index=True)
        return _meta_html(f"simsched experiment: {self.name or self.folder.name}", items) + table + "</div>"

    def plot(self, kind: str = "ranks", metric: str | None = None, key: str | None = None) -> Any:
        """A matplotlib Figure: ``"ranks"`` (mean rank per scheduler with its 95% CI), ``"metric"``
        (a box per scheduler of ``metric``), ``"sweep"`` (``metric`` against the swept ``key``),
        ``"decision_time"`` (needs recorded decisions)."""
        from simsched.plots import experiment as figures

        kind = _kind(kind, EXPERIMENT_PLOTS, "ExperimentResult")
        metric = metric or self.metric
        if metric not in self.results.columns:
            raise InputError(f"ExperimentResult.plot: no metric {metric!r} in the results")
        if kind == "ranks":
            return _shown(figures.rank_bar_figure(self.results, metric))
        if kind == "metric":
            from simsched.plots.compare import metric_box_figure

            return _shown(metric_box_figure(self.results, ((metric, metric),)))
        if kind == "sweep":
            swept = figures.sweep_keys(self.results)
            key = key or (swept[0] if swept else None)
            if key not in swept:
                raise InputError(f"ExperimentResult.plot('sweep'): key {key!r} is not swept; swept keys: "
                                 f"{', '.join(swept) or 'none'}")
            return _shown(figures.sweep_figure(self.results, key, metric))
        if self.decisions is None or not len(self.decisions):
            raise InputError("ExperimentResult.plot('decision_time'): no decisions recorded "
                             "(record = [\"decisions\"] in the spec)")
        return _shown(figures.decision_time_figure(self.decisions))


def run_experiment(spec: str | Path, out: str | Path, *, preset: str | None = None, workers: int | None = None,
                   resume: bool = False, format: str = "csv") -> ExperimentResult:
    """Run an experiment spec into the store folder ``out`` (as ``simsched experiment SPEC --out OUT``:
    results.csv and the statistics tables) and return its :class:`ExperimentResult`; ``format`` is
    that of the per-job tables the spec records (csv or parquet)."""
    from simsched.experiment.runner import run_experiment as run_spec
    from simsched.experiment.spec import load_spec
    from simsched.experiment.stats import compute
    from simsched.experiment.store import read_jobs
    from simsched.experiment.tables import write_tables

    loaded = load_spec(spec, preset)
    run = run_spec(loaded, out, workers=workers, resume=resume, jobs_format=format)
    jobs = read_jobs(out, run.results, loaded.sweep_keys) if "jobs" in loaded.record else None
    stats = compute(run.results, loaded, run.decisions, jobs)
    write_tables(stats, loaded, out, loaded.name + (f" (preset {loaded.preset})" if loaded.preset else ""))
    decisions = run.decisions if len(run.decisions) else None
    return ExperimentResult(Path(out), run.results, loaded.metric, stats.summary, stats.tests, decisions,
                            loaded.name, tuple(loaded.scheduler_names))


def load_experiment(folder: str | Path, spec: str | Path | None = None, *, metric: str | None = None,
                    preset: str | None = None) -> ExperimentResult:
    """An experiment's store folder (results.csv, and summary.csv / tests.csv when the experiment
    wrote them) as an :class:`ExperimentResult`; only the runs of its plan (plan.csv) count.

    The metric is ``metric``, else the spec's (``spec``, with ``preset``), else the one the
    folder's report.md names, else ``objective``."""
    import re

    from simsched.outputs import read_csv_checked
    from simsched.plots.experiment import load_experiment as load

    folder = Path(folder)
    if not (folder / "results.csv").is_file():
        raise InputError(f"simsched.load_experiment: {folder}: no results.csv (an experiment --out folder holds it)")
    order: list[str] | None = None
    name = folder.name
    if spec is not None:
        from simsched.experiment.spec import load_spec

        loaded = load_spec(spec, preset)
        metric = metric or loaded.metric
        order, name = list(loaded.scheduler_names), loaded.name
    if metric is None and (folder / "report.md").is_file():
        found = re.search(r"^Metric: `([A-Za-z_]+)`", (folder / "report.md").read_text(encoding="utf-8"), re.M)
        metric = found.group(1) if found else None
    data = load(folder, metric, order)
    tables = {table: read_csv_checked(folder / f"{table}.csv", f"an experiment's {table}.csv")
              if (folder / f"{table}.csv").is_file() else None for table in ("summary", "tests")}
    return ExperimentResult(folder, data["results"], data["metric"], tables["summary"], tables["tests"],
                            data["decisions"], name, tuple(dict.fromkeys(data["results"]["scheduler"])))
