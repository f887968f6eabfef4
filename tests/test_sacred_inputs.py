"""Inputs are sacred (issue 24): an output path that would replace a file the command
reads is refused with exit 2 and one line, and the input stays byte-identical; an input that
is a FIFO or a device is "not a regular file" (exit 2), never read and never "not found"."""

from __future__ import annotations

import pytest

from simsched.cli.main import main
from tests.helpers import write_scenario

CLUSTER = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]'
SCHEDULER = 'policy = "fifo"\nplacement = "best_fit"\nbackfill = false\nallocation = "home"\nheterogeneous = false'


def _scenario(folder):
    return write_scenario(folder, clusters=CLUSTER, scheduler=SCHEDULER, jobs=["0,0,100,8,,,,,", "1,10,50,4,,,,,"])


def _refused(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    return err


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


def test_run_out_folder_holding_the_trace_is_refused(tmp_path, capsys, monkeypatch):
    path = _scenario(tmp_path)
    before = _snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    err = _refused(capsys, ["scenario.toml", "--out", ".", "--quiet"])
    assert "jobs.csv" in err and "reads" in err
    assert _snapshot(tmp_path) == before and path.exists()


def test_run_out_folder_that_only_shares_a_parent_is_fine(tmp_path, capsys):
    _scenario(tmp_path)
    assert main([str(tmp_path / "scenario.toml"), "--out", str(tmp_path / "out"), "--quiet"]) == 0


@pytest.mark.parametrize("command", [["learn"], ["rl", "train"]])
def test_learn_and_rl_out_over_the_scenario_are_refused(tmp_path, capsys, command):
    if command[0] == "rl":
        pytest.importorskip("gymnasium")
    path = _scenario(tmp_path)
    before = _snapshot(tmp_path)
    err = _refused(capsys, [*command, str(path), "--out", str(path)])
    assert "reads" in err
    assert _snapshot(tmp_path) == before


def test_learn_out_over_the_trace_is_refused(tmp_path, capsys):
    path = _scenario(tmp_path)
    before = _snapshot(tmp_path)
    _refused(capsys, ["learn", str(path), "--out", str(tmp_path / "jobs.csv")])
    assert _snapshot(tmp_path) == before


def test_compare_out_folder_holding_an_input_named_like_an_output_is_refused(tmp_path, capsys):
    path = write_scenario(tmp_path, clusters=CLUSTER, scheduler=SCHEDULER, jobs=["0,0,100,8,,,,,"],
                          workload='source = "csv"\npath = "compare.csv"')
    (tmp_path / "jobs.csv").rename(tmp_path / "compare.csv")
    before = _snapshot(tmp_path)
    err = _refused(capsys, ["compare", str(path), "--out", str(tmp_path), "--quiet", "--schedulers", "fifo"])
    assert "compare.csv" in err
    assert _snapshot(tmp_path) == before


# -- files read back must be regular files: a FIFO or /dev/zero is "not a regular file", never read

def _irregular(path, kind):
    if kind == "fifo":
        import os
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")


@pytest.mark.parametrize("kind", ["fifo", "devzero"])
@pytest.mark.parametrize("what", ["trace", "priority", "policy", "agent"])
def test_input_that_is_not_a_regular_file_is_named_so(tmp_path, capsys, what, kind):
    names = {"trace": "t.csv", "priority": "p.json", "policy": "p.py", "agent": "a.npz"}
    scheduler = {"trace": SCHEDULER, "priority": 'policy = "gp"\npriority = "p.json"',
                 "policy": 'policy = "p.py:P"', "agent": 'policy = "rl"\nagent = "a.npz"'}[what]
    workload = 'source = "csv"\npath = "t.csv"' if what == "trace" else None
    path = write_scenario(tmp_path, clusters=CLUSTER, scheduler=scheduler, jobs=["0,0,100,8,,,,,"],
                          workload=workload)
    _irregular(tmp_path / names[what], kind)
    err = _refused(capsys, [str(path), "--quiet"])
    assert names[what] in err and "not a regular file" in err, err


def test_learn_resume_from_a_checkpoint_that_is_a_device_is_refused(tmp_path, capsys):
    path = _scenario(tmp_path)
    _irregular(tmp_path / "l.json.ckpt", "devzero")
    err = _refused(capsys, ["learn", str(path), "--out", str(tmp_path / "l.json"), "--resume",
                            "--generations", "1", "--population", "2", "--quiet"])
    assert "l.json.ckpt" in err and "not a regular file" in err


def test_rl_train_resume_from_a_checkpoint_that_is_a_device_is_refused(tmp_path, capsys):
    pytest.importorskip("gymnasium")
    path = _scenario(tmp_path)
    _irregular(tmp_path / "a.npz.ckpt.npz", "devzero")
    err = _refused(capsys, ["rl", "train", str(path), "--out", str(tmp_path / "a.npz"), "--resume",
                            "--episodes", "1"])
    assert "a.npz.ckpt.npz" in err and "not a regular file" in err
