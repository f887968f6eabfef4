"""Freed memory handed back to the operating system between the phases of a large run.

glibc's malloc keeps what a program frees for its own later use. A million-job run builds and
drops arrays of tens of MB (the engine's columns, the spells' and the timeline's intermediates);
freed, they stay resident, and arrays made later often do not fit in the holes they left (large
ones are mapped afresh), so the peak RSS grows by what was already freed (about 20% at 1M jobs,
issue 35). :func:`release` calls the C library's ``malloc_trim(0)``, which returns every free
page, and asks pyarrow's pool (mimalloc by default; pandas' text columns live there), when
pyarrow is loaded, to return what it holds free, at the points where a run has just dropped a
large part: after the engine, after each output table, and between the timeline's steps. It
changes no result. Where the C library has no ``malloc_trim`` (not glibc) only pyarrow's pool
is asked.

Trimming at those points does not help between them: glibc raises its threshold for giving a
block pages of its own (``mmap``) to the largest block freed so far, up to 32 MiB, so a
million-job run's arrays of 1-32 MB come from the heap after the first is freed, and the holes
they leave stay resident while new arrays are made. :func:`map_large_blocks` fixes the
threshold at 1 MiB and moves pyarrow onto the C allocator: a freed large block is returned at
once (a 1M-job run with ``--out --format parquet``: 1,253 -> 1,064 MiB peak, together with
the timeline's text columns made without a Python object per row). It is process-wide, so the
command line's scenario run (whose process ends with the run) sets it; :func:`simsched.run`
does not change a user's process.
"""

from __future__ import annotations

import ctypes
import sys

try:
    _LIBC = ctypes.CDLL(None)  # the C library the interpreter runs on
except OSError:  # pragma: no cover - no C library to load symbols from
    _LIBC = None
_TRIM = getattr(_LIBC, "malloc_trim", None)
# mallopt's parameter numbers are glibc's: used only where glibc's malloc_trim is there too
_MALLOPT = getattr(_LIBC, "mallopt", None) if _TRIM is not None else None
if _TRIM is not None:
    _TRIM.argtypes = (ctypes.c_size_t,)
    _TRIM.restype = ctypes.c_int
if _MALLOPT is not None:
    _MALLOPT.argtypes = (ctypes.c_int, ctypes.c_int)
    _MALLOPT.restype = ctypes.c_int
_M_MMAP_THRESHOLD = -3  # glibc's malloc.h
#: blocks of at least this many bytes get pages of their own after :func:`map_large_blocks`
LARGE_BLOCK = 1 << 20


def release() -> None:
    """Give the pages malloc holds free back to the operating system (glibc), and those pyarrow's
    pool holds free (when pyarrow is loaded: pandas' text columns live there)."""
    if _TRIM is not None:
        _TRIM(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None and hasattr(arrow, "default_memory_pool"):
        arrow.default_memory_pool().release_unused()


def map_large_blocks(threshold: int = LARGE_BLOCK) -> bool:
    """For the rest of the process, give every block of ``threshold`` bytes or more pages of its
    own, returned to the operating system when it is freed (glibc's ``M_MMAP_THRESHOLD``, which
    also stops glibc raising that threshold), and, if pyarrow is loaded, allocate its buffers with
    the C library's malloc instead of pyarrow's mimalloc pool. Changes no result; True when the
    C library took the setting (glibc), else it does nothing."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None and hasattr(arrow, "system_memory_pool"):
        arrow.set_memory_pool(arrow.system_memory_pool())
    return _MALLOPT is not None and _MALLOPT(_M_MMAP_THRESHOLD, threshold) == 1
