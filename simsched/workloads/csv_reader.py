"""simsched's own job CSV (SPEC §5): ``job_id,submit,duration,gpus[,workers,weight,deadline,home_cluster,gpu_type,allowed_types,tenant,model]``.

UTF-8 (a byte-order mark is accepted). A row is bad -- skipped and counted,
or with ``strict = true`` an error naming file and line -- when a number is
not finite or beyond :data:`MAX_SECONDS`, a deadline precedes the submit
time, a worker's GPU share above 1 is not whole, or ``home_cluster`` /
``gpu_type`` name no cluster of the scenario / type of its catalog, or ``model`` is not in
the model table (simsched/data/model_speeds.toml, issue 38).

A file whose rows are all good is read a column at a time (:func:`_read_columns`: the same
rules on whole columns, no Python work per row); any other file is read row by row
(:func:`_read_rows`), which names each bad row, so the messages are the same either way.
"""

from __future__ import annotations

import csv
import math
import re
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.core.errors import InputError, did_you_mean
from simsched.core.inputs import note_read
from simsched.core.model import model_names
from simsched.workloads.registry import Params, ReadContext, reader
from simsched.workloads.table import normalize

REQUIRED = ("job_id", "submit", "duration", "gpus")
#: times beyond ~3,000 years are typos or overflow, not workloads
MAX_SECONDS = 1e11
#: a job asking for more GPUs than this is a typo (every fleet is far smaller)
MAX_GPUS = 1e6
#: the engine counts milli-GPUs: a smaller share would round to nothing
MIN_GPUS = 0.001
OPTIONAL = ("workers", "weight", "deadline", "home_cluster", "gpu_type", "allowed_types", "tenant", "model")


#: a number as CSV files and spreadsheets write it: ASCII digits, an optional sign, point and exponent.
#: Python's float() also takes "1_000", full-width "１００" and other Unicode digits, and "inf"/"nan":
#: none of them is a number a trace holds, so they are bad rows (errors with strict = true).
NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _number(text: str, column: str, *, integer: bool = False, limit: float = MAX_SECONDS) -> float | int:
    if not NUMBER.fullmatch(text):
        if text.lower().lstrip("+-") in ("inf", "infinity", "nan"):
            raise ValueError(f"bad {column}: must be a finite number, got {text!r}")
        raise ValueError(f"bad {column}: must be a number written with ASCII digits (like 12 or 3.5e2), "
                         f"got {text[:40]!r}")
    value = float(text)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"bad {column}: must be a finite number, got {text!r}")
    if abs(value) > limit:
        raise ValueError(f"bad {column}: {text!r} is beyond {limit:g}")
    if integer:
        if not value.is_integer():
            raise ValueError(f"bad {column}: must be an integer, got {text!r}")
        return int(value)
    return value


#: rows per step of the columnar read: the row lists of one step are all it holds besides the columns
CHUNK_ROWS = 16_384
#: a character no number of :data:`NUMBER` has (the cells of a column are joined with newlines)
_NOT_NUMBER = re.compile(r"[^0-9.eE+\-\n]")
_NUMERIC = {"submit": MAX_SECONDS, "duration": MAX_SECONDS, "gpus": MAX_GPUS, "workers": MAX_GPUS,
            "weight": 2**31, "deadline": MAX_SECONDS}  # column: the largest magnitude _number allows


class _NotPlain(Exception):
    """A cell the columnar read does not take as it is: the row-by-row reader reads the file instead."""


def _allowed_types(text: str, known) -> str:
    """``allowed_types``: GPU type names separated by ``|``, each non-empty, known and listed once."""
    names = [name.strip() for name in text.split("|")]
    if any(not name for name in names):
        raise ValueError(f"bad allowed_types: {text[:60]!r} has an empty name; write names separated by '|', "
                         "like 'V100|T4'")
    if len(set(names)) != len(names):
        raise ValueError(f"bad allowed_types: {text[:60]!r} lists a type twice")
    if known is not None:
        for name in names:
            if name not in known:
                raise ValueError(f"bad allowed_types: unknown GPU type {name!r}{did_you_mean(name, known)} in "
                                 f"{text[:60]!r}; separate names with '|'; types: {', '.join(sorted(known))}")
    return "|".join(names)


@reader("csv")
def read_csv(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read a job CSV with a header row; optional columns may be absent or empty."""
    params.finish()
    if not path.is_file():
        raise InputError(f"{path}: {'is a folder; give a job CSV file' if path.is_dir() else 'file not found'}")
    note_read(path, "job CSV")
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            table = csv.reader(fh)
            header = _header(path, table)
            columns = _read_columns(table, header, ctx)
        if columns is not None:
            return normalize(pd.DataFrame(columns))
        # some row is not plainly good: the row-by-row reader says which, with its line
        rows: dict[str, list] = {c: [] for c in REQUIRED + OPTIONAL}
        with path.open(newline="", encoding="utf-8-sig") as fh:
            table = csv.reader(fh)
            _header(path, table)
            _read_rows(path, table, header, ctx, rows, set())
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a UTF-8 text file (byte 0x{exc.object[exc.start]:02x} at offset "
                         f"{exc.start}); save it as UTF-8") from None
    except csv.Error as exc:
        raise InputError(f"{path}: not a readable CSV: {exc}") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    return normalize(pd.DataFrame(rows))


def _header(path: Path, table) -> list[str]:
    """The header row, checked: every required column, each column once, no unknown one."""
    try:
        header = [h.strip() for h in next(table, [])]
    except csv.Error as exc:
        raise InputError(f"{path}:1: not a readable CSV header: {exc}") from None
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise InputError(f"{path}:1: missing column(s) {', '.join(missing)}; the header must have "
                         f"{','.join(REQUIRED)} and optionally {','.join(OPTIONAL)}")
    twice = sorted({c for c in header if header.count(c) > 1})
    if twice:
        raise InputError(f"{path}:1: column {twice[0]!r} appears {header.count(twice[0])} times in the header; "
                         "give each column once")
    unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
    if unknown:
        raise InputError(f"{path}:1: unknown column {unknown[0]!r}; valid: {', '.join(REQUIRED + OPTIONAL)}")
    return header


def _read_rows(path: Path, table, header: list[str], ctx: ReadContext, rows: dict[str, list],
               seen: set[str]) -> None:
    """Row by row: each bad row skipped and counted (or, strict, an error naming its line)."""
    position = {c: header.index(c) for c in header}
    while True:
        line = table.line_num + 1
        try:
            values = next(table)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. a field over the csv module's 128 KB limit
            raise InputError(f"{path}:{line}: not a readable CSV row: {exc}") from None
        if not values or all(not v.strip() for v in values):
            continue
        ctx.report.rows_read += 1
        if len(values) != len(header):
            ctx.bad_row(path, line, f"wrong field count: expected {len(header)} fields, got {len(values)}")
            continue
        cell = {c: values[i].strip() for c, i in position.items()}
        try:
            job_id = cell["job_id"]
            if not job_id:
                raise ValueError("empty job_id")
            if job_id in seen:
                raise ValueError(f"duplicate job_id: {job_id!r}")
            submit = _number(cell["submit"], "submit")
            duration = _number(cell["duration"], "duration")
            gpus = _number(cell["gpus"], "gpus", limit=MAX_GPUS)
            if submit < 0 or duration < 0:
                raise ValueError("negative submit or duration")
            if gpus <= 0:
                raise ValueError(f"non-positive gpus: got {cell['gpus']!r}")
            if gpus < MIN_GPUS:
                raise ValueError(f"bad gpus: {cell['gpus']!r} is below the smallest share, {MIN_GPUS:g} GPU")
            workers = _number(cell["workers"], "workers", integer=True, limit=MAX_GPUS) \
                if cell.get("workers") else pd.NA
            if workers is not pd.NA and workers < 1:
                raise ValueError(f"bad workers: must be >= 1, got {cell['workers']!r}")
            if workers is not pd.NA and gpus / workers > 1 and not (gpus / workers).is_integer():
                raise ValueError(f"bad workers: gpus {gpus:g} over {workers} workers gives {gpus / workers:.4g} GPUs per "
                                 "worker; a share above 1 GPU must be whole")
            weight = _number(cell["weight"], "weight", integer=True, limit=2**31) if cell.get("weight") else pd.NA
            if weight is not pd.NA and weight < 1:
                raise ValueError(f"bad weight: must be an integer >= 1, got {cell['weight']!r}")
            deadline = _number(cell["deadline"], "deadline") if cell.get("deadline") else math.nan
            if deadline < submit:
                raise ValueError(f"bad deadline: {deadline:g} is before submit {submit:g}")
            home = cell.get("home_cluster")
            if home and ctx.clusters is not None and home not in ctx.clusters:
                raise ValueError(f"unknown home_cluster: {home!r}; clusters: {', '.join(ctx.clusters)}")
            if cell.get("allowed_types"):
                cell["allowed_types"] = _allowed_types(cell["allowed_types"], ctx.gpu_types)
            gpu_type = cell.get("gpu_type")
            if gpu_type and ctx.gpu_types is not None and gpu_type not in ctx.gpu_types:
                raise ValueError(f"unknown gpu_type: {gpu_type!r}{did_you_mean(gpu_type, ctx.gpu_types)}; "
                                 "add it with [[gpu_type]] or use one of "
                                 f"{', '.join(sorted(ctx.gpu_types))}")
            model = cell.get("model")
            if model and model not in model_names():
                raise ValueError(f"unknown model: {model!r}{did_you_mean(model, model_names())}; models: "
                                 f"{', '.join(model_names())}")
        except ValueError as exc:
            ctx.bad_row(path, line, str(exc), category=str(exc).split(":")[0])
            continue
        seen.add(job_id)
        for c, v in (("job_id", job_id), ("submit", submit), ("duration", duration), ("gpus", gpus),
                     ("workers", workers), ("weight", weight), ("deadline", deadline)):
            rows[c].append(v)
        for c in ("home_cluster", "gpu_type", "allowed_types", "tenant", "model"):
            rows[c].append(cell.get(c) or None)


def _read_columns(table, header: list[str], ctx: ReadContext) -> dict[str, object] | None:
    """Every column of a file whose rows are all good, checked a column at a time (the same rules
    as :func:`_read_rows`, which gives the same table); None when some row is not plainly good (a
    blank, short or unreadable row, a cell with spaces around it, any bad value): then the
    row-by-row reader reads the file and names the rows, with the same messages as always."""
    width, before = len(header), ctx.report.rows_read
    parts: dict[str, list] = {c: [] for c in header}
    try:
        while True:
            chunk = list(islice(table, CHUNK_ROWS))
            if not chunk:
                break
            if any(len(row) != width for row in chunk):
                raise _NotPlain
            for column, cells in zip(header, zip(*chunk)):
                parts[column].append(_cells(column, cells))
            ctx.report.rows_read += len(chunk)
        if ctx.report.rows_read == before:  # no rows: the row-by-row reader makes the empty table
            return None
        return _checked(parts, ctx)
    except (_NotPlain, csv.Error, UnicodeDecodeError):
        ctx.report.rows_read = before
        return None


def _cells(column: str, cells: tuple[str, ...]):
    """One step's cells of ``column``: numbers (NaN where an optional one is empty) or stripped text."""
    limit = _NUMERIC.get(column)
    if limit is None:
        return [cell.strip() for cell in cells]
    if column in REQUIRED or "" not in cells:
        return _numbers(cells, limit)
    values = np.full(len(cells), np.nan)
    present = np.fromiter(map(bool, cells), bool, len(cells))
    if present.any():
        values[present] = _numbers([cell for cell in cells if cell], limit)
    return values


def _numbers(cells, limit: float) -> np.ndarray:
    """The cells as floats when every one is a finite :data:`NUMBER` within ``limit`` (the checks of
    :func:`_number`: only its characters, then Python's own float syntax, which on those characters
    is NUMBER's)."""
    if _NOT_NUMBER.search("\n".join(cells)):
        raise _NotPlain
    try:
        values = np.array(cells, dtype=np.float64)
    except ValueError:
        raise _NotPlain from None
    if not (np.abs(values) <= limit).all():  # also NaN and inf
        raise _NotPlain
    return values


def _checked(parts: dict[str, list], ctx: ReadContext) -> dict[str, object]:
    """The row rules of :func:`_read_rows` on whole columns; _NotPlain if any row breaks one."""
    def numbers(column: str) -> np.ndarray | None:
        return np.concatenate(parts[column]) if column in parts else None

    def texts(column: str) -> list[str] | None:
        return [cell for part in parts[column] for cell in part] if column in parts else None

    job_ids = texts("job_id")
    if "" in job_ids or len(set(job_ids)) != len(job_ids):
        raise _NotPlain
    submit, duration, gpus = numbers("submit"), numbers("duration"), numbers("gpus")
    if (submit < 0).any() or (duration < 0).any() or (gpus < MIN_GPUS).any():
        raise _NotPlain
    columns: dict[str, object] = {"job_id": job_ids, "submit": submit, "duration": duration, "gpus": gpus}
    for column in ("workers", "weight"):
        values = numbers(column)
        if values is None:
            continue
        given = ~np.isnan(values)
        if (values[given] < 1).any() or (np.floor(values[given]) != values[given]).any():
            raise _NotPlain
        if column == "workers":
            share = gpus[given] / values[given]
            if ((share > 1) & (np.floor(share) != share)).any():
                raise _NotPlain
        columns[column] = pd.arrays.IntegerArray(np.where(given, values, 0).astype(np.int64), ~given)
    deadline = numbers("deadline")
    if deadline is not None:
        if (deadline < submit).any():  # NaN (none given) compares false
            raise _NotPlain
        columns["deadline"] = deadline
    known = {"home_cluster": ctx.clusters, "gpu_type": ctx.gpu_types, "model": model_names(),
             "tenant": None, "allowed_types": None}
    for column, valid in known.items():
        values = texts(column)
        if values is None:
            continue
        names = set(values) - {""}
        if column == "allowed_types":
            try:
                spelled = {name: _allowed_types(name, ctx.gpu_types) for name in names}
            except ValueError:
                raise _NotPlain from None
            if any(name != text for name, text in spelled.items()):
                values = [spelled.get(cell, cell) for cell in values]
        elif valid is not None and not names <= set(valid):
            raise _NotPlain
        columns[column] = [cell or None for cell in values]
    return columns
