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


def test_map_large_blocks_in_a_process_of_its_own() -> None:
    """The setting is process-wide (the command line's run makes it), so it is tried in a child:
    glibc takes it, pyarrow (when there) moves to the C allocator, and arrays stay intact."""
    import subprocess
    import sys

    code = ("import numpy as np, sys\n"
            "from simsched.core import heap\n"
            "took = heap.map_large_blocks()\n"
            "a = [np.full(1 << 18, k, dtype=np.int64) for k in range(8)]\n"
            "del a[::2]\n"
            "b = np.arange(1 << 20)\n"
            "assert [int(x.sum()) for x in a] == [k << 18 for k in (1, 3, 5, 7)] and int(b[-1]) == (1 << 20) - 1\n"
            "pa = sys.modules.get('pyarrow')\n"
            "print(took, pa.default_memory_pool().backend_name if pa else 'system')\n")
    done = subprocess.run([sys.executable, "-c", "import pandas\n" + code], capture_output=True, text=True,
                          check=True)
    took, pool = done.stdout.split()
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert took == "True"
    assert pool == "system"
