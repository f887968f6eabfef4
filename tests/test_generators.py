"""Seeded generators (SPEC §5): paper (Table II), philly and pai (calibrated figures)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, Fleet, NodeGroup, builtin_gpu_types
from simsched.workloads.generators import pai, paper, philly
from simsched.workloads.registry import GENERATORS, Params
from simsched.workloads.transforms import offered_load

REPO = Path(__file__).resolve().parents[1]


def make_fleet(*clusters: tuple[str, int, int, str]) -> Fleet:
    """A fleet of homogeneous clusters given as (name, nodes, gpus per node, GPU type)."""
    specs = tuple(ClusterSpec(name, (NodeGroup(n, g, t),)) for name, n, g, t in clusters)
    return Fleet(specs, builtin_gpu_types())


def generate(name: str, options: dict, seed: int, fleet: Fleet) -> pd.DataFrame:
    return GENERATORS[name](Params(options, "workload"), np.random.default_rng(seed), fleet)


def within_sigmas(count: int, n: int, p: float, sigmas: float = 4.0) -> bool:
    return abs(count / n - p) <= sigmas * np.sqrt(p * (1 - p) / n)


# --- paper ---------------------------------------------------------------------------


def test_registered() -> None:
    assert {"paper", "philly", "pai"} <= set(GENERATORS)


def test_paper_type_frequencies_and_mean_durations_match_table_ii() -> None:
    fleet = make_fleet(("big", 40, 8, "V100"))
    df = generate("paper", {"jobs_per_node": 2500}, 7, fleet)
    n = len(df)
    assert n == 100_000
    total_weight = sum(t.weight for t in paper.JOB_TYPES)  # all 21 types fit 40 x 8
    top = sorted(paper.JOB_TYPES, key=lambda t: -t.weight)[:4]
    for job_type in top:
        rows = df[(df["workers"] == job_type.workers) & (df["gpus"] == job_type.gpus)]
        assert within_sigmas(len(rows), n, job_type.weight / total_weight), job_type
        # Exponential: sd of the mean = mean / sqrt(count) (<= 1.2% here); fractions dropped.
        assert rows["duration"].mean() == pytest.approx(job_type.mean_seconds, rel=0.05), job_type
    assert set(zip(df["workers"], df["gpus"])) <= {(t.workers, t.gpus) for t in paper.JOB_TYPES}
    assert (df["duration"] >= 1).all() and (df["duration"] % 1 == 0).all()
    assert (df["submit"] % 1 == 0).all()
    assert df["gpu_type"].isna().all() and df["deadline"].isna().all()


def test_paper_priorities_uniform_in_1_2_3() -> None:
    df = generate("paper", {"jobs_per_node": 1000}, 3, make_fleet(("c", 30, 8, "V100")))
    assert set(df["weight"]) == {1, 2, 3}
    for value in (1, 2, 3):
        assert within_sigmas(int((df["weight"] == value).sum()), len(df), 1 / 3)


def test_paper_jobs_per_cluster_and_home_cluster() -> None:
    fleet = make_fleet(("a", 12, 8, "V100"), ("b", 3, 8, "V100"), ("c", 25, 4, "T4"))
    df = generate("paper", {}, 1, fleet)
    assert df.groupby("home_cluster").size().to_dict() == {"a": 120, "b": 30, "c": 250}
    assert df["job_id"].is_unique
    assert df["submit"].is_monotonic_increasing


def test_paper_lambda_max_by_hand() -> None:
    # 2 x 8: types (3,24), (4,32), (6,48) ... are infeasible; E[d g] over the rest.
    index, p = paper.type_distribution(2, 8)
    kept = [paper.JOB_TYPES[i] for i in index]
    assert paper.JobType(3, 24, 0.277222, 3.70e-4) not in kept
    assert all(t.gpus <= 16 for t in kept)
    weights = np.array([t.weight for t in kept])
    mean_work = sum(w / weights.sum() * t.mean_hours * 3600 * t.gpus for w, t in zip(weights, kept))
    assert paper.lambda_max(2, 8, 16) == pytest.approx(16 / mean_work)


def test_paper_rate_within_lambda_range() -> None:
    nodes = 40
    top = paper.lambda_max(nodes, 8, nodes * 8)
    ratios = []
    for seed in range(40):
        df = generate("paper", {}, seed, make_fleet(("c", nodes, 8, "V100")))
        submits = df["submit"].to_numpy()
        rate = (len(submits) - 1) / (submits[-1] - submits[0])  # ~5% sd with 400 jobs
        ratios.append(rate / top)
    ratios = np.array(ratios)
    assert ratios.min() > 0.25 * 0.8 and ratios.max() < 1.0 * 1.2
    assert ratios.min() < 0.45 and ratios.max() > 0.8  # spread over [1/4, 1], not a point


def test_paper_load_multiplies_the_rate() -> None:
    fleet = make_fleet(("c", 10, 8, "V100"))
    base = generate("paper", {}, 5, fleet)
    double = generate("paper", {"load": 2.0}, 5, fleet)
    pd.testing.assert_series_equal(base["duration"], double["duration"])
    assert np.all(np.abs(double["submit"].to_numpy() - base["submit"].to_numpy() / 2) <= 1.0)


def test_paper_never_generates_infeasible_types_on_a_small_cluster() -> None:
    df = generate("paper", {"jobs_per_node": 20_000}, 11, make_fleet(("small", 2, 8, "V100")))
    pairs = set(zip(df["workers"], df["gpus"]))
    assert (3, 24) not in pairs and (4, 32) not in pairs
    assert df["gpus"].max() <= 16
    assert (2, 16) in pairs  # floor(8*2/16)*2 = 2 >= 2: feasible


def test_paper_uniform_interval_mode() -> None:
    fleet = make_fleet(("a", 2, 8, "V100"), ("b", 1, 8, "V100"))
    df = generate("paper", {"arrival": "uniform", "interval_s": 30}, 2, fleet)
    a = df[df["home_cluster"] == "a"]["submit"].to_numpy()
    assert list(a) == [30.0 * k for k in range(20)]
    with pytest.raises(InputError, match="workload.interval_s: is required"):
        generate("paper", {"arrival": "uniform"}, 2, fleet)
    with pytest.raises(InputError, match="workload.interval_s"):
        generate("paper", {"interval_s": 30}, 2, fleet)
    with pytest.raises(InputError, match="workload.load"):
        generate("paper", {"arrival": "uniform", "interval_s": 30, "load": 2}, 2, fleet)
    with pytest.raises(InputError, match="workload.jobs_per_nod: unknown key"):
        generate("paper", {"jobs_per_nod": 3}, 2, fleet)


def test_paper_deterministic() -> None:
    fleet = make_fleet(("a", 8, 8, "V100"), ("b", 5, 4, "T4"))
    first = generate("paper", {}, 42, fleet)
    pd.testing.assert_frame_equal(first, generate("paper", {}, 42, fleet))
    assert not first.equals(generate("paper", {}, 43, fleet))


# --- philly --------------------------------------------------------------------------


def test_philly_gpu_mix_matches_shipped_figures() -> None:
    fleet = make_fleet(("c", 40, 8, "V100"))
    df = generate("philly", {"jobs": 100_000}, 1, fleet)
    n = len(df)
    for size, share in philly.philly_stats()["gpu_mix"].items():
        if share > 0.005:
            assert within_sigmas(int((df["gpus"] == int(size)).sum()), n, share), size
    assert df["gpus"].max() <= 320
    assert offered_load(df, fleet.total_gpus) == pytest.approx(0.9, rel=1e-9)
    # Per-size medians follow the bucket tables (1-GPU: 1117 s in the trace).
    one = df.loc[df["gpus"] == 1, "duration"]
    assert one.median() == pytest.approx(1117, rel=0.05)


def test_philly_max_gpus_defaults_to_largest_cluster() -> None:
    fleet = make_fleet(("a", 2, 8, "V100"), ("b", 1, 4, "V100"))
    df = generate("philly", {"jobs": 20_000}, 2, fleet)
    assert df["gpus"].max() <= 16 and (df["gpus"] == 16).any()
    df = generate("philly", {"jobs": 2000, "max_gpus": 2}, 2, fleet)
    assert set(df["gpus"]) == {1.0, 2.0}


def test_philly_load_vcs_and_diurnal_profile() -> None:
    fleet = make_fleet(("c", 100, 8, "V100"))
    df = generate("philly", {"jobs": 50_000, "load": 0.1, "vcs": 3}, 3, fleet)
    assert offered_load(df, fleet.total_gpus) == pytest.approx(0.1, rel=1e-9)
    names = list(philly.philly_stats()["vc_shares"])[:3]
    assert set(df["home_cluster"]) == set(names)
    shares = np.array([philly.philly_stats()["vc_shares"][v] for v in names])
    assert within_sigmas(int((df["home_cluster"] == names[0]).sum()), len(df), shares[0] / shares.sum())
    # Arrivals per hour-of-week follow the shipped profile (span covers many weeks).
    span_weeks = df["submit"].max() / (168 * 3600)
    assert span_weeks > 4
    slots = (df["submit"] // 3600).astype(int) % 168
    counts = np.bincount(slots, minlength=168)
    profile = np.array(philly.philly_stats()["hour_of_week_profile"])
    assert np.corrcoef(counts, profile)[0, 1] > 0.8


def test_philly_deterministic_and_options_checked() -> None:
    fleet = make_fleet(("c", 10, 8, "V100"))
    first = generate("philly", {"jobs": 500, "vcs": 2}, 9, fleet)
    pd.testing.assert_frame_equal(first, generate("philly", {"jobs": 500, "vcs": 2}, 9, fleet))
    assert not first.equals(generate("philly", {"jobs": 500, "vcs": 2}, 10, fleet))
    with pytest.raises(InputError, match="workload.vcs"):
        generate("philly", {"vcs": 99}, 1, fleet)


def _load_calibration_script():
    path = REPO / "tools" / "calibrate" / "philly_stats.py"
    spec = importlib.util.spec_from_file_location("philly_stats_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_philly_calibration_reproduces_shipped_figures(traces_dir: Path) -> None:
    script = _load_calibration_script()
    computed = json.loads(json.dumps(script.compute_stats(traces_dir / "philly" / "pollux_philly.csv")))
    assert computed == philly.philly_stats()


# --- pai -----------------------------------------------------------------------------

PAI_FLEET = (("v100", 20, 8, "V100"), ("t4", 50, 2, "T4"), ("p100", 30, 2, "P100"))


def test_pai_request_mix_and_types() -> None:
    fleet = make_fleet(*PAI_FLEET)
    df = generate("pai", {"jobs": 50_000}, 4, fleet)
    n = len(df)
    for size, share in pai.GPU_REQUEST_MIX.items():
        assert within_sigmas(int((df["gpus"] == size).sum()), n, share), size
    assert within_sigmas(int((df["gpus"] < 1).sum()), n, 0.45)
    assert offered_load(df, fleet.total_gpus) == pytest.approx(0.9, rel=1e-9)
    assert set(df["gpu_type"]) == {"V100", "T4", "P100"}
    # Jobs larger than a 2-GPU node only get V100 (8-GPU nodes).
    assert set(df.loc[df["gpus"] > 2, "gpu_type"]) == {"V100"}
    # Up to 2 GPUs: types in proportion to PAI's fleet GPUs (P100 1596, T4 994, V100 832).
    small = df[df["gpus"] <= 2]
    weights = {"P100": 1596, "T4": 994, "V100": 832}
    for name, w in weights.items():
        count = int((small["gpu_type"] == name).sum())
        assert within_sigmas(count, len(small), w / sum(weights.values())), name


def test_pai_fleet_without_pai_types_and_determinism() -> None:
    fleet = make_fleet(("a", 4, 8, "A100"))
    df = generate("pai", {"jobs": 300}, 1, fleet)
    assert df["gpu_type"].isna().all()
    fleet = make_fleet(*PAI_FLEET)
    first = generate("pai", {"jobs": 300}, 8, fleet)
    pd.testing.assert_frame_equal(first, generate("pai", {"jobs": 300}, 8, fleet))
    assert not first.equals(generate("pai", {"jobs": 300}, 9, fleet))
    assert generate("pai", {"jobs": 2000, "max_gpus": 1}, 8, fleet)["gpus"].max() == 1.0


def test_pai_type_gpus_match_machine_spec(traces_dir: Path) -> None:
    spec = pd.read_csv(traces_dir / "alibaba-pai-2020" / "pai_machine_spec.csv", header=None,
                       names=["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"])
    gpus = spec.groupby("gpu_type")["cap_gpu"].sum().to_dict()
    assert {name: gpus[name] for name in pai.PAI_TYPE_GPUS} == pai.PAI_TYPE_GPUS
