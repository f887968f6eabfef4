"""Dated quota tables: GPUs per tenant that change by day (SPEC §3 tenants).

The format is Helios' ``cluster_gpu_number.csv`` (e.g. Earth's daily VC sizes):
a header ``date,<tenant>,<tenant>,...[,total]``, then one row per day,
``YYYY-MM-DD`` then each tenant's GPUs. A ``total`` column is ignored (it is
the sum). ``quota_start`` names the date at simulated time 0 (default: the
first row's); the row in force at time t is the last one dated at or before
``quota_start`` + t, so a day's quotas hold from its midnight until the next
row's.
"""

from __future__ import annotations

import csv
import math
from datetime import date, datetime
from pathlib import Path

from simsched.core.errors import InputError
from simsched.core.inputs import missing_or_irregular, note_read
from simsched.core.model import QuotaSchedule
from simsched.core.params import check_name

DAY_S = 86400.0


def _day(text: str, where: str) -> date:
    try:
        return date.fromisoformat(text.strip())
    except ValueError:
        raise InputError(f"{where}: {text!r} is not a date YYYY-MM-DD") from None


def read_quota_table(path: Path, start: str | date | None, start_key: str, cluster: str, capacity: float) -> QuotaSchedule:
    """The schedule of ``path`` from ``start``; a day whose quotas add up to more than ``capacity``
    GPUs (cluster ``cluster``) is an error naming its line."""
    if not path.is_file():
        raise InputError(f"{path}: quota table {missing_or_irregular(path)}")
    note_read(path, "quota table")
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # Excel's "CSV UTF-8" starts with a BOM
            rows = list(csv.reader(fh))
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except (OSError, csv.Error) as exc:
        raise InputError(f"{path}: cannot read the quota table ({exc})") from None
    if not rows or not rows[0] or rows[0][0].strip() != "date":
        raise InputError(f"{path}:1: a quota table starts with the header date,<tenant>,...[,total]")
    header = [h.strip() for h in rows[0]]
    while len(header) > 1 and header[-1] == "" and all(len(row) < len(header) or not row[len(header) - 1].strip()
                                                      for row in rows[1:]):
        # a spreadsheet's trailing comma: an empty last column, dropped from the header and every row
        header.pop()
        rows = [rows[0][:len(header)]] + [row[:len(header)] for row in rows[1:]]
    for k, name in enumerate(header[1:], start=2):
        if not name:
            raise InputError(f"{path}:1: column {k} has no tenant name; every column after date names a tenant")
        check_name(name, lambda message, k=k: InputError(f"{path}:1: column {k}: tenant {message}"))
    columns = [k for k, name in enumerate(header) if k > 0 and name != "total"]
    tenants = tuple(header[k] for k in columns)
    if not tenants:
        raise InputError(f"{path}:1: no tenant columns after date")
    if len(set(tenants)) != len(tenants):
        raise InputError(f"{path}:1: a tenant column appears twice")
    days: list[tuple[date, tuple[float, ...], int]] = []
    for line, row in enumerate(rows[1:], start=2):
        if not row or not "".join(row).strip():
            continue
        where = f"{path}:{line}"
        if len(row) != len(header):
            raise InputError(f"{where}: {len(row)} fields, the header has {len(header)}")
        day = _day(row[0], where)
        if days and day <= days[-1][0]:
            raise InputError(f"{where}: dates must increase ({day} after {days[-1][0]})")
        values = []
        for k in columns:
            try:
                value = float(row[k])
            except ValueError:
                raise InputError(f"{where}: {header[k]} = {row[k]!r} is not a number of GPUs") from None
            if not math.isfinite(value) or value < 0:
                raise InputError(f"{where}: {header[k]} = {row[k]!r} must be a number of GPUs >= 0")
            values.append(value)
        if sum(values) > capacity + 1e-9:
            raise InputError(f"{where}: the quotas of {day} add up to {sum(values):g} GPUs, above the "
                             f"{capacity:g} GPUs of cluster {cluster!r}")
        days.append((day, tuple(values), line))
    if not days:
        raise InputError(f"{path}: the quota table has no rows")
    if isinstance(start, datetime):
        raise InputError(f"{start_key}: {start} is a date and time; give the date alone, e.g. {start.date()}")
    first = days[0][0] if start is None else start if isinstance(start, date) else _day(start, start_key)
    if first < days[0][0]:
        raise InputError(f"{start_key}: {first} is before the quota table's first date {days[0][0]} ({path})")
    in_force = max(k for k, (day, _, _) in enumerate(days) if day <= first)
    kept = days[in_force:]
    times = tuple(0.0 if k == 0 else (day - first).days * DAY_S for k, (day, _, _) in enumerate(kept))
    return QuotaSchedule(tenants, times, tuple(values for _, values, _ in kept), str(path))
