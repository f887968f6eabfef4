"""compare's tables as text: compare.md (Markdown) and the console's rich tables.

The comparison itself (:func:`~simsched.runs.compare.run_compare` -> :class:`~simsched.runs.compare.CompareResult`)
is data in the runs layer; this is its report layer. :func:`to_markdown` is registered as the ``compare``
kind's ``markdown`` view (:mod:`simsched.runs.display`), so ``CompareResult.write`` writes compare.md
without importing this module. Only :func:`rich_tables` imports rich.
"""

from __future__ import annotations

from simsched.core.metrics import FAIRNESS_METRICS, STARVATION_METRICS, SUMMARY_METRICS, TENANT_WAIT
from simsched.runs import ranking
from simsched.runs.compare import (
    METRIC_KEYS,
    METRICS,
    CompareResult,
    CompareSpec,
    unfinished_runs,
    warnings_of,
)

_FORMATS = {key: fmt for key, _, _, fmt in SUMMARY_METRICS + STARVATION_METRICS + FAIRNESS_METRICS}
_COUNTS = ("completed", "unfinished", "infeasible", "unscheduled", "preemptions")


def _fmt(key: str, value: float) -> str:
    """A mean or std with the digits the run table prints (counts as integers when whole)."""
    if value != value:  # NaN: the metric is n/a (e.g. a mean over zero jobs, no deadlines)
        return "n/a"
    if key in _COUNTS:
        return f"{value:,.1f}" if value != int(value) else f"{int(value):,d}"
    return _FORMATS.get(key, "{:,.2f}").format(value)


def _cell(row) -> str:
    return f"{_fmt(row.metric, row.mean)} ± {_fmt(row.metric, row.std)}"


def seed_note(spec: CompareSpec) -> str:
    """What the seeds vary when an instance reads a trace: only synthesised fields, not the jobs."""
    traces = spec.trace_synthesis  # (deadlines, weights) per trace instance, as first read
    if not traces or spec.seeds == 1:
        return ""
    fields = [name for name, on in (("deadlines", any(deadline for deadline, _ in traces)),
                                    ("weights", any(weight for _, weight in traces))) if on]
    varied = " and ".join(f"the synthesised {f}" for f in fields) if fields else "nothing in the jobs"
    return (f"on a trace the jobs are the same for every seed: seeds change only {varied} "
            "(and the policies' own random streams)")


def _title(result: CompareResult) -> str:
    spec = result.spec
    cases = result.runs[["instance", "seed"]].drop_duplicates().shape[0]
    instances = len(spec.instances)
    note = seed_note(spec)
    what = "one run per scheduler" if cases == 1 else f"mean ± std over {cases} case(s)"
    return (f"{spec.name}: {what} "
            f"({instances} instance(s) x {spec.seeds} seed(s))" + (f"; {note}" if note else ""))


def _one_case(result: CompareResult) -> bool:
    """One case per scheduler (one instance, one seed): no spread to show, so no ± column."""
    return result.runs[["instance", "seed"]].drop_duplicates().shape[0] == 1


def _metric_cells(result: CompareResult, key: str, best_style: str) -> list[str]:
    """"mean ± std" of one metric per scheduler, in order (the mean alone for one case), with its
    ``n`` when over fewer cases than the others; "failed" for a scheduler that completed no case;
    the best one wrapped in ``best_style``."""
    rows = result.table[result.table["metric"] == key].set_index("scheduler")
    spread = not _one_case(result)
    most = int(rows["n"].max()) if len(rows) else 0
    cells = []
    for name in result.spec.schedulers:
        row = rows.loc[name]
        if _completed(result, name) == 0:
            text = "failed"
        elif row["mean"] != row["mean"]:
            text = "n/a"
        else:
            text = _fmt(key, row["mean"]) + (f" ± {_fmt(key, row['std'])}" if spread and row["n"] > 1 else "")
            text = ranking.with_n(text, int(row["n"]), most)
        cells.append(best_style.format(text) if row["best"] else text)
    return cells


def _completed(result: CompareResult, name: str) -> int:
    """How many cases scheduler ``name`` completed (every case for a result without failures)."""
    if len(result.standing):
        return int(result.standing.loc[name, "completed"])
    return int((result.runs["scheduler"] == name).sum())


def rank_rows(result: CompareResult) -> tuple[list[str], list[tuple[str, list[str], bool]]]:
    """The rank table as text: the header (scheduler, each case, mean rank, place) and per scheduler
    (in order) its short label, its cells and whether its mean rank is the best. A failed run's case shows "failed";
    a mean rank over fewer cases than the others shows its ``n``; a scheduler that failed every
    case shows "failed (k of k)" (simsched.runs.ranking)."""
    cases = [c for c in result.ranks.columns if c != "mean_rank"]
    standing = result.standing
    total = len(cases)
    full = standing[standing["completed"] == total] if len(standing) else standing
    best_place = full["place"].min() if len(full) else None
    rows = []
    shown = result.labels
    for name in result.spec.schedulers:
        r = result.ranks.loc[name]
        s = standing.loc[name]
        done = int(s["completed"])
        mean = (ranking.failed_label(total - done, total) if done == 0
                else ranking.with_n(f"{r['mean_rank']:.2f}", done, total))
        cells = [f"{r[c]:g}" if r[c] == r[c] else "failed" for c in cases] + [mean, f"{s['place']:g}"]
        rows.append((shown[name], cells, done == total and s["place"] == best_place))
    return ["Scheduler", *cases, "Mean rank", "Place"], rows


def _labels(result: CompareResult) -> list[str]:
    """Each scheduler's short label (``alice:Policy``), marked † when it left jobs unfinished."""
    marked, shown = unfinished_runs(result), result.labels
    return [ranking.mark(shown[name], name in marked) for name in result.spec.schedulers]


def _footnote(result: CompareResult) -> str:
    marked = unfinished_runs(result)
    if not marked:
        return ""
    totals = result.runs.groupby("scheduler", sort=False).size().to_dict()
    shown = result.labels
    return ranking.note({shown[k]: n for k, n in marked.items()}, {shown[k]: int(v) for k, v in totals.items()})


def to_markdown(result: CompareResult) -> str:
    """Both tables as Markdown; the best mean of each metric in bold; schedulers that left jobs
    unfinished marked † with a footnote."""
    order = list(result.spec.schedulers)
    marked, shown = unfinished_runs(result), result.labels
    labels = [ranking.mark(f"`{shown[name]}`", name in marked) for name in order]
    note = seed_note(result.spec)
    footnote = _footnote(result)
    lines = [f"## {_title(result)}", ""] + ([f"Note: {note}.", ""] if note else [])
    for warning in warnings_of(result):  # what the runs warned about, as printed before the tables
        lines += [f"Warning: {warning}", ""]
    for failure in result.failed:  # --keep-going: placed after every scheduler that completed all cases
        lines += [f"Failed: `{shown[failure['scheduler']]}` on {failure['instance']} (seed {failure['seed']}): "
                  f"{failure['error']}", ""]
    lines += ["| Metric | " + " | ".join(labels) + " |",
              "|---|" + "---:|" * len(order)]
    for key, label, _ in METRICS:
        cells = _metric_cells(result, key, "**{}**")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if footnote:
        lines += ["", footnote + "."]
    extra = _extra_rows(result)
    if extra:
        lines += ["", f"### {_extra_title(extra)}", "", "| Metric | " + " | ".join(labels) + " |",
                  "|---|" + "---:|" * len(order)]
        for key, label in extra:
            lines.append(f"| {label} | " + " | ".join(_metric_cells(result, key, "**{}**")) + " |")
    header, rows = rank_rows(result)
    lines += ["", f"### Rank by {result.spec.rank_by} per case (1 = best; ties share the mean rank)", "",
              "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for shown, (_, cells, best) in zip(labels, rows):
        cells = cells[:-2] + [f"**{cells[-2]}**" if best else cells[-2], cells[-1]]
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    if result.failed:
        lines += ["", f"Note: {_failed_note(result)}."]
    return "\n".join(lines) + "\n"


def _extra_title(rows: list[tuple[str, str]]) -> str:
    fair = {key for key, *_ in FAIRNESS_METRICS}
    tenants = any(key in fair or key.startswith(TENANT_WAIT) for key, _ in rows)
    return "Who waits, and fairness between tenants" if tenants else "Who waits"


def _extra_rows(result: CompareResult) -> list[tuple[str, str]]:
    """(key, label) of the second table's rows, in table order."""
    labels = dict(zip(result.table["metric"], result.table["label"]))
    return [(key, labels[key]) for key in dict.fromkeys(result.table["metric"]) if key not in METRIC_KEYS]


def rich_tables(result: CompareResult) -> list:
    """The metric table (best per row highlighted) and the rank table, as rich Tables; schedulers
    that left jobs unfinished are marked † (caption)."""
    from rich.table import Table  # rich: only the console's tables need it

    labels = _labels(result)
    footnote = _footnote(result)
    metrics = Table(title=_title(result), caption=footnote or None)
    metrics.add_column("Metric")
    for shown in labels:
        metrics.add_column(shown, justify="right")
    for key, label, _ in METRICS:
        metrics.add_row(label, *_metric_cells(result, key, "[bold green]{}[/]"))
    tables = [metrics]
    extra = _extra_rows(result)
    if extra:
        waits = Table(title=_extra_title(extra))
        waits.add_column("Metric")
        for shown in labels:
            waits.add_column(shown, justify="right")
        for key, label in extra:
            waits.add_row(label, *_metric_cells(result, key, "[bold green]{}[/]"))
        tables.append(waits)
    captions = (["† ranked after every run that finished all its feasible jobs"] if footnote else []) + \
        ([_failed_note(result)] if result.failed else [])
    ranks = Table(title=f"Rank by {result.spec.rank_by} per case (1 = best)", caption="; ".join(captions) or None)
    header, rows = rank_rows(result)
    ranks.add_column(header[0])
    for column in header[1:]:
        ranks.add_column(column, justify="right")
    for shown, (_, cells, best) in zip(labels, rows):
        cells = cells[:-2] + [f"[bold green]{cells[-2]}[/]" if best else cells[-2], cells[-1]]
        ranks.add_row(shown, *cells)
    return [*tables, ranks]


def _failed_note(result: CompareResult) -> str:
    """Who failed on how many cases, and what that means for their place."""
    total = len([c for c in result.ranks.columns if c != "mean_rank"])
    shown = result.labels
    return ranking.failed_note({shown[k]: int(n) for k, n in result.standing["failed"].items() if n > 0}, total)
