"""The shipped scenarios' event logs and job tables are byte-identical to the digests taken before
the layering move (issue 33): fifo, sjf, greedy/easy/no backfill, drf under strict and borrow
quotas, borrow with preemptive reclaim, and evo-gp on 200 jobs. tools/event_digests.py makes them.
Issue 38 re-took the philly_hetero digests on purpose (the training speed basis) and added the course
look-alikes, whose digests were taken on the code before issue 38: the course's parity runs are
byte-identical under the new default because the course scenarios pin speed_basis = "fp32"."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("event_digests", ROOT / "tools" / "event_digests.py")
event_digests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(event_digests)
GOLDEN = json.loads(event_digests.GOLDEN.read_text())


def test_every_case_has_a_committed_digest():
    assert sorted(GOLDEN) == sorted(event_digests.CASES)


@pytest.mark.parametrize("case", sorted(event_digests.CASES))
def test_event_log_and_jobs_byte_identical(case):
    assert event_digests.digests(case) == GOLDEN[case]
