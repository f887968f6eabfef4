"""Alibaba PAI 2020 (cluster-trace-gpu-v2020) reader: the raw headerless job and task tables.

``source = "pai"``, ``path`` = ``pai_job_table.csv``
(``job_name,inst_id,user,status,start_time,end_time``) and option
``task_table`` = ``pai_task_table.csv`` (``job_name,task_name,inst_num,
status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type``). One job
per ``job_name``:

* submit = the earliest start time of the job row and its tasks; the job
  table has no separate submission time, so any queueing before the first
  task started is part of the duration.
* duration = latest end - earliest start over the job row and its tasks. A
  job with no end time (still running at trace end) is skipped as
  ``"no end_time"``.
* gpus = sum over its tasks of ``inst_num x plan_gpu / 100`` (``plan_gpu`` is
  percent of one GPU, so 50 = half a GPU: fractional jobs stay fractional).
  A job whose tasks ask for no GPU is skipped as ``"CPU-only job"`` (a
  legitimate job of the trace, so never an error in strict mode).
* gpu_type = the tasks' ``gpu_type`` when the GPU tasks name exactly one
  (e.g. ``MISC``, ``T4``), else none.
* ``status`` (list, default ``["Terminated"]``) keeps jobs with those statuses
  (Running / Terminated / Failed / Waiting); others count as
  ``"status <s> filtered"``.
* tenant: option ``tenant = "user"`` (default: the job table's ``user``),
  ``"group"`` (the ``group`` of the job's ``inst_id`` in the headerless
  ``group_table`` = ``pai_group_tag_table.csv``, ``inst_id,user,
  gpu_type_spec,group,workload``; a job without a group row gets its user)
  or ``"none"``.

``rows_read`` counts job-table rows; malformed task rows are reported with
the task table's file and line, and a job left with no usable task is
skipped as ``"no tasks"``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from simsched.workloads.readers._common import (
    BadRow,
    csv_rows,
    field_count,
    finish,
    new_columns,
    parse_number,
    require_file,
)
from simsched.workloads.registry import Params, ReadContext, reader

JOB_FIELDS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
TASK_FIELDS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
               "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")
STATUSES = ("Running", "Terminated", "Failed", "Waiting")


@dataclass
class _TaskSummary:
    """What a job's tasks add up to."""

    gpus: float = 0.0
    start: float = float("inf")
    end: float = float("-inf")
    gpu_types: set[str] = field(default_factory=set)


@reader("pai")
def read_pai(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read PAI's job table joined with its task table (see the module docstring)."""
    task_path = params.get_path("task_table", Path(params.file).parent)
    statuses = params.get_list("status", str, ["Terminated"])
    tenant_rule = params.get("tenant", str, "user", choices=("user", "group", "none"))
    group_path = params.get_path("group_table", Path(params.file).parent) if tenant_rule == "group" else None
    for status in statuses:
        if status not in STATUSES:
            raise params.error("status", f"unknown status {status!r}; valid: {', '.join(STATUSES)}")
    params.finish()
    require_file(path, "PAI job table")
    require_file(task_path, "workload.task_table")
    tasks = _read_tasks(task_path, ctx)
    groups = _read_groups(require_file(group_path, "workload.group_table"), ctx) if group_path else None
    return _read_jobs(path, tasks, set(statuses), ctx, tenant_rule, groups)


def _read_groups(path: Path, ctx: ReadContext) -> dict[str, str]:
    """``inst_id`` -> ``group`` from the headerless group tag table (rows without a group are left out)."""
    groups: dict[str, str] = {}
    for line, fields in csv_rows(path, header=False):
        if len(fields) != 5:
            ctx.bad_row(path, line, f"group table: expected 5 fields (inst_id,user,gpu_type_spec,group,workload), "
                                    f"got {len(fields)}")
            continue
        if fields[3].strip():
            groups[fields[0]] = fields[3].strip()
    return groups


def _optional_time(text: str, what: str) -> float | None:
    return None if text.strip() == "" else parse_number(text, what)


def _read_tasks(path: Path, ctx: ReadContext) -> dict[str, _TaskSummary]:
    """Stream the task table once, keeping a small summary per job."""
    tasks: dict[str, _TaskSummary] = {}
    for line, fields in csv_rows(path, header=False):
        try:
            field_count(fields, len(TASK_FIELDS))
            job_name = fields[0]
            inst_num = parse_number(fields[2] or "1", "inst_num")
            start = _optional_time(fields[4], "start_time")
            end = _optional_time(fields[5], "end_time")
            plan_gpu = 0.0 if fields[8].strip() == "" else parse_number(fields[8], "plan_gpu")
            if inst_num < 0 or plan_gpu < 0:
                raise BadRow("negative inst_num or plan_gpu")
        except BadRow as bad:
            ctx.bad_row(path, line, f"task: {bad.reason}")
            continue
        summary = tasks.setdefault(job_name, _TaskSummary())
        gpus = inst_num * plan_gpu / 100.0
        summary.gpus += gpus
        if start is not None:
            summary.start = min(summary.start, start)
        if end is not None:
            summary.end = max(summary.end, end)
        gpu_type = fields[9].strip()
        if gpus > 0 and gpu_type:
            summary.gpu_types.add(gpu_type)
    return tasks


def _read_jobs(path: Path, tasks: dict[str, _TaskSummary], statuses: set[str],
               ctx: ReadContext, tenant_rule: str = "user", groups: dict[str, str] | None = None) -> pd.DataFrame:
    columns = new_columns("gpu_type", "tenant")
    seen: set[str] = set()
    for line, fields in csv_rows(path, header=False):
        ctx.report.rows_read += 1
        try:
            field_count(fields, len(JOB_FIELDS))
            job_name, status = fields[0], fields[3]
            if job_name in seen:
                raise BadRow("duplicate job_name")
            seen.add(job_name)
            if status not in statuses:
                ctx.report.skip(f"status {status} filtered")
                continue
            start = _optional_time(fields[4], "start_time")
            end = _optional_time(fields[5], "end_time")
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        summary = tasks.get(job_name)
        if summary is None:
            ctx.report.skip("no tasks")
            continue
        if summary.gpus <= 0:
            ctx.report.skip("CPU-only job")
            continue
        first = min(summary.start, start if start is not None else float("inf"))
        last = max(summary.end, end if end is not None else float("-inf"))
        if first == float("inf"):
            ctx.bad_row(path, line, "no start_time")
            continue
        if last == float("-inf"):
            ctx.report.skip("no end_time")
            continue
        if last < first:
            ctx.bad_row(path, line, "ends before it starts")
            continue
        columns["job_id"].append(job_name)
        columns["submit"].append(first)
        columns["duration"].append(last - first)
        columns["gpus"].append(summary.gpus)
        types = summary.gpu_types
        columns["gpu_type"].append(next(iter(types)) if len(types) == 1 else None)
        user = fields[2].strip() or None
        if tenant_rule == "group" and groups is not None:
            user = groups.get(fields[1], user)
        columns["tenant"].append(None if tenant_rule == "none" else user)
    return finish(columns)
