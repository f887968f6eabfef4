"""The engine's event log, kept in compact columns (SPEC §7).

A list of ``(time, event, job_id, detail)`` tuples costs about 100 bytes per
event, three or more events per job. :class:`EventLog` keeps a float, a
kind byte and a job index per event, the node ids of ``start`` events in one
flat integer array, and the rare ``unscheduled`` reasons in a dict: about 25
bytes per event. It still reads as a sequence of those tuples (``log[i]``,
slices, iteration, ``==`` against a list), built on access, and
:meth:`EventLog.frame` gives the events table without making the tuples.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from typing import overload

import numpy as np
import pandas as pd

KINDS = ("arrive", "start", "finish", "preempt", "unscheduled")
ARRIVE, START, FINISH, PREEMPT, UNSCHEDULED = range(len(KINDS))
_INT_TIME = 8  # kind byte flag: the time was a Python int (SimPy's clock starts at the int 0)

Event = tuple[float, str, str, str]


class EventLog(Sequence[Event]):
    """Events in the order the engine handled them; ``job_ids`` maps a job index to its id."""

    def __init__(self, job_ids: Sequence[str]) -> None:
        self._job_ids = job_ids
        self._time = array("d")
        self._kind = array("b")
        self._job = array("q")
        self._node_at = array("q")  # per event: where its nodes start in _nodes (start events)
        self._nodes = array("q")
        self._reasons: dict[int, str] = {}

    #: the array typecodes of :meth:`buffers`: time, kind, job, node_at, nodes
    TYPECODES = ("d", "b", "q", "q", "q")
    #: the flag in a kind byte that marks an int time
    INT_TIME = _INT_TIME

    @classmethod
    def from_buffers(cls, job_ids: Sequence[str], buffers: Sequence[array], reasons: dict[int, str]) -> EventLog:
        """A log of the columns :meth:`buffers` and :attr:`reasons` gave (simsched.runs.messages
        checks them first: same lengths, indices in range)."""
        log = cls(job_ids)
        log._time, log._kind, log._job, log._node_at, log._nodes = buffers
        log._reasons = dict(reasons)
        return log

    def buffers(self) -> tuple[array, array, array, array, array]:
        """The log's columns as it keeps them (typecodes :data:`TYPECODES`)."""
        return self._time, self._kind, self._job, self._node_at, self._nodes

    @property
    def reasons(self) -> dict[int, str]:
        """Event index -> the reason of an ``unscheduled`` event."""
        return self._reasons

    @property
    def job_ids(self) -> Sequence[str]:
        return self._job_ids

    def add(self, now: float, kind: int, job: int, nodes: Sequence[int] = (), reason: str = "") -> None:
        if reason:
            self._reasons[len(self._time)] = reason
        self._time.append(now)
        self._kind.append(kind | _INT_TIME if type(now) is int else kind)
        self._job.append(job)
        self._node_at.append(len(self._nodes))
        if nodes:
            self._nodes.extend(nodes)

    def _event(self, i: int) -> Event:
        code = self._kind[i]
        kind = code & ~_INT_TIME
        time = self._time[i]
        if code & _INT_TIME:
            time = int(time)
        if kind == START:
            end = self._node_at[i + 1] if i + 1 < len(self._node_at) else len(self._nodes)
            detail = " ".join(map(str, self._nodes[self._node_at[i]:end]))
        else:
            detail = self._reasons.get(i, "")
        return (time, KINDS[kind], self._job_ids[self._job[i]], detail)

    def __len__(self) -> int:
        return len(self._time)

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._event(k) for k in range(*i.indices(len(self)))]
        n = len(self)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("event index out of range")
        return self._event(i)

    def __iter__(self) -> Iterator[Event]:
        for i in range(len(self)):
            yield self._event(i)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EventLog | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # mutable, like a list

    def __repr__(self) -> str:
        return f"EventLog({len(self)} events)"

    def columns(self, copy: bool = True) -> dict[str, np.ndarray]:
        """The log as numpy arrays: ``time``, ``kind`` (index in :data:`KINDS`), ``job`` (job
        index), ``node_at`` (per event: where its nodes start in ``nodes``, one more entry at the
        end) and ``nodes`` (node ids of every start event, one per worker, in log order).

        With ``copy=False`` ``time``, ``job`` and ``nodes`` are views of the log's buffers
        (no copy of a million-job log); drop them before the log grows again.
        """
        def column(buffer: array, dtype) -> np.ndarray:
            if not len(buffer):
                return np.zeros(0, dtype)
            view = np.frombuffer(buffer, dtype=dtype)
            return view.copy() if copy else view

        return {
            "time": column(self._time, np.float64),
            "kind": column(self._kind, np.int8) & ~_INT_TIME,
            "job": column(self._job, np.int64),
            "node_at": np.append(column(self._node_at, np.int64), len(self._nodes)),
            "nodes": column(self._nodes, np.int64),
        }

    def frame(self, start: int = 0, stop: int | None = None) -> pd.DataFrame:
        """The events table (columns time, event, job_id, detail): the same values and dtypes as
        ``pd.DataFrame(list(log), columns=...)``, built from the columns; rows ``start:stop``
        (the time column's dtype is that of the whole log)."""
        n = len(self)
        if n == 0:
            return pd.DataFrame([], columns=["time", "event", "job_id", "detail"])
        all_codes = np.frombuffer(self._kind, dtype=np.int8)
        # a list of tuples whose times are all Python ints makes an int64 column
        all_int = bool((all_codes & _INT_TIME).all())
        stop = n if stop is None else min(stop, n)
        kinds = all_codes[start:stop] & ~_INT_TIME
        times = np.frombuffer(self._time, dtype=np.float64)[start:stop]
        jobs = np.frombuffer(self._job, dtype=np.int64)[start:stop]
        detail = np.full(len(kinds), "", dtype=object)
        node_at = np.frombuffer(self._node_at, dtype=np.int64)
        ends = np.append(node_at[1:], len(self._nodes))[start:stop]
        node_at = node_at[start:stop]
        nodes = self._nodes
        starts = np.flatnonzero(kinds == START)
        for i, first, end in zip(starts.tolist(), node_at[starts].tolist(), ends[starts].tolist()):
            detail[i] = " ".join(map(str, nodes[first:end]))
        for i, reason in self._reasons.items():
            if start <= i < stop:
                detail[i - start] = reason
        return pd.DataFrame({
            "time": times.astype(np.int64) if all_int else times.copy(),
            "event": np.array(KINDS, dtype=object)[kinds],
            "job_id": np.array(self._job_ids, dtype=object)[jobs],
            "detail": detail,
        })

    def frames(self, chunk: int = 200_000) -> Iterator[pd.DataFrame]:
        """:meth:`frame` ``chunk`` rows at a time (one empty frame for an empty log): together the
        whole table, with one chunk's rows in memory at once (a million-job log has ~3M events)."""
        if len(self) <= chunk:
            yield self.frame()
            return
        for first in range(0, len(self), chunk):
            yield self.frame(first, first + chunk)

    def write_csv(self, path, chunk: int = 200_000) -> None:
        """``self.frame().to_csv(path, index=False)``, a chunk of rows at a time (the same bytes,
        without the whole table in memory)."""
        with open(path, "w", newline="") as f:
            for k, frame in enumerate(self.frames(chunk)):
                frame.to_csv(f, index=False, header=k == 0)
