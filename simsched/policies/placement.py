"""Worker placement inside one group of same-type nodes (SPEC §4).

A placement gets the group's node indices (ascending), the milli-GPUs each
worker needs, the worker count and the policy's scratch ``free`` list. It
returns one node per worker and subtracts what it took from ``free``, or
returns None and leaves ``free`` as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


class Placement(Protocol):
    def __call__(self, nodes: Sequence[int], per_worker: int, workers: int,
                 free: list[int]) -> tuple[int, ...] | None: ...


def _undo(taken: list[int], per_worker: int, free: list[int]) -> None:
    for n in taken:
        free[n] += per_worker


def best_fit(nodes: Sequence[int], per_worker: int, workers: int, free: list[int]) -> tuple[int, ...] | None:
    """Each worker on the node with the least free GPUs that still fits; ties lowest index."""
    taken: list[int] = []
    for _ in range(workers):
        best = -1
        best_free = 1 << 62
        for n in nodes:
            f = free[n]
            if per_worker <= f < best_free:
                best, best_free = n, f
        if best < 0:
            _undo(taken, per_worker, free)
            return None
        free[best] -= per_worker
        taken.append(best)
    return tuple(taken)


def first_fit(nodes: Sequence[int], per_worker: int, workers: int, free: list[int]) -> tuple[int, ...] | None:
    """Each worker on the lowest-index node that fits."""
    taken: list[int] = []
    for n in nodes:
        while free[n] >= per_worker and len(taken) < workers:
            free[n] -= per_worker
            taken.append(n)
        if len(taken) == workers:
            return tuple(taken)
    _undo(taken, per_worker, free)
    return None


def worst_fit(nodes: Sequence[int], per_worker: int, workers: int, free: list[int]) -> tuple[int, ...] | None:
    """Each worker on the node with the most free GPUs; ties lowest index."""
    taken: list[int] = []
    for _ in range(workers):
        best = -1
        best_free = per_worker - 1
        for n in nodes:
            if free[n] > best_free:
                best, best_free = n, free[n]
        if best < 0:
            _undo(taken, per_worker, free)
            return None
        free[best] -= per_worker
        taken.append(best)
    return tuple(taken)


class RoundRobin:
    """Spark-style: a pointer per node group rotates over the nodes; each worker goes on
    the first node at or after the pointer that fits, and the pointer moves past it.

    Only a call moves the pointer: :meth:`peek` is the same placement without moving it (a
    trial, see :func:`trial`), and :meth:`commit` moves it afterwards for the nodes started."""

    def __init__(self) -> None:
        self._pointer: dict[tuple[int, ...], int] = {}

    def __call__(self, nodes: Sequence[int], per_worker: int, workers: int,
                 free: list[int]) -> tuple[int, ...] | None:
        key = tuple(nodes)
        placed = self._place(key, per_worker, workers, free)
        if placed is None:
            return None
        taken, self._pointer[key] = placed
        return taken

    def peek(self, nodes: Sequence[int], per_worker: int, workers: int,
             free: list[int]) -> tuple[int, ...] | None:
        """The nodes a call would take (taken out of ``free``), the pointer left where it is."""
        placed = self._place(tuple(nodes), per_worker, workers, free)
        return None if placed is None else placed[0]

    def commit(self, nodes: Sequence[int], taken: Sequence[int]) -> None:
        """``taken`` (a :meth:`peek` on ``nodes``) was started: the pointer moves past its last node,
        where the call itself would have left it."""
        if taken:
            key = tuple(nodes)
            self._pointer[key] = (key.index(taken[-1]) + 1) % len(key)

    def _place(self, key: tuple[int, ...], per_worker: int, workers: int,
               free: list[int]) -> tuple[tuple[int, ...], int] | None:
        count = len(key)
        taken: list[int] = []
        position = self._pointer.get(key, 0)
        for _ in range(workers):
            for step in range(count):
                n = key[(position + step) % count]
                if free[n] >= per_worker:
                    free[n] -= per_worker
                    taken.append(n)
                    position = (position + step + 1) % count
                    break
            else:
                _undo(taken, per_worker, free)
                return None
        return tuple(taken), position


def trial(placement: Placement) -> Placement:
    """``placement`` for a trial whose nodes may not be started (on a scratch ``free``): a stateful
    rule (round robin) keeps its state, a stateless one is itself. When the nodes of a trial are
    started after all, :func:`commit` tells the rule, so that only starts move its state."""
    return getattr(placement, "peek", placement)


def commit(placement: Placement, nodes: Sequence[int], taken: Sequence[int]) -> None:
    """``taken``, found by a :func:`trial` call of ``placement`` on ``nodes``, is started: a stateful
    rule moves on as the call itself would have."""
    record = getattr(placement, "commit", None)
    if record is not None:
        record(nodes, taken)


#: placement name -> factory (one instance per scheduler: round robin keeps a pointer)
PLACEMENTS: dict[str, Callable[[], Placement]] = {
    "best_fit": lambda: best_fit,
    "first_fit": lambda: first_fit,
    "worst_fit": lambda: worst_fit,
    "round_robin": RoundRobin,
}
