"""Every shipped scenario loads; the course set-up (scenarios/course/) matches the course README."""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched
from simsched.config.scenario import load_scenario
from tests.conftest import REPO

SCENARIOS = sorted((REPO / "scenarios").rglob("*.toml"))
SCENARIOS = [p for p in SCENARIOS if "clusters" not in p.parts]
SHARED_PHILLY = REPO.parent / "shared" / "traces" / "philly" / "pollux_philly.csv"


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: str(p.relative_to(REPO / "scenarios")))
def test_every_shipped_scenario_loads(path: Path):
    scenario = load_scenario(path)
    assert scenario.clusters


@pytest.mark.parametrize("name", ["philly", "pai"])
def test_course_setup_is_five_nodes_per_type_heterogeneous_best_fit(name):
    for file in (f"{name}.toml", f"{name}_trace.toml"):
        scenario = load_scenario(REPO / "scenarios" / "course" / file)
        per_type: dict[str, int] = {}
        for cluster in scenario.clusters:
            for group in cluster.nodes:
                per_type[group.gpu_type] = per_type.get(group.gpu_type, 0) + group.count
        assert set(per_type.values()) == {5}
        assert (scenario.scheduler.placement, scenario.scheduler.heterogeneous) == ("best_fit", True)
    look_alike = load_scenario(REPO / "scenarios" / "course" / f"{name}.toml")
    assert look_alike.workload.source == "synthetic" and look_alike.workload.params["jobs"] == 10000
    twin = load_scenario(REPO / "scenarios" / "course" / f"{name}_trace.toml")
    assert twin.workload.source == name and twin.workload.jobs_limit == 10000


def test_course_look_alike_runs_a_prefix():
    result = simsched.run(REPO / "scenarios" / "course" / "philly.toml", jobs=200)
    assert result.summary["jobs"] == 200 and result.summary["completed"] == 200


def test_course_philly_trace_twin_on_the_real_trace(tmp_path):
    if not SHARED_PHILLY.is_file():
        pytest.skip("the Philly trace sample (../shared/traces/philly/pollux_philly.csv) is not present")
    from dataclasses import replace

    scenario = load_scenario(REPO / "scenarios" / "course" / "philly_trace.toml")
    scenario = replace(scenario, workload=replace(scenario.workload, path=SHARED_PHILLY, jobs_limit=300))
    result = simsched.run(scenario)
    assert result.summary["jobs"] == 300
