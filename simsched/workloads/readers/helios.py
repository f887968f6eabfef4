"""SenseTime Helios (2020) reader: a cluster's ``cluster_log.csv``.

``source = "helios"``; header ``job_id,user,vc,gpu_num,cpu_num,node_num,
state,submit_time,start_time,end_time,duration,queue``.

* Only GPU jobs are kept: ``gpu_num = 0`` rows are counted as ``"CPU-only
  job"`` (about half of Helios, never an error in strict mode).
* submit = ``submit_time``; duration = ``duration`` (seconds of run time,
  queueing excluded), or ``end_time - start_time`` when it is empty.
* ``vc`` -> ``home_cluster`` and ``tenant``; ``node_num`` -> ``workers`` when it divides
  ``gpu_num`` evenly (Helios nodes hold 8 GPUs), else the SPEC §2 rule.
* Options: ``status`` (states to keep; default all of COMPLETED, CANCELLED,
  FAILED, TIMEOUT, NODE_FAIL: cancelled and failed jobs held GPUs too) and
  ``vcs`` (VCs to keep).
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
    parse_duration,
    parse_number,
    parse_timestamp,
    require_file,
)
from simsched.workloads.registry import Params, ReadContext, reader

HEADER = ("job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state",
          "submit_time", "start_time", "end_time", "duration", "queue")
STATES = ("COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL")


@reader("helios")
def read_helios(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read a Helios ``cluster_log.csv`` (see the module docstring)."""
    states = params.get_list("status", str, None)
    for state in states or ():
        if state not in STATES:
            raise params.error("status", f"unknown state {state!r}; valid: {', '.join(STATES)}")
    vcs = params.get_list("vcs", str, None)
    params.finish()
    check_header(require_file(path), HEADER)
    keep_states = None if states is None else set(states)
    keep_vcs = None if vcs is None else set(vcs)
    columns = new_columns("workers", "home_cluster", "tenant")
    for line, fields in csv_rows(path):
        ctx.report.rows_read += 1
        try:
            field_count(fields, len(HEADER))
            row = dict(zip(HEADER, fields))
            gpus = parse_number(row["gpu_num"], "gpus")
            if gpus < 0:
                raise BadRow("non-positive gpus")
            if gpus == 0:
                ctx.report.skip("CPU-only job")
                continue
            # user filters before the remaining checks: a dropped row is never an error
            if keep_states is not None and row["state"] not in keep_states:
                ctx.report.skip(f"status {row['state']} filtered")
                continue
            if keep_vcs is not None and row["vc"] not in keep_vcs:
                ctx.report.skip("vc filtered")
                continue
            submit = parse_timestamp(row["submit_time"])
            duration = _duration(row)
            nodes = parse_number(row["node_num"] or "0", "node_num")
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        columns["job_id"].append(row["job_id"])
        columns["submit"].append(submit)
        columns["duration"].append(duration)
        columns["gpus"].append(gpus)
        whole = gpus.is_integer() and nodes >= 1 and nodes.is_integer() and gpus % nodes == 0
        columns["workers"].append(int(nodes) if whole else pd.NA)
        columns["home_cluster"].append(row["vc"])
        columns["tenant"].append(row["vc"])
    return finish(columns)


def _duration(row: dict[str, str]) -> float:
    if row["duration"].strip():
        return parse_duration(row["duration"])
    if not (row["start_time"].strip() and row["end_time"].strip()):
        raise BadRow("no duration")
    duration = parse_timestamp(row["end_time"]) - parse_timestamp(row["start_time"])
    if duration < 0:
        raise BadRow("negative duration")
    return duration
