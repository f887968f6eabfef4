"""Named random streams from one scenario seed (STYLE rule 4).

Each consumer draws from its own stream, so adding a draw in one place
never shifts another's numbers: ``stream(seed, "workload")``.
"""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int, name: str) -> np.random.Generator:
    """A Generator for ``name`` derived from the scenario ``seed`` (stable across runs and versions)."""
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=(zlib.crc32(name.encode()),)))
