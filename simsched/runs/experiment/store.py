"""The result store of an experiment folder, written one finished run at a time.

- ``results.csv``: one row per finished run. Columns: ``run_id, scenario,
  instance, scheduler, seed, ea_stream, scenario_hash, wall_s``, one column per
  swept key (named like ``workload.load``), then every numeric summary metric.
- ``decisions.csv`` (``record = ["decisions"]``): ``run_id, scheduler,
  queued, seconds``, one row per scheduling decision (queued jobs at the
  decision, wall seconds the scheduler took).
- ``jobs/<run_id>.csv`` (``record = ["jobs"]``): the run's per-job table.
- ``plan.csv``: the runs of the latest invocation's grid (``run_id, scenario, instance,
  scheduler, seed, ea_stream`` and the swept keys), rewritten at every start. After a
  ``--resume`` with a changed spec, results.csv may hold rows of runs no longer planned
  ("stale" rows): they stay on disk, and every reader of the tables and figures
  (:func:`read_planned`) keeps only the run_ids listed here, in plan order.

Atomicity: a run's extra records are written first (``jobs/`` by rename,
decision rows appended), its ``results.csv`` row last, as one ``os.write``
of a whole line on a file opened with ``O_APPEND`` and then fsynced. So a
row in results.csv always means a finished run with all of its records;
an interrupted run leaves no row. On ``--resume`` the store drops a torn
last line and the decision rows of runs without a results row, then skips
every run whose ``run_id`` has a row.

What ``--resume`` trusts (docs/experiment.md, "The store on --resume"): a
results.csv must be a text CSV with this spec's columns; a torn last line is
dropped with a notice and its run redone; a damaged line before it is an
error naming the line. A row whose metrics are not numbers (or are NaN/inf;
an empty cell is a mean over no jobs), or whose run_id belongs to this plan
with another scheduler, instance, seed, EA stream or scenario hash, is moved
to ``results.rejected.csv`` with a notice and its run redone. A second row
for one run_id is dropped the same way: a run counts once. Only one
invocation writes a folder at a time (simsched.runs.experiment.lock).
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.core.atomic import named, open_own, replacing, subfolder
from simsched.core.errors import InputError
from simsched.core.metrics import FAIRNESS_METRICS, STARVATION_METRICS, TENANT_WAIT
from simsched.core.outputs import read_csv_checked

IDENTITY_COLUMNS = ("run_id", "scenario", "instance", "scheduler", "seed", "ea_stream", "scenario_hash", "wall_s")
DECISION_COLUMNS = ("run_id", "scheduler", "queued", "seconds")
RESULTS = "results.csv"
DECISIONS = "decisions.csv"
JOBS = "jobs"
PLAN = "plan.csv"
REJECTED = "results.rejected.csv"
MAX_RESULTS_BYTES = 2 * 1024**3  # a results.csv larger than this is not a store (1M runs are ~300 MB)


#: the most warning lines a resume prints about rows moved aside (the rest are counted on the last)
MAX_NOTICES = 3


def _line(values: Sequence[Any]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerow(["" if v is None else _text(v) for v in values])
    return buffer.getvalue().encode()


def _text(value: Any) -> str:
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else str(value)
    return str(value)


def _append(path: Path, data: bytes) -> None:
    """Append ``data`` with one write on an O_APPEND descriptor, then fsync."""
    fd = open_own(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)  # never through a planted link
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError as exc:  # ENOSPC and the like name no file: say which one
        raise named(exc, path) from exc
    finally:
        os.close(fd)


def _rewrite(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically (a fresh temporary name from :func:`~simsched.core.atomic.replacing`,
    never a fixed one that a planted link could send elsewhere, then a rename)."""
    with replacing(path) as tmp:
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:
            raise named(exc, path) from exc


#: metrics results.csv gained after stores were written (issues 20, 21, 34): a store whose header lacks
#: them keeps its columns (the new metrics are left out of its rows, so --resume goes on)
FLAT_ADDED_LATER = tuple(key for key, *_ in STARVATION_METRICS + FAIRNESS_METRICS)
#: what a planner did and how often jobs moved (issue 34): top-level numbers of every summary
COUNTS_ADDED_LATER = ("plans", "ea_runs", "moves", "moves_per_job")
ADDED_LATER_METRICS = FLAT_ADDED_LATER + COUNTS_ADDED_LATER


def _number_or_empty(cell: str) -> bool:
    """An empty cell (a mean over no jobs) or a finite number."""
    if cell == "":
        return True
    try:
        return math.isfinite(float(cell))
    except ValueError:
        return False


class ResultStore:
    """The files of one experiment folder."""

    def __init__(self, folder: str | Path, sweep_keys: Sequence[str], jobs_format: str = "csv") -> None:
        self.folder = Path(folder)
        self.sweep_keys = tuple(sweep_keys)
        self.jobs_format = jobs_format  # the per-job tables (record = ["jobs"]): jobs/RUN_ID.csv or .parquet
        self.columns: tuple[str, ...] | None = None  # fixed by the first row written or read
        self.finished: set[str] = set()  # run_ids with a row: a run counts once
        self.notices: list[str] = []  # what open() dropped or rejected, what add() refused

    @property
    def results_path(self) -> Path:
        return self.folder / RESULTS

    @property
    def decisions_path(self) -> Path:
        return self.folder / DECISIONS

    def jobs_path(self, run_id: str) -> Path:
        return self.folder / JOBS / f"{run_id}.{self.jobs_format}"

    def open(self, resume: bool, planned: dict[str, tuple[str, ...]] | None = None) -> set[str]:
        """Make the folder ready; returns the run_ids already finished (empty unless ``resume``).

        Without ``resume`` an existing results.csv is an error: nothing already computed is
        overwritten. ``planned`` maps each planned run_id to its identity (scenario, instance,
        scheduler, seed, ea_stream, scenario_hash, as text): a stored row of a planned run must
        match it. What was dropped or rejected is in :attr:`notices`.
        """
        self.notices = []
        self.folder.mkdir(parents=True, exist_ok=True)
        if not resume:
            if self.results_path.exists() or self.results_path.is_symlink():
                raise InputError(f"{self.results_path} exists: pass --resume to continue that experiment, "
                                 "or choose another --out folder")
            for stale in (self.decisions_path,):
                if stale.exists():
                    stale.unlink()
            self.finished = set()
            return set()
        self.finished = self._repair_results(planned or {})
        self._repair_decisions(self.finished)
        # appended to in place: a link or a hard link there is refused now, not after the first run (open_own)
        for path in (self.results_path, self.decisions_path):
            if os.path.lexists(path):
                os.close(open_own(path, os.O_WRONLY | os.O_APPEND))
        return set(self.finished)

    def _read_text(self) -> str:
        path = self.results_path
        if not path.is_file():
            raise InputError(f"{path}: not a regular file (a folder, device or pipe); move it away, "
                             "or choose another --out folder")
        size = path.stat().st_size
        if size > MAX_RESULTS_BYTES:
            raise InputError(f"{path}: {size:,} bytes, more than a result store holds "
                             f"({MAX_RESULTS_BYTES:,}); choose another --out folder")
        raw = path.read_bytes()
        nul = raw.find(b"\0")
        if nul >= 0:
            raise InputError(f"{path}: binary content (byte {nul} is NUL), not a results table; "
                             "move it away, or choose another --out folder")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{path}: not UTF-8 text (byte {exc.start}), not a results table; move it away, "
                             "or choose another --out folder") from None

    def _repair_results(self, planned: dict[str, tuple[str, ...]]) -> set[str]:
        if not self.results_path.exists() and not self.results_path.is_symlink():
            return set()
        text = self._read_text()
        if not text:
            return set()
        torn = not text.endswith("\n")
        reader = csv.reader(io.StringIO(text))
        try:
            numbered = [(reader.line_num, row) for row in reader]
        except csv.Error as exc:
            raise InputError(f"{self.results_path}:{reader.line_num}: not a CSV line ({exc}); "
                             "move the file away, or choose another --out folder") from None
        header = tuple(numbered[0][1])
        expected_start = IDENTITY_COLUMNS + self.sweep_keys
        if header[: len(expected_start)] != expected_start:
            raise InputError(f"{self.results_path}: its columns {', '.join(header[:len(expected_start)])} do "
                             f"not match this spec's ({', '.join(expected_start)}): another experiment wrote it; "
                             "choose another --out folder")
        self.columns = header
        body = numbered[1:]
        if torn and body:
            line, _ = body.pop()  # its write did not complete: the run is redone
            self.notices.append(f"warning: {self.results_path}:{line}: the last line was cut off (an interrupted "
                                "write); dropped, and its run is done again")
        good: list[list[str]] = []
        rejected: list[list[str]] = []
        moved: list[str] = []
        moved_lines: list[int] = []
        seen: set[str] = set()
        first_metric = len(expected_start)
        for line, row in body:
            if len(row) != len(header):
                raise InputError(f"{self.results_path}:{line}: {len(row)} fields where the header has "
                                 f"{len(header)}: the file is damaged; repair or remove that line, "
                                 "or choose another --out folder")
            run_id = row[0]
            why = None
            if not run_id:
                why = "no run_id"
            elif run_id in seen:
                why = "a second row for a run already recorded (a run counts once)"
            elif run_id in planned and tuple(row[1:7]) != planned[run_id]:
                why = "its scenario, instance, scheduler, seed, EA stream or hash differ from the plan's run"
            else:
                bad = [header[i] for i in range(first_metric, len(header)) if not _number_or_empty(row[i])]
                if not _number_or_empty(row[7]) or not row[7]:
                    bad.insert(0, "wall_s")
                if bad:
                    why = f"not a finite number in {', '.join(bad[:3])}" + (" ..." if len(bad) > 3 else "")
            if why:
                rejected.append(row)
                moved.append(f"warning: {self.results_path}:{line}: run {run_id or '?'}: {why}; moved to "
                             f"{REJECTED}" + (", and the run is done again" if run_id in planned else ""))
                moved_lines.append(line)
                continue
            seen.add(run_id)
            good.append(row)
        # at most MAX_NOTICES lines however many rows were moved: the first ones, then a count
        self.notices += moved if len(moved) <= MAX_NOTICES else moved[:MAX_NOTICES - 1] + [
            f"warning: {self.results_path}: {len(moved) - MAX_NOTICES + 1} more rows (lines "
            f"{moved_lines[MAX_NOTICES - 1]}-{moved_lines[-1]}) moved to {REJECTED} for such reasons; "
            "the planned ones are done again"]
        if rejected:
            _append(self.folder / REJECTED, b"".join(_line(r) for r in
                                                     ([list(header)] if not (self.folder / REJECTED).exists()
                                                      else []) + rejected))
        if torn or rejected:
            _rewrite(self.results_path, b"".join(_line(r) for r in [list(header), *good]))
        return {row[0] for row in good}

    def _repair_decisions(self, finished: set[str]) -> None:
        if not self.decisions_path.exists():
            return
        if not self.decisions_path.is_file():
            raise InputError(f"{self.decisions_path}: not a regular file; move it away, or choose another --out folder")
        try:
            text = self.decisions_path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{self.decisions_path}: not UTF-8 text (byte {exc.start}); move it away, "
                             "or choose another --out folder") from None
        rows = list(csv.reader(io.StringIO(text)))
        if not text.endswith("\n") and rows:
            rows = rows[:-1]
        kept = [row for row in rows[1:] if len(row) == len(DECISION_COLUMNS) and row[0] in finished]
        if len(kept) != len(rows) - 1 or not text.endswith("\n"):
            _rewrite(self.decisions_path, b"".join(_line(r) for r in [list(DECISION_COLUMNS), *kept]))

    def write_plan(self, rows: Sequence[Sequence[Any]]) -> None:
        """plan.csv: one row per planned run (run_id, scenario, instance, scheduler, seed, ea_stream,
        swept values), replaced atomically."""
        header = IDENTITY_COLUMNS[:6] + self.sweep_keys
        _rewrite(self.folder / PLAN, b"".join(_line(r) for r in [header, *rows]))

    def add(self, identity: dict[str, Any], point: dict[str, Any], metrics: dict[str, Any],
            decisions: Iterable[tuple[int, float]] | None = None, jobs: pd.DataFrame | None = None) -> bool:
        """Record one finished run: its extra records first, its results row last.

        A run already recorded is not recorded again (a run counts once): returns False and
        says so in :attr:`notices`."""
        run_id = identity["run_id"]
        if run_id in self.finished:
            self.notices.append(
                f"warning: {self.results_path}: run {run_id} was already recorded; the second result is not added")
            return False
        if jobs is not None:
            path = self.jobs_path(run_id)
            subfolder(path.parent)  # jobs/: a real folder, never a planted link out of the store
            if self.jobs_format == "parquet":
                _rewrite(path, jobs.to_parquet(index=False, engine="pyarrow", compression="zstd"))
                path.with_suffix(".csv").unlink(missing_ok=True)  # one table per run
            else:
                _rewrite(path, jobs.to_csv(index=False).encode())
                path.with_suffix(".parquet").unlink(missing_ok=True)
        if decisions is not None:
            lines = [_line((run_id, identity["scheduler"], queued, seconds)) for queued, seconds in decisions]
            if not self.decisions_path.exists() or self.decisions_path.stat().st_size == 0:
                lines.insert(0, _line(DECISION_COLUMNS))
            _append(self.decisions_path, b"".join(lines))
        columns = IDENTITY_COLUMNS + self.sweep_keys + tuple(metrics)
        if self.columns is not None:  # a store written before these metrics existed keeps its columns
            columns = tuple(c for c in columns if c in self.columns or c not in ADDED_LATER_METRICS)
        row = {**identity, **point, **metrics}
        data = b""
        if self.columns is None:
            self.columns = columns
            if not self.results_path.exists() or self.results_path.stat().st_size == 0:
                data = _line(columns)
        if set(columns) != set(self.columns):
            raise InputError(f"{self.results_path}: a run reports the columns {', '.join(columns)}, "
                             f"the file has {', '.join(self.columns)}; choose another --out folder")
        _append(self.results_path, data + _line([row[c] for c in self.columns]))
        self.finished.add(run_id)
        return True


def read_results(folder: str | Path) -> pd.DataFrame:
    """results.csv as a DataFrame (``ea_stream`` is empty for schedulers without an EA stream)."""
    path = Path(folder) / RESULTS
    if not path.exists():
        raise InputError(f"{path}: not found (run the experiment first)")

    return read_csv_checked(path, "an experiment's results.csv", ("run_id", "scheduler"), dtype={
        "run_id": str, "scenario": str, "instance": str, "scheduler": str, "scenario_hash": str},
        numbers=_holds_numbers)


def _holds_numbers(column: str) -> bool:
    """A results.csv column of numbers: seed, ea_stream, wall_s and every metric; not the run's identity
    (run_id .. scenario_hash) nor a swept key (dotted, e.g. scheduler.placement: its values may be text)."""
    return column not in ("run_id", "scenario", "instance", "scheduler", "scenario_hash") and \
        ("." not in column or column.startswith(TENANT_WAIT))


def read_decisions(folder: str | Path) -> pd.DataFrame:
    """decisions.csv as a DataFrame (run_id, scheduler, queued, seconds); empty when absent."""
    path = Path(folder) / DECISIONS
    if not path.exists():
        return pd.DataFrame(columns=list(DECISION_COLUMNS))

    return read_csv_checked(path, "an experiment's decisions.csv", ("run_id", "scheduler"),
                            dtype={"run_id": str, "scheduler": str}, numbers=("queued", "seconds"))


def read_jobs(folder: str | Path, results: pd.DataFrame, sweep_keys: Sequence[str]) -> pd.DataFrame:
    """The per-job tables (``record = ["jobs"]``, CSV or Parquet) of the runs in ``results``, with each run's
    run_id, scheduler and swept values as leading columns; empty when none were recorded."""
    frames = []
    for row in results[["run_id", "scheduler", *sweep_keys]].to_dict("records"):
        path = Path(folder) / JOBS / f"{row['run_id']}.csv"
        if path.exists():
            jobs = pd.read_csv(path)
        elif path.with_suffix(".parquet").exists():  # experiment --format parquet
            jobs = pd.read_parquet(path.with_suffix(".parquet"), engine="pyarrow")
        else:
            continue
        for key, value in reversed(list(row.items())):
            jobs.insert(0, key, value)
        frames.append(jobs)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def in_plan_order(frame: pd.DataFrame, order: dict[str, int]) -> pd.DataFrame:
    """The rows of ``frame`` whose ``run_id`` is in ``order`` (run_id -> plan position), in plan order
    (rows of one run keep their file order)."""
    if not len(frame):
        return frame.reset_index(drop=True)
    kept = frame[frame["run_id"].isin(order)].copy()
    kept["_order"] = kept["run_id"].map(order)
    return kept.sort_values("_order", kind="stable").drop(columns="_order").reset_index(drop=True)


def read_plan(folder: str | Path) -> list[str] | None:
    """The run_ids of plan.csv in plan order; None when the folder has no plan.csv (an older store)."""
    path = Path(folder) / PLAN
    if not path.is_file():
        return None
    return pd.read_csv(path, usecols=["run_id"], dtype={"run_id": str})["run_id"].tolist()


def read_planned(folder: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """results.csv and decisions.csv restricted to the runs of plan.csv, in plan order, and the number
    of stale results rows left out (runs of an earlier grid, kept in the file). Without plan.csv every
    row counts."""
    results, decisions = read_results(folder), read_decisions(folder)
    ids = read_plan(folder)
    if ids is None:
        return results, decisions, 0
    order = {run_id: i for i, run_id in enumerate(ids)}
    kept = in_plan_order(results, order)
    return kept, in_plan_order(decisions, order), len(results) - len(kept)


def stale_notice(folder: str | Path, stale: int) -> str:
    """The one-line notice for results rows left out because their runs are not in plan.csv."""
    rows = "row" if stale == 1 else "rows"
    return (f"note: {Path(folder) / RESULTS}: {stale} {rows} of runs not in the current plan (plan.csv; an "
            "earlier grid of a resumed experiment) left out of the tables and figures; they stay in the file")
