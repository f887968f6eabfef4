"""Shared fixtures: the real trace samples in ../shared (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def traces_dir() -> Path:
    """../shared/traces beside the checkout; skip with the reason when it is not there."""
    path = SHARED / "traces"
    if not path.is_dir():
        pytest.skip(f"real trace samples not found at {path} (CI puts ../shared beside the checkout)")
    return path
