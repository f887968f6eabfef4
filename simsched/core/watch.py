"""The heartbeat a run of user code gives the process watching it (``simsched.runs.isolated``).

A run of a user's policy happens in a child process; its parent enforces the
limits (``--decide-timeout``, ``--run-timeout``, ``--run-memory``). The child
marks every call into the user's code on a small board of shared memory: the
number of calls entered and left, which kind of call, when it started (the
system-wide monotonic clock, which parent and child share), and the simulated
time and decision number at its start. The parent reads the board every tick
(50 ms): a call entered, not left, and started longer ago than the decide
timeout is stopped by killing the child. A call that overruns the timeout is
so stopped at the first tick after it did; one that returns before the next
tick is not (the resolution of the limit is the tick). Outside such a child
no board is attached and :func:`enter` and :func:`leave` cost one global read.

The board is the child's own memory, so user code could write on it; that
can fool the per-call timeout at most, never ``--run-timeout``, which the
parent measures on its own clock.
"""

from __future__ import annotations

import time
from typing import Any

#: board slots
ENTERED, LEFT, PHASE, SIM_NOW, DECISIONS, STARTED = range(6)
SLOTS = 6

#: what a user call is doing (the PHASE slot), as messages name it
IMPORT, INIT, DECIDE, METHOD = 1, 2, 3, 4
PHASES = {IMPORT: "importing the policy file", INIT: "__init__", DECIDE: "decide()", METHOD: "a policy method"}

_board: Any = None  # a shared array of SLOTS doubles, in a watched child only


def attach(board: Any) -> None:
    """Use ``board`` (a shared array of :data:`SLOTS` doubles) from now on (in the child)."""
    global _board
    _board = board


def attached() -> bool:
    return _board is not None


def enter(phase: int, now: float | None = None) -> None:
    """User code starts (``now``: the simulated time of a decision)."""
    board = _board
    if board is None:
        return
    board[PHASE] = phase
    board[STARTED] = time.monotonic()  # before ENTERED: a parent that sees the new call sees its start
    if now is not None:
        board[SIM_NOW] = now
        if phase == DECIDE:
            board[DECISIONS] += 1
    board[ENTERED] += 1


def leave() -> None:
    """User code returned (or raised)."""
    board = _board
    if board is not None:
        board[LEFT] = board[ENTERED]
