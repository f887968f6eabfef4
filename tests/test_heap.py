"""simsched.core.heap: freed memory handed back between a run's phases (issue 35)."""

from __future__ import annotations

import platform

import numpy as np

from simsched.core import heap


def test_release_finds_malloc_trim_on_glibc_and_keeps_live_data() -> None:
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert heap._TRIM is not None
    kept = np.arange(1_000_000)
    dropped = np.ones(4_000_000)
    del dropped
    assert heap.release() is None
    assert kept.sum() == 999_999 * 1_000_000 // 2
