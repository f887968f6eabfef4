"""Helpers every trace reader shares: file checks, row parsing, the final table."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from simsched.core.errors import InputError
from simsched.core.inputs import note_read
from simsched.workloads.table import empty_table, normalize


class BadRow(ValueError):
    """A row a reader cannot use; ``reason`` is the short, stable skip reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def require_file(path: Path, what: str = "trace file") -> Path:
    """``path`` itself, or an :class:`InputError` naming it when it is not a file."""
    path = Path(path)
    if not path.is_file():
        hint = " (it is a directory)" if path.is_dir() else ""
        raise InputError(f"{path}: file not found{hint}; check the {what} path")
    note_read(path, what)
    return path


def csv_rows(path: Path, header: bool = True, skipinitialspace: bool = False,
             ) -> Iterator[tuple[int, list[str]]]:
    """Stream ``(line_number, fields)`` of a CSV file; line numbers are 1-based file lines."""
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, skipinitialspace=skipinitialspace)
        if header:
            next(reader, None)
        for fields in reader:
            if not fields:  # blank line
                continue
            # reader.line_num is the line the record ended on (records never span lines here)
            yield reader.line_num, fields


def check_header(path: Path, expected: tuple[str, ...], skipinitialspace: bool = False) -> None:
    """Raise naming the file when its header is not ``expected`` (the wrong file was given)."""
    with open(path, newline="", encoding="utf-8") as handle:
        first = next(csv.reader(handle, skipinitialspace=skipinitialspace), [])
    got = tuple(f.strip() for f in first)
    if got != expected:
        raise InputError(
            f"{path}:1: header {','.join(got)!r} is not the expected {','.join(expected)!r}"
        )


def field_count(fields: list[str], expected: int) -> None:
    if len(fields) != expected:
        raise BadRow(f"wrong field count (expected {expected})")


def parse_number(text: str, what: str) -> float:
    """A finite float, or :class:`BadRow` ``"bad <what>"``."""
    try:
        value = float(text)
    except ValueError:
        raise BadRow(f"bad {what}") from None
    if not math.isfinite(value):
        raise BadRow(f"bad {what}")
    return value


def parse_duration(text: str) -> float:
    value = parse_number(text, "duration")
    if value < 0:
        raise BadRow("negative duration")
    return value


def parse_gpus(text: str) -> float:
    value = parse_number(text, "gpus")
    if value <= 0:
        raise BadRow("non-positive gpus")
    return value


def parse_timestamp(text: str) -> float:
    """Seconds since the epoch of a naive local ``YYYY-MM-DD HH:MM:SS`` string.

    The traces give local wall-clock times without a zone; they are read as if
    they were UTC, so differences are wall-clock differences (a job spanning a
    daylight-saving change is off by the one hour the clock moved).
    """
    try:
        stamp = datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        raise BadRow("unparseable timestamp") from None
    if stamp.tzinfo is not None:
        stamp = stamp.replace(tzinfo=None)
    return (stamp - _EPOCH).total_seconds()


_EPOCH = datetime(1970, 1, 1)


def json_array_items(path: Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, item)`` for each element of a top-level JSON array.

    The file is read once and decoded item by item, so a bad item is reported
    at the line where it starts and the rest of the file is still usable.
    """
    text = path.read_text(encoding="utf-8")
    decoder = json.JSONDecoder()
    pos = _skip_space(text, 0)
    if not text.startswith("[", pos):
        raise InputError(f"{path}:{text.count(chr(10), 0, pos) + 1}: expected a JSON list of jobs")
    line, counted_to = 1, 0
    pos = _skip_space(text, pos + 1)
    if text.startswith("]", pos):
        return
    while True:
        line += text.count("\n", counted_to, pos)
        counted_to = pos
        try:
            item, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise InputError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None
        yield line, item
        pos = _skip_space(text, end)
        if text.startswith("]", pos):
            return
        if not text.startswith(",", pos):
            at = text.count("\n", 0, pos) + 1
            raise InputError(f"{path}:{at}: invalid JSON: expected ',' or ']' between jobs")
        pos = _skip_space(text, pos + 1)


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def finish(columns: dict[str, list]) -> pd.DataFrame:
    """Canonical table from column lists; submit shifted so the earliest kept job is at 0."""
    if not columns["job_id"]:
        return empty_table()
    df = pd.DataFrame(columns)
    df["submit"] = df["submit"] - df["submit"].min()
    return normalize(df)


def new_columns(*extra: str) -> dict[str, list]:
    """Empty column lists for the fields a reader fills (job_id, submit, duration, gpus + extra)."""
    return {name: [] for name in ("job_id", "submit", "duration", "gpus", *extra)}
