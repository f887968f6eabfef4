"""docs/assignment.md §6: the two tiny task files give the hand-computed FIFO and SJF results."""

from __future__ import annotations

import pytest

import simsched
from tests.conftest import REPO

EXAMPLES = REPO / "docs" / "examples"

EXPECTED = {
    ("task1", "fifo"): ({"j1": (0, 8), "j2": (8, 12), "j3": (12, 13), "j4": (13, 15)}, 10.5, 6.75, 15),
    ("task1", "sjf"): ({"j1": (0, 8), "j2": (11, 15), "j3": (8, 9), "j4": (9, 11)}, 9.25, 5.5, 15),
    ("task2", "fifo"): ({"a": (0, 10), "b": (10, 15), "c": (1, 4), "d": (4, 5)}, 7.75, 3.0, 15),
    ("task2", "sjf"): ({"a": (6, 16), "b": (0, 5), "c": (5, 8), "d": (5, 6)}, 8.0, 3.25, 16),
}


@pytest.mark.parametrize("task, policy", sorted(EXPECTED))
def test_task_files_match_the_worked_results(task, policy):
    rows, avg_jct, avg_wait, makespan = EXPECTED[task, policy]
    result = simsched.run(EXAMPLES / f"{task}.toml", scheduler=policy)
    assert {r.job_id: (r.start, r.end) for r in result.jobs.itertuples()} == rows
    summary = result.summary
    assert (summary["avg_jct"], summary["avg_wait"], summary["makespan"]) == (avg_jct, avg_wait, makespan)


def test_assignment_lists_the_same_numbers():
    text = (REPO / "docs" / "assignment.md").read_text()
    for number in ("**10.5 s**", "**6.75 s**", "**9.25 s**", "**5.5 s**", "**7.75 s**", "**3.0 s**",
                   "**8.0 s**", "**3.25 s**"):
        assert number in text
