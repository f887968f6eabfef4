"""The ``venus`` generator (Helios Venus figures) and the Venus scenarios."""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import pytest

import simsched
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, Fleet, NodeGroup, builtin_gpu_types
from simsched.workloads.generators import venus
from simsched.workloads.registry import GENERATORS, Params
from simsched.workloads.transforms import offered_load
from tests.conftest import REPO

FLEET = Fleet((ClusterSpec("venus", (NodeGroup(100, 8, "V100"),)),), builtin_gpu_types())


def generate(options: dict, seed: int = 3):
    return GENERATORS["venus"](Params(options, "workload"), np.random.default_rng(seed), FLEET)


def test_shipped_figures_match_the_helios_summary(traces_dir) -> None:
    spec = importlib.util.spec_from_file_location("helios_stats", REPO / "tools" / "calibrate" / "helios_stats.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    figures = tool.venus_figures(traces_dir / "helios")
    for key, value in venus.VENUS.items():
        assert figures[key] == pytest.approx(value, rel=1e-12), key
    assert figures["trace_days"] == venus.TRACE_DAYS


def test_fitted_laws_reproduce_venus_mean_and_median() -> None:
    shares = venus.gpu_shares(0.6)
    assert shares.sum() == pytest.approx(1.0) and shares[0] == 0.6
    assert float(shares @ np.array(venus.SIZES)) == pytest.approx(6.736, rel=1e-9)
    assert np.all(np.diff(shares[1:]) < 0)  # geometric tail, decreasing with size
    mu, sigma = venus.duration_law(venus.DEFAULT_MAX_DURATION_S)
    assert math.exp(mu) == pytest.approx(204.0)  # median of the lognormal (the cap is far above it)
    assert venus.capped_lognormal_mean(mu, sigma, venus.DEFAULT_MAX_DURATION_S) == pytest.approx(13_040.598)
    assert venus.JOBS_PER_DAY == pytest.approx(125_303 / 181)


def test_samples_follow_the_figures() -> None:
    df = generate({"jobs": 200_000})
    assert len(df) == 200_000
    gpus = df["gpus"].to_numpy()
    assert set(np.unique(gpus)) <= set(venus.SIZES)
    assert abs((gpus == 1).mean() - 0.6) <= 4 * math.sqrt(0.24 / 200_000)
    assert gpus.mean() == pytest.approx(6.736, rel=0.02)
    durations = df["duration"].to_numpy()
    assert np.median(durations) == pytest.approx(204.0, rel=0.03)
    assert durations.mean() == pytest.approx(13_040.6, rel=0.08)  # heavy tail: se ~ 3%
    assert durations.min() >= 1 and durations.max() <= venus.DEFAULT_MAX_DURATION_S
    assert (df["workers"] == np.where(gpus > 8, gpus // 8, 1)).all()
    days = (df["submit"].max() - df["submit"].min()) / 86_400
    assert len(df) / days == pytest.approx(venus.JOBS_PER_DAY, rel=0.02)


def test_load_option_sets_the_offered_load_and_is_reproducible() -> None:
    df = generate({"jobs": 3000, "load": 0.7})
    assert offered_load(df, FLEET.total_gpus) == pytest.approx(0.7, rel=1e-3)  # floor() of submits only
    assert df.equals(generate({"jobs": 3000, "load": 0.7}))
    assert not df.equals(generate({"jobs": 3000, "load": 0.7}, seed=4))


def test_max_gpus_drops_sizes() -> None:
    df = generate({"jobs": 2000, "max_gpus": 8})
    assert df["gpus"].max() <= 8


@pytest.mark.parametrize("options, message", [
    ({"load": 0.5, "jobs_per_day": 10.0}, "workload.load: give either load"),
    ({"single_gpu_share": 0.4}, "workload.single_gpu_share: must be >= 0.5"),
    ({"max_duration_s": 3600.0}, "max_duration_s = 3600.0 is too small"),
    ({"max_gpus": 0}, "workload.max_gpus: must be >= 1"),
    ({"jobs": 10, "color": 1}, "workload.color: unknown key"),
])
def test_bad_options(options, message) -> None:
    with pytest.raises(InputError, match=message):
        generate(options)


def test_venus_like_scenario_runs() -> None:
    scenario = load_scenario(REPO / "scenarios" / "venus_like.toml")
    assert scenario.clusters[0].total_gpus == 800 and scenario.objective.kind == "eq16"
    result = simsched.run(scenario, jobs=300)
    s = result.summary
    assert s["completed"] == 300
    assert s["objective"] == pytest.approx(0.5 * s["avg_jct"] + 0.5 * s["max_wait"])


def test_venus_trace_twin_reads_a_helios_log(tmp_path) -> None:
    sample = REPO / "tests" / "data" / "helios_cluster_log_sample.csv"
    text = (REPO / "scenarios" / "venus_trace.toml").read_text()
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "venus800.toml").write_text((REPO / "scenarios" / "clusters" / "venus800.toml").read_text())
    path = tmp_path / "venus_trace.toml"
    path.write_text(text.replace('file = "../workloads/venus_trace.toml"',
                                 f'source = "helios"\npath = "{sample}"'))
    result = simsched.run(path)
    assert result.summary["jobs"] > 0 and result.summary["completed"] == result.summary["jobs"]
    if not (REPO / "data" / "traces" / "helios" / "Venus" / "cluster_log.csv").is_file():
        with pytest.raises(InputError, match="tools/download/helios.sh"):
            simsched.run(load_scenario(REPO / "scenarios" / "venus_trace.toml"))
