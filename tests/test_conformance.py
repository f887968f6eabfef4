"""Conformance with real peers: every start and end of the Helios and Alibaba PAI
simulators on real Philly jobs (tests/data/peer-runs, committed so that every clone checks the README's
exactness claim; its SOURCE.md says where they come from and their license)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import simsched
from tests.conftest import SHARED

PEER_DIR = Path(__file__).resolve().parent / "data" / "peer-runs"
SHARED_PEER_DIR = SHARED / "traces" / "philly" / "peer-runs"
CASES = sorted(p.name for p in PEER_DIR.glob("*_*_*_*_*.csv"))
NAME = re.compile(r"(helios|ali)_(fifo|sjf)_(\w+?)_(\d+)_(n|pool)(\d+)\.csv")


def test_peer_runs_present():
    """12 peer runs (2 simulators x 2 policies x 2 cases, and the PAI simulator's pooled runs), their 2 job
    files and the SOURCE.md with the license: in every clone, with no ../shared."""
    assert len(CASES) == 12, CASES
    assert sorted(p.name for p in PEER_DIR.glob("philly_*.csv")) == ["philly_6214e9_2500.csv", "philly_ee9e8c_607.csv"]
    source = (PEER_DIR / "SOURCE.md").read_text(encoding="utf-8")
    assert "CC-BY-4.0" in source and "Microsoft" in source
    assert len(pd.read_csv(PEER_DIR / "philly_6214e9_2500.csv")) + len(pd.read_csv(PEER_DIR / "philly_ee9e8c_607.csv")) == 3107


def test_committed_peer_runs_are_the_shared_copy(traces_dir):
    """Where the project's shared copy is beside the checkout, the committed files are byte-for-byte it."""
    if not SHARED_PEER_DIR.is_dir():
        pytest.skip(f"{SHARED_PEER_DIR} is not there")
    shared = sorted(p.name for p in SHARED_PEER_DIR.glob("*.csv"))
    assert shared == sorted(p.name for p in PEER_DIR.glob("*.csv"))
    for name in shared:
        assert (PEER_DIR / name).read_bytes() == (SHARED_PEER_DIR / name).read_bytes(), name


@pytest.mark.parametrize("case", CASES)
def test_reproduces_peer_simulator(case, tmp_path):
    simulator, policy, vc, count, kind, size = NAME.fullmatch(case).groups()
    jobs = PEER_DIR / f"philly_{vc}_{count}.csv"
    nodes = f"{{ count = {size}, gpus = 8 }}" if kind == "n" else f"{{ count = 1, gpus = {size} }}"
    # Helios: strict head-of-line; the PAI simulator skips blocked jobs (backfill).
    backfill = "true" if simulator == "ali" else "false"
    scenario = tmp_path / "peer.toml"
    scenario.write_text(
        f'name = "{case}"\n[[cluster]]\nname = "c0"\nnodes = [{nodes}]\n'
        f'[workload]\nsource = "csv"\npath = "{jobs}"\n'
        f'[scheduler]\npolicy = "{policy}"\nplacement = "best_fit"\nbackfill = {backfill}\n'
    )
    result = simsched.run(scenario)
    expected = pd.read_csv(PEER_DIR / case, dtype={"job_id": str}).set_index("job_id")
    got = result.jobs.set_index("job_id").loc[expected.index]
    assert result.summary["unscheduled"] == 0
    assert (got["submit"] == expected["submit"]).all()
    mismatched = expected.index[(got["start"] != expected["start"]) | (got["end"] != expected["end"])]
    assert len(mismatched) == 0, f"{len(mismatched)} jobs differ, first {mismatched[0]}"
