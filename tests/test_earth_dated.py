"""Earth as it really was (issue 36, build 6): the derived hourly tables, the ``helios_demand``
generator, scenarios/helios/earth_dated.toml and the validator's per-VC table."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simsched
from simsched.config.overrides import apply_overrides
from simsched.config.quota_table import read_quota_table
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, Fleet, NodeGroup, builtin_gpu_types
from simsched.workloads.registry import GENERATORS, Params
from simsched.workloads.vc_hourly import (
    COLUMNS,
    VcHourly,
    correlation,
    daily_means,
    read_vc_hourly,
    read_vc_sizes,
)
from tests.conftest import REPO

EARTH = REPO / "workloads" / "helios" / "earth"
HOURLY = EARTH / "earth_vcs_hourly.csv"
SIZES = EARTH / "earth_vc_sizes.csv"
SCENARIO = REPO / "scenarios" / "helios" / "earth_dated.toml"
FLEET = Fleet((ClusterSpec("earth", (NodeGroup(107, 8, "V100"),)),), builtin_gpu_types())


def tool():
    spec = importlib.util.spec_from_file_location("validate_helios", REPO / "tools" / "validate_helios.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_hourly(path: Path, rows: list[dict]) -> Path:
    """A table of the loader's columns; a column not given is 0."""
    frame = pd.DataFrame([{column: row.get(column, 0) for column in COLUMNS} for row in rows])
    frame.to_csv(path, index=False)
    return path


def hours(vc: str, n: int, start: str = "2020-05-01", **columns) -> list[dict]:
    """``n`` consecutive hours of ``vc``; a column's value is a number (every hour) or a list."""
    base = pd.Timestamp(start)
    out = []
    for k in range(n):
        row = {"hour": f"{base + pd.Timedelta(hours=k):%Y-%m-%d %H:%M}", "vc": vc}
        for key, value in columns.items():
            row[key] = value[k] if isinstance(value, list) else value
        out.append(row)
    return out


# -- the derived data and its loader ---------------------------------------------------------------
def test_the_shipped_hourly_table_is_may_2020_of_16_vcs_holding_856_gpus() -> None:
    table = read_vc_hourly(HOURLY)
    assert table.start == datetime(2020, 5, 1, 0, 0)
    assert table.hours == 31 * 24 and len(table.vcs) == 16
    assert sum(float(table.column("total_gpu", vc).mean()) for vc in table.vcs) == 856
    # the first look: monthly utilisation 0.01 (vcJkd) .. 0.91 (vcgkz, vcpDC); pending jobs 0 .. 1.97
    util = {vc: table.column("running_gpu", vc).mean() / table.column("total_gpu", vc).mean() for vc in table.vcs}
    assert round(util["vcJkd"], 2) == 0.01 and round(util["vcgkz"], 2) == 0.91 and round(util["vcpDC"], 2) == 0.91
    assert round(float(table.column("pending_jobs", "vcpDC").mean()), 2) == 1.97


def test_the_shipped_quota_table_follows_each_vcs_total_gpus() -> None:
    schedule = read_quota_table(EARTH / "earth_vc_quotas.csv", None, "quota_start", "earth", 856)
    table = read_vc_hourly(HOURLY)
    assert len(schedule.times) == 31 and schedule.times[1] == 86_400.0
    for day in range(31):
        for vc, gpus in zip(schedule.tenants, schedule.gpus[day]):
            assert gpus == table.column("total_gpu", vc)[24 * day:24 * (day + 1)].max()


def test_the_shipped_sizes_are_whole_gpus_within_their_class() -> None:
    sizes = read_vc_sizes(SIZES)
    assert set(vc for vc, _ in sizes) == set(read_vc_hourly(HOURLY).vcs)
    gpus, starts = sizes[("vc3sl", "ge8")]
    assert dict(zip(gpus, starts)) == {8: 132, 16: 8, 24: 6, 32: 1}


def test_a_hand_written_table_loads_by_vc_and_hour(tmp_path: Path) -> None:
    path = write_hourly(tmp_path / "h.csv", hours("vcA", 3, total_gpu=8, running_gpu=[1, 2, 3])
                        + hours("vcB", 3, total_gpu=16, pending_jobs=[0.5, 0, 0]))
    table = read_vc_hourly(path)
    assert table.vcs == ("vcA", "vcB") and table.hours == 3
    assert table.column("running_gpu", "vcA").tolist() == [1, 2, 3]
    assert table.column("pending_jobs", "vcB").tolist() == [0.5, 0, 0]


@pytest.mark.parametrize("rows, says", [
    (hours("vcA", 2, running_gpu=[1, -1]), r"h.csv:3: running_gpu = '-1' must be a number >= 0"),
    (hours("vcA", 2, total_gpu=["x", 1]), r"h.csv:2: total_gpu = 'x' must be a number >= 0"),
    (hours("vcA", 2) + hours("vcB", 2, start="2020-05-02"), r"h.csv:4: VC vcB does not cover the same hours"),
    (hours("vcA", 1) + hours("vcA", 1, start="2020-05-01 02:00"), r"the hours of vcA must be consecutive"),
])
def test_a_bad_hourly_table_is_refused_naming_its_line(tmp_path: Path, rows: list[dict], says: str) -> None:
    with pytest.raises(InputError, match=says):
        read_vc_hourly(write_hourly(tmp_path / "h.csv", rows))


def test_a_bad_header_and_a_missing_file_are_refused(tmp_path: Path) -> None:
    (tmp_path / "h.csv").write_text("hour,vc,gpus\n2020-05-01 00:00,vcA,1\n")
    with pytest.raises(InputError, match=r"h.csv:1: the header must be hour,vc,total_gpu"):
        read_vc_hourly(tmp_path / "h.csv")
    with pytest.raises(InputError, match="hourly VC table not found"):
        read_vc_hourly(tmp_path / "none.csv")


def test_a_size_outside_its_class_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("vc,size_class,gpus,starts\nvcA,lt8,8,3\n")
    with pytest.raises(InputError, match=r"s.csv:2: gpus = 8 must be >= 1 and in its class \(lt8: < 8 GPUs\)"):
        read_vc_sizes(tmp_path / "s.csv")


def test_daily_means_and_correlation() -> None:
    assert daily_means(np.arange(50.0)).tolist() == [11.5, 35.5]  # the last partial day dropped
    assert correlation(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0])) == pytest.approx(1.0)
    assert math.isnan(correlation(np.array([1.0, 1.0]), np.array([1.0, 2.0])))


# -- the generator ---------------------------------------------------------------------------------
def generate(options: dict, seed: int = 1, fleet: Fleet = FLEET) -> pd.DataFrame:
    return GENERATORS["helios_demand"](Params(options, "workload", base_dir=REPO), np.random.default_rng(seed), fleet)


def test_one_measured_job_is_replayed_with_its_run_time(tmp_path: Path) -> None:
    # vcA: 8 GPUs arrive and start in hour 0, end in hour 3, nothing else; sizes seen: 8 only
    (tmp_path / "s.csv").write_text("vc,size_class,gpus,starts\nvcA,ge8,8,1\n")
    path = write_hourly(tmp_path / "h.csv", hours("vcA", 5, total_gpu=8, arrived_gpu_ge8=[8, 0, 0, 0, 0],
                                                  started_gpu_ge8=[8, 0, 0, 0, 0], ended_gpu_ge8=[0, 0, 0, 8, 0],
                                                  running_gpu_ge8=[4, 8, 8, 4, 0]))
    jobs = generate({"demand_file": str(path), "sizes_file": str(tmp_path / "s.csv"), "warm_start": False})
    assert len(jobs) == 1
    job = jobs.iloc[0]
    assert job["tenant"] == "vcA" and job["gpus"] == 8 and job["workers"] == 1
    assert 0 <= job["submit"] < 3600
    assert 2 * 3600 < job["duration"] < 4 * 3600  # started in hour 0, ended in hour 3


def test_the_warm_start_submits_the_first_hours_running_gpus_at_zero(tmp_path: Path) -> None:
    (tmp_path / "s.csv").write_text("vc,size_class,gpus,starts\nvcA,ge8,16,1\n")
    path = write_hourly(tmp_path / "h.csv", hours("vcA", 2, total_gpu=64, running_gpu_ge8=32,
                                                  ended_gpu_ge8=[0, 32]))
    jobs = generate({"demand_file": str(path), "sizes_file": str(tmp_path / "s.csv")})
    assert jobs["submit"].tolist() == [0.0, 0.0] and jobs["gpus"].tolist() == [16.0, 16.0]
    assert jobs["workers"].tolist() == [2, 2]
    assert (jobs["duration"] > 3600).all() and (jobs["duration"] <= 2 * 3600).all()
    # the same table without the warm start offers nothing
    with pytest.raises(InputError, match="no VC offered any GPUs"):
        generate({"demand_file": str(path), "sizes_file": str(tmp_path / "s.csv"), "warm_start": False})


def test_the_generator_never_reads_pending_counts_or_utilisation(tmp_path: Path) -> None:
    table = pd.read_csv(HOURLY)
    table = table[table["hour"] < "2020-05-03"]
    table.to_csv(tmp_path / "a.csv", index=False)
    changed = table.assign(pending_jobs=7.5, pending_gpu=99.0, running_gpu=0.0)
    changed.to_csv(tmp_path / "b.csv", index=False)
    a = generate({"demand_file": str(tmp_path / "a.csv"), "sizes_file": str(SIZES)})
    b = generate({"demand_file": str(tmp_path / "b.csv"), "sizes_file": str(SIZES)})
    pd.testing.assert_frame_equal(a, b)


def test_the_replay_offers_the_measured_running_gpu_time() -> None:
    measured = read_vc_hourly(HOURLY)
    jobs = generate({"demand_file": str(HOURLY), "sizes_file": str(SIZES), "hours": 7 * 24})
    span = 7 * 24 * 3600.0
    offered = float((jobs["gpus"] * (np.minimum(jobs["submit"] + jobs["duration"], span) - jobs["submit"])).sum())
    running = sum(float(measured.column("running_gpu", vc)[:7 * 24].sum()) * 3600.0 for vc in measured.vcs)
    assert offered == pytest.approx(running, rel=0.05)
    assert (jobs["submit"] < span).all()
    sizes = read_vc_sizes(SIZES)
    for vc, group in jobs.groupby("tenant"):  # every size one the VC was seen starting
        seen = set(sizes.get((vc, "ge8"), ([],))[0]) | set(sizes.get((vc, "lt8"), ([],))[0])
        assert set(group["gpus"]) <= seen, vc


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=6, max_size=6), st.integers(0, 2**31))
def test_replayed_jobs_are_whole_and_within_the_vc(arrivals: list[int], seed: int) -> None:
    rows = hours("vcA", 6, total_gpu=16, arrived_gpu_lt8=arrivals, started_gpu_lt8=arrivals,
                 ended_gpu_lt8=[0] + arrivals[:-1], running_gpu_lt8=[0] + arrivals[:-1])
    with tempfile.TemporaryDirectory() as folder:
        path = write_hourly(Path(folder) / "h.csv", rows)
        if sum(arrivals) == 0:
            with pytest.raises(InputError, match="no VC offered any GPUs"):
                generate({"demand_file": str(path), "warm_start": False}, seed=seed)
            return
        jobs = generate({"demand_file": str(path), "warm_start": False}, seed=seed)
    assert set(jobs["gpus"]) <= {1.0, 2.0, 4.0}
    assert (jobs["duration"] >= 1).all() and (jobs["submit"] >= 0).all() and (jobs["submit"] < 6 * 3600).all()
    assert float(jobs["gpus"].sum()) <= sum(arrivals) + 2  # whole jobs: within half a job of the arrived GPUs


def test_a_missing_demand_file_and_an_unknown_key_are_refused() -> None:
    with pytest.raises(InputError, match="workload.demand_file: is required"):
        generate({})
    with pytest.raises(InputError, match="zz: unknown key"):
        generate({"zz": 1})


# -- the scenario ----------------------------------------------------------------------------------
def test_the_dated_scenario_runs_a_day_from_the_checkout() -> None:
    scenario = apply_overrides(load_scenario(SCENARIO), {"workload.hours": 24}, "test")
    schedule = scenario.clusters[0].quota_schedule
    assert schedule is not None and len(schedule.tenants) == 16 and sum(schedule.gpus[0]) == 856
    result = simsched.run(scenario, seed=1)
    jobs = result.jobs
    assert len(jobs) > 1000 and (jobs["status"] == "done").all()
    quota = dict(zip(schedule.tenants, schedule.gpus[0]))
    assert set(jobs["tenant"]) <= set(quota)
    assert (jobs["gpus"] <= jobs["tenant"].map(quota)).all()
    again = simsched.run(scenario, seed=1).jobs
    pd.testing.assert_frame_equal(jobs, again)


# -- the validator's table -------------------------------------------------------------------------
def test_time_integrals_by_hand() -> None:
    edges = np.array([0.0, 3600.0, 7200.0])
    # one job pending from 1,800 s to 5,400 s (weight 2), one from 3,600 s never started (weight 1)
    got = tool().time_integrals(np.array([1800.0, 3600.0]), np.array([5400.0, np.inf]), np.array([2.0, 1.0]), edges)
    assert got.tolist() == [3600.0, 2 * 1800.0 + 3600.0]


def test_the_per_vc_table_on_a_tiny_case() -> None:
    validate = tool()
    # two VCs over 2 days; vcA: one 8-GPU job waits the first 12 hours, then runs 12 hours
    jobs = pd.DataFrame({"submit": [0.0, 0.0], "start": [12 * 3600.0, 0.0], "end": [24 * 3600.0, 48 * 3600.0],
                         "gpus": [8.0, 4.0], "tenant": ["vcA", "vcB"], "wait": [12 * 3600.0, 0.0]})
    n = 48
    measured = VcHourly("tiny", datetime(2020, 5, 1), ("vcA", "vcB"), {
        "total_gpu": np.array([[8.0] * n, [8.0] * n]),
        "running_gpu": np.array([[8.0] * 12 + [0.0] * 36, [4.0] * n]),
        "pending_gpu": np.array([[0.0] * n, [0.0] * n]),
        "pending_jobs": np.array([[1.0] * 12 + [0.0] * 36, [0.0] * n]),
    })
    series = validate.vc_series(jobs, measured.vcs, n)
    assert series["vcA"]["pending_jobs"].tolist() == [1.0] * 12 + [0.0] * 36
    assert series["vcA"]["running_gpu"].tolist() == [0.0] * 12 + [8.0] * 12 + [0.0] * 24
    lines, figures = validate.earth_table([series], measured, n, [6 * 3600.0], [2])
    row_a = [cell.strip() for cell in lines[2].split("|")[1:-1]]
    # VC, GPUs, pending jobs measured / simulated, pending GPUs measured / simulated, utilisation measured /
    # simulated / difference, daily correlations (pending jobs, utilisation), wide share, off
    assert row_a == ["vcA", "8", "0.25", "0.25", "0.0", "2.0", "0.25", "0.25", "+0.00", "1.00", "1.00", "100 %", "-"]
    row_b = [cell.strip() for cell in lines[3].split("|")[1:-1]]
    assert row_b[:9] == ["vcB", "8", "0.00", "0.00", "0.0", "0.0", "0.50", "0.50", "+0.00"]
    # Little's law: 0.25 pending jobs / (2 jobs / 2 days) = 0.25 days
    assert figures["simulated_little"] == pytest.approx(0.25 * 86_400.0)
    assert figures["measured_little"] == pytest.approx(0.25 * 86_400.0)
    assert figures["simulated"] == 6 * 3600.0 and figures["util_within"] == 2
    # Earth's published rate, 427,148 GPU jobs in 181 days on 997 GPUs, scaled to these 16 GPUs
    published_rate = 427_148 / (181 * 86_400.0) * 16 / 997
    assert figures["simulated_little_published_rate"] == pytest.approx(0.25 / published_rate)


def test_a_vc_off_is_named_with_what_is_off() -> None:
    validate = tool()
    jobs = pd.DataFrame({"submit": [0.0], "start": [0.0], "end": [48 * 3600.0], "gpus": [8.0], "tenant": ["vcA"],
                         "wait": [0.0]})
    n = 48
    measured = VcHourly("tiny", datetime(2020, 5, 1), ("vcA",), {
        "total_gpu": np.array([[8.0] * n]), "running_gpu": np.array([[4.0] * n]),
        "pending_gpu": np.array([[0.0] * n]), "pending_jobs": np.array([[1.0] * n]),
    })
    lines, figures = validate.earth_table([validate.vc_series(jobs, measured.vcs, n)], measured, n, [0.0], [1])
    assert lines[2].endswith("| utilisation, pending jobs |")
    assert figures["util_within"] == 0


# -- the derivation script -------------------------------------------------------------------------
RAW_HEADER = ("time,total_job_num,running_job_num,pending_job_num,total_gpujob_num,running_gpujob_num,"
              "pending_gpujob_num,total_gpu_num,running_gpu_num,pending_gpu_num,idle_gpu_num,gpu_utilization,"
              "running_gpu_num_noless_8,running_gpu_num_less_8,pending_gpu_num_noless_8,pending_gpu_num_less_8,"
              "total_gpu_num_noless_8,total_gpu_num_less_8,running_job_num_noless_8,running_job_num_less_8,"
              "pending_job_num_noless_8,pending_job_num_less_8,total_job_num_noless_8,total_job_num_less_8")


def raw_row(minute: str, run8: int, pend8: int, run1: int, jobs8: int, pending_jobs: int) -> str:
    """A minute of a 16-GPU VC: ``run8`` GPUs of >= 8-GPU jobs running (``jobs8`` jobs), ``pend8``
    pending, ``run1`` GPUs of 1-GPU jobs running."""
    running = run8 + run1
    return (f"2020-05-01 {minute},0,0,{pending_jobs},0,0,{pending_jobs},16,{running},{pend8},{16 - running},"
            f"{running / 16},{run8},{run1},{pend8},0,{run8 + pend8},{run1},{jobs8},{run1},0,0,0,0")


def test_the_derivation_by_hand(tmp_path: Path) -> None:
    folder = tmp_path / "analysis" / "2_cluster characterization" / "Earth_vcs" / "vcA"
    folder.mkdir(parents=True)
    # 00:00 idle; 00:01 an 8-GPU job arrives pending; 00:02 it starts with a 1-GPU job; 01:00 the
    # 8-GPU job ends; 01:01 a 16-GPU job starts alone
    rows = [raw_row("00:00", 0, 0, 0, 0, 0), raw_row("00:01", 0, 8, 0, 0, 1), raw_row("00:02", 8, 0, 1, 1, 0),
            raw_row("01:00", 0, 0, 1, 0, 0), raw_row("01:01", 16, 0, 1, 1, 0)]
    (folder / "cluster_sequence_vc.csv").write_text(RAW_HEADER + "\n" + "\n".join(rows) + "\n")
    out = tmp_path / "out"
    subprocess.run([sys.executable, str(REPO / "tools" / "derive_earth_vcs.py"), "--checkout", str(tmp_path),
                    "--out", str(out)], check=True, capture_output=True)
    table = read_vc_hourly(out / "earth_vcs_hourly.csv")
    assert table.vcs == ("vcA",) and table.hours == 2
    assert table.column("arrived_gpu_ge8", "vcA").tolist() == [8, 16]  # 8 pending at 00:01; 16 at 01:01
    assert table.column("started_gpu_ge8", "vcA").tolist() == [8, 16]
    assert table.column("ended_gpu_ge8", "vcA").tolist() == [0, 8]
    assert table.column("started_gpu_lt8", "vcA").tolist() == [1, 0]
    # means over the minutes (0, 0, 8; then 0, 16), written with 4 significant digits
    assert table.column("running_gpu_ge8", "vcA").tolist() == [2.667, 8]
    assert table.column("pending_jobs", "vcA").tolist() == [0.3333, 0]
    sizes = read_vc_sizes(out / "earth_vc_sizes.csv")
    assert {k: v[0].tolist() for k, v in sizes.items()} == {("vcA", "ge8"): [8.0, 16.0], ("vcA", "lt8"): [1.0]}
    assert (out / "earth_vc_quotas.csv").read_text() == "date,vcA,total\n2020-05-01,16,16\n"
