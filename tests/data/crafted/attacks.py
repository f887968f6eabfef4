"""Policies written to attack the grader through the child's pipe (tests/test_child_messages.py).
Each writes one crafted message, in multiprocessing's framing, to the pipe its process sends its
messages on (found through its sys.stdout, which forwards there; attack.py writes to every pipe),
then ends its process: the parent must refuse the message, fail the run with a named line, and not
allocate, call or raise what the message asks for."""

import os
import pickle
import struct
import sys

TAG = "\x00simsched"  # simsched.runs.messages.TAG, spelled out: the attacker needs no simsched


def _inject(frame: bytes) -> None:
    fd = sys.stdout.conn.fileno()  # the child's message pipe (simsched.runs.isolated._Forward)
    while frame:
        frame = frame[os.write(fd, frame):]
    os._exit(0)


def _message(data: bytes) -> bytes:
    return struct.pack("!i", len(data)) + data


class _Attack:
    def decide(self, view):
        _inject(self.frame())


class Oversized(_Attack):
    """A header announcing a message of a terabyte (the parent must not allocate it)."""

    def frame(self):
        return struct.pack("!i", -1) + struct.pack("!Q", 1 << 40) + b"\x80\x05"


class CallsList(_Attack):
    """``list(range(10**10))`` on load: 80 GB of pointers, called through builtins.list."""

    class _Huge:
        def __reduce__(self):
            return (list, (range(10 ** 10),))

    def frame(self):
        return _message(pickle.dumps(("ok", self._Huge()), protocol=2))


class HugeArray(_Attack):
    """An array tag claiming 10**12 float64s with 8 bytes of data."""

    def frame(self):
        return _message(pickle.dumps(("ok", (TAG, "array", "<f8", (10 ** 12,), bytearray(8))), protocol=5))


class DeepNesting(_Attack):
    """A list nested 200,000 deep (pickle opcodes: EMPTY_LIST x N, APPEND x N)."""

    def frame(self):
        depth = 200_000
        data = b"\x80\x04\x8c\x02ok" + b"]" * depth + b"a" * (depth - 1) + b"\x86."
        return _message(data)


class RowlessFrame(_Attack):
    """A frame of no columns over a range index of 10**12 rows (cheap to send, costly to use)."""

    def frame(self):
        return _message(pickle.dumps(("ok", (TAG, "frame", (0, 10 ** 12, 1), ())), protocol=5))


class HugeInt(_Attack):
    """An int of a million bits (printing it raises; no result holds one)."""

    def frame(self):
        return _message(pickle.dumps(("ok", {"avg_wait": 1 << 1_000_000}), protocol=5))


class BadEventLog(_Attack):
    """An event log whose one event names job 10**9 of a log of one job."""

    def frame(self):
        log = (TAG, "eventlog", ["j0"], struct.pack("d", 0.0), b"\x00", struct.pack("q", 10 ** 9),
               struct.pack("q", 0), b"", {})
        return _message(pickle.dumps(("ok", log), protocol=5))


class Exits(_Attack):
    """An ``error`` message holding SystemExit: re-raised in the parent, it would end the grading."""

    def frame(self):
        return _message(pickle.dumps(("error", (TAG, "error", "builtins.SystemExit", (0,), [])), protocol=5))


class WrongResult(_Attack):
    """A well-formed message whose result is not what the run returns (a string for a RunResult)."""

    def frame(self):
        return _message(pickle.dumps(("ok", "a result"), protocol=5))
