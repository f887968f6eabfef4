"""Trace readers (SPEC §5): real samples against their SOURCE.md, hand-made fixtures exactly."""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from simsched.core.errors import InputError
from simsched.workloads.readers.helios import read_helios
from simsched.workloads.readers.itp import read_itp
from simsched.workloads.readers.openb import read_openb
from simsched.workloads.readers.pai import read_pai
from simsched.workloads.readers.philly import read_philly
from simsched.workloads.registry import READERS, Params, ReadContext
from simsched.workloads.table import JOB_COLUMNS

DATA = Path(__file__).parent / "data"


def read(fn, path: Path, strict: bool = False, **options) -> tuple[pd.DataFrame, ReadContext]:
    ctx = ReadContext(strict=strict)
    df = fn(Path(path), Params(options, "workload"), ctx)
    assert list(df.columns) == list(JOB_COLUMNS)
    return df, ctx


def histogram(values: pd.Series) -> dict[float, int]:
    return dict(sorted(Counter(values.tolist()).items()))


def rows(df: pd.DataFrame, *cols: str) -> list[tuple]:
    return [tuple(None if v is pd.NA else v for v in r) for r in df[list(cols)].itertuples(index=False)]


def test_all_readers_registered() -> None:
    import simsched.workloads.readers  # noqa: F401

    assert {"philly", "pai", "helios", "itp", "openb"} <= set(READERS)


# ---------------------------------------------------------------- philly csv
def test_philly_csv_matches_source(traces_dir: Path) -> None:
    df, ctx = read(read_philly, traces_dir / "philly/pollux_philly.csv")
    assert ctx.report.rows_read == 82247 and ctx.report.skipped == 0
    assert len(df) == 82247 and df["job_id"].is_unique
    assert histogram(df["gpus"]) == {1: 76627, 2: 1818, 4: 1870, 8: 1643, 12: 7, 16: 199,
                                     24: 7, 32: 67, 64: 6, 128: 3}
    vcs = df["home_cluster"].value_counts()
    assert len(vcs) == 15 and vcs["6214e9"] == 41226 and vcs["795a4c"] == 3
    span = (datetime(2017, 12, 22, 8, 2, 11) - datetime(2017, 9, 4, 10, 30, 41)).total_seconds()
    assert df["submit"].min() == 0 and df["submit"].max() == span
    assert df["submit"].is_monotonic_increasing
    first = df.set_index("job_id").loc["philly-1"]  # first data row of the file
    assert (first["duration"], first["gpus"], first["home_cluster"]) == (66.0, 1.0, "11cb48")


def test_philly_csv_vc_filter_is_counted_not_an_error(traces_dir: Path) -> None:
    df, ctx = read(read_philly, traces_dir / "philly/pollux_philly.csv", strict=True,
                   vcs=["103959", "23dbec"])
    assert len(df) == 1934 + 8
    assert ctx.report.as_dict()["by_reason"] == {"vc filtered": 82247 - 1942}


# ---------------------------------------------------------------- philly raw
RAW = DATA / "philly_cluster_job_log_sample.json"


def test_philly_raw_fixture_exact() -> None:
    df, ctx = read(read_philly, RAW, format="raw")
    assert rows(df, "job_id", "submit", "duration", "gpus", "workers", "home_cluster") == [
        ("application_1506638472019_10238", 0.0, 3600.0, 1.0, 1, "11cb48"),
        ("application_1506638472019_10239", 240.0, 600.0 + 1800.0, 4.0, 1, "6214e9"),
        ("application_1506638472019_10240", 5400.0, 7200.0, 16.0, 2, "6214e9"),
        ("application_1506638472019_10241", 10740.0, 100.0, 2.0, 1, "b436b2"),
        ("application_1506638472019_10244", 24900.0, 1800.0, 12.0, None, "b436b2"),
    ]
    assert ctx.report.as_dict() == {"rows_read": 7, "skipped": 2,
                                    "by_reason": {"unfinished attempt": 1, "never started": 1}}


def test_philly_raw_last_attempt_and_status_filter() -> None:
    df, ctx = read(read_philly, RAW, format="raw", duration="last", status=["Killed"])
    # the two unusable Killed jobs are still reported; Pass/Failed ones are filtered
    assert rows(df, "job_id", "duration") == [("application_1506638472019_10239", 1800.0)]
    assert ctx.report.counts == Counter({"status Pass filtered": 3, "status Failed filtered": 1,
                                         "unfinished attempt": 1, "never started": 1})


def test_philly_raw_strict_names_the_line_of_the_job() -> None:
    with pytest.raises(InputError, match=rf"^{RAW}:66: unfinished attempt"):
        read(read_philly, RAW, strict=True, format="raw")
    # filtered jobs are never errors, even in strict mode
    df, _ = read(read_philly, RAW, strict=True, format="raw", status=["Pass", "Failed"],
                 vcs=["6214e9", "b436b2", "11cb48"])
    assert len(df) == 4


def test_philly_raw_invalid_json(tmp_path: Path) -> None:
    bad = tmp_path / "log.json"
    bad.write_text('[\n {"jobid": "a"},\n {"jobid": \n]\n')
    with pytest.raises(InputError, match=rf"^{bad}:4: invalid JSON"):
        read(read_philly, bad, format="raw")


# ---------------------------------------------------------------- PAI
PAI_JOBS = DATA / "pai_job_table_sample.csv"
PAI_TASKS = DATA / "pai_task_table_sample.csv"


def test_pai_fixture_exact() -> None:
    df, ctx = read(read_pai, PAI_JOBS, task_table=str(PAI_TASKS))
    assert rows(df, "job_id", "submit", "duration", "gpus", "gpu_type") == [
        ("4a8b3c0d1e2f3a4b5c6d7e8f", 0.0, 3600.0, 2.0, "V100"),  # 2 x 100 %, ps task CPU only
        ("5b9c4d1e2f3a4b5c6d7e8f90", 200.0, 1200.0, 0.5, "T4"),  # plan_gpu 50 = half a GPU
        ("8ecf7a4b5c6d7e8f90011223", 1000.0, 7200.0, 8.0, "MISC"),
        ("9fd08b5c6d7e8f9001122334", 1100.0, 600.0, 2.0, None),  # MISC + P100 tasks
    ]
    assert ctx.report.as_dict() == {
        "rows_read": 8, "skipped": 4,
        "by_reason": {"status Failed filtered": 1, "status Running filtered": 1,
                      "CPU-only job": 1, "no tasks": 1},
    }


def test_pai_status_option_and_required_task_table() -> None:
    df, _ = read(read_pai, PAI_JOBS, task_table=str(PAI_TASKS), status=["Failed"])
    assert rows(df, "job_id", "submit", "duration", "gpus", "gpu_type") == [
        ("6cad5e2f3a4b5c6d7e8f9001", 0.0, 50.0, 1.0, "P100")]
    with pytest.raises(InputError, match="workload.task_table: is required"):
        read(read_pai, PAI_JOBS)
    with pytest.raises(InputError, match="workload.status: unknown status 'Done'"):
        read(read_pai, PAI_JOBS, task_table=str(PAI_TASKS), status=["Done"])


def test_pai_bad_task_row(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.csv"
    lines = PAI_TASKS.read_text().splitlines()
    lines[2] = lines[2].replace(",50.0,", ",fifty,")  # the only task of the T4 job
    tasks.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=rf"^{tasks}:3: task: bad plan_gpu"):
        read(read_pai, PAI_JOBS, strict=True, task_table=str(tasks))
    df, ctx = read(read_pai, PAI_JOBS, task_table=str(tasks))
    assert len(df) == 3 and ctx.report.counts["task: bad plan_gpu"] == 1
    assert ctx.report.counts["no tasks"] == 2


# ---------------------------------------------------------------- Helios
HELIOS = DATA / "helios_cluster_log_sample.csv"


def test_helios_fixture_exact() -> None:
    df, ctx = read(read_helios, HELIOS)
    assert rows(df, "job_id", "submit", "duration", "gpus", "workers", "home_cluster") == [
        ("5411462", 0.0, 600.0, 1.0, 1, "vcEwI"),
        ("5411464", 115.0, 3600.0, 16.0, 2, "vcEwI"),
        ("5411465", 175.0, 0.0, 8.0, 1, "vcWoR"),  # cancelled before it started
        ("5411466", 235.0, 86400.0, 4.0, 1, "vcHvQ"),
        ("5411467", 295.0, 120.0, 2.0, 1, "vcEwI"),  # empty duration: end - start
        ("5411468", 355.0, 1200.0, 12.0, 2, "vcHvQ"),
    ]
    assert ctx.report.as_dict() == {"rows_read": 7, "skipped": 1, "by_reason": {"CPU-only job": 1}}


def test_helios_filters() -> None:
    df, ctx = read(read_helios, HELIOS, strict=True, status=["COMPLETED", "FAILED"], vcs=["vcEwI"])
    assert df["job_id"].tolist() == ["5411462", "5411464", "5411467"]
    assert ctx.report.counts == Counter({"CPU-only job": 1, "status CANCELLED filtered": 1,
                                        "status TIMEOUT filtered": 1,
                                        "status NODE_FAIL filtered": 1})


# ---------------------------------------------------------------- ITP
ITP_ROWS = {"cluster01": 1595, "cluster02": 5778, "cluster03": 3011, "cluster04": 15802,
            "cluster05": 3629, "cluster06": 2396, "cluster07": 12699, "cluster08": 13047,
            "cluster09": 11134, "cluster10": 260}


def test_itp_directory_matches_source(traces_dir: Path) -> None:
    df, ctx = read(read_itp, traces_dir / "microsoft-itp-2021")
    assert ctx.report.rows_read == 69351 and ctx.report.skipped == 0
    assert df["home_cluster"].value_counts().to_dict() == ITP_ROWS
    assert histogram(df["gpus"]) == {1: 57682, 2: 1483, 4: 2371, 8: 7009, 16: 381, 32: 354, 64: 71}
    assert df["submit"].min() == 0 and df["job_id"].is_unique
    # one collection clock: the earliest job (cluster07, t = 1999 s) defines 0
    cluster01 = df[df["home_cluster"] == "cluster01"]
    assert cluster01["submit"].min() == 1932025 - 1999
    # roughly 60 days (2021-03-04 .. 2021-05-03)
    assert 59 < df["submit"].max() / 86400 < 61


def test_itp_single_file_and_vcs(traces_dir: Path) -> None:
    df, _ = read(read_itp, traces_dir / "microsoft-itp-2021/cluster10.csv")
    assert len(df) == 260 and set(df["home_cluster"]) == {"cluster10"}
    assert df["submit"].min() == 0
    df, _ = read(read_itp, traces_dir / "microsoft-itp-2021", vcs=["cluster01", "cluster10"])
    assert len(df) == 1595 + 260
    with pytest.raises(InputError, match="workload.vcs: no file for 'cluster99'"):
        read(read_itp, traces_dir / "microsoft-itp-2021", vcs=["cluster99"])


# ---------------------------------------------------------------- openb
OPENB_NUM_GPU = {0: 1088, 1: 6989, 2: 16, 4: 15, 8: 44}


def test_openb_default_matches_source(traces_dir: Path) -> None:
    df, ctx = read(read_openb, traces_dir / "alibaba-gpu-2023/openb_pod_list_default.csv",
                   pending="keep")
    assert ctx.report.as_dict() == {"rows_read": 8152, "skipped": 1088,
                                    "by_reason": {"CPU-only pod": 1088}}
    demand = histogram(df["gpus"].map(math.ceil))
    assert demand == {k: v for k, v in OPENB_NUM_GPU.items() if k}
    shared = df[df["gpus"] < 1]
    assert len(shared) > 0 and (shared["gpus"] > 0).all()
    assert df["allowed_types"].isna().all()  # the default file has no gpu_spec
    assert df["submit"].min() == 0 and df["submit"].max() <= 12_901_761
    assert (df["duration"] >= 0).all()


def test_openb_pending_skipped_by_default(traces_dir: Path) -> None:
    df, ctx = read(read_openb, traces_dir / "alibaba-gpu-2023/openb_pod_list_default.csv",
                   strict=True)
    counts = ctx.report.counts
    # 897 Pending pods, some of them CPU-only (counted as such first)
    assert counts["CPU-only pod"] == 1088 and 0 < counts["pending (never scheduled)"] <= 897
    assert len(df) + ctx.report.skipped == 8152


def test_openb_gpu_spec_to_allowed_types(traces_dir: Path) -> None:
    path = traces_dir / "alibaba-gpu-2023/openb_pod_list_gpuspec33.csv"
    df, _ = read(read_openb, path, pending="keep", type_map={"G2": "G2", "G3": "G3"})
    allowed = df["allowed_types"].value_counts()
    assert allowed["T4"] == 1291 and allowed["G2"] == 331 and allowed["P100"] == 279
    # "V100M16|V100M32|V100M32" in the file: duplicates dropped
    assert allowed["V100M16|V100M32"] == 141 + 22
    df, _ = read(read_openb, path, pending="keep")  # default map: G1/G2/G3 -> V100
    assert not df["allowed_types"].dropna().str.contains("G").any()


# ---------------------------------------------------------------- errors, all readers
PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster"
ITP_HEADER = "job_id,submission_time,duration,num_gpu"
OPENB_HEADER = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
                "creation_time,deletion_time,scheduled_time")
HELIOS_LINES = HELIOS.read_text().splitlines()
PAI_LINES = PAI_JOBS.read_text().splitlines()
BAD_ROWS = [
    # reader, header, (good row, bad row, good row), reason, options
    (read_philly, PHILLY_HEADER,
     ("2017-10-09 07:01:55,66.0,1,66.0,vc1", "2017-13-09 07:01:55,66.0,1,66.0,vc1",
      "2017-10-09 07:02:55,60.0,2,120.0,vc1"), "unparseable timestamp", {}),
    (read_philly, PHILLY_HEADER,
     ("2017-10-09 07:01:55,66.0,1,66.0,vc1", "2017-10-09 07:01:55,66.0,0,0.0,vc1",
      "2017-10-09 07:02:55,60.0,2,120.0,vc1"), "non-positive gpus", {}),
    (read_itp, ITP_HEADER, ("a,10,20,1", "b,10,-5,1", "c,11,20,1"), "negative duration", {}),
    (read_itp, ITP_HEADER, ("a,10,20,1", "b,10,20", "c,11,20,1"), "wrong field count", {}),
    (read_helios, HELIOS_LINES[0],
     (HELIOS_LINES[1], "9,u,vc,2,8,1,COMPLETED,yesterday,,,60,0", HELIOS_LINES[3]),
     "unparseable timestamp", {}),
    (read_openb, OPENB_HEADER,
     ("p0,1000,1024,1,1000,,LS,Running,0,100,5", "p1,1000,1024,2,500,,LS,Running,0,100,5",
      "p2,1000,1024,1,250,,LS,Running,1,100,5"), "shared multi-GPU pod", {}),
    (read_pai, None, (PAI_LINES[0], "x,i,u,Terminated,soon,2000.0", PAI_LINES[1]),
     "bad start_time", {"task_table": str(PAI_TASKS)}),
]


@pytest.mark.parametrize("fn, header, lines, reason, options", BAD_ROWS,
                         ids=[f"{c[0].__name__}-{c[3]}" for c in BAD_ROWS])
def test_bad_row_strict_and_counted(tmp_path: Path, fn, header, lines, reason, options) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(([header] if header else []) + list(lines)) + "\n")
    bad_line = 3 if header else 2
    with pytest.raises(InputError, match=rf"^{path}:{bad_line}: {re.escape(reason)}") as info:
        read(fn, path, strict=True, **options)
    assert "\n" not in str(info.value)
    df, ctx = read(fn, path, **options)
    assert [r for r in ctx.report.counts if r.startswith(reason)] != []
    assert ctx.report.skipped == 1 and ctx.report.rows_read == 3 and len(df) == 2


@pytest.mark.parametrize("fn", [read_philly, read_helios, read_itp, read_openb])
def test_missing_file_and_unknown_option(tmp_path: Path, fn) -> None:
    with pytest.raises(InputError, match="file not found"):
        read(fn, tmp_path / "nope.csv")
    with pytest.raises(InputError, match="workload.colour: unknown key"):
        read(fn, tmp_path / "nope.csv", colour="red")


def test_wrong_header_is_named(tmp_path: Path) -> None:
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit,duration,gpus\na,0,1,1\n")
    with pytest.raises(InputError, match=rf"^{path}:1: header"):
        read(read_itp, path)
