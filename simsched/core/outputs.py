"""The output tables of a run beyond the per-job metrics: nodes, run spells, timeline (SPEC §7).

Everything here is derived *after* the simulation from the engine's event log
and the fleet, so the event loop does no extra work for it:

- ``nodes``: one row per node (id, cluster, GPU type, capacity);
- ``spells``: one row per run spell of a job (start .. finish or preemption),
  with the nodes (one id per worker) and the milli-GPUs per worker it held;
- ``timeline``: the state after every change: busy milli-GPUs and running
  jobs per (cluster, GPU type), and the queue length.

:data:`DTYPES` holds the column types of every CSV a run writes, and
:func:`read_table` reads one back with exactly those types, whatever the data
(a node list of single ids stays a string; an all-empty ``reason`` column
stays a string). docs/outputs.md documents every column with its unit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.core import atomic, heap
from simsched.core.errors import InputError
from simsched.core.eventlog import FINISH, KINDS, PREEMPT, START, EventLog
from simsched.core.extras import install_hint

#: ``cluster`` / ``gpu_type`` of the timeline rows that hold fleet-wide totals
ALL = "*"
#: separates the run spells of a job in jobs.csv's ``nodes`` column; node ids inside a spell are space-separated
SPELL_SEPARATOR = "|"

EVENT_COLUMNS = ("time", "event", "job_id", "detail")
NODE_COLUMNS = ("node", "cluster", "gpu_type", "capacity_milli")
SPELL_COLUMNS = ("job_id", "spell", "start", "end", "end_event", "cluster", "gpu_type", "nodes", "workers",
                 "share")
TIMELINE_COLUMNS = ("time", "cluster", "gpu_type", "busy_milli", "running", "queued")

_STR, _FLOAT, _INT = "string", "float64", "int64"

#: pandas dtype of every column of every CSV a run writes (file name -> column -> dtype)
DTYPES: dict[str, dict[str, str]] = {
    "jobs.csv": {
        "job_id": _STR, "submit": _FLOAT, "start": _FLOAT, "end": _FLOAT, "wait": _FLOAT, "jct": _FLOAT,
        "cluster": _STR, "gpu_type": _STR, "preemptions": _INT, "gpus": _FLOAT, "workers": _INT,
        "weight": _INT, "duration": _FLOAT, "deadline": _FLOAT, "gpu_seconds": _FLOAT, "status": _STR,
        "reason": _STR, "home_cluster": _STR, "tenant": _STR, "nodes": _STR, "share": _INT, "runs": _INT,
    },
    "events.csv": {"time": _FLOAT, "event": _STR, "job_id": _STR, "detail": _STR},
    "nodes.csv": {"node": _INT, "cluster": _STR, "gpu_type": _STR, "capacity_milli": _INT},
    "spells.csv": {
        "job_id": _STR, "spell": _INT, "start": _FLOAT, "end": _FLOAT, "end_event": _STR, "cluster": _STR,
        "gpu_type": _STR, "nodes": _STR, "workers": _INT, "share": _INT,
    },
    "timeline.csv": {"time": _FLOAT, "cluster": _STR, "gpu_type": _STR, "busy_milli": _INT, "running": _INT,
                     "queued": _INT},
}  # fmt: skip


#: the columns a read-back table must have: what every reader of it (``load_run``, ``simsched plot``,
#: the notebook's figures) uses, and what every run of every version wrote; a table without one
#: (a spreadsheet export that dropped columns) is one line naming the file and the missing columns,
#: not a KeyError in a figure later (issue 39)
REQUIRED_COLUMNS: dict[str, tuple[str, ...]] = {
    "jobs.csv": ("job_id", "submit", "start", "end", "wait", "jct", "cluster", "gpu_type", "gpus", "status"),
    "events.csv": EVENT_COLUMNS,
    "nodes.csv": NODE_COLUMNS,
    "spells.csv": ("job_id", "spell", "start", "end", "end_event", "cluster", "gpu_type"),
    "timeline.csv": ("time", "cluster", "gpu_type", "busy_milli", "running", "queued"),
}


def check_columns(frame: pd.DataFrame, path: str | Path, kind: str) -> None:
    """Every column of :data:`REQUIRED_COLUMNS` ``[kind]`` is in ``frame``, else one InputError line."""
    missing = [c for c in REQUIRED_COLUMNS.get(kind, ()) if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: not a whole simsched {kind} table: missing column{'s' * (len(missing) > 1)} "
                         f"{', '.join(missing)} (a spreadsheet export drops columns; rerun the scenario with "
                         "--out to write it again)")


#: a text cell starting with one of these runs as a formula when the CSV is opened in a spreadsheet
#: (OWASP, "CSV Injection"); such a cell is written with a leading ' (the spreadsheet shows the text)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = __import__("re").compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def spreadsheet_safe(value: object) -> object:
    """``value`` with a leading ``'`` when it is text a spreadsheet would run as a formula; numbers
    written as text (``-5``, ``+1.5e3``) and every other value are returned unchanged."""
    if isinstance(value, str) and value[:1] in FORMULA_START and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def safe_text_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with :func:`spreadsheet_safe` applied to its text columns; the same object when no
    cell needs it (the usual case: ordinary ids and names cost one vectorised check)."""
    changed = {}
    for column in frame.columns:
        values = frame[column]
        if values.dtype != object and not isinstance(values.dtype, pd.StringDtype):
            continue
        first = values.astype("string").str[:1]
        if not first.isin(FORMULA_START).any():
            continue
        changed[column] = values.map(spreadsheet_safe)
    return frame.assign(**changed) if changed else frame


def read_json_object(path: str | Path, what: str) -> dict:
    """A JSON file that must hold an object (summary.json, a learned function ...): a missing,
    binary, empty or foreign file is one :class:`InputError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {'not found' if not path.exists() else 'not a regular file'}; expected {what}")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: binary content (byte {exc.start}), not {what}") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{path}: not {what} (not valid JSON: {' '.join(str(exc).split())[:80]})") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: not {what} (a JSON {type(data).__name__}, not an object)")
    return data


def read_csv_checked(path: str | Path, what: str, required: Sequence[str] = (), *,
                     numbers: Sequence[str] | Callable[[str], bool] = (), **options: Any) -> pd.DataFrame:
    """``pd.read_csv`` for a file simsched wrote and reads back: a missing, empty, binary or damaged
    file, or one without a ``required`` column, is one :class:`InputError` naming it, never a
    pandas traceback or a KeyError later. ``numbers``: the columns that hold numbers (or a test of a
    column's name); a cell there with text (``zero``, typed in a spreadsheet) is one line naming the
    file, line and column, not a ValueError in a figure later."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: {'not found' if not path.exists() else 'not a regular file'}; expected {what}")
    try:
        frame = pd.read_csv(path, encoding="utf-8", **options)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: empty file, expected {what}") from None
    except (UnicodeDecodeError, pd.errors.ParserError, ValueError, TypeError) as exc:
        raise InputError(f"{path}: not {what} ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise InputError(f"{path}: not {what}: missing column{'s' * (len(missing) > 1)} {', '.join(missing)}")
    wanted = [c for c in frame.columns if (numbers(c) if callable(numbers) else c in numbers)]
    kinds = {c: _FLOAT for c in wanted if not pd.api.types.is_numeric_dtype(frame[c])}
    bad = _first_bad_cell(frame[list(kinds)].astype("string"), kinds) if kinds else None
    if bad is not None:
        row, column, value, kind = bad
        raise InputError(f"{path}: line {row + 2}, column {column}: {value!r} is not {kind} ({what} holds "
                         "numbers there; edited in a spreadsheet?)")
    return frame


def read_table(path: str | Path, kind: str | None = None) -> pd.DataFrame:
    """Read one of a run's CSV or Parquet (``.parquet``) files with the documented dtypes
    (:data:`DTYPES`, by file name, or by ``kind`` such as ``"jobs.csv"`` for a file named otherwise).

    Text columns come back as pandas ``string`` with empty cells as ``""``
    (never NaN), numeric columns as ``float64`` (empty = NaN) or ``int64``.
    """
    path = Path(path)
    parquet = path.suffix == ".parquet"
    schema = DTYPES.get(kind or (path.stem + ".csv" if parquet else path.name))
    if schema is None:
        raise ValueError(f"{path}: not a simsched run output; known: {', '.join(DTYPES)}")
    text_columns = [c for c, t in schema.items() if t == _STR]
    if not path.is_file():
        raise InputError(f"{path}: {'not found' if not path.exists() else 'not a regular file'}; "
                         "a run folder written by python -m simsched ... --out DIR holds it")
    if parquet:
        return _read_parquet(path, kind or path.stem + ".csv", schema)
    try:
        frame = pd.read_csv(path, dtype={c: (str if t == _STR else t) for c, t in schema.items()
                                         if t != _FLOAT},  # floats: let NaN through
                            keep_default_na=False, na_values={c: [""] for c, t in schema.items() if t == _FLOAT},
                            encoding="utf-8")
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: empty file, not a simsched {kind or path.name} table; rerun the scenario "
                         "with --out to write it again") from None
    except (UnicodeDecodeError, pd.errors.ParserError, ValueError, TypeError) as exc:
        _check_cells(path, kind or path.name, schema)  # a text in a number column: named with its line
        raise InputError(f"{path}: not a simsched {kind or path.name} table ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]})") from None
    missing = [c for c in schema if c not in frame.columns]
    if len(missing) == len(schema):
        raise InputError(f"{path}: none of the columns of a simsched {kind or path.name} table "
                         f"({', '.join(list(schema)[:4])}, ...); another tool wrote it")
    check_columns(frame, path, kind or path.name)
    for column in frame.columns:
        if column in text_columns:
            frame[column] = frame[column].astype("string")
        elif schema.get(column) == _FLOAT:
            try:
                frame[column] = frame[column].astype("float64")
            except (ValueError, TypeError):
                _check_cells(path, kind or path.name, schema)
                raise
    return frame


def _check_cells(path: Path, kind: str, schema: dict[str, str]) -> None:
    """Raise one InputError line naming the file, line and column of the first cell of a number column
    that holds no number (``zero`` typed in a spreadsheet), found by reading the file again as text
    (only after the typed read failed: a good table is read once). Returns when there is none."""
    try:
        text = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except (UnicodeDecodeError, pd.errors.ParserError, ValueError, TypeError, pd.errors.EmptyDataError):
        return
    bad = _first_bad_cell(text, {c: k for c, k in schema.items() if k != _STR and c in text.columns})
    if bad is not None:
        row, column, value, what = bad
        raise InputError(f"{path}: line {row + 2}, column {column}: {value!r} is not {what} (a simsched {kind} "
                         "table holds numbers there; edited in a spreadsheet? rerun the scenario with --out to "
                         "write it again)")


def _first_bad_cell(text: pd.DataFrame, kinds: dict[str, str]) -> tuple[int, str, str, str] | None:
    """The first row (then column) of ``text`` (cells as strings; NA or "" = empty) whose cell in a
    column of ``kinds`` is not an integer (``int64``; never empty) or a number (``float64``: a number,
    nan, inf, or empty): (row, column, value, "an integer" or "a number"), or None."""
    first: tuple[int, str, str, str] | None = None
    for column, kind_of in kinds.items():
        cells = text[column].astype("string").str.strip()
        if kind_of == _INT:
            bad = ~cells.fillna("").str.fullmatch(r"[+-]?[0-9]+")
        else:
            given = cells.notna() & (cells != "")
            bad = given & pd.to_numeric(cells.where(given), errors="coerce").isna() & \
                ~cells.str.lower().isin(("nan", "+nan", "-nan"))
        rows = bad.fillna(False).to_numpy(bool).nonzero()[0]
        if len(rows) and (first is None or rows[0] < first[0]):
            first = (int(rows[0]), column, str(text[column].iloc[rows[0]]),
                     "an integer" if kind_of == _INT else "a number")
    return first


#: file formats of a run's tables (``--format``): CSV (default) or Parquet (the ``parquet`` extra, pyarrow)
FORMATS = ("csv", "parquet")
#: the tables of a run's output folder, each ``NAME.csv`` or ``NAME.parquet``
RUN_TABLES = ("jobs", "events", "nodes", "spells", "timeline")
PARQUET_HINT = install_hint("parquet")


def require_format(fmt: str, where: str = "--format") -> str:
    """``fmt`` checked (one of :data:`FORMATS`), and pyarrow importable when it is ``parquet``:
    one :class:`InputError` line otherwise, before any work starts."""
    if fmt not in FORMATS:
        raise InputError(f"{where} {fmt!r}: not a table format; valid: {', '.join(FORMATS)}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise InputError(f"{where} parquet needs pyarrow, which is not installed: {PARQUET_HINT}") from None
    return fmt


#: rows per chunk when a table is written to Parquet a chunk at a time (:func:`write_parquet`):
#: pyarrow's own row group size, so a table's row groups are those of a one-shot ``to_parquet``
PARQUET_CHUNK = 1024 * 1024


def write_frame(frame: pd.DataFrame, path: str | Path, fmt: str | None = None) -> Path:
    """Write ``frame`` atomically as CSV or Parquet (by ``fmt``, else by ``path``'s suffix); the
    Parquet file keeps the values as they are (no spreadsheet quoting: spreadsheets open CSV)."""
    path = Path(path)
    fmt = fmt or ("parquet" if path.suffix == ".parquet" else "csv")
    if fmt == "parquet":
        require_format(fmt)
        return atomic.write_with(path, lambda tmp: write_parquet(tmp, row_chunks(frame)))
    return atomic.write_with(path, lambda tmp: frame.to_csv(tmp, index=False))


def row_chunks(frame: pd.DataFrame, chunk: int | None = None) -> Iterator[pd.DataFrame]:
    """``frame``'s rows ``chunk`` (default :data:`PARQUET_CHUNK`) at a time (slices, not copies);
    ``frame`` itself when it is shorter."""
    chunk = chunk or PARQUET_CHUNK
    if len(frame) <= chunk:
        yield frame
        return
    for first in range(0, len(frame), chunk):
        yield frame.iloc[first:first + chunk]


def write_parquet(path: str | Path, chunks: Iterable[pd.DataFrame]) -> None:
    """Write the frames ``chunks`` (at least one; the same columns and dtypes) as one zstd Parquet
    file at ``path`` (not atomically: see :func:`write_frame`), each chunk its own row group(s),
    converted to Arrow one chunk at a time: a table of millions of rows costs one chunk's Arrow
    copy, not the whole table's. The file reads back as the chunks joined (with a fresh index),
    with the schema, pandas metadata included, of ``to_parquet(index=False)`` of the whole table."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    writer = None
    try:
        for frame in chunks:
            table = pa.Table.from_pandas(frame, schema=None if writer is None else writer.schema,
                                         preserve_index=False)
            if writer is None:
                if frame.attrs:  # kept as pandas' to_parquet keeps them
                    table = table.replace_schema_metadata({**table.schema.metadata,
                                                           b"PANDAS_ATTRS": json.dumps(frame.attrs).encode()})
                writer = pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table)
            del table
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        raise ValueError(f"{path}: no chunk to write (an empty table is one empty chunk)")


def table_path(folder: str | Path, name: str) -> Path:
    """The file of table ``name`` (``jobs``, ``events`` ...) in a run's folder: ``name.csv`` or
    ``name.parquet``, whichever is there (a run writes one and removes the other; if both
    are there, the newer one)."""
    folder = Path(folder)
    found = [path for path in (folder / f"{name}.csv", folder / f"{name}.parquet") if path.is_file()]
    if not found:
        return folder / f"{name}.csv"  # read_table names it as missing
    return max(found, key=lambda path: path.stat().st_mtime_ns)


def read_run_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Every table of a run's output folder (CSV or Parquet), with the documented types."""
    return {name: read_table(table_path(folder, name), f"{name}.csv") for name in RUN_TABLES}


def _read_parquet(path: Path, kind: str, schema: dict[str, str]) -> pd.DataFrame:
    """A Parquet table simsched wrote, with the same column types as :func:`read_table` gives a CSV."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow, which is not installed: {PARQUET_HINT}") from None
    try:
        frame = pq.read_table(path).to_pandas()
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise InputError(f"{path}: not a simsched {kind} table ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:120]})") from None
    if not any(c in frame.columns for c in schema):
        raise InputError(f"{path}: none of the columns of a simsched {kind} table "
                         f"({', '.join(list(schema)[:4])}, ...); another tool wrote it")
    check_columns(frame, path, kind)
    for column in frame.columns:
        kind_of = schema.get(column)
        if kind_of == _STR:
            frame[column] = frame[column].astype("string").fillna("")
        elif kind_of is not None:
            try:
                frame[column] = frame[column].astype(kind_of)
            except (ValueError, TypeError) as exc:  # a text (or NA in an integer) column written by another tool
                raise InputError(f"{path}: column {column}: not {'integers' if kind_of == _INT else 'numbers'} "
                                 f"({' '.join(str(exc).split())[:80]}); a simsched {kind} table holds them "
                                 "there") from None
    return frame


def nodes_frame(node_cluster: Sequence[int], node_type: Sequence[str], node_capacity: Sequence[int],
                cluster_names: Sequence[str]) -> pd.DataFrame:
    """One row per node, in node-id order."""
    return pd.DataFrame({
        "node": np.arange(len(node_type), dtype=np.int64),
        "cluster": [cluster_names[c] for c in node_cluster],
        "gpu_type": list(node_type),
        "capacity_milli": np.asarray(node_capacity, dtype=np.int64),
    }, columns=list(NODE_COLUMNS))


def spells_frame(events: pd.DataFrame, nodes: pd.DataFrame, share_of: Callable[[str, str, str], int]) -> pd.DataFrame:
    """One row per run spell, in start order, from the event log.

    The k-th ``start`` of a job pairs with its k-th ``finish`` or ``preempt``;
    a spell still open (a partial run) has ``end`` NaN and ``end_event`` "".
    ``share_of(job_id, cluster, gpu_type)`` is the milli-GPUs per worker the
    job holds there (the engine's placement option).
    """
    node_cluster = nodes["cluster"].tolist()
    node_type = nodes["gpu_type"].tolist()
    starts: list[tuple] = []  # (job_id, spell, start, cluster, gpu_type, nodes, workers, share)
    ends: list[float] = []
    end_events: list[str] = []
    open_spell: dict[str, int] = {}  # job_id -> row of its running spell
    spell_count: dict[str, int] = {}
    for time, kind, job_id, detail in zip(events["time"].tolist(), events["event"].tolist(),
                                          events["job_id"].tolist(), events["detail"].tolist()):
        if kind == "start":
            detail = str(detail)
            first = int(detail.split(" ", 1)[0])
            cluster, gpu_type = node_cluster[first], node_type[first]
            open_spell[job_id] = len(starts)
            spell = spell_count.get(job_id, 0)
            spell_count[job_id] = spell + 1
            starts.append((job_id, spell, time, cluster, gpu_type, detail, detail.count(" ") + 1,
                           share_of(job_id, cluster, gpu_type)))
            ends.append(math.nan)
            end_events.append("")
        elif kind == "finish" or kind == "preempt":
            row = open_spell.pop(job_id)
            ends[row] = time
            end_events[row] = kind
    columns = dict(zip(("job_id", "spell", "start", "cluster", "gpu_type", "nodes", "workers", "share"),
                       zip(*starts))) if starts else {}
    columns["end"] = ends
    columns["end_event"] = end_events
    spells = pd.DataFrame({c: list(columns.get(c, ())) for c in SPELL_COLUMNS}, columns=list(SPELL_COLUMNS))
    for column in ("spell", "workers", "share"):
        spells[column] = spells[column].astype(np.int64)
    spells["start"] = spells["start"].astype(float)
    spells["end"] = spells["end"].astype(float)
    return spells[list(SPELL_COLUMNS)].reset_index(drop=True)


def spells_from_log(log: EventLog, nodes: pd.DataFrame,
                    shares: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[pd.DataFrame, np.ndarray]:
    """:func:`spells_frame` of ``log.frame()``, built from the log's columns without a Python
    object per event (a million-job run); also each spell's job index.

    ``shares(job_indices, first_nodes)`` gives the milli-GPUs per worker of each spell (of the
    job on the GPU type and cluster of its first node).
    """
    columns = log.columns(copy=False)
    kind, job, time, node_at, flat = (columns[c] for c in ("kind", "job", "time", "node_at", "nodes"))
    if not (kind == START).any():  # no spell: the table way gives the empty table's dtypes
        del columns, kind, job, time, node_at, flat
        return spells_frame(log.frame(), nodes, lambda job_id, c, t: 0), np.zeros(0, np.int64)
    # start, finish and preempt events grouped by job, in log order within a job: each start
    # is followed by the event that ended it, unless it is still open (a partial run)
    spell_events = np.flatnonzero((kind == START) | (kind == FINISH) | (kind == PREEMPT))
    order = spell_events[np.argsort(job[spell_events], kind="stable")]
    del spell_events  # (intermediates are dropped as soon as used: a million-job log's are large)
    starts_at = np.flatnonzero(kind[order] == START)
    after = starts_at + 1
    closed = after < len(order)
    closed[closed] = (job[order[after[closed]]] == job[order[starts_at[closed]]]) & \
        (kind[order[after[closed]]] != START)
    spell_jobs_by_job = job[order[starts_at]]
    first_of_job = np.r_[True, spell_jobs_by_job[1:] != spell_jobs_by_job[:-1]]
    rank = np.arange(len(starts_at))
    spell_number = rank - np.maximum.accumulate(np.where(first_of_job, rank, 0))
    del spell_jobs_by_job, first_of_job, rank
    start_event = order[starts_at]
    end_event = np.full(len(starts_at), -1, np.int64)
    end_event[closed] = order[after[closed]]
    del order, starts_at, after, closed
    by_start = np.argsort(start_event, kind="stable")  # spells in start order
    start_event, end_event, spell_number = start_event[by_start], end_event[by_start], spell_number[by_start]
    del by_start
    spell_jobs = job[start_event]
    first_node = flat[node_at[start_event]]
    workers = node_at[start_event + 1] - node_at[start_event]
    node_cluster = nodes["cluster"].to_numpy(object)
    node_type = nodes["gpu_type"].to_numpy(object)
    node_names = np.array([str(n) for n in range(len(node_cluster))], dtype=object)
    node_lists = node_names[first_node]  # one worker: the node's id
    for s in np.flatnonzero(workers > 1).tolist():
        at = node_at[start_event[s]]
        node_lists[s] = " ".join(map(str, flat[at:at + workers[s]].tolist()))
    cluster, gpu_type = node_cluster[first_node], node_type[first_node]
    share = np.asarray(shares(spell_jobs, first_node), dtype=np.int64)
    closed = end_event >= 0
    end = np.full(len(start_event), math.nan)
    end[closed] = time[end_event[closed]]
    end_kind = np.full(len(start_event), "", dtype=object)
    end_kind[closed] = np.array(KINDS, dtype=object)[kind[end_event[closed]]]
    ids = np.array(log.job_ids, dtype=object)
    spells = pd.DataFrame({
        "job_id": ids[spell_jobs], "spell": spell_number.astype(np.int64), "start": time[start_event],
        "end": end, "end_event": end_kind, "cluster": cluster, "gpu_type": gpu_type, "nodes": node_lists,
        "workers": workers.astype(np.int64), "share": share,
    }, columns=list(SPELL_COLUMNS), copy=False)  # fresh arrays: no copy
    return spells, spell_jobs


def job_spell_columns_by_index(n_jobs: int, spells: pd.DataFrame, spell_jobs: np.ndarray) -> tuple[list[str], np.ndarray]:
    """:func:`job_spell_columns` for jobs 0..n-1 when each spell's job index is known."""
    runs = np.bincount(spell_jobs, minlength=n_jobs).astype(np.int64)
    nodes = np.full(n_jobs, "", dtype=object)
    spell_nodes = spells["nodes"].to_numpy(object)
    single = runs[spell_jobs] == 1
    nodes[spell_jobs[single]] = spell_nodes[single]
    for s in np.flatnonzero(~single).tolist():  # start order: spells join in order
        j = spell_jobs[s]
        nodes[j] = spell_nodes[s] if nodes[j] == "" else nodes[j] + SPELL_SEPARATOR + spell_nodes[s]
    return nodes.tolist(), runs


def job_spell_columns(job_ids: Sequence[str], spells: pd.DataFrame) -> tuple[list[str], np.ndarray]:
    """jobs.csv's ``nodes`` (spells joined by ``|``) and ``runs`` per job, in ``job_ids`` order."""
    joined: dict[str, str] = {}
    counts: dict[str, int] = {}
    for job_id, nodes in zip(spells["job_id"].tolist(), spells["nodes"].tolist()):  # start order
        before = joined.get(job_id)
        joined[job_id] = nodes if before is None else before + SPELL_SEPARATOR + nodes
        counts[job_id] = counts.get(job_id, 0) + 1
    return [joined.get(j, "") for j in job_ids], np.fromiter((counts.get(j, 0) for j in job_ids), np.int64,
                                                             count=len(job_ids))


def timeline_frame(events: pd.DataFrame | EventLog, spells: pd.DataFrame) -> pd.DataFrame:
    """The state after every change, as rows (time, cluster, gpu_type, busy_milli, running, queued).

    Rows with ``cluster == gpu_type == "*"`` (:data:`ALL`) hold fleet totals and
    are written at every time anything changes; rows of one (cluster, GPU type)
    at every time its busy milli-GPUs or running count changes. ``queued`` is
    the fleet's one queue on every row. Each row's values hold until the next
    row of the same (cluster, gpu_type). Same-time events are netted: a job
    that arrives and is started in the same decision leaves the queue length
    unchanged at that time.

    ``events`` is the events table or the engine's :class:`EventLog`. (cluster,
    GPU type) pairs are grouped as integer codes in sorted order, not as text
    (``tests/test_jobstore.py`` keeps a reference that does the same by text).
    """
    if isinstance(events, EventLog):
        columns = events.columns(copy=False)
        codes, times = columns["kind"], columns["time"]
        queue_delta = np.select([codes == KINDS.index("arrive"), codes == PREEMPT, codes == START,
                                 codes == KINDS.index("unscheduled")], [1, 1, -1, -1], 0).astype(np.int64)
    else:
        kinds = events["event"].to_numpy()
        queue_delta = np.select([kinds == "arrive", kinds == "preempt", kinds == "start", kinds == "unscheduled"],
                                [1, 1, -1, -1], 0).astype(np.int64)
        times = events["time"].to_numpy(float)
    keep = queue_delta != 0
    queue_time, queue_change = times[keep], queue_delta[keep]
    del times, queue_delta, keep

    # (the columns themselves, not object arrays: no Python string per spell)
    cluster_code, cluster_names = pd.factorize(spells["cluster"], sort=True)
    type_code, type_names = pd.factorize(spells["gpu_type"], sort=True)
    n_types = max(len(type_names), 1)
    group = cluster_code.astype(np.int64) * n_types + type_code  # sorted like (cluster, gpu_type)
    busy = (spells["share"] * spells["workers"]).to_numpy(np.int64)
    ends = spells["end"].to_numpy(float)
    closed = ~np.isnan(ends)
    delta_time = np.concatenate([spells["start"].to_numpy(float), ends[closed]])
    delta_group = np.concatenate([group, group[closed]])
    delta_busy = np.concatenate([busy, -busy[closed]])
    delta_running = np.concatenate([np.ones(len(busy), np.int64), -np.ones(int(closed.sum()), np.int64)])
    del group, busy, ends, closed, cluster_code, type_code

    # fleet-wide: net change per time, times where something changed, then running sums
    n_spell_deltas = len(delta_time)
    order = np.argsort(np.concatenate([delta_time, queue_time]), kind="stable")
    no_queue, no_spell = np.zeros(len(queue_time), np.int64), np.zeros(n_spell_deltas, np.int64)
    fleet_time, fleet = _net_changes(np.concatenate([delta_time, queue_time])[order], None,
                                     [(delta_busy, no_queue), (delta_running, no_queue), (no_spell, queue_change)],
                                     order)
    del no_queue, no_spell
    del order, queue_time, queue_change
    heap.release()  # (freed intermediates go back before the next are made: see simsched.core.heap)
    for values in fleet:
        np.cumsum(values, out=values)

    order = np.lexsort((delta_time, delta_group))  # by (group, time)
    group_time, per_group = _net_changes(delta_time[order], delta_group[order], [delta_busy, delta_running], order)
    group_of_row = per_group.pop()
    del order, delta_time, delta_group, delta_busy, delta_running
    heap.release()
    # running sums inside each group
    new_group = np.r_[True, group_of_row[1:] != group_of_row[:-1]] if len(group_of_row) else np.zeros(0, bool)
    first_row = np.maximum.accumulate(np.where(new_group, np.arange(len(group_of_row)), 0))
    for k, values in enumerate(per_group):
        total = np.cumsum(values)
        per_group[k] = total - (total[first_row] - values[first_row])
    del new_group, first_row, total, values
    # the queue length in force at each group row's time (fleet rows exist at every change time)
    position = np.searchsorted(fleet_time, group_time, side="right") - 1
    queued = fleet[2]
    group_queue = (np.where(position >= 0, queued[np.maximum(position, 0)], 0) if len(queued)
                   else np.zeros(len(group_time), np.int64))
    del position

    time = np.concatenate([fleet_time, group_time])
    row_group = np.concatenate([np.full(len(fleet_time), -1, np.int64), group_of_row])
    del fleet_time, group_time, group_of_row
    order = np.lexsort((row_group, time))  # by time; fleet rows (-1) before every (cluster, gpu_type)
    row_group = row_group[order]
    cluster = _named([ALL, *cluster_names], np.where(row_group >= 0, row_group // n_types + 1, 0))
    gpu_type = _named([ALL, *type_names], np.where(row_group >= 0, row_group % n_types + 1, 0))
    del row_group
    heap.release()
    table = {"time": time[order], "cluster": cluster, "gpu_type": gpu_type}
    del time
    del queued
    per_group.append(group_queue)
    del group_queue
    for k, column in enumerate(("busy_milli", "running", "queued")):  # each part dropped once placed
        table[column] = np.concatenate([fleet[k], per_group[k]])[order]
        fleet[k] = per_group[k] = None
    del fleet, per_group
    # every column is a fresh array: no copy (a million-job timeline has millions of rows)
    return pd.DataFrame(table, columns=list(TIMELINE_COLUMNS), copy=False)


def _named(names: Sequence[str], codes: np.ndarray) -> Any:
    """The text column ``names[codes]``, built by pandas' own text type (Arrow-backed ``str`` on
    pandas 3 with pyarrow) without a Python object per row; empty, an object array, the dtype
    ``pd.DataFrame`` gives an empty column of strings."""
    if not len(codes):
        return np.zeros(0, dtype=object)
    return pd.Index(list(names)).take(codes).array


def _net_changes(time: np.ndarray, group: np.ndarray | None, values: list[np.ndarray | tuple[np.ndarray, ...]],
                 order: np.ndarray | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """Sum ``values`` over runs of equal (group, time) in sorted rows and keep the runs where any
    sum is not 0: their times and sums (and, with ``group``, each kept run's group last).

    With ``order`` the value columns are in the rows' order before sorting (``time[k]`` is row
    ``order[k]``), and a column may be a tuple of arrays that joined make it: each column is then
    joined and sorted only while it is summed (a million-job timeline's columns are large)."""
    if not len(time):
        return time, [np.zeros(0, np.int64) for _ in values] + ([np.zeros(0, np.int64)] if group is not None else [])
    change = time[1:] != time[:-1]
    if group is not None:
        change |= group[1:] != group[:-1]
    starts = np.flatnonzero(np.r_[True, change])
    del change
    sums = []
    for v in values:
        if isinstance(v, tuple):
            v = np.concatenate(v)
        sums.append(np.add.reduceat(v if order is None else v[order], starts))
    kept = np.zeros(len(starts), bool)
    for v in sums:
        kept |= v != 0
    for k, v in enumerate(sums):  # one at a time: the sums are as long as the runs
        sums[k] = v[kept]
    del v
    starts = starts[kept]
    if group is not None:
        sums.append(group[starts])
    return time[starts], sums
