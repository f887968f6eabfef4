"""simsched.runs.messages: a user policy's child sends its parent plain data only; a crafted pickle
is refused, never run, and its run is a named failure (docs/assignment.md)."""

from __future__ import annotations

import os
import pickle
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import simsched
from simsched.core.engine import Progress
from simsched.core.errors import InputError
from simsched.runs import messages
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


def test_what_runs_send_is_plain_data() -> None:
    frame = pd.DataFrame({"job_id": ["a", "b"], "wait": [0.0, 1.5], "gpus": np.array([1, 8])})
    back = messages.loads(pickle.dumps(("ok", frame)))
    assert back[0] == "ok" and back[1].equals(frame)
    assert messages.loads(pickle.dumps(frame["wait"])).equals(frame["wait"])
    assert np.array_equal(messages.loads(pickle.dumps(np.arange(3.0))), np.arange(3.0))
    assert messages.loads(pickle.dumps(np.float64(2.5))) == 2.5
    progress = Progress(1.0, 2.0, 3, 4, 5, 6, 7, 8.0)
    assert messages.loads(pickle.dumps(("progress", progress))) == ("progress", progress)
    for exc in (InputError("one line"), ValueError("x"), KeyError("k")):
        back = messages.loads(pickle.dumps(exc))
        assert type(back) is type(exc) and str(back) == str(exc)


def test_a_message_that_is_not_a_kind_and_payload_is_refused() -> None:
    class Pipe:
        def __init__(self, value):
            self.data = pickle.dumps(value)

        def recv_bytes(self):
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
