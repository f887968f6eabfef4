"""Freed memory handed back to the operating system between the phases of a large run.

glibc's malloc keeps what a program frees for its own later use. A million-job run builds and
drops arrays of tens of MB (the engine's columns, the spells' and the timeline's intermediates);
freed, they stay resident, and arrays made later often do not fit in the holes they left (large
ones are mapped afresh), so the peak RSS grows by what was already freed (about 20% at 1M jobs,
issue 35). :func:`release` calls the C library's ``malloc_trim(0)``, which returns every free
page, at the points where a run has just dropped a large part: after the engine, after each
output table. It changes no result. Where the C library has no ``malloc_trim`` (not glibc) it
does nothing.
"""

from __future__ import annotations

import ctypes

try:
    _TRIM = getattr(ctypes.CDLL(None), "malloc_trim", None)  # the C library the interpreter runs on
except OSError:  # pragma: no cover - no C library to load symbols from
    _TRIM = None
if _TRIM is not None:
    _TRIM.argtypes = (ctypes.c_size_t,)
    _TRIM.restype = ctypes.c_int


def release() -> None:
    """Give the pages malloc holds free back to the operating system (glibc); else nothing."""
    if _TRIM is not None:
        _TRIM(0)
