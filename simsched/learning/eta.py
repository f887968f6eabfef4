"""How long ``learn`` has left, estimated from the generations after the session's first (issue 35).

The first generation a session evaluates is no guide to the others: it pays
the warm-up (worker processes starting, each instance's arrays built, the
compiled replay's caches filled) and has no memo hits, as no expression has
been evaluated yet. After generation 0, an estimate from it said 1:04:06 for
one more generation plus validation; the generation took 4:58. So until one
generation after the first has finished there is no estimate (None: the
progress line says "estimating"); then:

* a generation left costs the measured seconds per evaluation *slot* (each
  generation has 2 x population x alpha slots; memo hits, which the measured
  generations had too, make some free);
* validation costs the measured seconds per *run* really made, for each of its
  population x validation runs (its instances are new: no memo hits);
* of the generation or validation in progress, the part not done yet (the
  runs of its current batch done so far over the batch's runs).

A resumed session's first generation is a first too (fresh workers, an empty
memo), and is not measured either.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class LearnEta:
    """Times of the generations after the first (``clock``: seconds, monotonic; a fake one in tests)."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._begun: tuple[float, int] | None = None  # (clock, runs made so far) of the generation in progress
        self._firsts = 1  # generations still to leave unmeasured
        self.seconds = 0.0  # wall seconds of the measured generations
        self.slots = 0  # their evaluation slots
        self.runs = 0  # their runs really made (slots less memo hits)

    def begin(self, runs: int) -> None:
        """A generation starts evaluating; ``runs``: the runs the session made before it."""
        self._begun = (self._clock(), runs)

    def end(self, slots: int, runs: int) -> None:
        """It finished, with ``slots`` evaluation slots; ``runs``: the session's runs so far."""
        if self._begun is None:
            raise ValueError("LearnEta.end without begin")
        started, runs_before = self._begun
        self._begun = None
        if self._firsts:
            self._firsts -= 1
            return
        self.seconds += self._clock() - started
        self.slots += slots
        self.runs += runs - runs_before

    @property
    def known(self) -> bool:
        """Whether a generation after the first has finished (else there is no estimate)."""
        return self.slots > 0

    def remaining(self, slots: int, current_slots: int, validation_runs: int, done: int = 0,
                  total: int = 0) -> float | None:
        """Seconds left: ``slots`` evaluation slots of generations not finished, of which the
        generation in progress has ``current_slots``, then validation's ``validation_runs`` runs (those
        not made yet). ``done`` of ``total`` runs of the batch in progress are made: that part of the
        generation in progress (of the validation when no slot is left) is behind us. None while not
        :attr:`known`."""
        if not self.known:
            return None
        per_slot = self.seconds / self.slots
        per_run = self.seconds / self.runs if self.runs else per_slot
        part = done / total if total > 0 else 0.0
        if slots <= 0:
            return per_run * validation_runs * (1.0 - part)
        return per_slot * (slots - part * current_slots) + per_run * validation_runs
