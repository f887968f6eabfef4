"""Holm's step-down adjustment, on a hand-computed family."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("scipy.stats", reason="experiment statistics need the extra 'experiment' (scipy)")
from simsched.runs.experiment.stats import holm  # noqa: E402


def test_holm_on_a_hand_computed_family() -> None:
    # sorted: 0.005 x4 = 0.02, 0.01 x3 = 0.03, 0.03 x2 = 0.06, 0.04 x1 = 0.04 -> 0.06 (non-decreasing)
    got = holm(np.array([0.01, 0.04, 0.03, np.nan, 0.005]))
    np.testing.assert_allclose(got, [0.03, 0.06, 0.06, np.nan, 0.02])


def test_holm_caps_at_one_and_keeps_a_single_test() -> None:
    np.testing.assert_allclose(holm(np.array([0.6, 0.7])), [1.0, 1.0])
    np.testing.assert_allclose(holm(np.array([0.2])), [0.2])
    assert np.isnan(holm(np.array([np.nan]))).all()
