"""Conformance with real peers: every start and end of the Helios and Alibaba PAI
simulators on real Philly jobs (../shared/traces/philly/peer-runs, see its SOURCE.md)."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import simsched
from tests.conftest import SHARED

PEER_DIR = SHARED / "traces" / "philly" / "peer-runs"
CASES = sorted(p.name for p in PEER_DIR.glob("*_*_*_*_*.csv")) if PEER_DIR.is_dir() else []
NAME = re.compile(r"(helios|ali)_(fifo|sjf)_(\w+?)_(\d+)_(n|pool)(\d+)\.csv")


def test_peer_runs_present(traces_dir):
    assert len(CASES) == 12, CASES


@pytest.mark.parametrize("case", CASES)
def test_reproduces_peer_simulator(case, tmp_path, traces_dir):
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
