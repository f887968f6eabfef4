"""The figures and report.html of a command's output: what ``simsched plot OUT`` and the
``--plots``/``--report`` flags draw (the command's arguments are :mod:`simsched.cli.plot`'s).

OUT is what a command wrote: a run's ``--out`` folder (summary.json, jobs.csv ...),
a ``compare --out`` folder (compare_runs.csv), an ``experiment`` folder
(results.csv), or the JSON file ``learn --out`` wrote. Figures go to
``OUT/plots/NAME.FORMAT`` (for a learned file: ``FILE_plots/``); the report to
``OUT/report.html`` (for a learned file: ``FILE_plots/report.html``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.core import atomic
from simsched.core.errors import InputError
from simsched.core.metrics import (
    FAIRNESS_METRICS,
    STARVATION_METRICS,
    SUMMARY_METRICS,
    flat_metrics,
)
from simsched.present.plots.compare import compare_figures, load_compare
from simsched.present.plots.experiment import experiment_figures, load_experiment
from simsched.present.plots.learn import learn_figures, load_learned
from simsched.present.plots.markdown_html import markdown_html
from simsched.present.plots.report import save_figures, table_html, write_report
from simsched.present.plots.run import load_run, run_figures
from simsched.runs.experiment.store import stale_notice


def kind_of(output: str | Path) -> str:
    """Which command wrote ``output`` (by the files it holds); InputError naming what is expected."""
    path = Path(output)
    if path.is_file() and path.suffix == ".json":
        return "learn"
    if not path.is_dir():
        raise InputError(f"python -m simsched plot: {path}: no such folder or .json file")
    if (path / "results.csv").is_file():
        return "experiment"
    if (path / "compare_runs.csv").is_file():
        return "compare"
    if (path / "summary.json").is_file() and ((path / "jobs.csv").is_file() or (path / "jobs.parquet").is_file()):
        return "run"
    raise InputError(f"python -m simsched plot: {path}: holds none of summary.json + jobs.csv or jobs.parquet (run), "
                     "compare_runs.csv (compare), results.csv (experiment)")


def draw(output: str | Path, *, fmt: str = "png", plots: bool = True, report: bool = False,
         metric: str | None = None, schedulers: list[str] | None = None,
         notify: Callable[[str], None] | None = None) -> list[Path]:
    """Figures (when ``plots``) and the report (when ``report``) of one output; the paths written.
    ``metric`` and ``schedulers`` (their order) are the experiment spec's (ignored for other outputs).
    ``notify`` gets one-line notices (an experiment folder's stale rows left out)."""
    kind = kind_of(output)
    path = Path(output)
    folder = path.parent / f"{path.stem}_plots" if kind == "learn" else path
    # the folders the files go to are real folders, not links planted there: checked before anything
    # is drawn (simsched.core.atomic.subfolder)
    if kind == "learn":
        atomic.subfolder(folder, create=plots or report)
    if plots:
        atomic.subfolder(folder / "plots", create=False)
    try:
        if kind == "experiment":
            return _experiment(path, folder, fmt, plots, report, metric, schedulers, notify)
        return _DRAWERS[kind](path, folder, fmt, plots, report)
    except FileNotFoundError as exc:
        raise InputError(f"python -m simsched plot: {path}: missing {Path(exc.filename).name} "
                         f"(written by {kind}; docs/outputs.md)") from None


def _finish(figures: dict[str, Any], folder: Path, fmt: str, plots: bool, report: bool,
            report_args: dict[str, Any]) -> list[Path]:
    paths: list[Path] = []
    if plots:
        paths += save_figures(figures, folder / "plots", fmt, close=not report)
    if report:
        paths.append(write_report(folder / "report.html", figures=figures, **report_args))
    return paths


# -- run -----------------------------------------------------------------------------------
def _run(path: Path, folder: Path, fmt: str, plots: bool, report: bool) -> list[Path]:
    tables = load_run(path)
    summary = tables["summary"]
    figures = run_figures(tables)
    scheduler = summary.get("scheduler", {})
    meta = [("scenario", summary.get("scenario", "")), ("scenario file", summary.get("scenario_file", "")),
            ("scenario sha256", summary.get("scenario_sha256", "")), ("seed", summary.get("seed", "")),
            ("scheduler", ", ".join(f"{k}={v}" for k, v in scheduler.items())),
            ("jobs", summary.get("jobs", "")), ("simulated until (s)", f"{summary.get('simulated_until', 0):,.0f}"),
            ("decisions", summary.get("decisions", "")), ("wall time (s)", f"{summary.get('wall_time_s', 0):.2f}"),
            ("partial", summary.get("partial", False))]
    texts = []
    scenario_file = Path(str(summary.get("scenario_file", "")))
    if scenario_file.is_file():
        texts.append((f"Scenario ({scenario_file.name})", scenario_file.read_text(encoding="utf-8")))
    return _finish(figures, folder, fmt, plots, report, dict(
        title=f"simsched run: {summary.get('scenario', path.name)}", meta=meta,
        tables=[run_metric_table(summary)] + tenant_tables(summary), captions=RUN_CAPTIONS, texts=texts))


RUN_CAPTIONS = {
    "cdf": "CDFs of job completion time and queue time (completed jobs; log x).",
    "queue": "Jobs queued and running after every change (timeline.csv, fleet rows).",
    "utilization": "Busy GPUs / GPUs per cluster and GPU type (timeline.csv), fleet dashed.",
    "gantt": "One lane per node (lane height = its GPUs); one bar per worker and run spell, coloured by job.",
    "wait_by_weight": "Mean queue time per weight class with a 95% CI of the mean (the paper's Fig. 5).",
    "tenant_wait": "Queue time per tenant over its counted jobs (unfinished ones censored at the end of the run): "
                   "box = quartiles, whiskers 1.5 IQR, dots = outliers, triangle = mean; symlog axis.",
    "tenant_usage": "GPUs each tenant held (spells.csv), averaged over equal bins of the run, against its quota "
                    "summed over the clusters that list it (dashed; dated quotas day by day).",
}


def tenant_tables(summary: dict) -> list[str]:
    """The fairness figures and the per-tenant block of summary.json as HTML tables (none without tenants)."""
    tenants = summary.get("tenants")
    if not tenants:
        return []
    overall = pd.DataFrame([{"metric": label, "value": "n/a" if summary.get(key) is None else fmt.format(summary[key])}
                            for key, label, _, fmt in FAIRNESS_METRICS])
    columns = {"jobs": "jobs", "mean_wait": "mean wait (s)", "p95_wait": "p95 wait (s)", "mean_jct": "mean JCT (s)",
               "p95_jct": "p95 JCT (s)", "mean_slowdown": "mean slowdown", "ftf_rho_max": "max rho",
               "gpu_hours": "GPU-h used", "quota_gpu_hours": "quota GPU-h", "usage_over_quota": "used / quota"}
    frame = pd.DataFrame([{"tenant": name, **{label: block.get(key) for key, label in columns.items()}}
                          for name, block in tenants.items()])
    return [table_html(overall, "Fairness between tenants (docs/engine.md, Tenant fairness)"),
            table_html(frame, "Per tenant (summary.json tenants)")]


def run_metric_table(summary: dict) -> str:
    def cell(fmt: str, value: Any) -> str:  # None/NaN: not applicable (e.g. no job has a deadline)
        return "n/a" if value is None or value != value else fmt.format(value)

    clusters = summary.get("per_cluster", {})
    rows = []
    for key, label, _, fmt in SUMMARY_METRICS:
        if key not in summary:  # written by an older simsched
            continue
        row = {"metric": label, "all": cell(fmt, summary[key])}
        if len(clusters) > 1:
            for name, block in clusters.items():
                row[name] = "" if key == "makespan" else cell(fmt, block.get(key))
        rows.append(row)
    if summary.get("starvation"):  # who waits (issue 21), over the whole run
        flat = flat_metrics(summary)
        for key, label, _, fmt in STARVATION_METRICS:
            rows.append({"metric": label, "all": cell(fmt, flat[key]),
                         **({name: "" for name in clusters} if len(clusters) > 1 else {})})
    return table_html(pd.DataFrame(rows), "Summary metrics (summary.json)")


# -- compare -------------------------------------------------------------------------------
def _compare(path: Path, folder: Path, fmt: str, plots: bool, report: bool) -> list[Path]:
    data = load_compare(path)
    runs = data["runs"]
    meta = [("instances", ", ".join(dict.fromkeys(runs["instance"].astype(str)))),
            ("seeds", ", ".join(str(s) for s in sorted(runs["seed"].unique()))),
            ("schedulers", ", ".join(dict.fromkeys(runs["scheduler"].astype(str)))),
            ("runs", len(runs))]
    tables = []
    shown = path / "compare.md"
    if shown.is_file():  # what the terminal showed: warnings, failed runs, the tables with their † marks, ranks
        tables.append(markdown_html(shown.read_text(encoding="utf-8")))
    elif data["table"] is not None:  # an older folder without compare.md: the metrics alone
        table = data["table"]
        pivot = table.assign(cell=["n/a" if m != m else f"{m:,.4g} ± {s:,.3g}"
                                   for m, s in zip(table["mean"], table["std"])])
        pivot = pivot.pivot(index="label", columns="scheduler", values="cell")
        pivot = pivot.loc[list(dict.fromkeys(table["label"])), list(dict.fromkeys(table["scheduler"]))]
        pivot.index.name = "metric (mean ± std)"
        tables.append(table_html(pivot, "Metrics per scheduler over every case (compare.csv)", index=True))
    return _finish(compare_figures(data), folder, fmt, plots, report, dict(
        title=f"simsched compare: {path.name}", meta=meta, tables=tables, captions={}))


# -- experiment ----------------------------------------------------------------------------
def _experiment(path: Path, folder: Path, fmt: str, plots: bool, report: bool,
                metric: str | None = None, schedulers: list[str] | None = None,
                notify: Callable[[str], None] | None = None) -> list[Path]:
    data = load_experiment(path, metric, schedulers)
    results = data["results"]
    meta = [("runs", len(results))]
    if data["stale"]:
        meta.append(("rows left out", f"{data['stale']} (runs not in plan.csv: an earlier grid)"))
        if notify is not None:
            notify(stale_notice(path, data["stale"]))
    for column in ("scenario", "scheduler", "seed"):
        if column in results:
            meta.append((column + "s", ", ".join(str(v) for v in dict.fromkeys(results[column]))))
    metric = data["metric"]
    summary = results.groupby("scheduler", sort=False)[metric].agg(["mean", "std", "count"])
    summary.index.name = "scheduler"
    tables = [table_html(summary, f"{metric} per scheduler over every run of the plan (results.csv)", index=True)]
    if (path / "summary.csv").is_file():  # the experiment's own statistics: CIs, ranks per sweep point
        tables.append(table_html(pd.read_csv(path / "summary.csv"),
                                 "Per sweep point and scheduler: mean, 95% bootstrap CI, mean rank (summary.csv)"))
    return _finish(experiment_figures(data), folder, fmt, plots, report, dict(
        title=f"simsched experiment: {path.name}", meta=meta, tables=tables, captions={}))


# -- learn ---------------------------------------------------------------------------------
def _learn(path: Path, folder: Path, fmt: str, plots: bool, report: bool) -> list[Path]:
    data = load_learned(path)
    meta_in = data["meta"]
    meta = [("learned function", data["infix"]), ("scenario", meta_in.get("scenario", "")),
            ("scenario file", meta_in.get("scenario_file", "")),
            ("training seeds", ", ".join(str(s) for s in meta_in.get("training_seeds", []))),
            ("validation seeds", ", ".join(str(s) for s in meta_in.get("validation", {}).get("seeds", []))),
            ("wall time (s)", f"{meta_in.get('wall_time_s', 0):.1f}")]
    tables = []
    history = data["history"]
    if len(history):
        tables.append(table_html(history, "Fitness per generation (sum of objective / SRSF objective)"))
    return _finish(learn_figures(data), folder, fmt, plots, report, dict(
        title=f"simsched learn: {path.name}", meta=meta, tables=tables, captions={}))


_DRAWERS = {"run": _run, "compare": _compare, "experiment": _experiment, "learn": _learn}

