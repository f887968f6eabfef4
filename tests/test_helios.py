"""The ``helios`` generator and the four Helios validation scenarios (issue 21, docs/validation.md)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import simsched
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, Fleet, NodeGroup, TenantQuota, builtin_gpu_types
from simsched.workloads.generators import helios
from simsched.workloads.registry import Params
from tests.conftest import REPO

SHARED = REPO.parent / "shared" / "traces" / "helios"
FLEET = Fleet((ClusterSpec("earth", (NodeGroup(124, 8, "V100"), NodeGroup(1, 5, "V100"))),), builtin_gpu_types())


def generate(options: dict, seed: int = 1, fleet: Fleet = FLEET) -> pd.DataFrame:
    return helios.generate_helios(Params({"cluster": "earth", **options}, "workload", "w.toml"),
                                  np.random.default_rng(seed), fleet)


@pytest.mark.skipif(not (SHARED / "helios_cluster_summary.csv").is_file(), reason="needs ../shared/traces/helios")
def test_shipped_figures_are_the_published_rows() -> None:
    summary = pd.read_csv(SHARED / "helios_cluster_summary.csv").set_index("id")
    for cluster, figures in helios.HELIOS.items():
        row = summary.loc[cluster.capitalize()]
        for key, value in figures.items():
            if key == "gpu_time":
                value_csv = row["complete_gpu_time"] + row["cancel_gpu_time"] + row["fail_gpu_time"]
            else:
                value_csv = row[key]
            assert value == pytest.approx(float(value_csv)), (cluster, key)


@pytest.mark.parametrize("cluster", list(helios.HELIOS))
def test_fitted_laws_reproduce_the_published_job_statistics(cluster) -> None:
    f = helios.HELIOS[cluster]
    shares = helios.gpu_shares(cluster, 0.6)
    assert float(shares @ np.array(helios.SIZES)) == pytest.approx(f["avg_gpu_num"], rel=1e-9)
    mu, sigma = helios.duration_law(cluster, helios.DEFAULT_MAX_DURATION_S)
    assert np.exp(mu) == pytest.approx(f["med_run_time_gpu"])
    assert helios.capped_lognormal_mean(mu, sigma, helios.DEFAULT_MAX_DURATION_S) == pytest.approx(
        f["avg_run_time_gpu"], rel=1e-6)
    rho, gpu_time = helios.coupling_rho(cluster, 0.6, 64, helios.DEFAULT_MAX_DURATION_S)
    assert 0.0 < rho < 0.999 and gpu_time == pytest.approx(f["gpu_time"] / f["gpu_job_num"], rel=1e-4)


def test_draws_match_the_marginals_and_the_coupling() -> None:
    g, d = helios.sizes_and_durations(np.random.default_rng(3), 200_000, "earth", 0.6, 64,
                                      helios.DEFAULT_MAX_DURATION_S, "gpu_time")
    f = helios.HELIOS["earth"]
    assert g.mean() == pytest.approx(f["avg_gpu_num"], rel=0.02)
    assert np.median(d) == pytest.approx(f["med_run_time_gpu"], rel=0.02)
    assert (g == 1).mean() == pytest.approx(0.6, abs=0.005)
    # coupled: large jobs run longer; independent: they do not
    assert np.median(d[g >= 8]) > 3 * np.median(d[g == 1])
    g2, d2 = helios.sizes_and_durations(np.random.default_rng(3), 200_000, "earth", 0.6, 64,
                                        helios.DEFAULT_MAX_DURATION_S, "independent")
    assert np.median(d2[g2 >= 8]) == pytest.approx(np.median(d2[g2 == 1]), rel=0.1)


def test_rate_bursts_and_reproducibility() -> None:
    df = generate({"jobs": 4000})
    days = df["submit"].max() / 86_400
    assert len(df) / days == pytest.approx(helios.jobs_per_day("earth"), rel=0.05)
    assert df.equals(generate({"jobs": 4000}))
    bursty = generate({"jobs": 4000, "batch_mean": 5.0})
    # same mean rate, but jobs arrive in groups sharing a submit second
    assert len(bursty) / (bursty["submit"].max() / 86_400) == pytest.approx(helios.jobs_per_day("earth"), rel=0.15)
    assert bursty["submit"].duplicated().mean() > 0.6 > df["submit"].duplicated().mean()


def test_early_end_share_cuts_that_share_of_jobs() -> None:
    full = generate({"jobs": 5000})
    cut = generate({"jobs": 5000, "early_end_share": 0.3})
    assert (cut["submit"].to_numpy() == full["submit"].to_numpy()).all()
    shorter = (cut["duration"].to_numpy() < full["duration"].to_numpy()).mean()
    assert 0.2 < shorter <= 0.3
    assert (cut["duration"].to_numpy() <= full["duration"].to_numpy()).all()


def test_vcs_follow_quotas_and_hold_their_jobs() -> None:
    tenants = (TenantQuota("big", 600.0), TenantQuota("mid", 300.0), TenantQuota("small", 16.0))
    fleet = Fleet((ClusterSpec("earth", FLEET.clusters[0].nodes, tenants),), builtin_gpu_types())
    df = generate({"jobs": 6000}, fleet=fleet)
    quota = {"big": 600.0, "mid": 300.0, "small": 16.0, None: 997.0 - 916.0}
    assert (df["gpus"] <= df["tenant"].map(quota)).all()  # no job above its VC
    work = (df["gpus"] * df["duration"]).groupby(df["tenant"].fillna("pool")).sum()
    share = work / work.sum()
    assert share["big"] == pytest.approx(600 / 997, abs=0.05) and share["mid"] == pytest.approx(300 / 997, abs=0.05)
    without = generate({"jobs": 6000, "vcs": "none"}, fleet=fleet)
    assert without["tenant"].isna().all()
    assert without.drop(columns="tenant").equals(df.drop(columns="tenant"))  # VCs are drawn last


@pytest.mark.parametrize("options, message", [
    ({"cluster": "mars"}, "workload.cluster: unknown value 'mars'"),
    ({"coupling": "both"}, "workload.coupling: unknown value"),
    ({"batch_mean": 0.5}, "workload.batch_mean: must be >= 1.0"),
    ({"early_end_share": 1.5}, "workload.early_end_share: must be <= 1.0"),
    ({"max_duration_s": 3600.0}, "max_duration_s = 3600.0 is too small"),
    ({"color": 1}, "workload.color: unknown key"),
])
def test_bad_options(options, message) -> None:
    with pytest.raises(InputError, match=message):
        generate(options)


def test_cluster_is_required() -> None:
    with pytest.raises(InputError, match="workload.cluster: is required"):
        helios.generate_helios(Params({}, "workload", "w.toml"), np.random.default_rng(1), FLEET)


@pytest.mark.parametrize("cluster", list(helios.HELIOS))
def test_helios_scenario_validates_and_runs(cluster) -> None:
    scenario = load_scenario(REPO / "scenarios" / "helios" / f"{cluster}.toml")
    spec = scenario.clusters[0]
    assert spec.total_gpus == helios.HELIOS[cluster]["gpu_num"]
    assert all(group.gpus <= 8 for group in spec.nodes) and sum(group.count for group in spec.nodes if group.gpus < 8) <= 1
    assert spec.tenants and sum(t.total for t in spec.tenants) <= spec.total_gpus
    assert scenario.scheduler.quota == "strict" and scenario.scheduler.backfill_setting == "easy"
    result = simsched.run(scenario, jobs=300)
    assert result.summary["completed"] == 300
    assert result.jobs["tenant"].notna().any()


def test_scheduler_overrides_keep_the_quota_mode() -> None:
    """--set / compare / experiment overrides rebuild [scheduler]: quotas must survive them."""
    from simsched.config.overrides import apply_overrides

    scenario = load_scenario(REPO / "scenarios" / "helios" / "earth.toml")
    assert apply_overrides(scenario, {"scheduler.backfill": "greedy"}).scheduler.quota == "strict"
    borrow = apply_overrides(scenario, {"scheduler.quota": "borrow", "scheduler.reclaim": "wait"}).scheduler
    assert (borrow.quota, borrow.reclaim) == ("borrow", "wait")
    back = apply_overrides(apply_overrides(scenario, {"scheduler.quota": "borrow"}), {"scheduler.quota": "none"})
    assert back.scheduler.quota == "none"
