"""The canonical job table every reader and generator produces (SPEC §2, §5).

A pandas DataFrame with exactly :data:`JOB_COLUMNS`, one row per job, sorted
by ``submit`` (stable, so input order breaks ties):

==============  =========  =====================================================
column          dtype      meaning
==============  =========  =====================================================
job_id          object     string id, unique
submit          float64    seconds (traces: since the earliest kept job)
duration        float64    seconds on the reference GPU type, >= 0
gpus            float64    total GPUs, > 0 (may be a fraction below 1)
workers         Int64      NA = derive from the fleet (SPEC §2 rule)
weight          Int64      integer >= 1, NA = 1 (or synthesised)
deadline        float64    absolute seconds, NaN = none
home_cluster    object     cluster name or None
gpu_type        object     reference GPU type name or None
allowed_types   object     "T4|P100" style string or None = any
tenant          object     the VC, user or group the job belongs to, or None
model           object     a model of simsched/data/model_speeds.toml, or None (issue 38)
==============  =========  =====================================================

Rows a reader could not use are counted in a :class:`SkipReport` by reason.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simsched.core.errors import InputError, control_characters, did_you_mean
from simsched.core.jobstore import JobSpecColumns
from simsched.core.model import derive_workers, model_names

JOB_COLUMNS: tuple[str, ...] = (
    "job_id",
    "submit",
    "duration",
    "gpus",
    "workers",
    "weight",
    "deadline",
    "home_cluster",
    "gpu_type",
    "allowed_types",
    "tenant",
    "model",
)


@dataclass
class SkipReport:
    """Rows skipped while reading, counted by reason (SPEC §5)."""

    counts: Counter = field(default_factory=Counter)
    rows_read: int = 0

    def skip(self, reason: str, n: int = 1) -> None:
        self.counts[reason] += n

    @property
    def skipped(self) -> int:
        return sum(self.counts.values())

    def as_dict(self) -> dict:
        return {"rows_read": self.rows_read, "skipped": self.skipped, "by_reason": dict(self.counts)}


def empty_table() -> pd.DataFrame:
    return normalize(pd.DataFrame({c: [] for c in JOB_COLUMNS}))


def normalize(df: pd.DataFrame) -> pd.DataFrame:
    """Add missing optional columns, fix dtypes, sort by submit (stable)."""
    out = pd.DataFrame(index=df.index)
    out["job_id"] = df["job_id"].astype(str) if "job_id" in df else [str(i) for i in range(len(df))]
    for col in ("submit", "duration", "gpus"):
        out[col] = pd.to_numeric(df[col]).astype("float64")
    for col in ("workers", "weight"):
        out[col] = pd.array(df[col], dtype="Int64") if col in df else \
            pd.arrays.IntegerArray(np.zeros(len(df), np.int64), np.ones(len(df), bool))  # all NA
    out["deadline"] = pd.to_numeric(df["deadline"]).astype("float64") if "deadline" in df else np.nan
    for col in ("home_cluster", "gpu_type", "allowed_types", "tenant", "model"):
        if col in df:
            values = df[col].astype(object)
            out[col] = values.where(values.notna() & (values.astype(str) != ""), None)
        else:
            out[col] = None
    out = out.sort_values("submit", kind="stable").reset_index(drop=True)
    return out[list(JOB_COLUMNS)]


def to_job_specs(df: pd.DataFrame, largest_node: int) -> JobSpecColumns:
    """Turn a canonical table into the jobs' :class:`JobSpec` records, as columns (worker rule of SPEC §2):
    the table's own columns, copied, so the table can go once the engine is built."""
    if df["job_id"].duplicated().any():
        dup = df.loc[df["job_id"].duplicated(), "job_id"].iloc[0]
        raise InputError(f"workload: job_id {dup!r} appears more than once; job ids must be unique")
    known_models = model_names()
    models = [None if model is None else str(model) for model in df["model"].tolist()]
    unknown = set(models) - {None} - set(known_models)
    if unknown:
        i = next(i for i, model in enumerate(models) if model in unknown)
        raise InputError(f"workload: job {df['job_id'].iloc[i]!r}: model {models[i]!r} is not in the model table"
                         f"{did_you_mean(models[i], known_models)}; valid: {', '.join(known_models)} "
                         "(python -m simsched gpu-types --models)")
    gpus = df["gpus"].to_numpy(np.float64, copy=True)
    workers = df["workers"].to_numpy(np.float64, na_value=np.nan)
    derived = np.isnan(workers)
    for value in np.unique(gpus[derived]).tolist():  # one derivation per distinct GPU count
        workers[derived & (gpus == value)] = derive_workers(value, largest_node)
    weight = df["weight"].to_numpy(np.float64, na_value=1.0)
    job_ids = [str(job_id) for job_id in df["job_id"].tolist()]
    tenants = [None if tenant is None else str(tenant) for tenant in df["tenant"].tolist()]
    for column, values in (("job_id", job_ids), ("tenant", tenants)):
        _check_printable(column, values, job_ids)
    return JobSpecColumns(
        job_id=job_ids,
        submit=df["submit"].to_numpy(np.float64, copy=True),
        duration=df["duration"].to_numpy(np.float64, copy=True),
        gpus=gpus,
        workers=workers.astype(np.int64),
        weight=weight.astype(np.int64),
        deadline=df["deadline"].to_numpy(np.float64, copy=True),
        home_cluster=df["home_cluster"].tolist(),
        gpu_type=df["gpu_type"].tolist(),
        allowed_types=[None if allowed is None else str(allowed) for allowed in df["allowed_types"].tolist()],
        tenant=tenants,
        model=models,
    )


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # Unicode's control characters (Cc)


def _check_printable(column: str, values: list[str | None], job_ids: list[str]) -> None:
    """Job ids and tenants end up in tables, file names (per-tenant figures) and the terminal: a NUL,
    a newline or an escape sequence in one (a corrupt trace row, a crafted file) is refused, naming
    the job. One search over all of them joined (a million ids cost milliseconds)."""
    if _CONTROL.search("".join(value for value in values if value is not None)) is None:
        return
    i, text = next((i, value) for i, value in enumerate(values) if value is not None and _CONTROL.search(value))
    where = "" if column == "job_id" else f"job {job_ids[i]!r}: "
    raise InputError(f"workload: {where}{column} {text!r} holds control characters "
                     f"({', '.join(dict.fromkeys(control_characters(text)))}); job ids and tenants are printable text")


def concat(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    tables = list(tables)
    return normalize(pd.concat(tables, ignore_index=True)) if tables else empty_table()
