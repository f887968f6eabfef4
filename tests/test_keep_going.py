"""Grading many policies: ``compare --keep-going`` records a failing or looping policy's runs as failed
rows and ranks the rest; ``--decide-timeout`` stops a decide() that runs too long."""

from __future__ import annotations

import csv
import re
from pathlib import Path

from simsched.cli.compare import KEEP_GOING_EXIT
from simsched.cli.main import main
from tests.helpers import write_scenario

ONE_NODE = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
JOBS = ["a,0,100,2,,,,,", "b,1,10,4,,,,,", "c,2,200,2,,,,,"]
BAD = '''
class Raises:
    def decide(self, view):
        raise ValueError("student bug")


class Loops:
    def decide(self, view):
        while True:
            pass
'''


def test_keep_going_ranks_fifo_and_records_two_failed_rows(tmp_path: Path, capsys) -> None:
    scenario = write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "fifo"')
    (tmp_path / "bad.py").write_text(BAD)
    out = tmp_path / "out"
    code = main(["compare", str(scenario), "--schedulers", "fifo,bad.py:Raises,bad.py:Loops", "--keep-going",
                 "--decide-timeout", "2", "--out", str(out), "--quiet", "--workers", "2"])
    err = capsys.readouterr().err
    assert code == KEEP_GOING_EXIT == 4
    with open(out / "compare_failed.csv", newline="") as fh:
        failed = list(csv.DictReader(fh))
    assert [row["scheduler"] for row in failed] == ["bad.py:Raises", "bad.py:Loops"]
    assert "bad.py:4: Raises.decide raised ValueError: student bug" in failed[0]["error"]
    # stopped inside its loop: `while True:` (line 9) or `pass` (10), wherever the stack was taken
    assert "decide() ran longer than --decide-timeout 2 s" in failed[1]["error"]
    assert re.search(r"bad\.py:(9|10): ", failed[1]["error"]), failed[1]["error"]
    with open(out / "compare_runs.csv", newline="") as fh:
        ranked = list(csv.DictReader(fh))
    assert [row["scheduler"] for row in ranked] == ["fifo"] and ranked[0]["rank"] == "1.0"
    assert err.count("failed: ") == 2 and "2 run(s) failed; a scheduler that failed any case is placed after" in err
    report = (out / "compare.md").read_text()
    assert "Failed: `bad:Raises`" in report  # and both stay in the rank table, placed last:
    assert "| `bad:Raises` | failed | failed (1 of 1) | 2.5 |" in report and "nan" not in report.lower()


def test_without_keep_going_the_first_failure_stops_the_comparison(tmp_path: Path, capsys) -> None:
    scenario = write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "fifo"')
    (tmp_path / "bad.py").write_text(BAD)
    assert main(["compare", str(scenario), "--schedulers", "fifo,bad.py:Raises", "--quiet", "--workers", "1"]) == 2
    assert "Raises.decide raised ValueError" in capsys.readouterr().err


def test_a_decide_timeout_alone_fails_the_comparison_on_one_line(tmp_path: Path, capsys) -> None:
    scenario = write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "fifo"')
    (tmp_path / "bad.py").write_text(BAD)
    assert main(["compare", str(scenario), "--schedulers", "bad.py:Loops", "--decide-timeout", "1", "--quiet",
                 "--workers", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and re.search(r"bad\.py:(9|10): bad\.py:Loops \(seed 1\): decide\(\) ran longer than "
                                       r"--decide-timeout 1 s", err[0]), err


def test_keep_going_turns_a_dead_worker_into_a_failed_row(tmp_path: Path, capsys) -> None:
    scenario = write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "fifo"')
    (tmp_path / "die.py").write_text("import os\n\n\nclass Die:\n    def decide(self, view):\n        os._exit(7)\n")
    out = tmp_path / "out"
    code = main(["compare", str(scenario), "--schedulers", "fifo,die.py:Die", "--seeds", "2", "--keep-going",
                 "--out", str(out), "--quiet", "--workers", "2"])
    assert code == KEEP_GOING_EXIT
    with open(out / "compare_failed.csv", newline="") as fh:
        failed = list(csv.DictReader(fh))
    assert [row["scheduler"] for row in failed] == ["die.py:Die", "die.py:Die"]
    assert "die.py: die.py:Die (seed 1): the run's process ended with exit code 7" in failed[0]["error"]
    with open(out / "compare_runs.csv", newline="") as fh:
        assert [row["scheduler"] for row in csv.DictReader(fh)] == ["fifo", "fifo"]
