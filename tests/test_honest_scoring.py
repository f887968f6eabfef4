"""Every job counts (issue 25): leaving work undone never wins a ranking, and infeasible jobs are
reported and left out of the metrics the same for every policy."""

from __future__ import annotations

import dataclasses
import io
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from rich.console import Console

import simsched
from simsched.cli.main import main
from simsched.core.metrics import summarize
from simsched.present.compare_tables import rich_tables, to_markdown
from simsched.present.report import metric_table
from simsched.runs.compare import (
    METRIC_KEYS,
    compare_spec,
    run_compare,
    tabulate,
)
from simsched.runs.ranking import case_ranks
from tests.helpers import write_scenario

REPO = Path(__file__).resolve().parents[1]
CHEATS = REPO / "tests" / "cheat_policies.py"
ONE_NODE = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'


def _compare_cheats(tmp_path: Path):
    shutil.copy(REPO / "docs" / "examples" / "compare_mine.toml", tmp_path / "compare_mine.toml")
    shutil.copy(REPO / "docs" / "examples" / "my_policy.py", tmp_path / "my_policy.py")
    shutil.copy(CHEATS, tmp_path / "cheats.py")
    spec = compare_spec(tmp_path / "compare_mine.toml", schedulers=["fifo", "sjf", "cheats.py:Never",
                                                                    "cheats.py:OnlyShort"], seeds=2, jobs=60)
    return run_compare(spec, workers=1)


def test_compare_ranks_a_scheduler_that_finished_everything_first_whatever_the_metric(tmp_path):
    result = _compare_cheats(tmp_path)
    runs = result.runs
    cheats = runs["scheduler"].str.startswith("cheats.py")
    assert (runs.loc[cheats, "unfinished"] > 0).all() and (runs.loc[~cheats, "unfinished"] == 0).all()
    for metric in METRIC_KEYS:
        ranked = tabulate(dataclasses.replace(result.spec, rank_by=metric), runs.drop(columns="rank"))
        # in every case, fifo and sjf hold ranks 1 and 2 (ties share 1.5), the cheats 3 and 4
        cases = ranked.ranks.drop(columns="mean_rank")
        assert (cases.loc[["fifo", "sjf"]] <= 2).all().all(), metric
        assert (cases.loc[["cheats.py:Never", "cheats.py:OnlyShort"]] > 2).all().all(), metric
        assert ranked.ranks["mean_rank"].idxmin() in ("fifo", "sjf"), metric
        # the cheats are marked in both renderings, and never "best" on a metric
        markdown = to_markdown(ranked)
        assert "`cheats:Never` †" in markdown and "`cheats:OnlyShort` †" in markdown
        assert "`fifo` †" not in markdown and "`sjf` †" not in markdown
        assert not ranked.table.loc[ranked.table["scheduler"].str.startswith("cheats"), "best"].any()
    console = Console(file=io.StringIO(), width=400)
    for table in rich_tables(result):
        console.print(table)
    text = console.file.getvalue()
    assert "cheats:Never †" in text and "cheats:OnlyShort †" in text and "fifo †" not in text
    assert "ranked after every run that finished all its feasible jobs" in text


def test_the_cheats_rank_last_on_the_command_line_too(tmp_path, capsys):
    shutil.copy(REPO / "docs" / "examples" / "compare_mine.toml", tmp_path / "compare_mine.toml")
    shutil.copy(REPO / "docs" / "examples" / "my_policy.py", tmp_path / "my_policy.py")
    shutil.copy(CHEATS, tmp_path / "cheats.py")
    code = main(["compare", str(tmp_path / "compare_mine.toml"), "--schedulers",
                 "cheats.py:Never,fifo,cheats.py:OnlyShort,sjf", "--seeds", "1", "--jobs", "40", "--workers", "1",
                 "--rank-by", "max_wait", "--out", str(tmp_path / "out")])
    assert code == 0
    err = capsys.readouterr().err
    assert "warning: cheats:Never left feasible jobs unfinished in 1 of 1 run(s)" in err
    assert "Warning: cheats:Never left feasible jobs unfinished" in (tmp_path / "out" / "compare.md").read_text()
    runs = pd.read_csv(tmp_path / "out" / "compare_runs.csv").set_index("scheduler")
    assert set(runs["rank"].loc[["fifo", "sjf"]]) <= {1.0, 2.0, 1.5}
    assert runs.loc["cheats.py:Never", "rank"] > 2 and runs.loc["cheats.py:OnlyShort", "rank"] > 2


def test_ranks_are_tiered_by_unfinished_jobs_then_the_metric():
    frame = pd.DataFrame({
        "case": ["a"] * 5,
        "avg_jct": [100.0, 50.0, 1.0, 0.5, math.nan],
        "unfinished": [0, 0, 3, 1, 0],
    })
    # finished all: 50 (1), 100 (2), then the n/a metric (3); then 1 unfinished (4), 3 unfinished (5)
    assert case_ranks(frame, ["case"], "avg_jct", False).tolist() == [2.0, 1.0, 5.0, 4.0, 3.0]
    assert case_ranks(frame, ["case"], "avg_jct", True).tolist() == [1.0, 2.0, 5.0, 4.0, 3.0]
    tied = pd.DataFrame({"case": ["a", "a", "b"], "m": [1.0, 1.0, 7.0], "unfinished": [0, 0, 2]})
    assert case_ranks(tied, ["case"], "m", False).tolist() == [1.5, 1.5, 1.0]


def test_unfinished_jobs_are_censored_at_the_end_of_the_run(tmp_path):
    """Never starts anything: jobs at t=0 and t=10 wait until the run ends at t=10 (hand-computed)."""
    shutil.copy(CHEATS, tmp_path / "cheats.py")
    path = write_scenario(tmp_path, clusters=ONE_NODE, scheduler='policy = "cheats.py:Never"',
                          jobs=["a,0,100,1,,2,,,", "b,10,100,1,,1,50,,"])
    result = simsched.run(path)
    jobs = result.jobs.set_index("job_id")
    assert list(jobs["status"]) == ["unfinished", "unfinished"]
    assert jobs["wait"].tolist() == [10.0, 0.0] and jobs["jct"].tolist() == [10.0, 0.0]
    assert jobs["end"].isna().all()  # jobs.csv: no end time for a job that never finished
    s = result.summary
    assert (s["completed"], s["unfinished"], s["infeasible"], s["counted"]) == (0, 2, 0, 2)
    assert s["avg_jct"] == 5.0 and s["avg_wait"] == 5.0 and s["max_wait"] == 10.0
    assert s["cq_avg"] == (2 * 10 + 1 * 0) / 2 and s["cq_max"] == 20.0
    assert s["deadline_miss_rate"] == 1.0  # an unfinished job misses its deadline
    assert s["makespan"] == 10.0 and s["utilization"] == 0.0
    assert s["objective"] == 10.0 + 20.0 + 1.0
    assert any("left 2 of 2 feasible jobs unfinished" in w for w in s["warnings"])
    # recomputed from the jobs table alone (as from jobs.csv): the same numbers
    again = summarize(result.jobs, {"c0": 4.0})
    assert {k: again[k] for k in ("avg_jct", "cq_max", "makespan")} == {k: s[k] for k in ("avg_jct", "cq_max",
                                                                                       "makespan")}
    table = Console(file=io.StringIO(), width=200)
    table.print(metric_table(s))
    assert "5.00 [+2 unfinished]" in table.file.getvalue()


def test_a_mean_over_zero_jobs_is_na_not_zero(tmp_path):
    path = write_scenario(tmp_path, clusters=ONE_NODE, scheduler='policy = "fifo"', jobs=["big,0,10,64,,,,,"])
    summary = simsched.run(path).summary
    assert summary["counted"] == 0 and summary["infeasible"] == 1
    for key in ("avg_jct", "weighted_jct", "avg_wait", "max_wait", "cq_avg", "cq_max", "objective"):
        assert summary[key] is None, key
    console = Console(file=io.StringIO(), width=200)
    console.print(metric_table(summary))
    text = console.file.getvalue()
    assert "Avg JCT (s)" in text and "0.00" not in text and "n/a" in text


INFEASIBLE = """
name = "infeasible"
seed = 3
[[cluster]]
name = "lab"
nodes = [{ count = 4, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 60
gpus = [1, 2, 4, 32]
mean_duration_s = 1800.0
load = 0.9
[scheduler]
policy = "fifo"
"""


@pytest.mark.parametrize("policy", ["fifo", "sjf", "cheats.py:Never"])
def test_infeasible_jobs_are_reported_and_left_out_the_same_for_every_policy(tmp_path, capsys, policy):
    path = tmp_path / "infeasible.toml"
    path.write_text(INFEASIBLE)
    shutil.copy(CHEATS, tmp_path / "cheats.py")
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    result = simsched.run(path, scheduler=policy)
    jobs, summary = result.jobs, result.summary
    infeasible = jobs["status"] == "infeasible"
    n = int(infeasible.sum())
    assert n > 0
    # validate and the run's warnings: count, share, the largest request against the largest node
    share = f"{100 * n / len(jobs):.1f}%"
    assert f"warning: {n} of {len(jobs)} jobs ({share}) are infeasible" in err
    assert "32 GPUs (8 worker(s) of 4) against a largest node of 4 V100 GPUs" in err
    assert f"60 jobs ({n} infeasible)" in out
    assert any(w.startswith(f"{n} of {len(jobs)} jobs ({share}) are infeasible") for w in summary["warnings"])
    # the same jobs for every policy (32 GPUs: the generator's draws do not depend on the policy)
    assert set(jobs.loc[infeasible, "job_id"]) == set(jobs.loc[jobs["gpus"] == 32, "job_id"])
    assert summary["infeasible"] == n and summary["counted"] == len(jobs) - n
    assert jobs.loc[infeasible, ["wait", "jct", "start", "end"]].isna().all().all()
    # left out of the metrics: the feasible jobs alone give the same numbers
    alone = summarize(jobs[~infeasible], {"lab": 16.0})
    for key in ("avg_jct", "weighted_jct", "avg_wait", "max_wait", "cq_avg", "cq_max", "deadline_miss_rate"):
        assert alone[key] == summary[key], key
