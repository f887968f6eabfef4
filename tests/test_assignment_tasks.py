"""docs/assignment.md §6: the two tiny task files give the hand-computed FIFO and SJF results."""

from __future__ import annotations

import re

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


def _section(text: str, start: str, end: str | None) -> str:
    body = text[text.index(start):]
    return body[:body.index(end)] if end else body


def test_the_worked_numbers_are_what_the_shown_commands_print(capsys, monkeypatch):
    """Run every command of docs/assignment.md §6 as written and read the printed table: each bold
    number of the worked answers is the number the table prints (issue 25: they used to differ in
    the last digit, 9.25 printed as 9.2)."""
    from simsched.cli.main import main

    text = (REPO / "docs" / "assignment.md").read_text()
    section = _section(text, "## 6.", "## 7.")
    commands = re.findall(r"^python -m simsched (docs/examples/task\d\.toml --policy \w+)$", section, re.M)
    assert len(commands) == 4
    monkeypatch.chdir(REPO)
    printed = {}
    for command in commands:
        assert main(command.split()) == 0
        table = capsys.readouterr().out
        values = {}
        for label in ("Avg JCT (s)", "Avg wait (s)", "Makespan (s)"):
            row = next(line for line in table.splitlines() if label in line)
            values[label] = re.findall(r"[\d,]+(?:\.\d+)?", row.split(label)[1])[0].replace(",", "")
        task, policy = re.match(r"docs/examples/(task\d)\.toml --policy (\w+)", command).groups()
        printed[task, policy] = values
    for task, following in (("task1", "**Task 2**"), ("task2", "SJF loses on task 2")):
        part = _section(section, f"**Task {task[-1]}**", following)
        for policy, start, end in (("fifo", "- FIFO", "- SJF"), ("sjf", "- SJF", None)):
            bullet = _section(part, start, end)
            numbers = re.findall(r"\*\*([\d.]+) s\*\*", bullet)
            makespan = re.search(r"makespan (\d+) s", bullet).group(1)
            shown = printed[task, policy]
            # the worked answer, digit for digit, is what the table prints (trailing zeros aside)
            assert [shown["Avg JCT (s)"], shown["Avg wait (s)"]] == [f"{float(n):.2f}" for n in numbers], (task, policy)
            assert float(shown["Makespan (s)"]) == float(makespan)
