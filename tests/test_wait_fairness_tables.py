"""Starvation (issue 21) and fairness (issue 20) metrics in compare and experiment."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from simsched.core.errors import InputError
from simsched.core.metrics import flat_metrics
from simsched.present.compare_tables import to_markdown
from simsched.runs.compare import compare_spec, run_compare
from simsched.runs.experiment.runner import metrics_of, run_experiment
from simsched.runs.experiment.spec import load_spec
from simsched.runs.experiment.store import ADDED_LATER_METRICS, FLAT_ADDED_LATER, read_results
from tests.helpers import write_scenario
from tests.test_tenants import CLUSTER, HEADER, JOBS

pytest.importorskip("scipy.stats", reason="experiment statistics need the extra 'experiment' (scipy)")

SUMMARY = {
    "avg_jct": 10.0, "seed": 1, "partial": False,
    "starvation": {"p99_wait": 5.0, "max_wait": 6.0, "large_gpu_hours_late_share": None,
                   "wait_by_size": {"1": {"jobs": 2, "mean_wait": 1.0}, "2-8": {"jobs": 1, "mean_wait": 3.0},
                                    ">8": {"jobs": 0, "mean_wait": None}}},
}


def test_flat_metrics_of_a_summary_without_tenants():
    assert flat_metrics(SUMMARY) == {
        "p99_wait": 5.0, "avg_wait_1gpu": 1.0, "avg_wait_2_8gpu": 3.0, "avg_wait_over_8gpu": None,
        "large_late_share": None, "jain_slowdown": None, "ftf_rho_max": None, "ftf_rho_share_above_1": None}


def test_flat_metrics_name_each_tenants_wait():
    summary = dict(SUMMARY, jain_slowdown=0.9, ftf_rho_max=2.0, ftf_rho_share_above_1=0.5, ftf_rho_jobs=4,
                   tenants={"a": {"mean_wait": 7.0}, "(no tenant)": {"mean_wait": None}})
    flat = flat_metrics(summary)
    assert (flat["jain_slowdown"], flat["avg_wait@a"], flat["avg_wait@(no tenant)"]) == (0.9, 7.0, None)
    # experiment: the fixed metrics always (empty when n/a), a tenant's only when asked for, no counts
    recorded = metrics_of(summary, ("avg_wait@a",))
    assert list(recorded) == ["avg_jct", *FLAT_ADDED_LATER, "avg_wait@a"]
    assert recorded["jain_slowdown"] == 0.9 and recorded["avg_wait_over_8gpu"] is None


def _tenant_scenario(folder: Path) -> Path:
    return write_scenario(folder, clusters=CLUSTER, scheduler='policy = "fifo"', jobs=JOBS, header=HEADER)


def test_compare_shows_who_waits_and_the_tenants(tmp_path):
    spec = compare_spec(_tenant_scenario(tmp_path), schedulers=["fifo", "sjf"], rank_by="ftf_rho_max")
    result = run_compare(spec, workers=1)
    runs = result.runs.set_index("scheduler")
    assert runs.loc["fifo", "ftf_rho_max"] == 2.8 and runs.loc["fifo", "avg_wait@b"] == 90.0
    assert math.isnan(runs.loc["fifo", "avg_wait_over_8gpu"])  # no job of more than 8 GPUs: n/a
    text = to_markdown(result)
    section = text.split("### Who waits, and fairness between tenants")[1].split("### Rank by")[0]
    assert "| p99 wait (s) |" in section and "| Max finish-time fairness rho | **2.80** | **2.80** |" in section
    assert "| Avg wait, tenant b (s) | **90.00** | **90.00** |" in section
    assert set(result.table["metric"]) >= {"p99_wait", "jain_slowdown", "avg_wait@a", "avg_wait@b"}


def test_compare_without_tenants_shows_no_fairness_rows(tmp_path):
    plain = [",".join(row.split(",")[:4]) for row in JOBS]
    path = write_scenario(tmp_path, clusters=CLUSTER.split("[[cluster.tenant]]")[0], scheduler='policy = "fifo"',
                          jobs=plain, header="job_id,submit,duration,gpus")
    result = run_compare(compare_spec(path, schedulers=["fifo"], rank_by="p99_wait"), workers=1)
    text = to_markdown(result)
    assert "| Avg wait, 2-8-GPU jobs (s) |" in text
    assert "### Who waits\n" in text and "rho" not in text and "Avg wait, tenant" not in text
    with pytest.raises(InputError, match="no instance has a tenant 'a'"):
        compare_spec(path, schedulers=["fifo"], rank_by="avg_wait@a")


SPEC = """
name = "fair"
scenarios = ["scenario.toml"]
schedulers = ["fifo", "sjf"]
metric = "{metric}"
headline = "fifo"
"""


def test_experiment_ranks_by_a_fairness_metric_and_a_tenants_wait(tmp_path):
    _tenant_scenario(tmp_path)
    for metric in ("ftf_rho_max", "avg_wait@b"):
        (tmp_path / "spec.toml").write_text(SPEC.format(metric=metric))
        out = tmp_path / metric
        run_experiment(load_spec(tmp_path / "spec.toml"), out, workers=1)
        results = read_results(out)
        assert list(results["ftf_rho_max"]) == [2.8, 2.8] and list(results["p99_wait"]) == pytest.approx([86.4, 86.4])  # 0.96 of 0..90 s
        assert ("avg_wait@b" in results.columns) == (metric == "avg_wait@b")
    (tmp_path / "spec.toml").write_text(SPEC.format(metric="avg_wait_for_everyone"))
    with pytest.raises(InputError, match="avg_wait@<tenant>"):
        load_spec(tmp_path / "spec.toml")


def test_a_store_written_before_the_new_metrics_keeps_its_columns(tmp_path):
    _tenant_scenario(tmp_path)
    (tmp_path / "spec.toml").write_text(SPEC.format(metric="avg_jct"))
    spec = load_spec(tmp_path / "spec.toml")
    out = tmp_path / "out"
    run_experiment(spec, out, workers=1)
    results = pd.read_csv(out / "results.csv", dtype=str, keep_default_na=False)
    old = results.drop(columns=list(ADDED_LATER_METRICS)).iloc[:1]  # as an older simsched wrote it
    old.to_csv(out / "results.csv", index=False)
    run_experiment(spec, out, workers=1, resume=True)
    again = read_results(out)
    assert list(again.columns) == list(old.columns) and len(again) == 2


def test_compare_leaves_out_per_tenant_rows_beyond_thirty_tenants(tmp_path):
    jobs = [f"j{i},{i},10,1,t{i}" for i in range(31)]  # 31 tenants, one job each, no quotas
    path = write_scenario(tmp_path, clusters=CLUSTER.split("[[cluster.tenant]]")[0], scheduler='policy = "fifo"',
                          jobs=jobs, header=HEADER)
    result = run_compare(compare_spec(path, schedulers=["fifo"]), workers=1)
    assert "jain_slowdown" in result.runs.columns
    assert not [c for c in result.runs.columns if c.startswith("avg_wait@")]
