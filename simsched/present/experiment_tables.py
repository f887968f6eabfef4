"""The report layer of an experiment: CSV files, a Markdown report and rich tables.

Only :func:`rich_tables` imports rich. Every table is grouped by grid point
(the swept keys' values) and lists the schedulers in the spec's order.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from simsched.core import atomic
from simsched.core.errors import visible
from simsched.core.metrics import FAIRNESS_METRICS, STARVATION_METRICS, SUMMARY_METRICS
from simsched.runs.experiment.spec import METRICS, ExperimentSpec
from simsched.runs.experiment.stats import ExperimentStats
from simsched.runs.ranking import mark, note, with_n

#: other metrics shown as means beside the headline metric
SIDE_METRICS = ("avg_jct", "avg_wait", "max_wait", "cq_avg", "cq_max", "utilization", "preemptions")
#: shown beside them when the runs have them (not n/a everywhere): issue 21's tail, issue 20's fairness
LATER_SIDE_METRICS = ("p99_wait", "avg_wait_over_8gpu", "jain_slowdown", "ftf_rho_max")
#: shown when every run of the point has it (a store filled in part by tools/fill_added_later.py does not)
COUNT_SIDE_METRICS = ("moves_per_job",)
LABELS = {key: label for key, label, _, _ in SUMMARY_METRICS + STARVATION_METRICS + FAIRNESS_METRICS}
LABELS["moves_per_job"] = "Moves per job"


def write_tables(stats: ExperimentStats, spec: ExperimentSpec, folder: str | Path, title: str) -> list[Path]:
    """summary.csv, instance_ranks.csv, tests.csv (+ by_priority.csv, decision_time.csv, streams.csv),
    report.md."""
    out = Path(folder)
    paths = []
    frames = {"summary.csv": stats.summary, "instance_ranks.csv": stats.instance_ranks, "tests.csv": stats.tests,
              "by_priority.csv": stats.by_priority, "decision_time.csv": stats.decision_time,
              "streams.csv": stats.streams}
    for name, frame in frames.items():
        if frame is not None:
            atomic.write_with(out / name, lambda tmp, frame=frame: frame.to_csv(tmp, index=False))
            paths.append(out / name)
    atomic.write_text(out / "report.md", to_markdown(stats, spec, title))
    paths.append(out / "report.md")
    return paths


def _num(value: float, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}" if abs(value) >= 1 or value == 0 else f"{value:.3g}"


def _p(value: float) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "–"
    return f"{value:.2g}" if value >= 1e-3 else f"{value:.1e}"


def _point_label(spec: ExperimentSpec, key: tuple) -> str:
    return ", ".join(f"{k} = {v}" for k, v in zip(spec.sweep_keys, key))


def _by_point(frame: pd.DataFrame, spec: ExperimentSpec) -> Iterator[tuple[str, pd.DataFrame]]:
    keys = list(spec.sweep_keys)
    if not keys:
        yield "", frame
        return
    for key, group in frame.groupby(keys, sort=False, dropna=False):
        yield _point_label(spec, key if isinstance(key, tuple) else (key,)), group


def summary_rows(stats: ExperimentStats, spec: ExperimentSpec, point: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the main table at one grid point (text cells)."""
    frame = dict(_by_point(stats.summary, spec))[point]
    cases = int(frame["n"].max())
    full = frame[frame["n"] == cases]  # no best from fewer cases (simsched.runs.ranking)
    finished = full[full["unfinished_cases"] == 0] if "unfinished_cases" in full.columns else full
    pool = (finished["mean"] if len(finished) else full["mean"]).dropna()  # best among runs that finished every job
    best_mean = (pool.max() if spec.higher_is_better else pool.min()) if len(pool) else None
    best_place = full["place"].min() if "place" in full.columns else None
    header = ["scheduler", "cases", f"mean {spec.metric}", "95% CI", "mean rank", "95% CI", "first on"]
    rows = []
    for r in frame.itertuples():
        left = getattr(r, "unfinished_cases", 0)
        best_rank = r.n == cases and (getattr(r, "place", None) == best_place if best_place is not None
                                      else r.mean_rank == full["mean_rank"].min())
        rows.append([mark(r.scheduler, bool(left)), str(r.n),
                     ("*" if r.n == cases and r.mean == best_mean else "") + with_n(_num(r.mean), r.n, cases),
                     f"[{_num(r.ci_low)}, {_num(r.ci_high)}]", ("*" if best_rank else "")
                     + with_n(_num(r.mean_rank, 2), r.n, cases), f"[{_num(r.rank_ci_low, 2)}, {_num(r.rank_ci_high, 2)}]",
                     f"{r.first} of {r.instances}"])
    return header, rows


def side_rows(stats: ExperimentStats, spec: ExperimentSpec, point: str) -> tuple[list[str], list[list[str]]]:
    frame = dict(_by_point(stats.cases, spec))[point]
    present = [m for m in SIDE_METRICS if m in frame.columns and m != spec.metric]
    present += [m for m in LATER_SIDE_METRICS if m in frame.columns and m != spec.metric and frame[m].notna().any()]
    present += [m for m in COUNT_SIDE_METRICS if m in frame.columns and frame[m].notna().all()]
    means = frame.groupby("scheduler", sort=False)[present].mean()
    header = ["scheduler"] + [LABELS.get(m, m) for m in present]
    rows = [[name] + [_num(float(means.loc[name, m]), 3 if m in ("utilization", "jain_slowdown", "ftf_rho_max") else 2 if m in COUNT_SIDE_METRICS else 1) for m in present]
            for name in spec.scheduler_names if name in means.index]
    return header, rows


def test_rows(stats: ExperimentStats, spec: ExperimentSpec, point: str) -> tuple[list[str], list[list[str]]]:
    header = ["baseline", "cases", f"{spec.headline} better", "ties", "worse", "mean difference", "Wilcoxon p",
              "Holm p"]
    if stats.tests.empty:
        return header, []
    frame = dict(_by_point(stats.tests, spec)).get(point)
    if frame is None:
        return header, []
    rows = [[r.baseline, str(r.n), str(r.wins), str(r.ties), str(r.losses), _num(r.mean_difference),
             _p(r.p_value) + _test_note(r), _p(getattr(r, "p_holm", float("nan")))] for r in frame.itertuples()]
    return header, rows


def _test_note(row) -> str:
    """Which signed-rank test gave the p-value, on how many untied pairs ("exact, 21" or "approx., 60")."""
    method = getattr(row, "test", "")
    if not isinstance(method, str) or not method:
        return ""
    untied = getattr(row, "n_untied", None)
    shown = "exact" if method == "exact" else "approx."
    return f" ({shown}, {untied} untied)" if untied is not None else f" ({shown})"


def _markdown_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def bold(cell: str) -> str:
        return f"**{cell[1:]}**" if cell.startswith("*") else cell

    lines = ["| " + " | ".join(map(visible, header)) + " |", "|---|" + "---:|" * (len(header) - 1)]
    lines += ["| " + " | ".join(bold(visible(c)) for c in row) + " |" for row in rows]  # a label's U+202E: escaped
    return lines


def to_markdown(stats: ExperimentStats, spec: ExperimentSpec, title: str) -> str:
    better = "higher" if METRICS[spec.metric] else "lower"
    lines = [f"# {title}", ""]
    if spec.description:
        lines += [spec.description, ""]
    lines += [f"Metric: `{spec.metric}` ({better} is better); ranks 1 = best; 95% CIs by bootstrap over cases "
              "(instance x seed); paired tests of `" + spec.headline + "` against each other scheduler.", ""]
    for point, _ in _by_point(stats.summary, spec):
        if point:
            lines += [f"## {point}", ""]
        lines += _markdown_table(*summary_rows(stats, spec, point)) + [""]
        frame = dict(_by_point(stats.summary, spec))[point]
        if "unfinished_cases" in frame.columns and (frame["unfinished_cases"] > 0).any():
            counts = {r.scheduler: int(r.unfinished_cases) for r in frame.itertuples() if r.unfinished_cases}
            lines += [note(counts, {r.scheduler: int(r.n) for r in frame.itertuples()}) + ".", ""]
        header, rows = side_rows(stats, spec, point)
        if len(header) > 1:
            lines += ["Means of other metrics:", ""] + _markdown_table(header, rows) + [""]
        header, rows = test_rows(stats, spec, point)
        if rows:
            lines += [f"`{spec.headline}` against each baseline (paired over cases):", ""]
            lines += _markdown_table(header, rows) + [""]
    if stats.streams is not None:
        lines += ["## Spread over EA streams", "",
                  "Each stream of a scheduler run over several EA streams, ranked alone against the other "
                  "schedulers' stream averages (`streams.csv` per case); relative spread = standard deviation "
                  "over the streams / |mean| (cases with mean 0 left out).", ""]
        lines += _markdown_table(*stream_rows(stats, spec)) + [""]
    if stats.by_priority is not None:
        lines += ["## Queue time by priority class (completed jobs, seconds)", ""]
        lines += _markdown_table(*priority_rows(stats, spec)) + [""]
    if stats.decision_time is not None:
        lines += ["## Decision time by queued jobs (wall seconds per decision)", ""]
        lines += _markdown_table(*decision_rows(stats)) + [""]
    return "\n".join(lines)


def stream_rows(stats: ExperimentStats, spec: ExperimentSpec) -> tuple[list[str], list[list[str]]]:
    """Per (point, scheduler): how far single EA streams stray from their average (summary of streams.csv)."""
    keys = list(spec.sweep_keys)
    header = keys + ["scheduler", "cases", "streams per case", "median relative spread", "largest", "rank depends on the stream",
                     "every stream first", "some stream first"]
    rows = []
    for key, frame in stats.streams.groupby(keys + ["scheduler"], sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        nonzero = frame[frame["mean"] != 0]
        relative = (nonzero["std"] / nonzero["mean"].abs()).dropna()
        per_case = frame["streams"].unique()
        rows.append([str(k) for k in key] + [
            str(len(frame)), "–".join(str(int(n)) for n in sorted({int(per_case.min()), int(per_case.max())})),
            _num(float(relative.median()), 2) if len(relative) else "–",
            _num(float(relative.max()), 2) if len(relative) else "–",
            f"{int((frame['best_rank'] != frame['worst_rank']).sum())} of {len(frame)}",
            f"{int((frame['first_streams'] == frame['streams']).sum())} of {len(frame)}",
            f"{int((frame['first_streams'] > 0).sum())} of {len(frame)}"])
    return header, rows


def priority_rows(stats: ExperimentStats, spec: ExperimentSpec) -> tuple[list[str], list[list[str]]]:
    frame = stats.by_priority
    keys = list(spec.sweep_keys)
    header = keys + ["scheduler", "priority", "jobs", "mean", "median", "p90", "max"]
    out = []
    for r in frame.to_dict("records"):
        out.append([str(r[k]) for k in keys] + [r["scheduler"], str(int(r["weight"])), str(r["jobs"]),
                   _num(r["mean"]), _num(r["median"]), _num(r["p90"]), _num(r["max"])])
    return header, out


def decision_rows(stats: ExperimentStats) -> tuple[list[str], list[list[str]]]:
    header = ["scheduler", "queued jobs", "decisions", "median s", "p90 s", "max s"]
    rows = [[r.scheduler, r.queued_bin, str(r.decisions), f"{r.median:.4f}", f"{r.p90:.4f}", f"{r.max:.4f}"]
            for r in stats.decision_time.itertuples()]
    return header, rows


def rich_tables(stats: ExperimentStats, spec: ExperimentSpec, title: str) -> list:
    """The same tables as rich Tables for the console (best values in bold green)."""
    from rich.table import Table  # rich: only the console's tables need it

    def table(name: str, header: list[str], rows: list[list[str]]) -> Table:
        t = Table(title=name)
        for i, column in enumerate(header):
            t.add_column(column, justify="left" if i == 0 else "right")
        for row in rows:
            row = [visible(c) for c in row]  # a label's bidi or invisible character, escaped as in messages
            t.add_row(*(f"[bold green]{c[1:]}[/]" if c.startswith("*") else c for c in row))
        return t

    out = []
    for point, _ in _by_point(stats.summary, spec):
        label = f"{title}" + (f" — {point}" if point else "")
        main = table(label, *summary_rows(stats, spec, point))
        frame = dict(_by_point(stats.summary, spec))[point]
        if "unfinished_cases" in frame.columns and (frame["unfinished_cases"] > 0).any():
            main.caption = note({r.scheduler: int(r.unfinished_cases) for r in frame.itertuples() if r.unfinished_cases},
                                {r.scheduler: int(r.n) for r in frame.itertuples()})
        out.append(main)
        header, rows = side_rows(stats, spec, point)
        if len(header) > 1:
            out.append(table("means of other metrics", header, rows))
        header, rows = test_rows(stats, spec, point)
        if rows:
            out.append(table(f"{spec.headline} against each baseline (paired)", header, rows))
    if stats.by_priority is not None:
        out.append(table("queue time by priority class (s)", *priority_rows(stats, spec)))
    if stats.decision_time is not None:
        out.append(table("decision time by queued jobs", *decision_rows(stats)))
    return out
