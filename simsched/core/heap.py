"""Freed memory handed back to the operating system between the phases of a large run.

glibc's malloc keeps what a program frees for its own later use. A million-job run builds and
drops arrays of tens of MB (the engine's columns, the spells' and the timeline's intermediates);
freed, they stay resident, and arrays made later often do not fit in the holes they left (large
ones are mapped afresh), so the peak RSS grows by what was already freed (about 20% at 1M jobs,
issue 35). :func:`release` calls the C library's ``malloc_trim(0)``, which returns every free
page, at the points where a run has just dropped a large part: after the engine, after each
output table. It changes no result. Where the C library has no ``malloc_trim`` (not glibc) it
does nothing.

Trimming between phases does not help inside one: glibc raises its threshold for giving a block
pages of its own (``mmap``) to the largest block freed so far, up to 32 MiB, so a million-job
run's arrays of 1-32 MB come from the heap after the first is freed, and the holes they leave
stay resident while the phase maps new ones (building the timeline: ~120 MiB at 1M jobs).
pyarrow's own allocator (mimalloc; pandas' text columns) keeps freed pages too.
:func:`map_large_blocks` fixes the threshold at 1 MiB and moves pyarrow onto the C allocator:
a freed large block is returned at once. It is process-wide, so the command line's ``run``
(whose process ends with the run) sets it; :func:`simsched.run` does not change a user's process.
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
    """Give the pages malloc holds free back to the operating system (glibc); else nothing."""
    if _TRIM is not None:
        _TRIM(0)


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
