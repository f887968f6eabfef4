"""Field synthesis, filters and load scaling on tiny hand-computed tables (SPEC §5)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from simsched.core.errors import InputError
from simsched.workloads.table import normalize
from simsched.workloads.transforms import (
    limit_jobs,
    offered_load,
    scale_to_load,
    select_clusters,
    synthesize_fields,
    time_window,
)


@pytest.fixture
def jobs() -> pd.DataFrame:
    """Four jobs 10 s apart; GPU work g*d = 20, 20, 40, 2.5 GPU-s; b has a weight and deadline."""
    return normalize(
        pd.DataFrame(
            {
                "job_id": ["a", "b", "c", "d"],
                "submit": [0.0, 10.0, 20.0, 30.0],
                "duration": [10.0, 20.0, 10.0, 5.0],
                "gpus": [2.0, 1.0, 4.0, 0.5],
                "weight": [None, 4, None, None],
                "deadline": [np.nan, 50.0, np.nan, np.nan],
                "home_cluster": ["x", "y", "x", None],
            }
        )
    )


def test_synthesize_fixed_slack_and_weight(jobs: pd.DataFrame) -> None:
    out = synthesize_fields(jobs, np.random.default_rng(0), deadline_slack=(2.0, 2.0), weight_range=(3, 3))
    # deadline = submit + 2 * duration where missing; b keeps its 50 and weight 4.
    assert out["deadline"].tolist() == [20.0, 50.0, 40.0, 40.0]
    assert out["weight"].tolist() == [3, 4, 3, 3]
    assert jobs["deadline"].isna().sum() == 3  # input untouched
    everything = synthesize_fields(
        jobs, np.random.default_rng(0), deadline_slack=(2.0, 2.0), weight_range=(3, 3), only_missing=False
    )
    assert everything["deadline"].tolist() == [20.0, 50.0, 40.0, 40.0]
    assert everything["weight"].tolist() == [3, 3, 3, 3]


def test_synthesize_draws_from_the_given_stream(jobs: pd.DataFrame) -> None:
    out = synthesize_fields(jobs, np.random.default_rng(5), only_missing=False)
    rng = np.random.default_rng(5)
    k = rng.uniform(1.5, 4.0, size=4)
    weights = rng.integers(1, 6, size=4)
    np.testing.assert_allclose(out["deadline"], jobs["submit"] + jobs["duration"] * k)
    assert out["weight"].tolist() == weights.tolist()
    assert out["weight"].dtype == "Int64"
    with pytest.raises(InputError, match="deadline_slack"):
        synthesize_fields(jobs, rng, deadline_slack=(3.0, 2.0))
    with pytest.raises(InputError, match="weight_range"):
        synthesize_fields(jobs, rng, weight_range=(0, 2))


def test_limit_jobs(jobs: pd.DataFrame) -> None:
    assert limit_jobs(jobs, 2)["job_id"].tolist() == ["a", "b"]
    assert len(limit_jobs(jobs, 10)) == 4
    with pytest.raises(InputError):
        limit_jobs(jobs, -1)


def test_time_window_rezeroes_to_first_kept_job(jobs: pd.DataFrame) -> None:
    out = time_window(jobs, 5, 30)
    assert out["job_id"].tolist() == ["b", "c"]
    assert out["submit"].tolist() == [0.0, 10.0]
    assert out["deadline"].iloc[0] == 40.0  # 50 shifted by -10
    kept = time_window(jobs, 5, 30, rezero=False)
    assert kept["submit"].tolist() == [10.0, 20.0]
    assert len(time_window(jobs, 100, 200)) == 0
    with pytest.raises(InputError):
        time_window(jobs, 30, 30)


def test_select_clusters(jobs: pd.DataFrame) -> None:
    assert select_clusters(jobs, ["x"])["job_id"].tolist() == ["a", "c"]
    assert select_clusters(jobs, ["y", "x"])["job_id"].tolist() == ["a", "b", "c"]
    with pytest.raises(InputError, match="'z'.*valid: x, y"):
        select_clusters(jobs, ["z"])


def test_offered_load_by_hand(jobs: pd.DataFrame) -> None:
    # work = 2*10 + 1*20 + 4*10 + 0.5*5 = 82.5 GPU-s; span 30 s; 4 GPUs -> 82.5 / 120.
    assert offered_load(jobs, 4) == pytest.approx(82.5 / 120)
    assert offered_load(jobs.iloc[:1], 4) == math.inf
    assert offered_load(jobs.iloc[:0], 4) == 0.0


def test_scale_to_load_by_hand(jobs: pd.DataFrame) -> None:
    shifted = jobs.assign(submit=jobs["submit"] + 100, deadline=jobs["deadline"] + 100)
    out = scale_to_load(shifted, 4, 82.5 / 240)  # half the load -> twice the span, about 100
    assert out["submit"].tolist() == [100.0, 120.0, 140.0, 160.0]
    assert out["deadline"].iloc[1] == 120.0 + 40.0  # slack 40 kept
    assert offered_load(out, 4) == pytest.approx(82.5 / 240)
    assert out["duration"].tolist() == jobs["duration"].tolist()
    with pytest.raises(InputError):
        scale_to_load(jobs.iloc[:1], 4, 0.5)
    with pytest.raises(InputError):
        scale_to_load(jobs, 4, 0)
