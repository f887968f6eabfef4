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

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simsched.core.errors import InputError, did_you_mean
from simsched.core.model import JobSpec, derive_workers, model_names

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
        out[col] = pd.array(df[col], dtype="Int64") if col in df else pd.array([pd.NA] * len(df), dtype="Int64")
    out["deadline"] = pd.to_numeric(df["deadline"]).astype("float64") if "deadline" in df else np.nan
    for col in ("home_cluster", "gpu_type", "allowed_types", "tenant", "model"):
        if col in df:
            values = df[col].astype(object)
            out[col] = values.where(values.notna() & (values.astype(str) != ""), None)
        else:
            out[col] = None
    out = out.sort_values("submit", kind="stable").reset_index(drop=True)
    return out[list(JOB_COLUMNS)]


def to_job_specs(df: pd.DataFrame, largest_node: int) -> list[JobSpec]:
    """Turn a canonical table into :class:`JobSpec` records (worker rule of SPEC §2)."""
    if df["job_id"].duplicated().any():
        dup = df.loc[df["job_id"].duplicated(), "job_id"].iloc[0]
        raise InputError(f"workload: job_id {dup!r} appears more than once; job ids must be unique")
    jobs: list[JobSpec] = []
    cols = [df[c].tolist() for c in JOB_COLUMNS]
    known_models = model_names()
    for job_id, submit, duration, gpus, workers, weight, deadline, home, gtype, allowed, tenant, model \
            in zip(*cols):
        if model is not None and model not in known_models:
            raise InputError(f"workload: job {job_id!r}: model {model!r} is not in the model table"
                             f"{did_you_mean(model, known_models)}; valid: {', '.join(known_models)} "
                             "(python -m simsched gpu-types --models)")
        workers = derive_workers(gpus, largest_node) if workers is pd.NA or workers is None else int(workers)
        weight = 1 if weight is pd.NA or weight is None else int(weight)
        jobs.append(
            JobSpec(
                job_id=job_id,
                submit=float(submit),
                duration=float(duration),
                gpus=float(gpus),
                workers=workers,
                weight=weight,
                deadline=None if deadline != deadline else float(deadline),
                home_cluster=home,
                gpu_type=gtype,
                allowed_types=None if allowed is None else tuple(str(allowed).split("|")),
                tenant=None if tenant is None else str(tenant),
                model=None if model is None else str(model),
            )
        )
    return jobs


def concat(tables: Iterable[pd.DataFrame]) -> pd.DataFrame:
    tables = list(tables)
    return normalize(pd.concat(tables, ignore_index=True)) if tables else empty_table()
