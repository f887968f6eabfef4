"""Alibaba GPU trace 2023 ("openb") reader: a pod list.

``source = "openb"``; header ``name,cpu_milli,memory_mib,num_gpu,gpu_milli,
gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time`` (times in
seconds from trace start). One job per pod:

* gpus: ``num_gpu`` whole GPUs when ``gpu_milli`` = 1000; a GPU-sharing pod
  (``num_gpu`` = 1, ``gpu_milli`` < 1000) asks ``gpu_milli / 1000`` of one GPU.
  CPU-only pods (``num_gpu`` = 0) are counted as ``"CPU-only pod"``; a
  multi-GPU pod with ``gpu_milli`` < 1000 is a bad row.
* submit = ``creation_time``; duration = ``deletion_time - scheduled_time``
  (run time). Pods still running at trace end carry the trace end as their
  deletion time, so their duration is truncated there.
* Pending pods have no ``scheduled_time``: by default (``pending = "skip"``)
  they are counted as ``"pending (never scheduled)"``; ``pending = "keep"``
  keeps them with duration = ``deletion_time - creation_time`` (their whole
  lifetime in the trace, as if they had run it).
* ``gpu_spec`` ("V100M16|V100M32") -> ``allowed_types`` (duplicates dropped,
  order kept); empty = any type. Names go through ``type_map`` first.
* ``type_map`` (table, default :data:`DEFAULT_TYPE_MAP`) renames GPU models;
  ``openb_nodes`` uses the same map so constraints and nodes agree.
* ``status`` keeps only the listed ``pod_phase`` values (default all).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsched.workloads.readers._common import (
    BadRow,
    check_header,
    csv_rows,
    field_count,
    finish,
    new_columns,
    parse_number,
    require_file,
)
from simsched.workloads.registry import Params, ReadContext, reader

HEADER = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos",
          "pod_phase", "creation_time", "deletion_time", "scheduled_time")
PHASES = ("Running", "Failed", "Pending", "Succeeded")

#: G1/G2/G3 are Alibaba's undisclosed in-house GPU models. With no published
#: speed or memory they are modelled as the reference type (V100: speedup 1,
#: 16 GB), the neutral choice: a job runs there for its recorded duration.
#: The three become one type; give them their own [[gpu_type]] entries and map
#: them to themselves (``type_map = {G2 = "G2"}``) to keep them apart.
DEFAULT_TYPE_MAP: dict[str, str] = {"G1": "V100", "G2": "V100", "G3": "V100"}


def read_type_map(params: Params) -> dict[str, str]:
    """The ``type_map`` option: the defaults updated by the user's table."""
    table = params.get("type_map", dict, {})
    for model, name in table.items():
        if not isinstance(name, str) or not name:
            raise params.error("type_map", f"{model} must map to a GPU type name, got {name!r}")
    return {**DEFAULT_TYPE_MAP, **table}


@reader("openb")
def read_openb(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read an openb pod list (see the module docstring)."""
    pending = params.get("pending", str, "skip", choices=("skip", "keep"))
    phases = params.get_list("status", str, None)
    for phase in phases or ():
        if phase not in PHASES:
            raise params.error("status", f"unknown pod_phase {phase!r}; valid: {', '.join(PHASES)}")
    type_map = read_type_map(params)
    params.finish()
    check_header(require_file(path), HEADER)
    keep_phases = None if phases is None else set(phases)
    columns = new_columns("allowed_types")
    for line, fields in csv_rows(path):
        ctx.report.rows_read += 1
        try:
            field_count(fields, len(HEADER))
            row = dict(zip(HEADER, fields))
            if keep_phases is not None and row["pod_phase"] not in keep_phases:
                ctx.report.skip(f"status {row['pod_phase']} filtered")
                continue
            gpus = _gpus(row)
            if gpus == 0:
                ctx.report.skip("CPU-only pod")
                continue
            created = parse_number(row["creation_time"], "creation_time")
            deleted = parse_number(row["deletion_time"], "deletion_time")
            scheduled = (None if row["scheduled_time"].strip() == ""
                         else parse_number(row["scheduled_time"], "scheduled_time"))
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        if scheduled is None and pending == "skip":
            ctx.report.skip("pending (never scheduled)")
            continue
        duration = deleted - (created if scheduled is None else scheduled)
        if duration < 0:
            ctx.bad_row(path, line, "negative duration")
            continue
        columns["job_id"].append(row["name"])
        columns["submit"].append(created)
        columns["duration"].append(duration)
        columns["gpus"].append(gpus)
        columns["allowed_types"].append(_allowed(row["gpu_spec"], type_map))
    return finish(columns)


def _gpus(row: dict[str, str]) -> float:
    num_gpu = parse_number(row["num_gpu"], "num_gpu")
    milli = parse_number(row["gpu_milli"], "gpu_milli")
    if num_gpu < 0 or not num_gpu.is_integer():
        raise BadRow("bad num_gpu")
    if num_gpu == 0:
        return 0.0
    if not 0 < milli <= 1000:
        raise BadRow("bad gpu_milli")
    if milli == 1000:
        return num_gpu
    if num_gpu > 1:
        raise BadRow("shared multi-GPU pod")
    return milli / 1000.0


def _allowed(spec: str, type_map: dict[str, str]) -> str | None:
    names = [type_map.get(n.strip(), n.strip()) for n in spec.split("|") if n.strip()]
    return "|".join(dict.fromkeys(names)) or None
