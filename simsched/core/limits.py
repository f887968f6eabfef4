"""Up-front limits: reject a value whose memory or time would be absurd, saying the estimate.

A value can be valid in type and range and still ask for a petabyte of job
records or 10^15 decision rounds; the run would then die with MemoryError or
never end. These checks run while the input is validated, before any work,
and raise :class:`InputError` with the estimate and the limit.

The per-item costs are measured orders of magnitude (``sys.getsizeof`` of a
job record with its event-log rows, a node's container), not exact figures;
the limits sit far above every shipped or sensible scenario.
"""

from __future__ import annotations

import os

from simsched.core.errors import InputError

#: rough bytes per job through the pipeline (table row, JobSpec, JobRecord, events, result rows)
BYTES_PER_JOB = 3_000
#: rough bytes per node (spec, SimPy container, free-capacity entries, policy views)
BYTES_PER_NODE = 1_500
#: rough bytes per GP individual (a prefix tuple of up to 2^7 - 1 symbols, its infix text, fitness)
BYTES_PER_INDIVIDUAL = 4_000
#: more GPUs than any real machine has; a pool of GPUs is several nodes
MAX_GPUS_PER_NODE = 4096
#: simulation events / decision rounds beyond which a run would take days
MAX_EVENTS = 1e9
#: GP or EA evaluations (simulations) beyond which learning would take years
MAX_RUNS = 1e8
#: the smallest value a strictly positive key accepts (loads, durations, speedups, rates ...): below it
#: a value only produces divisions by zero or infinities (5e-324 > 0, yet 1 / (5e-324 * 0.5) fails)
MIN_POSITIVE = 1e-9
#: the largest sum of the objective's weights (Eq. 5): each weight is finite, but a weight of 1e308 times a
#: queueing time (or the EA's sums of them over every job) is inf; 1e100 leaves 200 orders of magnitude
MAX_WEIGHT_SUM = 1e100
#: the largest offered load accepted (x fleet capacity); above it every job queues at once anyway
MAX_LOAD = 1000.0


def memory_limit() -> int:
    """Bytes the estimates may reach: the machine's physical memory (16 GiB if unknown)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 16 * 2**30


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:,.0f} {unit}" if unit == "B" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:.3g} EB"  # pragma: no cover


def check_memory(where: str, what: str, count: float, bytes_each: int) -> None:
    """``count`` items of ``bytes_each`` must fit in memory; ``where`` is "file: key" for the message."""
    need = float(count) * bytes_each
    limit = memory_limit()
    if need > limit:
        raise InputError(f"{where}: {count:,.0f} {what} would need about {_size(need)} of memory "
                         f"(~{_size(bytes_each)} each); this machine has {_size(limit)}")


def check_steps(where: str, what: str, steps: float, limit: float = MAX_EVENTS, hint: str = "") -> None:
    """Refuse work of more than ``limit`` steps (events, rounds, runs), which would not finish."""
    if not steps <= limit:  # also catches NaN
        raise InputError(f"{where}: would need about {steps:.2g} {what} (limit {limit:.0e}); "
                         f"it would not finish{'; ' + hint if hint else ''}")
