"""compare's tables as text: compare.md (Markdown) and the console's rich tables.

The comparison itself (:func:`~simsched.runs.compare.run_compare` -> :class:`~simsched.runs.compare.CompareResult`)
is data in the runs layer; this is its report layer. :func:`to_markdown` is registered as the ``compare``
kind's ``markdown`` view (:mod:`simsched.runs.display`), so ``CompareResult.write`` writes compare.md
without importing this module. Only :func:`rich_tables` imports rich.
"""

from __future__ import annotations

from simsched.config.scenario import load_scenario
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
    traces = [load_scenario(path).workload for path in spec.instances]
    traces = [w for w in traces if w.source != "synthetic"]
    if not traces or spec.seeds == 1:
        return ""
    fields = [name for name, on in (("deadlines", any(w.synthesize_deadline for w in traces)),
                                    ("weights", any(w.synthesize_weight for w in traces))) if on]
    varied = " and ".join(f"the synthesised {f}" for f in fields) if fields else "nothing in the jobs"
    return (f"on a trace the jobs are the same for every seed: seeds change only {varied} "
            "(and the policies' own random streams)")


def _title(result: CompareResult) -> str:
    spec = result.spec
    cases = result.runs[["instance", "seed"]].drop_duplicates().shape[0]
    instances = len(spec.instances)
    note = seed_note(spec)
    what = "one run per scheduler" if cases == 1 else f"mean ± std over {cases} case(s)"
    return (f"{load_scenario(spec.scenario).name}: {what} "
            f"({instances} instance(s) x {spec.seeds} seed(s))" + (f"; {note}" if note else ""))


def _one_case(result: CompareResult) -> bool:
    """One case per scheduler (one instance, one seed): no spread to show, so no ± column."""
    return result.runs[["instance", "seed"]].drop_duplicates().shape[0] == 1


def _metric_cells(result: CompareResult, key: str, best_style: str) -> list[str]:
    """"mean ± std" of one metric per scheduler, in order (the mean alone for one case); the
    best one wrapped in ``best_style``."""
    rows = result.table[result.table["metric"] == key].set_index("scheduler")
    spread = not _one_case(result)
    cells = []
    for name in result.spec.schedulers:
        row = rows.loc[name]
        if row["mean"] != row["mean"]:
            text = "n/a"
        else:
            text = _fmt(key, row["mean"]) + (f" ± {_fmt(key, row['std'])}" if spread else "")
        cells.append(best_style.format(text) if row["best"] else text)
    return cells


def _labels(result: CompareResult) -> list[str]:
    marked = unfinished_runs(result)
    return [ranking.mark(name, name in marked) for name in result.spec.schedulers]


def _footnote(result: CompareResult) -> str:
    marked = unfinished_runs(result)
    if not marked:
        return ""
    totals = result.runs.groupby("scheduler", sort=False).size().to_dict()
    return ranking.note(marked, {k: int(v) for k, v in totals.items()})


def to_markdown(result: CompareResult) -> str:
    """Both tables as Markdown; the best mean of each metric in bold; schedulers that left jobs
    unfinished marked † with a footnote."""
    order = list(result.spec.schedulers)
    marked = unfinished_runs(result)
    labels = [ranking.mark(f"`{name}`", name in marked) for name in order]
    note = seed_note(result.spec)
    footnote = _footnote(result)
    lines = [f"## {_title(result)}", ""] + ([f"Note: {note}.", ""] if note else [])
    for warning in warnings_of(result):  # what the runs warned about, as printed before the tables
        lines += [f"Warning: {warning}", ""]
    for failure in result.failed:  # --keep-going: not ranked
        lines += [f"Failed (not ranked): `{failure['scheduler']}` on {failure['instance']} (seed {failure['seed']}): "
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
    lines += ["", f"### Rank by {result.spec.rank_by} per case (1 = best; ties share the mean rank)", ""]
    cases = [c for c in result.ranks.columns if c != "mean_rank"]
    lines.append("| Scheduler | " + " | ".join(cases) + " | Mean rank |")
    lines.append("|---|" + "---:|" * (len(cases) + 1))
    best = result.ranks["mean_rank"].min()
    for name, shown in zip(order, labels):
        r = result.ranks.loc[name]
        mean = f"{r['mean_rank']:.2f}"
        lines.append(f"| {shown} | " + " | ".join(f"{r[c]:g}" for c in cases) + " | "
                     + (f"**{mean}**" if r["mean_rank"] == best else mean) + " |")
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

    order = list(result.spec.schedulers)
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
    ranks = Table(title=f"Rank by {result.spec.rank_by} per case (1 = best)",
                  caption="† ranked after every run that finished all its feasible jobs" if footnote else None)
    ranks.add_column("Scheduler")
    cases = [c for c in result.ranks.columns if c != "mean_rank"]
    for case in cases:
        ranks.add_column(case, justify="right")
    ranks.add_column("Mean rank", justify="right")
    best = result.ranks["mean_rank"].min()
    for name, shown in zip(order, labels):
        r = result.ranks.loc[name]
        mean = f"{r['mean_rank']:.2f}"
        ranks.add_row(shown, *(f"{r[c]:g}" for c in cases),
                      f"[bold green]{mean}[/]" if r["mean_rank"] == best else mean)
    return [*tables, ranks]
