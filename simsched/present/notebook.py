"""What the notebook API's results look like: HTML views and figures of runs, comparisons and experiments.

The results are data in the runs layer (:class:`~simsched.runs.single.RunResult`,
:class:`~simsched.runs.results.Comparison`, :class:`~simsched.runs.results.ExperimentResult`); their
``_repr_html_()`` and ``plot()`` ask :mod:`simsched.runs.display`, which this module fills when it is
imported (the ``simsched`` facade imports it on the first view asked for):

- :func:`run_html` / :func:`plot_run`: what a RunResult shows in a notebook (``result`` as the last
  line of a cell) and draws (``result.plot("jct")``);
- :func:`comparison_html` / :func:`plot_comparison`: a Comparison's metric and rank tables, figures;
- :func:`experiment_html` / :func:`plot_experiment`: an ExperimentResult's summary and figures;
- compare.md's Markdown (:func:`simsched.present.compare_tables.to_markdown`) and an experiment's
  statistics tables and report.md (:func:`simsched.present.experiment_tables.write_tables`), which
  ``CompareResult.write`` and ``simsched.run_experiment`` write.

Figures are drawn by the same functions as ``simsched plot`` (:mod:`simsched.present.plots`); matplotlib
is imported only when a figure is asked for. Each ``plot`` returns the ``Figure`` (closed in
pyplot, so a notebook shows it once: as the cell's value). docs/notebook.md describes it all.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.config.examples import root
from simsched.core.errors import InputError, did_you_mean
from simsched.present import compare_tables, experiment_tables
from simsched.present.compare_tables import _fmt, seed_note
from simsched.present.plots import compare as compare_figures
from simsched.present.plots import experiment as experiment_figures
from simsched.present.plots import run as run_figures
from simsched.present.plots.draw import run_metric_table
from simsched.present.plots.report import table_html
from simsched.runs import display, ranking
from simsched.runs.compare import METRICS

#: the figures of one run, by ``kind`` (``utilization`` is accepted for ``utilisation``)
RUN_PLOTS = ("jct", "wait", "cdf", "queue", "utilisation", "gantt", "wait_by_weight")
#: the figures of a comparison
COMPARE_PLOTS = ("metrics", "metric", "ranks", "jct")
#: the figures of an experiment
EXPERIMENT_PLOTS = ("ranks", "metric", "sweep", "decision_time")
_ALIASES = {"utilization": "utilisation", "wait_cdf": "wait", "jct_cdf": "jct", "rank": "ranks"}


def _kind(kind: str, valid: Sequence[str], what: str) -> str:
    kind = _ALIASES.get(kind, kind) if isinstance(kind, str) else kind
    if kind not in valid:
        raise InputError(f"{what}.plot: unknown kind {kind!r}{did_you_mean(str(kind), list(valid))}; "
                         f"valid: {', '.join(valid)}")
    return kind


def _shown(fig: Any) -> Any:
    """``fig`` taken out of pyplot's list of open figures: a notebook then shows it once, as the value
    of the cell, not a second time when the cell ends; saving and showing it still work."""
    import matplotlib.pyplot as plt  # matplotlib: imported when a figure is asked for (the plots extra)

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
        return str(target.resolve().relative_to(root().resolve()))
    except (ValueError, OSError, InputError):
        return str(path)


# -- one run -------------------------------------------------------------------------------
def run_html(summary: Mapping[str, Any]) -> str:
    """A run's HTML view: scenario, scheduler, seed, jobs and overrides, then its metric table."""
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


def _run_view(result: Any) -> str:
    """A RunResult's ``_repr_html_``: :func:`run_html` of its summary."""
    return run_html(result.summary)


def plot_run(result: Any, kind: str = "jct", **options: Any) -> Any:
    """A figure of one run (``result``: a RunResult): see :data:`RUN_PLOTS`."""
    kind = _kind(kind, RUN_PLOTS, "Result")
    if kind in ("jct", "wait"):
        fig = run_figures.cdf_figure(result.jobs, columns=(kind,))
    elif kind == "cdf":
        fig = run_figures.cdf_figure(result.jobs)
    elif kind == "queue":
        fig = run_figures.queue_figure(result.timeline)
    elif kind == "utilisation":
        fig = run_figures.utilization_figure(result.timeline, result.nodes)
    elif kind == "gantt":
        fig = run_figures.gantt_figure(result.spells, result.nodes, **options)
    else:
        fig = run_figures.wait_by_weight_figure(result.jobs)
    return _shown(fig)


# -- a comparison ----------------------------------------------------------------------------
def comparison_html(comparison: Any) -> str:
    """A Comparison's HTML view: what was compared, the mean (± half-width of its CI) per metric and
    scheduler, the failed runs and the rank table."""
    spec = comparison.result.spec
    runs = comparison.runs
    cases = runs[["instance", "seed"]].drop_duplicates()
    items = [("scenario", shown_path(spec.scenario)), ("instances", ", ".join(dict.fromkeys(runs["instance"]))),
             ("seeds", ", ".join(str(s) for s in sorted(cases["seed"].unique()))),
             ("cases", len(cases)), ("ranked by", spec.rank_by),
             ("overrides", ", ".join(f"{k}={v!r}" for k, v in spec.settings.items())),
             ("note", seed_note(spec))]
    summary = comparison.summary
    cases_all = [c for c in comparison.ranks.columns if c != "mean_rank"]
    rows = []
    for key, label, _ in METRICS:
        part = summary[summary["metric"] == key].set_index("scheduler")
        row = {"metric": label}
        most = int(part["n"].max())
        for name in comparison.schedulers:
            r = part.loc[name]
            if r["mean"] != r["mean"]:
                row[name] = "failed" if r.get("failed_runs", 0) == len(cases_all) else "n/a"
                continue
            text = _fmt(key, r["mean"])
            half = (r["ci_high"] - r["ci_low"]) / 2
            if r["n"] > 1 and half > 0:  # the t interval is symmetric: mean ± its half-width
                text += f" ± {_fmt(key, half)}"
            row[name] = ("* " if r["best"] else "") + ranking.with_n(text, int(r["n"]), most)
        rows.append(row)
    interval = (f" ± half-width of its {comparison.confidence:.0%} CI over the cases (Student-t; summary has "
                "ci_low, ci_high)") if len(cases) > 1 else ""
    header, shown = compare_tables.rank_rows(comparison.result)  # "failed", n=, place: as the terminal shows
    ranks = pd.DataFrame([cells for _, cells, _ in shown], columns=header[1:],
                         index=pd.Index([name for name, _, _ in shown], name="scheduler"))
    failed = "".join(f"<p>failed: {_escape(comparison.result.labels[f['scheduler']])} on {_escape(f['instance'])} "
                     f"(seed {_escape(f['seed'])}): {_escape(f['error'])}</p>" for f in comparison.result.failed)
    return (_meta_html(f"simsched compare: {', '.join(comparison.schedulers)}", items)
            + table_html(pd.DataFrame(rows), f"mean{interval}; * best") + failed
            + table_html(ranks, f"rank by {spec.rank_by} per case (1 = best)", index=True) + "</div>")


def plot_comparison(comparison: Any, kind: str = "metrics", metric: str | None = None) -> Any:
    """A figure of a Comparison: see :data:`COMPARE_PLOTS` (``Comparison.plot``)."""
    kind = _kind(kind, COMPARE_PLOTS, "Comparison")
    if kind == "metrics":
        return _shown(compare_figures.metric_box_figure(comparison.runs))
    if kind == "metric":
        metric = metric or comparison.result.spec.rank_by
        labels = {key: label for key, label, _ in METRICS}
        if metric not in labels:
            raise InputError(f"Comparison.plot: unknown metric {metric!r}{did_you_mean(metric, list(labels))}; "
                             f"valid: {', '.join(labels)}")
        return _shown(compare_figures.metric_box_figure(comparison.runs, ((metric, labels[metric]),)))
    if kind == "ranks":
        return _shown(compare_figures.rank_heatmap_figure(comparison.runs))
    return _shown(compare_figures.jct_cdf_figure(comparison.jobs))


# -- an experiment ---------------------------------------------------------------------------
def experiment_html(experiment: Any) -> str:
    """An ExperimentResult's HTML view: folder, runs, metric, and summary.csv (or the metric's mean per
    scheduler when the folder has no summary)."""
    results = experiment.results
    items = [("folder", experiment.folder), ("runs", len(results)), ("metric", experiment.metric)]
    for column in ("scenario", "seed"):
        if column in results:
            items.append((column + "s", ", ".join(str(v) for v in dict.fromkeys(results[column]))))
    if experiment.summary is not None and len(experiment.summary):
        table = table_html(experiment.summary, f"{experiment.metric}: mean, 95% bootstrap CI, mean rank (summary.csv)")
    else:
        grouped = results.groupby("scheduler", sort=False)[experiment.metric].agg(["mean", "std", "count"])
        grouped.index.name = "scheduler"
        table = table_html(grouped, f"{experiment.metric} per scheduler over every run", index=True)
    return (_meta_html(f"simsched experiment: {experiment.name or experiment.folder.name}", items)
            + table + "</div>")


def plot_experiment(experiment: Any, kind: str = "ranks", metric: str | None = None, key: str | None = None) -> Any:
    """A figure of an ExperimentResult: see :data:`EXPERIMENT_PLOTS` (``ExperimentResult.plot``)."""
    kind = _kind(kind, EXPERIMENT_PLOTS, "ExperimentResult")
    metric = metric or experiment.metric
    results = experiment.results
    if metric not in results.columns:
        raise InputError(f"ExperimentResult.plot: no metric {metric!r} in the results")
    if kind == "ranks":
        return _shown(experiment_figures.rank_bar_figure(results, metric))
    if kind == "metric":
        return _shown(compare_figures.metric_box_figure(results, ((metric, metric),)))
    if kind == "sweep":
        swept = experiment_figures.sweep_keys(results)
        key = key or (swept[0] if swept else None)
        if key not in swept:
            raise InputError(f"ExperimentResult.plot('sweep'): key {key!r} is not swept; swept keys: "
                             f"{', '.join(swept) or 'none'}")
        return _shown(experiment_figures.sweep_figure(results, key, metric))
    if experiment.decisions is None or not len(experiment.decisions):
        raise InputError("ExperimentResult.plot('decision_time'): no decisions recorded "
                         "(record = [\"decisions\"] in the spec)")
    return _shown(experiment_figures.decision_time_figure(experiment.decisions))


display.register("run", html=_run_view, plot=plot_run)
display.register("comparison", html=comparison_html, plot=plot_comparison)
display.register("compare", markdown=compare_tables.to_markdown)
display.register("experiment", html=experiment_html, plot=plot_experiment)
display.register("experiment_stats", write=experiment_tables.write_tables)
