"""Inputs are sacred (issue 24): no command writes over a file it reads. Each case asserts exit 2,
one line on stderr, and that the input is byte-identical afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simsched.cli.main import main

JOBS = "job_id,submit,duration,gpus\na,0,100,1\nb,10,200,2\nc,20,50,4\n"
SCENARIO = """
name = "s"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "csv"
path = "jobs.csv"
[scheduler]
policy = "fifo"
"""


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "s.toml").write_text(SCENARIO)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _refused(capsys, argv: list[str], *inputs: Path) -> str:
    before = {path: path.read_bytes() for path in inputs}
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "outputs never replace inputs" in err[0] or "which holds the" in err[0], err[0]
    for path, data in before.items():
        assert path.read_bytes() == data, f"{path} changed"
    return err[0]


def test_run_out_here_would_replace_the_trace(folder: Path, capsys) -> None:
    line = _refused(capsys, ["s.toml", "--out", ".", "--quiet"], folder / "jobs.csv", folder / "s.toml")
    assert "jobs.csv" in line and "job CSV" in line
    assert not (folder / "summary.json").exists()  # nothing written


def test_run_out_elsewhere_is_fine_and_outputs_beside_inputs_under_owned_names(folder: Path) -> None:
    (folder / "notes.txt").write_text("mine")
    assert main(["s.toml", "--out", "out", "--quiet"]) == 0
    os.rename(folder / "jobs.csv", folder / "trace.csv")  # the trace under a name run does not own
    (folder / "s.toml").write_text(SCENARIO.replace("jobs.csv", "trace.csv"))
    assert main(["s.toml", "--out", ".", "--quiet"]) == 0
    assert (folder / "jobs.csv").exists() and (folder / "notes.txt").read_text() == "mine"


def test_learn_out_the_scenario(folder: Path, capsys) -> None:
    _refused(capsys, ["learn", "s.toml", "--out", "s.toml", "--population", "4", "--generations", "1",
                      "--train", "1", "--validation", "1", "--alpha", "1", "--quiet"], folder / "s.toml")


def test_learn_out_a_symlink_to_the_scenario(folder: Path, capsys) -> None:
    (folder / "link.json").symlink_to(folder / "s.toml")
    _refused(capsys, ["learn", "s.toml", "--out", "link.json", "--population", "4", "--generations", "1",
                      "--train", "1", "--validation", "1", "--alpha", "1", "--quiet"], folder / "s.toml")


def test_learn_out_a_hard_link_to_the_trace(folder: Path, capsys) -> None:
    os.link(folder / "jobs.csv", folder / "copy.json")
    _refused(capsys, ["learn", "s.toml", "--out", "copy.json", "--population", "4", "--generations", "1",
                      "--train", "1", "--validation", "1", "--alpha", "1", "--quiet"], folder / "jobs.csv")


def test_rl_train_out_the_scenario(folder: Path, capsys) -> None:
    pytest.importorskip("gymnasium", reason="rl train needs the extra 'rl' (gymnasium)")
    _refused(capsys, ["rl", "train", "s.toml", "--out", "s.toml", "--quiet"], folder / "s.toml")


def test_compare_out_folder_holding_an_input_under_an_owned_name(folder: Path, capsys) -> None:
    os.rename(folder / "jobs.csv", folder / "compare.csv")  # a trace named like compare's own table
    (folder / "s.toml").write_text(SCENARIO.replace("jobs.csv", "compare.csv"))
    _refused(capsys, ["compare", "s.toml", "--out", ".", "--seeds", "1", "--quiet"], folder / "compare.csv")


def test_experiment_out_folder_holding_the_spec_under_an_owned_name(folder: Path, capsys) -> None:
    pytest.importorskip("scipy.stats", reason="experiment statistics need the extra 'experiment' (scipy)")
    spec = folder / "report.md"  # a spec file named like the experiment's own report
    spec.write_text('name = "e"\nscenarios = ["s.toml"]\nschedulers = ["fifo"]\nseeds = 1\n')
    _refused(capsys, ["experiment", str(spec), "--out", ".", "--quiet", "--workers", "1"], spec, folder / "jobs.csv")


# -- spreadsheet-safe outputs -----------------------------------------------------------------------
def test_ids_that_a_spreadsheet_would_run_as_formulas_are_written_as_text(folder: Path) -> None:
    import csv

    (folder / "jobs.csv").write_text('job_id,submit,duration,gpus\n"=HYPERLINK(""http://x"")",0,100,1\n'
                                     "@SUM(1),10,200,2\n+cmd,20,50,4\n-5,30,10,1\nplain,40,10,1\n")
    assert main(["s.toml", "--out", "out", "--quiet"]) == 0
    with open(folder / "out" / "jobs.csv", newline="") as fh:
        ids = [row["job_id"] for row in csv.DictReader(fh)]
    assert ids == ["'=HYPERLINK(\"http://x\")", "'@SUM(1)", "'+cmd", "-5", "plain"]
    with open(folder / "out" / "events.csv", newline="") as fh:
        event_ids = {row["job_id"] for row in csv.DictReader(fh)}
    assert event_ids == set(ids)


def test_ordinary_ids_are_written_unchanged(folder: Path) -> None:
    assert main(["s.toml", "--out", "out", "--quiet"]) == 0
    assert (folder / "out" / "jobs.csv").read_text().splitlines()[1].startswith("a,")
