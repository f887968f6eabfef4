"""Golden metrics of the shipped scenarios: any change in results shows up here.

Regenerate after an intended change with
``SIMSCHED_REGEN_GOLDEN=1 python -m pytest tests/test_golden.py`` and explain it in the commit.
"""

from __future__ import annotations

import json
import os

import pytest

import simsched
from tests.conftest import REPO

GOLDEN = REPO / "tests" / "golden"
KEYS = ("jobs", "completed", "unscheduled", "avg_jct", "weighted_jct", "avg_wait", "cq_avg", "cq_max",
        "utilization", "deadline_miss_rate", "makespan", "preemptions", "objective")


@pytest.mark.parametrize("name", ["philly_hetero", "philly_hetero_overload", "pai_hetero", "paper_multicluster"])
def test_shipped_scenario_metrics(name):
    result = simsched.run(REPO / "scenarios" / f"{name}.toml")
    got = {key: result.summary[key] for key in KEYS}
    path = GOLDEN / f"{name}.json"
    if os.environ.get("SIMSCHED_REGEN_GOLDEN"):
        path.write_text(json.dumps(got, indent=2, sort_keys=True) + "\n")
    expected = json.loads(path.read_text())
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        if value is None:  # n/a (e.g. no deadlines)
            assert got[key] is None, key
        else:
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-9), key
