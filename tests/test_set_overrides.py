"""``--set KEY=VALUE`` on a run and on compare: any dotted scenario key, validated like an experiment
spec's overrides, recorded in summary.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simsched.cli.main import main
from tests.helpers import write_scenario

ONE_NODE = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
JOBS = ["a,0,100,2,,,,,", "b,1,10,4,,,,,", "c,2,200,2,,,,,", "d,3,90,2,,,,,"]


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, clusters=ONE_NODE, jobs=JOBS, scheduler='policy = "fifo"')


def test_set_changes_the_run_and_is_recorded(scenario: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main([str(scenario), "--set", "scheduler.backfill=easy", "--set", "workload.jobs_limit=3",
                 "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overrides"] == {"scheduler.backfill": "easy", "workload.jobs_limit": 3}
    assert summary["scheduler"]["backfill"] == "easy" and summary["jobs"] == 3


@pytest.mark.parametrize("setting, message", [
    ("workload.load=-1", "workload.load: must be > 0"),
    ("scheduler.placement=bogus", "unknown value 'bogus'"),
    ("nodot=1", "give KEY=VALUE with a dotted scenario key"),
    ("fleet.nodes=3", "cannot be overridden"),
])
def test_a_bad_set_is_one_line(scenario: Path, capsys, setting: str, message: str) -> None:
    assert main([str(scenario), "--set", setting, "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_compare_takes_set_for_every_run(scenario: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "cmp"
    assert main(["compare", str(scenario), "--schedulers", "fifo,sjf", "--set", "scheduler.backfill=false",
                 "--out", str(out), "--quiet"]) == 0
    runs = (out / "compare_runs.csv").read_text()
    assert runs.count("\n") == 3
    assert main(["compare", str(scenario), "--set", "scheduler.placement=bogus", "--quiet"]) == 2
    assert "unknown value 'bogus'" in capsys.readouterr().err


def test_cluster_nodes_resizes_the_one_cluster(scenario: Path, tmp_path: Path) -> None:
    """``cluster.nodes``: the same jobs on a larger cluster (the paper's Fig. 9b sweep). On one 4-GPU
    node, b (4 GPUs, submitted at 1) waits for a (2 GPUs, 0-100) and c (2 GPUs, 2-202); with two
    nodes it starts when it arrives."""
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([str(scenario), "--out", str(one), "--quiet"]) == 0
    assert main([str(scenario), "--set", "cluster.nodes=2", "--out", str(two), "--quiet"]) == 0
    assert json.loads((two / "summary.json").read_text())["overrides"] == {"cluster.nodes": 2}
    start = {name: {row.split(",")[0]: row.split(",") for row in (name / "jobs.csv").read_text().splitlines()[1:]}
             for name in (one, two)}
    header = (one / "jobs.csv").read_text().splitlines()[0].split(",")
    first = header.index("start")
    assert float(start[one]["b"][first]) == 202.0 and float(start[two]["b"][first]) == 1.0


@pytest.mark.parametrize("setting, message", [
    ("cluster.nodes=0", "cluster.nodes: must be a whole number of nodes >= 1"),
    ("cluster.gpus=2", "cluster.gpus: cannot be overridden; valid: cluster.nodes"),
])
def test_bad_cluster_override_is_one_line(scenario: Path, tmp_path: Path, capsys, setting: str,
                                          message: str) -> None:
    assert main([str(scenario), "--set", setting, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_cluster_nodes_refuses_a_fleet_of_several_clusters(tmp_path: Path, capsys) -> None:
    two = ONE_NODE + '\n[[cluster]]\nname = "c1"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
    path = write_scenario(tmp_path, clusters=two, jobs=JOBS, scheduler='policy = "fifo"')
    assert main([str(path), "--set", "cluster.nodes=3", "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "resizes a scenario of one cluster with one node type" in capsys.readouterr().err


def test_a_workload_override_keeps_every_other_workload_key() -> None:
    """Overriding one workload key re-parses the table: every other key, tenant_mix included, must
    survive the round trip (it once dropped tenant_mix, so philly_vc lost its tenants under --set)."""
    from dataclasses import fields

    from simsched.config.overrides import apply_overrides, workload_table
    from simsched.config.scenario import WorkloadSpec, load_scenario

    base = load_scenario(Path(__file__).resolve().parents[1] / "scenarios" / "course" / "philly_vc.toml")
    assert base.workload.tenant_mix is not None
    moved = apply_overrides(base, {"workload.jobs_limit": 300}, "test")
    kept = [f.name for f in fields(WorkloadSpec) if f.name not in ("jobs_limit", "params_file")]
    assert {name: getattr(moved.workload, name) for name in kept} == \
        {name: getattr(base.workload, name) for name in kept}
    assert workload_table(base.workload)["tenant_mix"] == dict(base.workload.tenant_mix)
