"""simsched's own job CSV (SPEC §5): ``job_id,submit,duration,gpus[,workers,weight,deadline,home_cluster,gpu_type]``."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd

from simsched.errors import InputError
from simsched.workloads.registry import Params, ReadContext, reader
from simsched.workloads.table import normalize

REQUIRED = ("job_id", "submit", "duration", "gpus")
OPTIONAL = ("workers", "weight", "deadline", "home_cluster", "gpu_type", "allowed_types")


def _number(text: str, column: str, *, integer: bool = False) -> float | int:
    value = float(text)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f"{column} must be a finite number, got {text!r}")
    if integer:
        if not value.is_integer():
            raise ValueError(f"{column} must be an integer, got {text!r}")
        return int(value)
    return value


@reader("csv")
def read_csv(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read a job CSV with a header row; optional columns may be absent or empty."""
    params.finish()
    if not path.is_file():
        raise InputError(f"{path}: file not found")
    rows: dict[str, list] = {c: [] for c in REQUIRED + OPTIONAL}
    seen: set[str] = set()
    with path.open(newline="", encoding="utf-8") as fh:
        table = csv.reader(fh)
        header = [h.strip() for h in next(table, [])]
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise InputError(f"{path}:1: missing column(s) {', '.join(missing)}; the header must have "
                             f"{','.join(REQUIRED)} and optionally {','.join(OPTIONAL)}")
        unknown = [c for c in header if c not in REQUIRED + OPTIONAL]
        if unknown:
            raise InputError(f"{path}:1: unknown column {unknown[0]!r}; valid: {', '.join(REQUIRED + OPTIONAL)}")
        position = {c: header.index(c) for c in header}
        for line, values in enumerate(table, start=2):
            if not values or all(not v.strip() for v in values):
                continue
            ctx.report.rows_read += 1
            if len(values) != len(header):
                ctx.bad_row(path, line, f"expected {len(header)} fields, got {len(values)}")
                continue
            cell = {c: values[i].strip() for c, i in position.items()}
            try:
                job_id = cell["job_id"]
                if not job_id:
                    raise ValueError("empty job_id")
                if job_id in seen:
                    raise ValueError(f"duplicate job_id {job_id!r}")
                submit = _number(cell["submit"], "submit")
                duration = _number(cell["duration"], "duration")
                gpus = _number(cell["gpus"], "gpus")
                if submit < 0 or duration < 0:
                    raise ValueError("negative submit or duration")
                if gpus <= 0:
                    raise ValueError("non-positive gpus")
                workers = _number(cell["workers"], "workers", integer=True) if cell.get("workers") else pd.NA
                if workers is not pd.NA and workers < 1:
                    raise ValueError("workers must be >= 1")
                weight = _number(cell["weight"], "weight", integer=True) if cell.get("weight") else pd.NA
                if weight is not pd.NA and weight < 1:
                    raise ValueError("weight must be an integer >= 1")
                deadline = _number(cell["deadline"], "deadline") if cell.get("deadline") else math.nan
            except ValueError as exc:
                ctx.bad_row(path, line, str(exc))
                continue
            seen.add(job_id)
            for c, v in (("job_id", job_id), ("submit", submit), ("duration", duration), ("gpus", gpus),
                         ("workers", workers), ("weight", weight), ("deadline", deadline)):
                rows[c].append(v)
            for c in ("home_cluster", "gpu_type", "allowed_types"):
                rows[c].append(cell.get(c) or None)
    return normalize(pd.DataFrame(rows))
