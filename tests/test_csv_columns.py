"""The job CSV's columnar read (issue 35) gives what the row-by-row reader gives: the same table,
the same skip counts and, for a bad row, the same message naming the same line; and the engine's
job store built from the table's columns is the one built from a JobSpec per job."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core import jobstore
from simsched.core.engine import Engine, EngineConfig
from simsched.core.errors import InputError
from simsched.core.jobstore import JobSpecColumns
from simsched.core.model import ClusterSpec, Fleet, NodeGroup, builtin_gpu_types
from simsched.policies import ORDERINGS, PLACEMENTS
from simsched.policies.allocation import Home
from simsched.policies.queue import QueueScheduler
from simsched.workloads import csv_reader
from simsched.workloads.registry import Params, ReadContext
from simsched.workloads.table import normalize, to_job_specs

CLUSTERS, TYPES = ("c0", "c1"), ("V100", "T4")


def read(path: Path, strict: bool = False, rows_only: bool = False):
    """(table, skip report) of simsched's CSV reader; ``rows_only``: the row-by-row reader alone."""
    ctx = ReadContext(strict=strict, clusters=CLUSTERS, gpu_types=TYPES)
    params = Params({}, "workload", path.with_suffix(".toml"), path.parent)
    if not rows_only:
        return csv_reader.read_csv(path, params, ctx), ctx.report.as_dict()
    columnar = csv_reader._read_columns
    csv_reader._read_columns = lambda *args: None
    try:
        return csv_reader.read_csv(path, params, ctx), ctx.report.as_dict()
    finally:
        csv_reader._read_columns = columnar


def outcome(path: Path, strict: bool, rows_only: bool):
    try:
        return read(path, strict, rows_only)
    except InputError as exc:
        return str(exc)


def test_a_plain_file_is_read_by_columns(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit,duration,gpus,workers,deadline,gpu_type,allowed_types,tenant\n"
                    "b,5,10,16,2,100,T4,T4 | V100,alice\n"
                    "a,0,3.5,0.5,,,,,\n")

    def refuse(*args):
        raise AssertionError("read row by row")

    monkeypatch.setattr(csv_reader, "_read_rows", refuse)
    table, report = read(path)
    assert report == {"rows_read": 2, "skipped": 0, "by_reason": {}}
    assert table["job_id"].tolist() == ["a", "b"]  # sorted by submit
    assert table["submit"].tolist() == [0.0, 5.0] and table["gpus"].tolist() == [0.5, 16.0]
    assert table["workers"].tolist() == [pd.NA, 2] and str(table["workers"].dtype) == "Int64"
    assert table["allowed_types"].tolist() == [None, "T4|V100"]
    assert table["tenant"].tolist() == [None, "alice"]


def test_a_bad_row_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit,duration,gpus\na,0,1,1\nb,1,1_000,1\nc,2,1,1\n")
    with pytest.raises(InputError, match=r"jobs\.csv:3: bad duration: must be a number written with ASCII digits"):
        read(path, strict=True)
    table, report = read(path)
    assert table["job_id"].tolist() == ["a", "c"] and report["skipped"] == 1 and report["rows_read"] == 3


# cells a job CSV may hold: good ones and every kind of bad one the row rules name
NUMBERS = st.sampled_from(["0", "1", "2", "8", "16", "3.5", "0.25", ".5", "5.", "1e2", "+4", "-1", " 7", "1_0",
                           "inf", "nan", "1e400", "", "x", "0.0001", "1e12", "3.0", "１"])
TEXTS = {"home_cluster": ["", "c0", "c1", "c9"], "gpu_type": ["", "V100", "T4", "K80"],
         "allowed_types": ["", "T4", "V100|T4", "T4 |V100", "T4||V100", "T4|T4", "A100"],
         "tenant": ["", "alice", " bob "], "model": ["", "resnet50", "no-such-model"]}
OPTIONAL_NUMBERS = ("workers", "weight", "deadline")


@st.composite
def job_files(draw):
    optional = draw(st.lists(st.sampled_from(OPTIONAL_NUMBERS + tuple(TEXTS)), unique=True, max_size=4))
    header = ["job_id", "submit", "duration", "gpus", *optional]
    lines = [",".join(header)]
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["good", "good", "good", "any", "short", "blank"]))
        if kind == "blank":
            lines.append(draw(st.sampled_from(["", " , , ,"])))
            continue
        cells = [draw(st.sampled_from(["a", "b", "c", "d", "", " e "]))]
        for column in header[1:]:
            if column in TEXTS:
                cells.append(draw(st.sampled_from(TEXTS[column])))
            elif kind == "good":
                cells.append(draw(st.sampled_from(["", "1", "2"] if column in OPTIONAL_NUMBERS else ["0", "1", "4.5"])))
            else:
                cells.append(draw(NUMBERS))
        if kind == "short":
            cells = cells[:-1]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


@settings(max_examples=300)
@given(text=job_files(), strict=st.booleans(), chunk=st.sampled_from([2, 3, csv_reader.CHUNK_ROWS]))
def test_columns_and_rows_read_alike(tmp_path_factory, text: str, strict: bool, chunk: int) -> None:
    path = tmp_path_factory.mktemp("csv") / "jobs.csv"
    path.write_text(text, encoding="utf-8")
    rows = csv_reader.CHUNK_ROWS
    csv_reader.CHUNK_ROWS = chunk  # a file of several steps
    try:
        got = outcome(path, strict, False)
    finally:
        csv_reader.CHUNK_ROWS = rows
    want = outcome(path, strict, True)
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    pd.testing.assert_frame_equal(got[0], want[0], check_exact=True)
    assert got[1] == want[1]


@st.composite
def job_tables(draw):
    """Canonical job tables with the fields a job's home and placement options depend on."""
    n = draw(st.integers(1, 12))
    cell = st.sampled_from
    return normalize(pd.DataFrame({
        "job_id": [f"j{i}" for i in range(n)],
        "submit": draw(st.lists(cell([0.0, 1.0, 2.5]), min_size=n, max_size=n)),
        "duration": [10.0] * n,
        "gpus": draw(st.lists(cell([0.5, 1.0, 2.0, 8.0, 12.0, 16.0]), min_size=n, max_size=n)),
        "workers": draw(st.lists(cell([None, 1, 2, 4]), min_size=n, max_size=n)),
        "weight": draw(st.lists(cell([None, 1, 3]), min_size=n, max_size=n)),
        "deadline": draw(st.lists(cell([math.nan, 50.0]), min_size=n, max_size=n)),
        "home_cluster": draw(st.lists(cell([None, "c0", "c1"]), min_size=n, max_size=n)),
        "gpu_type": draw(st.lists(cell([None, "V100", "T4"]), min_size=n, max_size=n)),
        "allowed_types": draw(st.lists(cell([None, "T4", "V100|T4"]), min_size=n, max_size=n)),
        "tenant": draw(st.lists(cell([None, "alice", "bob"]), min_size=n, max_size=n)),
        "model": [None] * n,
    }))


@settings(max_examples=100)
@given(table=job_tables(), home=st.booleans())
def test_the_store_from_columns_is_the_store_from_specs(table: pd.DataFrame, home: bool) -> None:
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(2, 8, "V100"),)), ClusterSpec("c1", (NodeGroup(2, 4, "T4"),))),
                  builtin_gpu_types())
    columns = to_job_specs(table, fleet.largest_node)
    assert isinstance(columns, JobSpecColumns)
    specs = list(columns)
    assert columns[1:3] == specs[1:3]
    stores = [Engine(fleet, jobs, QueueScheduler(ORDERINGS["fifo"], PLACEMENTS["first_fit"](), Home(), True),
                     EngineConfig(restrict_to_home=home)).jobs for jobs in (columns, specs)]
    for name in ("submit", "duration", "gpus", "workers", "weight", "deadline", "tenant", "home", "option_set"):
        got, want = getattr(stores[0], name), getattr(stores[1], name)
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=True), name
    assert stores[0].job_ids == stores[1].job_ids
    assert stores[0].option_sets == stores[1].option_sets
    assert stores[0].tenants.values == stores[1].tenants.values
    first, shape = columns.shapes()
    jobstore.SHAPE_KEYS = 0  # the row-wise unique, for shapes beyond one int64 key
    try:
        wide = columns.shapes()
    finally:
        jobstore.SHAPE_KEYS = 2**62
    assert np.array_equal(first, wide[0]) and np.array_equal(shape, wide[1])
