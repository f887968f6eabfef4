"""Microsoft Philly (2017) readers: the per-job CSV and the raw ``cluster_job_log`` JSON.

``source = "philly"`` reads, by ``format``:

* ``"csv"`` (default): ``timestamp,duration,num_gpus,gpu_time,cluster`` as
  extracted by Pollux (rows not sorted). ``timestamp`` is the submit time,
  ``cluster`` the virtual cluster (VC) -> ``home_cluster`` and ``tenant``. The file has no
  job ids: a job is named ``philly-<n>`` after its data row (1 = first row).
* ``"raw"``: the original ``cluster_job_log``, a JSON list of jobs with
  ``jobid, status, vc, user, submitted_time, attempts``; each attempt has
  ``start_time, end_time`` and ``detail`` = the machines with their GPUs.

Options: ``vcs`` (VCs to keep; others are counted as ``"vc filtered"``),
``format``; raw only: ``status`` (statuses to keep, default all of
Pass/Killed/Failed) and ``duration`` (``"sum"`` default, or ``"last"``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from simsched.workloads.readers._common import (
    BadRow,
    check_header,
    csv_rows,
    field_count,
    finish,
    json_array_items,
    new_columns,
    parse_duration,
    parse_gpus,
    parse_timestamp,
    require_file,
)
from simsched.workloads.registry import Params, ReadContext, reader

CSV_HEADER = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
STATUSES = ("Pass", "Killed", "Failed")


@reader("philly")
def read_philly(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read a Philly trace, per-job CSV or raw JSON (see the module docstring)."""
    trace_format = params.get("format", str, "csv", choices=("csv", "raw"))
    vcs = params.get_list("vcs", str, None)
    if trace_format == "raw":
        statuses = params.get_list("status", str, None)
        if statuses is not None:
            for status in statuses:
                if status not in STATUSES:
                    raise params.error("status", f"unknown status {status!r}; valid: {', '.join(STATUSES)}")
        duration_rule = params.get("duration", str, "sum", choices=("sum", "last"))
        params.finish()
        return _read_raw(require_file(path), vcs, statuses, duration_rule, ctx)
    params.finish()
    return _read_csv(require_file(path), vcs, ctx)


def _read_csv(path: Path, vcs: list[str] | None, ctx: ReadContext) -> pd.DataFrame:
    check_header(path, CSV_HEADER)
    keep = None if vcs is None else set(vcs)
    columns = new_columns("home_cluster", "tenant")
    for number, (line, fields) in enumerate(csv_rows(path), start=1):
        ctx.report.rows_read += 1
        try:
            field_count(fields, len(CSV_HEADER))
            timestamp, duration, num_gpus, _gpu_time, vc = fields
            if keep is not None and vc not in keep:
                ctx.report.skip("vc filtered")
                continue
            submit = parse_timestamp(timestamp)
            duration_s = parse_duration(duration)
            gpus = parse_gpus(num_gpus)
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        columns["job_id"].append(f"philly-{number}")
        columns["submit"].append(submit)
        columns["duration"].append(duration_s)
        columns["gpus"].append(gpus)
        columns["home_cluster"].append(vc)
        columns["tenant"].append(vc)
    return finish(columns)


def _read_raw(path: Path, vcs: list[str] | None, statuses: list[str] | None,
              duration_rule: str, ctx: ReadContext) -> pd.DataFrame:
    """The raw ``cluster_job_log``.

    * duration: ``"sum"`` adds the run time of every attempt (retries occupy
      the cluster again, and Philly restarts a failed attempt from its last
      checkpoint at best); ``"last"`` takes the last attempt only.
    * attempts with ``start_time`` ``None`` never ran and are ignored; a job
      with no attempt that ran is skipped as ``"never started"``; a started
      attempt with ``end_time`` ``None`` (still running when the log was cut)
      skips the job as ``"unfinished attempt"``.
    * gpus: all GPUs listed in the last attempt's ``detail``; workers: its
      number of machines when they all hold the same GPU count, else left to
      the SPEC §2 rule.
    """
    keep_vcs = None if vcs is None else set(vcs)
    keep_statuses = None if statuses is None else set(statuses)
    columns = new_columns("workers", "home_cluster", "tenant")
    for line, job in json_array_items(path):
        ctx.report.rows_read += 1
        # user filters come first: a row the user drops is never an error
        status = job.get("status") if isinstance(job, dict) else None
        if keep_statuses is not None and status is not None and status not in keep_statuses:
            ctx.report.skip(f"status {status} filtered")
            continue
        vc = job.get("vc") if isinstance(job, dict) else None
        if keep_vcs is not None and vc is not None and vc not in keep_vcs:
            ctx.report.skip("vc filtered")
            continue
        try:
            job_id, status, vc, submit, duration, gpus, workers = _raw_job(job, duration_rule)
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        columns["job_id"].append(job_id)
        columns["submit"].append(submit)
        columns["duration"].append(duration)
        columns["gpus"].append(gpus)
        columns["workers"].append(workers)
        columns["home_cluster"].append(vc)
        columns["tenant"].append(vc)
    return finish(columns)


def _raw_job(job: Any, duration_rule: str) -> tuple[str, str, str, float, float, float, Any]:
    if not isinstance(job, dict):
        raise BadRow("job is not a JSON object")
    for key in ("jobid", "status", "vc", "submitted_time", "attempts"):
        if key not in job:
            raise BadRow(f"missing {key}")
    if not isinstance(job["attempts"], list):
        raise BadRow("attempts is not a list")
    submit = parse_timestamp(_text(job["submitted_time"]))
    runs: list[tuple[float, list]] = []  # (run time, detail) of attempts that ran
    for attempt in job["attempts"]:
        if not isinstance(attempt, dict):
            raise BadRow("attempt is not a JSON object")
        start_text = _text(attempt.get("start_time"))
        if start_text is None:
            continue
        end_text = _text(attempt.get("end_time"))
        if end_text is None:
            raise BadRow("unfinished attempt")
        run = parse_timestamp(end_text) - parse_timestamp(start_text)
        if run < 0:
            raise BadRow("attempt ends before it starts")
        runs.append((run, attempt.get("detail") or []))
    if not runs:
        raise BadRow("never started")
    duration = sum(r for r, _ in runs) if duration_rule == "sum" else runs[-1][0]
    per_machine = []
    for machine in runs[-1][1]:
        gpu_list = machine.get("gpus") if isinstance(machine, dict) else None
        if not isinstance(gpu_list, list):
            raise BadRow("bad attempt detail")
        per_machine.append(len(gpu_list))
    gpus = sum(per_machine)
    if gpus <= 0:
        raise BadRow("non-positive gpus")
    workers = len(per_machine) if len(set(per_machine)) == 1 else pd.NA
    return str(job["jobid"]), str(job["status"]), str(job["vc"]), submit, duration, float(gpus), workers


def _text(value: Any) -> str | None:
    """A timestamp field, with Philly's ``"None"`` / null / empty as ``None``."""
    if value is None:
        return None
    text = str(value).strip()
    return None if text in ("", "None", "null") else text
