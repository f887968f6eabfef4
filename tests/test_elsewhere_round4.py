"""Issue 39, items 19 and 20 and round three's open items: one learner or comparison per --out, a
closed pipe ends quietly, `rl train --out .` is one line, a resume prints at most three warning lines
about moved rows."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from simsched.cli.main import PIPE_EXIT, main
from simsched.runs.experiment.lock import FolderLock

REPO = Path(__file__).resolve().parents[1]
ONE = """
name = "one"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 10
gpus = [1, 2]
mean_duration_s = 60.0
[scheduler]
policy = "fifo"
"""


@pytest.fixture
def one(tmp_path: Path) -> Path:
    path = tmp_path / "one.toml"
    path.write_text(ONE)
    return path


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


# -- item 19: one writer per --out ------------------------------------------------------------------
def test_a_compare_into_a_held_folder_is_refused_and_writes_nothing(one: Path, capsys) -> None:
    out = one.parent / "out"
    out.mkdir()
    with FolderLock(out):  # another compare (or experiment) holds the folder
        assert main(["compare", str(one), "--schedulers", "fifo,sjf", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is in use by" in err[0] and "choose another --out" in err[0], err
    assert not (out / "compare.csv").exists() and not (out / "compare_runs.csv").exists()
    assert main(["compare", str(one), "--schedulers", "fifo,sjf", "--out", str(out), "--quiet"]) == 0
    assert (out / "compare.csv").is_file()


@pytest.mark.parametrize("command", [["learn"], ["rl", "train"]])
def test_a_learner_on_a_held_out_file_is_refused(one: Path, capsys, command: list[str]) -> None:
    if command[0] == "rl":
        pytest.importorskip("gymnasium", reason="rl train needs the extra 'rl'")
    out = one.parent / "learned.json"
    with FolderLock(one.parent, output=out):
        assert main([*command, str(one), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{out} is in use by" in err[0], err
    assert not out.exists()


# -- item 20: a closed pipe ---------------------------------------------------------------------------
def test_a_closed_pipe_downstream_ends_quietly(one: Path) -> None:
    child = subprocess.Popen([sys.executable, "-m", "simsched", str(one), "--json"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=_env())
    child.stdout.close()  # as `| head -c 0` does: the reader is gone before anything is written
    err = child.stderr.read().decode()
    assert child.wait(timeout=120) == PIPE_EXIT
    assert err == ""


# -- round three, still open ----------------------------------------------------------------------------
def test_rl_train_out_dot_is_one_line(one: Path, capsys, monkeypatch) -> None:
    pytest.importorskip("gymnasium", reason="rl train needs the extra 'rl'")
    monkeypatch.chdir(one.parent)
    assert main(["rl", "train", str(one), "--out", ".", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is a folder" in err[0], err


def test_a_resume_over_many_rows_with_nan_prints_at_most_three_warning_lines(one: Path, capsys) -> None:
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    spec = one.with_name("spec.toml")
    spec.write_text('name = "s"\nscenarios = ["one.toml"]\nschedulers = ["fifo", "sjf"]\nseeds = 3\n'
                    'metric = "avg_wait"\n')
    out = one.parent / "out"
    assert main(["experiment", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == 0
    rows = list(csv.reader((out / "results.csv").open()))
    for row in rows[1:]:
        for key in ("avg_jct", "avg_wait", "objective"):
            row[rows[0].index(key)] = "nan"
    with (out / "results.csv").open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    capsys.readouterr()
    assert main(["experiment", str(spec), "--out", str(out), "--resume", "--quiet", "--workers", "1"]) == 0
    warnings = [line for line in capsys.readouterr().err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3, warnings
    assert "4 more rows (lines 4-7)" in warnings[-1]
