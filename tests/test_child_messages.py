"""simsched.runs.messages: a user policy's child sends its parent plain data only; a crafted pickle
is refused, never run, and its run is a named failure (docs/assignment.md)."""

from __future__ import annotations

import os
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsched
from simsched.core.engine import Progress
from simsched.core.errors import InputError
from simsched.runs import compare, messages
from simsched.runs.isolated import AVAILABLE, RunFailed

CLASS = Path(__file__).parent / "data" / "class37"
ATTACK = Path(__file__).parent / "data" / "crafted" / "attack.py"


class _Calls:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.system, (f"touch {self.path}",))


def test_a_pickle_that_calls_a_function_is_refused_without_calling_it(tmp_path: Path) -> None:
    mark = tmp_path / "ran"
    with pytest.raises(messages.Refused, match=r"(posix|os)\.system"):
        messages.loads(pickle.dumps(("ok", _Calls(str(mark)))))
    assert not mark.exists()


def test_a_module_not_yet_imported_is_never_imported() -> None:
    crafted = b"cantigravity_x_yz\nf\n."  # protocol 0: GLOBAL antigravity_x_yz.f, STOP
    with pytest.raises(messages.Refused, match=r"antigravity_x_yz\.f"):
        messages.loads(crafted)
    assert "antigravity_x_yz" not in sys.modules


def _sent(value):
    """``value`` as the parent gets it from a child: encoded, pickled, loaded, rebuilt."""
    return messages.decode(messages.loads(messages.dumps(("ok", value))))[1]


def test_what_runs_send_is_rebuilt_from_plain_data() -> None:
    frame = pd.DataFrame({"job_id": pd.array(["a", None], dtype="str"), "wait": [0.0, 1.5],
                          "gpus": np.array([1, 8]), "detail": np.array(["", "0 1"], dtype=object)})
    back = _sent(frame)
    assert back.equals(frame) and list(back.dtypes) == list(frame.dtypes)
    assert np.array_equal(_sent(np.arange(6.0).reshape(2, 3)), np.arange(6.0).reshape(2, 3))
    scalar = _sent(np.float64(2.5))
    assert scalar == 2.5 and type(scalar) is np.float64
    progress = Progress(1.0, 2.0, 3, 4, 5, 6, 7, 8.0)
    assert messages.decode(messages.loads(messages.dumps(("progress", progress)))) == ("progress", progress)
    for exc in (InputError("one line"), ValueError("x"), KeyError("k")):
        back = _sent(exc)
        assert type(back) is type(exc) and str(back) == str(exc)
    row = {"instance": "i", "seed": 1, "avg_wait": 2.5, "_warnings": ["w"], "tags": ("a", None, True)}
    assert _sent(row) == row


def test_no_pickle_of_a_class_or_function_is_read() -> None:
    """A message names no class at all: even numpy's and pandas' own pickles are refused."""
    for value in (np.arange(3), pd.DataFrame({"a": [1]}), ValueError("x"), Progress(1.0, 2.0, 3, 4, 5, 6, 7, 8.0)):
        with pytest.raises(messages.Refused, match="not plain data"):
            messages.loads(pickle.dumps(("ok", value)))
    with pytest.raises(messages.Refused, match="a set outside an array"):  # built by opcodes, not in the allowlist
        messages.decode(messages.loads(pickle.dumps(("ok", {1, 2}))))


def test_a_type_outside_the_allowlist_is_not_sent() -> None:
    class Mine:
        pass

    for value in (Mine(), {1, 2}, np.array([object()]), np.array(["text"]), pd.Series([1.0])):
        with pytest.raises(messages.Unsendable):
            messages.dumps(("ok", value))


def test_a_message_that_is_not_a_kind_and_payload_is_refused() -> None:
    class Pipe:
        def __init__(self, value):
            self.data = pickle.dumps(value)

        def recv_bytes(self, limit=None):
            return self.data

    assert messages.receive(Pipe(("ok", 1))) == ("ok", 1)
    for bad in (["ok", 1], ("ok",), (1, 2), "ok"):
        with pytest.raises(messages.Refused):
            messages.receive(Pipe(bad))


def test_a_user_exception_class_travels_as_its_text() -> None:
    class Mine(Exception):
        pass

    assert not messages.acceptable(Mine("boom")) and messages.acceptable(ValueError("boom"))


@pytest.mark.skipif(not AVAILABLE, reason="no fork on this platform: user policies run in-process")
def test_a_policy_that_sends_a_crafted_pickle_is_a_named_failure_and_runs_nothing(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    mark = tmp_path / "ran-in-the-parent"
    monkeypatch.setenv("CRAFTED_MARK", str(mark))
    with pytest.raises(RunFailed, match=r"attack\.py.*does not accept \(it holds (posix|os)\.system"):
        simsched.run(CLASS / "class.toml", scheduler=f"{ATTACK}:Policy")
    assert not mark.exists()


ATTACKS = ATTACK.parent / "attacks.py"
#: each crafted message (tests/data/crafted/attacks.py) and the reason its run fails with
REFUSALS = {
    "Oversized": r"longer than the [\d,]+ bytes",
    "CallsList": r"it holds (__builtin__|builtins)\.list, which is not plain data",
    "HugeArray": r"an array whose bytes do not match its shape",
    "DeepNesting": r"nested deeper than \d+ levels",
    "RowlessFrame": r"a frame of rows without columns",
    "HugeInt": r"an int of 1000001 bits",
    "BadEventLog": r"an event log naming a job it does not list",
    "Exits": r"an error of class 'builtins\.SystemExit'",
    "WrongResult": r"sent a result simsched does not accept \(a str, not a (RunResult|dict)\)",
}


@pytest.mark.skipif(not AVAILABLE, reason="no fork on this platform: user policies run in-process")
@pytest.mark.parametrize("attack", sorted(REFUSALS))
def test_a_crafted_message_is_a_named_failure_not_an_exception(attack: str) -> None:
    with pytest.raises(RunFailed, match=rf"attacks\.py:{attack} \(seed 1\): .*{REFUSALS[attack]}"):
        simsched.run(CLASS / "class.toml", scheduler=f"{ATTACKS}:{attack}")


@pytest.mark.skipif(not AVAILABLE, reason="no fork on this platform: user policies run in-process")
def test_crafted_messages_in_a_comparison_are_failed_rows_naming_each_student(tmp_path: Path) -> None:
    (tmp_path / "attacks.py").write_text(ATTACKS.read_text())
    (tmp_path / "class.toml").write_text((CLASS / "class.toml").read_text())
    names = ["fifo", *(f"attacks.py:{attack}" for attack in sorted(REFUSALS))]
    spec = compare.compare_spec(tmp_path / "class.toml", schedulers=names, seeds=1, check_policies=False)
    result = compare.run_compare(spec, workers=1, keep_going=True)
    failed = {row["scheduler"]: row["error"] for row in result.failed}
    assert sorted(failed) == sorted(names[1:])
    for attack, reason in REFUSALS.items():
        assert re.search(reason, failed[f"attacks.py:{attack}"]), (attack, failed[f"attacks.py:{attack}"])
    standing = result.standing
    assert (standing.loc["fifo", "completed"], standing.loc["fifo", "place"]) == (1, 1)
    assert (standing.loc[names[1:], "failed"] == 1).all()


def test_fields_a_checker_lets_through_but_a_constructor_refuses_are_refused_not_raised() -> None:
    """Whatever rebuilding a message raises is a Refused (a named failed run), never another exception."""
    class Pipe:
        def __init__(self, value):
            self.data = pickle.dumps(value, protocol=5)

        def recv_bytes(self, limit=None):
            return self.data

    tag = messages.TAG
    crafted = [
        ("ok", {(tag, "array", "<f8", (1,), bytes(8)): 1}),  # an array as a dict key: unhashable
        ("progress", (tag, "progress", (1 << 70, 0.0, 0, 0, 0, 0, 0, 0.0))),  # an int too large to print
        ("error", (tag, "error", "builtins.ValueError", (10 ** 30,), [])),
        ("ok", (tag, "frame", (0, 1 << 70, 1), ())),
    ]
    for message in crafted:
        with pytest.raises(messages.Refused):
            messages.receive(Pipe(message))


def test_an_experiment_runs_result_from_a_child_is_checked_against_its_task(tmp_path: Path) -> None:
    """experiment: what execute() returns passes; another run's identity, a metric that is text or a
    missing entry is a named failed run (the parent never indexes a result it did not check)."""
    from simsched.runs.experiment.grid import plan
    from simsched.runs.experiment.runner import checked_outcome, execute
    from simsched.runs.experiment.spec import load_spec

    (tmp_path / "class.toml").write_text((CLASS / "class.toml").read_text())
    (tmp_path / "spec.toml").write_text('name = "s"\nscenarios = ["class.toml"]\nschedulers = ["fifo"]\n'
                                        'seeds = 2\nmetric = "avg_wait"\n')
    first, second = plan(load_spec(tmp_path / "spec.toml"))
    outcome = _sent(execute(first))
    assert checked_outcome(first, outcome, "fifo (seed 1)") is outcome
    bad = [{**outcome, "identity": {**outcome["identity"], "seed": 2}},
           {**outcome, "metrics": {**outcome["metrics"], "avg_wait": "1.0"}},
           {k: v for k, v in outcome.items() if k != "point"},
           {**outcome, "decisions": [(1, "x")]}]
    for crafted in bad:
        with pytest.raises(RunFailed, match=r"fifo \(seed 1\): its process sent a result that is not this run's"):
            checked_outcome(first, crafted, "fifo (seed 1)")
    with pytest.raises(RunFailed):
        checked_outcome(second, outcome, "fifo (seed 2)")
