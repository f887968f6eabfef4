"""Shared fixtures: the real trace samples in ../shared (skipped cleanly when absent); the
hypothesis profile every property test runs under."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# No test may depend on the machine's speed (issue 39, item 21): hypothesis' default 200 ms deadline
# per example failed a whole-simulation example on a loaded machine. Every property test runs
# without a deadline, in CI and for the README command alike; the speed checks live in
# tools/bench. A test's own @settings(max_examples=...) keeps this profile's deadline=None, since
# @settings inherits from the loaded profile; tests/test_hypothesis_profile.py checks that no test
# sets a deadline of its own.
settings.register_profile("simsched", deadline=None, print_blob=True)
# CI (.ci/run sets SIMSCHED_HYPOTHESIS=ci) draws the same examples on every run (derandomize, a seed
# per test), so a landing is never refused by a case no earlier run drew; everywhere else (the
# README's test command on a developer's machine) each run explores new random cases, as the
# run that found the maxmin-hetero round-off (tests/test_fair_share.py) did. A case found that way
# becomes an explicit test.
settings.register_profile("simsched-ci", settings.get_profile("simsched"), derandomize=True, database=None)
settings.load_profile("simsched-ci" if os.environ.get("SIMSCHED_HYPOTHESIS") == "ci" else "simsched")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture
def traces_dir() -> Path:
    """../shared/traces beside the checkout; skip with the reason when it is not there."""
    path = SHARED / "traces"
    if not path.is_dir():
        pytest.skip(f"real trace samples not found at {path} (CI puts ../shared beside the checkout)")
    return path
