"""Rich rendering: live progress and the final metric table (only the CLI imports this)."""

from __future__ import annotations

import errno

from rich import console as rich_console
from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from simsched.core.engine import Progress as Snapshot
from simsched.core.metrics import (
    FAIRNESS_METRICS,
    MEAN_METRICS,
    STARVATION_METRICS,
    SUMMARY_METRICS,
    flat_metrics,
)


class Console(rich_console.Console):
    """rich's Console, for every table and progress line the command line prints. A reader that goes
    away (``simsched compare ... | head -1``) raises :class:`BrokenPipeError`, which the command line
    ends quietly with exit 141 (simsched.cli.main.closed_pipe), as it does for ``--json``; rich's own
    handler would end the program with exit status 1, which reads as a failure (docs/outputs.md)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # nothing more is written to a pipe nobody reads
        raise BrokenPipeError(errno.EPIPE, "the reader of this output has gone")


def wide_console(tables: list | tuple = (), *, stderr: bool = False, minimum: int = 100) -> Console:
    """A console for stdout (or stderr): the terminal's own when it is one; otherwise (a pipe or a
    file) one wide enough for every table in ``tables`` at its natural width, so that nothing is
    wrapped or cut to 80 columns."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    from rich.measure import Measurement

    probe = Console(width=100_000, stderr=stderr)
    for table in tables:  # a title wider than its table would wrap: widen the table instead
        title = getattr(table, "title", None)
        if isinstance(title, str):
            table.min_width = max(table.min_width or 0, len(title) + 2)
    widths = [Measurement.get(probe, probe.options, table).maximum for table in tables]
    return Console(width=max([minimum, *widths]), stderr=stderr)


class LiveProgress:
    """A rich progress bar fed by engine snapshots: simulated time %, jobs done, queue, events/s."""

    def __init__(self, console: Console, name: str) -> None:
        self._progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), TaskProgressColumn(),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=console, transient=False,
        )
        self._task = self._progress.add_task(name, total=100.0, detail="")

    def __enter__(self) -> LiveProgress:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self._progress.__exit__(*exc)

    def __call__(self, snap: Snapshot) -> None:
        horizon = snap.horizon or 1.0
        done = snap.finished == snap.total or (snap.queued == 0 and snap.running == 0 and snap.now >= horizon)
        percent = 100.0 if done else min(99.0, 100.0 * snap.now / horizon)
        rate = snap.events / snap.wall_s if snap.wall_s > 0 else 0.0
        detail = (f"t={snap.now:,.0f}s  done {snap.finished:,}/{snap.total:,}  queue {snap.queued:,}  "
                  f"running {snap.running:,}  {rate:,.0f} ev/s")
        if done and snap.finished < snap.total:  # the rest are infeasible or left unfinished: the table says which
            detail += f"  ({snap.total - snap.finished:,} not completed)"
        self._progress.update(self._task, completed=percent, detail=detail)


def metric_table(summary: dict, title: str = "Results") -> Table:
    """Overall metrics, one column per cluster when there are several. When a policy left jobs
    unfinished, every mean and max says so beside it: ``[+k unfinished]`` (they are in it,
    censored at the end of the run; docs/engine.md "Every job counts")."""
    table = Table(title=title)
    table.add_column("Metric")
    table.add_column("All", justify="right")
    clusters = summary.get("per_cluster", {})
    show_clusters = len(clusters) > 1
    if show_clusters:
        for name in clusters:
            table.add_column(name, justify="right")
    for key, label, _, fmt in SUMMARY_METRICS:
        if key not in summary:  # e.g. a summary.json written before the key existed
            continue
        cells = [_cell(key, fmt, summary)]
        if show_clusters:
            # the makespan is one for the whole run; the rest differ per cluster
            cells += ["" if key == "makespan" else _cell(key, fmt, block) for block in clusters.values()]
        table.add_row(label, *cells)
    starved = summary.get("starvation")
    if starved:  # who waits: the tail and the large jobs (docs/outputs.md, summary.json "starvation")
        pad = [""] * len(clusters) if show_clusters else []
        flat = flat_metrics(summary)  # the labels compare and experiment show (simsched.core.metrics)
        for key, label, _, fmt in STARVATION_METRICS:
            table.add_row(label, _format(fmt, flat.get(key)), *pad)
    if summary.get("tenants"):  # fairness between tenants (docs/engine.md "Tenant fairness")
        pad = [""] * len(clusters) if show_clusters else []
        for key, label, _, fmt in FAIRNESS_METRICS:
            table.add_row(label, _format(fmt, summary.get(key)), *pad)
    skipped = summary.get("skipped_rows") or {}
    captions = []
    if skipped.get("skipped"):  # bad input rows never pass silently (SPEC §5)
        reasons = ", ".join(f"{n} {reason}" for reason, n in
                            sorted(skipped.get("by_reason", {}).items(), key=lambda item: -item[1])[:3])
        table.add_row("Skipped input rows", f"{skipped['skipped']:,d}", *([""] * len(clusters) if show_clusters else []))
        captions.append(f"skipped rows: {reasons}" + (" ..." if len(skipped.get("by_reason", {})) > 3 else ""))
    if summary.get("unfinished"):
        captions.append(f"{summary['unfinished']:,d} job(s) left unfinished by the policy: their wait and JCT "
                        f"run to the end of the run (t={summary.get('simulated_until', float('nan')):,.0f} s) "
                        "and are in every mean")
    if summary.get("infeasible"):
        captions.append(f"{summary['infeasible']:,d} infeasible job(s) (no node can hold them) are left out of "
                        "every metric")
    if captions:
        table.caption = "; ".join(captions)
    return table


def _cell(key: str, fmt: str, block: dict) -> str:
    text = _format(fmt, block.get(key))
    if key in MEAN_METRICS and block.get("unfinished") and text != "n/a":
        text += f" [+{block['unfinished']:,d} unfinished]"
    return text


def _format(fmt: str, value) -> str:
    """A metric cell; None or NaN (e.g. the deadline miss rate with no deadlines) is n/a."""
    if value is None or value != value:
        return "n/a"
    return fmt.format(value)
