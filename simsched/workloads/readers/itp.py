"""Microsoft ITP (2021) reader: ``job_id,submission_time,duration,num_gpu`` per cluster.

``source = "itp"``; ``path`` is one ``clusterNN.csv`` or a directory, then
every ``cluster*.csv`` in it (sorted by name). Each file's stem (``cluster04``)
becomes the jobs' ``home_cluster`` and ``tenant``: the ten ITP clusters stand in for
tenants sharing one simulated fleet. ``submission_time`` counts from the
same collection start in every file, so the files keep their relative
offsets and the earliest job over all files submits at 0. Option ``vcs``
keeps only the listed stems (in directory mode, unlisted files are not read).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from simsched.core.errors import InputError
from simsched.workloads.readers._common import (
    BadRow,
    check_header,
    csv_rows,
    field_count,
    finish,
    new_columns,
    parse_duration,
    parse_gpus,
    parse_number,
    require_file,
)
from simsched.workloads.registry import Params, ReadContext, reader

HEADER = ("job_id", "submission_time", "duration", "num_gpu")


@reader("itp")
def read_itp(path: Path, params: Params, ctx: ReadContext) -> pd.DataFrame:
    """Read one ITP cluster file or a directory of them (see the module docstring)."""
    vcs = params.get_list("vcs", str, None)
    params.finish()
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("cluster*.csv"))
        if not files:
            raise InputError(f"{path}: no cluster*.csv files in this directory")
        if vcs is not None:
            unknown = sorted(set(vcs) - {f.stem for f in files})
            if unknown:
                valid = ", ".join(f.stem for f in files)
                raise params.error("vcs", f"no file for {unknown[0]!r} in {path}; valid: {valid}")
            files = [f for f in files if f.stem in set(vcs)]
    else:
        files = [require_file(path)]
    columns = new_columns("home_cluster", "tenant")
    for file in files:
        _read_file(file, vcs, columns, ctx)
    return finish(columns)


def _read_file(path: Path, vcs: list[str] | None, columns: dict[str, list],
               ctx: ReadContext) -> None:
    check_header(path, HEADER)
    home = path.stem
    for line, fields in csv_rows(path):
        ctx.report.rows_read += 1
        try:
            field_count(fields, len(HEADER))
            job_id, submission_time, duration, num_gpu = fields
            submit = parse_number(submission_time, "submission_time")
            duration_s = parse_duration(duration)
            gpus = parse_gpus(num_gpu)
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        if vcs is not None and home not in vcs:
            ctx.report.skip("vc filtered")
            continue
        columns["job_id"].append(job_id)
        columns["submit"].append(submit)
        columns["duration"].append(duration_s)
        columns["gpus"].append(gpus)
        columns["home_cluster"].append(home)
        columns["tenant"].append(home)
