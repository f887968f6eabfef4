"""tools/calibrate/main_scenario.py: the main scenario's calibration search (docs/comparison.md)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from simsched.config.scenario import load_scenario

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tools" / "calibrate" / "main_scenario.py"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("main_scenario", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_dimension_parses_its_values_as_toml_and_keeps_the_rest_as_text(tool):
    assert tool.dimension("scheduler.reserve_depth=1,2,8") == ("scheduler.reserve_depth", [1, 2, 8])
    assert tool.dimension("workload.diurnal=false") == ("workload.diurnal", [False])
    assert tool.dimension("fleet.nodes=10/12,20/20") == ("fleet.nodes", ["10/12", "20/20"])
    assert tool.setting("scheduler.backfill=easy") == ("scheduler.backfill", "easy")


def test_fleet_nodes_sets_the_node_groups_counts_in_file_order(tool):
    scenario = load_scenario(REPO / "scenarios" / "philly_hetero.toml")
    assert tool.resized(scenario, None) is scenario
    groups = tool.resized(scenario, "14/10").clusters[0].nodes
    assert [(g.count, g.gpus, g.gpu_type) for g in groups] == [(14, 2, "2x12"), (10, 8, "8x24")]
    with pytest.raises(SystemExit, match="2 node groups"):
        tool.resized(scenario, "10")


def test_the_markdown_table_gives_the_range_over_seeds_and_the_seeds_meeting_every_target(tool):
    good = {"fifo_wait_h": 3.5, "sjf_wait_h": 1.0, "max_wait_d": 6.0, "sjf_max_wait_d": 40.0,
            "ratio": 1.6, "util": 0.65, "large_wait_h": 30.0, "p99_h": 40.0}
    long_wait = {**good, "max_wait_d": 7.25}
    results = {(0, 1): good, (0, 2): long_wait, (1, 1): "skipped: not valid"}
    text = tool.markdown([{"workload.load": 0.8, "scheduler.reserve_depth": 2}, {"x.y": True}], results)
    lines = text.splitlines()
    assert len(lines) == 3  # header, rule, one point (the other has no valid run)
    assert lines[2] == ("| load=0.8, reserve_depth=2 | 3.50 h | 1.00 h | 6.0-7.2 d | 40.0 d | 1.60 | 0.65 "
                        "| 30.0 h | 40.0 h | 1/2 |")
    assert tool.label({"workload.diurnal": False}) == "diurnal=false" and tool.label({}) == "as shipped"


def test_the_script_runs_fifo_and_sjf_per_point_and_skips_an_invalid_combination(tmp_path):
    out = tmp_path / "table.md"
    done = subprocess.run([sys.executable, str(SCRIPT), "--load", "0.8", "--backfill", "easy", "conservative",
                           "--vary", "scheduler.reserve_depth=2", "--seeds", "1", "--jobs", "60",
                           "--markdown", str(out)], capture_output=True, text=True, check=True)
    rows = done.stdout.splitlines()
    assert rows[0].startswith("point\tseed\tfifo_wait_h")
    assert rows[1].startswith("reserve_depth=2, load=0.8, backfill=easy\t1\t")
    assert rows[2].startswith("reserve_depth=2, load=0.8, backfill=conservative\t1\tskipped: ")
    assert "only applies to backfill" in rows[2]
    table = out.read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| reserve_depth=2, load=0.8, backfill=easy |")
