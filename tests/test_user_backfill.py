"""A backfill mode means nothing to a user policy (its decide() places the jobs), so one written for it
is refused in one line (issue 37, option b); assignment task 5 compares fifo's three modes instead."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from simsched.cli.main import main
from tests.helpers import write_scenario

REPO = Path(__file__).resolve().parents[1]
ONE_NODE = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
JOBS = ["a,0,100,2,,,,,", "b,1,10,4,,,,,", "c,2,200,2,,,,,"]


def _scenario(tmp_path: Path, backfill: str | None) -> Path:
    shutil.copy(REPO / "docs" / "examples" / "my_policy.py", tmp_path / "my_policy.py")
    line = "" if backfill is None else f"\nbackfill = {backfill}"
    return write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "my_policy.py:MyPolicy"' + line)


@pytest.mark.parametrize("backfill, shown", [('"easy"', '"easy"'), ('"conservative"', '"conservative"'),
                                             ('"greedy"', "true (greedy)"), ("true", "true (greedy)")])
def test_a_mode_written_for_a_user_policy_is_refused_in_one_line(tmp_path: Path, capsys, backfill, shown) -> None:
    scenario = _scenario(tmp_path, backfill)
    for argv in (["run", str(scenario), "--quiet"], ["compare", str(scenario), "--schedulers", "fifo,my_policy.py:MyPolicy",
                                                     "--quiet", "--keep-going", "--workers", "1"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert f"backfill = {shown} does not apply to a user policy (my_policy.py:MyPolicy): its decide() places " \
               "the jobs itself, so backfilling is its own code's job; remove backfill or set backfill = false" in err[0]


@pytest.mark.parametrize("backfill", [None, "false", '"none"'])
def test_no_mode_or_none_is_accepted(tmp_path: Path, backfill) -> None:
    assert main(["run", str(_scenario(tmp_path, backfill)), "--quiet"]) == 0


def test_a_mode_given_on_the_command_line_is_refused_too(tmp_path: Path, capsys) -> None:
    assert main(["run", str(_scenario(tmp_path, None)), "--quiet", "--set", "scheduler.backfill=easy"]) == 2
    assert "does not apply to a user policy" in capsys.readouterr().err


def test_assignment_task_5_gives_three_results_for_three_modes(tmp_path: Path) -> None:
    for name in ("compare_mine.toml", "my_policy.py"):
        shutil.copy(REPO / "docs" / "examples" / name, tmp_path / name)
    out = tmp_path / "out"
    assert main(["compare", str(tmp_path / "compare_mine.toml"), "--schedulers",
                 "fifo,fifo-easy,fifo-conservative,my_policy.py:MyPolicy", "--seeds", "2", "--quiet",
                 "--workers", "1", "--out", str(out)]) == 0
    with open(out / "compare_runs.csv", newline="") as fh:
        runs = list(csv.DictReader(fh))
    for seed in ("1", "2"):
        fifos = {row["scheduler"]: (row["avg_wait"], row["max_wait"]) for row in runs
                 if row["seed"] == seed and row["scheduler"].startswith("fifo")}
        assert len(fifos) == 3 and len(set(fifos.values())) == 3, fifos
