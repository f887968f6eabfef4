"""``python -m simsched compare``: serial == parallel, files written, student policies ranked;
and every command in docs/assignment.md runs as written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from simsched.cli.main import main
from simsched.core.metrics import STARVATION_METRICS
from simsched.runs.compare import METRIC_KEYS, compare_spec, run_compare

REPO = Path(__file__).resolve().parents[1]
STUDENT = REPO / "tests" / "student_policy.py"

SCENARIO = """
name = "cmp"
seed = 4
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 40
gpus = [1, 2, 4]
mean_duration_s = 600.0
[scheduler]
policy = "fifo"
restart_penalty_s = 5
[compare]
seeds = 2
[compare.options.las]
las_thresholds = [300.0, 3000.0]
"""


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "cmp.toml"
    path.write_text(SCENARIO)
    shutil.copy(STUDENT, tmp_path / "student_policy.py")
    return path


SCHEDULERS = ["fifo", "sjf", "edf", "hrrn", "sufferage", "las", "srtf-preemptive", "spark",
              "student_policy.py:StudentPolicy"]


def test_serial_equals_parallel(scenario: Path) -> None:
    spec = compare_spec(scenario, schedulers=SCHEDULERS)
    serial = run_compare(spec, workers=1)
    parallel = run_compare(spec, workers=2)
    pd.testing.assert_frame_equal(serial.runs, parallel.runs)
    pd.testing.assert_frame_equal(serial.table, parallel.table)
    pd.testing.assert_frame_equal(serial.ranks, parallel.ranks)
    assert len(serial.runs) == len(SCHEDULERS) * 2
    assert list(serial.runs["seed"].unique()) == [4, 5]
    assert serial.runs.groupby("scheduler")["preemptions"].sum()["las"] > 0
    assert serial.runs.groupby("scheduler")["preemptions"].sum()["fifo"] == 0


def test_ray_equals_serial(scenario: Path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is the optional extra 'ray' (pip install -e '.[ray]')")
    spec = compare_spec(scenario, schedulers=["fifo", "las", "student_policy.py:StudentPolicy"])
    serial = run_compare(spec, workers=1)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - any failure to start means: no Ray here
        pytest.skip(f"a local Ray instance could not start: {exc}")
    try:
        on_ray = run_compare(spec, workers=2, executor="ray")
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(serial.runs, on_ray.runs)


def test_table_ranks_and_best(scenario: Path) -> None:
    result = run_compare(compare_spec(scenario, schedulers=["fifo", "sjf", "student_policy.py:StudentPolicy"]),
                         workers=1)
    table = result.table
    # the §7 metrics, then the starvation ones (no tenants here: no fairness rows)
    assert set(table["metric"]) == set(METRIC_KEYS) | {key for key, *_ in STARVATION_METRICS}
    jct = table[table["metric"] == "avg_jct"].set_index("scheduler")
    assert jct["best"].sum() == 1 and jct.loc[jct["mean"].idxmin(), "best"]
    runs = result.runs
    for _seed, group in runs.groupby("seed"):  # rank 1 = smallest avg JCT in each case
        assert group.loc[group["avg_jct"].idxmin(), "rank"] == 1
        assert sorted(group["rank"]) == [1.0, 2.0, 3.0]
    expected_mean = runs.groupby("scheduler")["rank"].mean()
    assert result.ranks["mean_rank"].to_dict() == pytest.approx(expected_mean.to_dict())
    mean_jct = runs.groupby("scheduler")["avg_jct"].mean()
    assert jct["mean"].to_dict() == pytest.approx(mean_jct.to_dict())


def test_cli_writes_csv_and_markdown(scenario: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    code = main(["compare", str(scenario), "--schedulers", f"fifo,sjf,las,{STUDENT}:StudentPolicy",
                 "--seeds", "2", "--workers", "2", "--out", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "Avg JCT (s)" in printed and "Mean rank" in printed and "StudentPolicy" in printed
    table = pd.read_csv(out / "compare.csv")
    assert set(table["scheduler"]) == {"fifo", "sjf", "las", f"{STUDENT}:StudentPolicy"}
    runs = pd.read_csv(out / "compare_runs.csv")
    assert len(runs) == 8 and {"instance", "seed", "scheduler", "rank", *METRIC_KEYS} <= set(runs.columns)
    markdown = (out / "compare.md").read_text()
    assert "| Avg JCT (s) |" in markdown and "Mean rank" in markdown and "**" in markdown


def test_instances_from_the_compare_table(scenario: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.toml"
    other.write_text(SCENARIO.replace('name = "cmp"', 'name = "other"').replace("seed = 4", "seed = 9")
                     .split("[compare]")[0])
    scenario.write_text(SCENARIO.replace("[compare]", '[compare]\ninstances = ["other.toml"]'))
    result = run_compare(compare_spec(scenario, schedulers=["fifo", "sjf"], seeds=1), workers=1)
    assert list(result.runs[["instance", "seed"]].drop_duplicates().itertuples(index=False, name=None)) == [
        ("cmp(cmp.toml)", 4), ("other(other.toml)", 9)]
    assert list(result.ranks.columns) == ["cmp(cmp.toml)#4", "other(other.toml)#9", "mean_rank"]


@pytest.mark.parametrize(("args", "message"), [
    (["--schedulers", "fifo,nope"], "unknown scheduler 'nope'"),
    (["--schedulers", "missing.py:X"], "policy file"),
    (["--rank-by", "speed"], "--rank-by: unknown metric 'speed'"),
    (["--seeds", "0"], "--seeds"),
])
def test_bad_input_is_one_line_exit_2(scenario: Path, args: list[str], message: str, capsys) -> None:
    assert main(["compare", str(scenario), *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


# The assignment's commands run as written: tests/test_readme_commands.py (slow), in a copy of the checkout.


def test_a_scenario_edited_after_the_first_read_changes_neither_runs_nor_tables(scenario: Path) -> None:
    """Each instance is read once (issue 37, item 2): a file overwritten with garbage during the
    comparison (by a student's policy, or a teacher preparing the next try) leaves the runs and the
    tables as first read, title included, and the comparison ends."""
    from simsched.present.compare_tables import to_markdown

    spec = compare_spec(scenario, schedulers=["fifo", "sjf"], seeds=1)
    scenario.write_text('name = "edited"\nnot toml [')
    result = run_compare(spec, workers=1)
    assert to_markdown(result).splitlines()[0].lstrip("# ").startswith("cmp: ")
    assert set(result.runs["scheduler"]) == {"fifo", "sjf"}
