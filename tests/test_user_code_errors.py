"""User code is bad input (issue 24): whatever a policy raises, BaseException subclasses and
GeneratorExit included, from decide, from a property, from bind, or from the methods of an object it
returns, ends as one line naming the policy's file and line, exit 2; a Ctrl-C stays an interrupt. A
malformed policy reference is exit 2 too, and with --json a policy's prints go to stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simsched.cli.main import main
from simsched.runs.isolated import AVAILABLE as ISOLATION

JOBS = "job_id,submit,duration,gpus\na,0,100,1\nb,10,200,2\n"
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
POLICIES = '''
from simsched.core.contract import Decision, Start


class Boom(BaseException):
    pass


class RaisesBase:
    def decide(self, view):
        raise Boom("bang")


class RaisesGeneratorExit:
    def decide(self, view):
        raise GeneratorExit("closing")


class IntervalRaises:
    @property
    def interval_s(self):
        raise RuntimeError("no interval")

    def decide(self, view):
        return Decision()


class BadId(str):
    def __hash__(self):
        raise ValueError("unhashable id")


class ReturnsBadId:
    def decide(self, view):
        starts = tuple(Start(BadId(job.job_id), (0,) * job.workers) for job in view.queue[:1])
        return Decision(starts=starts)


class BadNode(int):
    def __int__(self):
        raise ArithmeticError("not a number today")


class ReturnsBadNode:
    def decide(self, view):
        return Decision(starts=tuple(Start(job.job_id, (BadNode(0),)) for job in view.queue[:1]))


class QuietRaises:
    interval_s = 10.0

    def quiet_until(self, view):
        raise LookupError("no idea when")

    def decide(self, view):
        return Decision()


class Chatty:
    def decide(self, view):
        print("thinking out loud")
        starts = []
        free = list(view.free)
        for job in view.queue:
            for node, gpus in enumerate(free):
                if gpus >= job.gpus * 1000:
                    starts.append(Start(job.job_id, (node,)))
                    free[node] -= job.gpus * 1000
                    break
        return Decision(starts=tuple(starts))


class Interrupts:
    def decide(self, view):
        raise KeyboardInterrupt
'''


@pytest.fixture
def folder(tmp_path: Path, monkeypatch) -> Path:
    (tmp_path / "jobs.csv").write_text(JOBS)
    (tmp_path / "s.toml").write_text(SCENARIO)
    (tmp_path / "pol.py").write_text(POLICIES)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _line_of(text: str, folder: Path) -> int:
    return next(i for i, line in enumerate((folder / "pol.py").read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("name, where, what", [
    ("RaisesBase", 'raise Boom("bang")', "RaisesBase.decide raised Boom: bang"),
    ("RaisesGeneratorExit", 'raise GeneratorExit("closing")', "decide raised GeneratorExit: closing"),
    ("IntervalRaises", 'raise RuntimeError("no interval")', "interval_s raised RuntimeError: no interval"),
    ("ReturnsBadNode", None, "returned an object whose own methods raise: ArithmeticError: not a number today"),
    ("QuietRaises", 'raise LookupError("no idea when")', "quiet_until raised LookupError: no idea when"),
])
def test_anything_a_policy_raises_is_one_line_naming_file_and_line(folder: Path, capsys, name: str,
                                                                   where: str | None, what: str) -> None:
    assert main(["s.toml", "--policy", f"pol.py:{name}", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert what in err[0], err[0]
    assert f"{folder / 'pol.py'}:" in err[0]
    if where:
        assert f"pol.py:{_line_of(where, folder)}:" in err[0]


def test_a_job_id_that_is_a_str_subclass_is_refused_naming_it(folder: Path, capsys) -> None:
    """A str subclass may redefine equality and hashing (this one's __hash__ raises): it is refused in
    one line naming the class (issue 39, round three), and never reaches the engine."""
    assert main(["s.toml", "--policy", "pol.py:ReturnsBadId", "--quiet", "--out", "out"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Start.job_id must be the job's job_id string" in err[0], err
    assert "a BadId, a subclass of str" in err[0]


def test_a_keyboard_interrupt_raised_by_a_policy_is_an_interrupt_only_where_it_can_be_a_ctrl_c(
        folder: Path, capsys) -> None:
    """In this process a KeyboardInterrupt inside decide() may be the user's Ctrl-C (130). In a policy's
    child process it cannot: the child ignores Ctrl-C, which reaches the parent (tests/test_interrupts.py),
    so one raised there without the parent interrupted is the policy's own doing: a failed run (issue 39,
    hostile round five)."""
    code = main(["s.toml", "--policy", "pol.py:Interrupts", "--quiet"])
    assert code == (2 if ISOLATION else 130)


@pytest.mark.parametrize("ref", ["..x:P", ".x:P", "a..b:P", "x/y:P", ":P", "x:"])
def test_a_malformed_policy_reference_is_bad_input(folder: Path, capsys, ref: str) -> None:
    assert main(["s.toml", "--policy", ref, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "internal error" not in err[0], err


def test_with_json_a_policys_prints_go_to_stderr(folder: Path, capsys) -> None:
    assert main(["s.toml", "--policy", "pol.py:Chatty", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["completed"] == 2
    assert "thinking out loud" in captured.err and "thinking out loud" not in captured.out


def test_a_worker_process_that_dies_under_compare_is_a_named_failed_run(folder: Path, capsys) -> None:
    (folder / "die.py").write_text("import os\n\n\nclass Die:\n    def decide(self, view):\n        os._exit(7)\n")
    code = main(["compare", "s.toml", "--schedulers", "fifo,die.py:Die", "--seeds", "2", "--workers", "2",
                 "--out", "cmp", "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert "die.py: die.py:Die (seed 1): the run's process ended with exit code 7" in err[0]
    assert "internal error" not in err[0] and "BrokenProcessPool" not in err[0]
    assert (folder / "cmp" / "PARTIAL").read_text().startswith("failed comparison:")
    kept = (folder / "cmp" / "compare_runs.csv").read_text().splitlines()
    assert all(",fifo," in line for line in kept[1:]) and len(kept) >= 2  # fifo's finished runs are kept
