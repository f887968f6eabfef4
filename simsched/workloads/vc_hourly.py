"""Hourly per-VC measurements of a real cluster (Helios Earth, workloads/helios/earth/SOURCE.md).

A table with one row per VC and hour (``tools/derive_earth_vcs.py`` writes it from HeliosArtifact's
minute files). Columns:

- ``hour`` (``YYYY-MM-DD HH:00``), ``vc``;
- ``total_gpu``: the VC's GPUs (its quota), the hour's mean;
- ``running_gpu``, ``pending_gpu``: GPUs of its running / pending jobs, means;
- ``running_gpu_ge8``, ``running_gpu_lt8``: GPUs of its running jobs of >= 8 / < 8 GPUs, means;
- ``arrived_gpu_<class>``: GPUs that arrived in the hour (the sum of the rises, minute to minute,
  of the class's running + pending GPUs); ``started_gpu_<class>`` / ``ended_gpu_<class>``: the
  rises / falls of its running GPUs;
- ``pending_jobs``: pending GPU jobs, mean.

The ``helios_demand`` generator reads only ``total_gpu`` and the per-class columns (running and
running + pending GPUs: the workload offered and run); ``running_gpu``, ``pending_gpu`` and
``pending_jobs`` are validation targets (docs/validation.md), never inputs. Every VC must have the same hours, one hour apart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from simsched.core.errors import InputError
from simsched.core.inputs import missing_or_irregular, note_read
from simsched.core.params import check_name

HOUR_S = 3600.0
COLUMNS = ("hour", "vc", "total_gpu", "running_gpu", "pending_gpu", "running_gpu_ge8", "running_gpu_lt8",
           "arrived_gpu_ge8", "arrived_gpu_lt8", "started_gpu_ge8", "started_gpu_lt8", "ended_gpu_ge8",
           "ended_gpu_lt8", "pending_jobs")
NUMBERS = COLUMNS[2:]
#: the size classes of the measurements: jobs of at least 8 GPUs, and of fewer
CLASSES = ("ge8", "lt8")


@dataclass(frozen=True, slots=True)
class VcHourly:
    """The hourly table of every VC: ``values[column]`` is an array (VCs x hours) in ``vcs`` order."""

    path: str
    start: datetime  # the first hour
    vcs: tuple[str, ...]
    values: dict[str, np.ndarray]

    @property
    def hours(self) -> int:
        return int(self.values["total_gpu"].shape[1])

    def column(self, name: str, vc: str) -> np.ndarray:
        return self.values[name][self.vcs.index(vc)]


def _read_table(path: Path, what: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """The CSV at ``path`` as text cells, with exactly ``columns`` as its header; one line otherwise."""
    if not path.is_file():
        raise InputError(f"{path}: {what} {missing_or_irregular(path)}")
    note_read(path, what)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise InputError(f"{path}: cannot read the {what} ({str(exc).strip() or type(exc).__name__})") from None
    if tuple(table.columns) != columns:
        raise InputError(f"{path}:1: the header must be {','.join(columns)}")
    return table


def read_vc_hourly(path: Path) -> VcHourly:
    """The table at ``path``, checked: header, numbers >= 0, every VC over the same consecutive hours."""
    table = _read_table(path, "hourly VC table", COLUMNS)
    if not len(table):
        raise InputError(f"{path}: the hourly VC table has no rows")
    numbers: dict[str, np.ndarray] = {}
    for column in NUMBERS:
        values = pd.to_numeric(table[column], errors="coerce").to_numpy(float)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            k = int(np.argmax(bad))
            raise InputError(f"{path}:{k + 2}: {column} = {table[column].iloc[k]!r} must be a number >= 0")
        numbers[column] = values
    try:
        hours = pd.to_datetime(table["hour"], format="%Y-%m-%d %H:%M")
    except ValueError:
        bad = pd.to_datetime(table["hour"], format="%Y-%m-%d %H:%M", errors="coerce").isna().to_numpy()
        k = int(np.argmax(bad))
        raise InputError(f"{path}:{k + 2}: hour = {table['hour'].iloc[k]!r} is not YYYY-MM-DD HH:00") from None
    vcs = tuple(dict.fromkeys(table["vc"]))
    for vc in vcs:
        check_name(vc, lambda message, vc=vc: InputError(f"{path}: vc {vc!r}: {message}"))
    first = hours[table["vc"] == vcs[0]].to_numpy()
    if len(first) > 1 and not (np.diff(first) == np.timedelta64(3600, "s")).all():
        raise InputError(f"{path}: the hours of {vcs[0]} must be consecutive, one hour apart, in order")
    values = {column: np.empty((len(vcs), len(first))) for column in NUMBERS}
    for k, vc in enumerate(vcs):
        rows = (table["vc"] == vc).to_numpy()
        if not np.array_equal(hours[rows].to_numpy(), first):
            line = int(np.flatnonzero(rows)[0]) + 2
            raise InputError(f"{path}:{line}: VC {vc} does not cover the same hours as {vcs[0]} "
                             f"({len(first)} hours from {pd.Timestamp(first[0]):%Y-%m-%d %H:%M})")
        for column in NUMBERS:
            values[column][k] = numbers[column][rows]
    start = pd.Timestamp(first[0]).to_pydatetime()
    if start.minute or start.second:
        raise InputError(f"{path}:2: hours must start on the hour, got {start:%Y-%m-%d %H:%M}")
    return VcHourly(str(path), start, vcs, values)


def daily_means(hourly: np.ndarray) -> np.ndarray:
    """Means over each whole day (24 hours) of an hourly series; a last partial day is dropped."""
    days = len(hourly) // 24
    return np.asarray(hourly[: days * 24], float).reshape(days, 24).mean(axis=1)


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    """Pearson's correlation of two series, NaN when either is constant."""
    a = np.asarray(a, float)
    b = np.asarray(b, float)
    if len(a) < 2 or a.std() == 0 or b.std() == 0:
        return math.nan
    return float(np.corrcoef(a, b)[0, 1])


SIZE_COLUMNS = ("vc", "size_class", "gpus", "starts")


def read_vc_sizes(path: Path) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
    """(VC, size class) -> (job sizes in GPUs, how many starts were seen of each), from a table
    ``vc,size_class,gpus,starts`` (``tools/derive_earth_vcs.py``); each size within its class."""
    table = _read_table(path, "VC size table", SIZE_COLUMNS)
    out: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for k, row in enumerate(table.itertuples(index=False), start=2):
        where = f"{path}:{k}"
        check_name(row.vc, lambda message, where=where: InputError(f"{where}: vc {message}"))
        if row.size_class not in CLASSES:
            raise InputError(f"{where}: size_class = {row.size_class!r}; valid: {', '.join(CLASSES)}")
        try:
            gpus, starts = int(row.gpus), int(row.starts)
        except ValueError:
            raise InputError(f"{where}: gpus and starts must be whole numbers, got {row.gpus!r}, {row.starts!r}") from None
        if gpus < 1 or starts < 1 or (gpus >= 8) != (row.size_class == "ge8"):
            raise InputError(f"{where}: gpus = {gpus} must be >= 1 and in its class ({row.size_class}: "
                             f"{'>= 8' if row.size_class == 'ge8' else '< 8'} GPUs), starts = {starts} >= 1")
        sizes, counts = out.setdefault((row.vc, row.size_class), ([], []))
        if gpus in sizes:
            raise InputError(f"{where}: {row.vc} {row.size_class} {gpus} GPUs listed twice")
        sizes.append(gpus)
        counts.append(starts)
    return {key: (np.array(sizes, float), np.array(counts, float)) for key, (sizes, counts) in out.items()}
