"""Honest ranking under partial failure (issue 37, docs/assignment.md "How failures are ranked"):
a scheduler that failed on any case is placed after every scheduler that completed all cases,
then by cases completed; a mean over fewer cases shows its n and wins no best; nothing prints
``nan``; a scheduler that failed every case is in the rank table as "failed (k of k)"."""

from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
from rich.console import Console

from simsched.present.compare_tables import rank_rows, rich_tables, to_markdown
from simsched.runs.compare import METRIC_KEYS, CompareSpec, tabulate
from simsched.runs.ranking import standing

CLASS = Path(__file__).parent / "data" / "class37" / "class.toml"
SEEDS = (1, 2, 3)


def _runs(values: dict[str, dict[int, float]]) -> pd.DataFrame:
    """One row per (scheduler, seed) that ran, every metric 1.0 but avg_jct."""
    rows = []
    for name, by_seed in values.items():
        for seed, jct in by_seed.items():
            rows.append({"instance": "c", "seed": seed, "scheduler": name, **dict.fromkeys(METRIC_KEYS, 1.0),
                         "unfinished": 0.0, "avg_jct": jct})
    return pd.DataFrame(rows)


def _failed(name: str, seeds) -> list[dict]:
    return [{"instance": "c", "seed": seed, "scheduler": name, "error": "boom"} for seed in seeds]


def _result():
    # 'partial' beats everyone on the one seed it completed; 'dead' completed nothing
    runs = _runs({"fifo": {1: 300.0, 2: 300.0, 3: 300.0}, "sjf": {1: 200.0, 2: 200.0, 3: 200.0},
                  "partial": {1: 100.0}})
    spec = CompareSpec(CLASS, (CLASS,), ("fifo", "sjf", "partial", "dead"), len(SEEDS))
    return tabulate(spec, runs, _failed("partial", (2, 3)) + _failed("dead", SEEDS))


def test_a_scheduler_that_failed_some_cases_is_placed_after_every_complete_one() -> None:
    result = _result()
    places = result.standing["place"].to_dict()
    assert places == {"sjf": 1.0, "fifo": 2.0, "partial": 3.0, "dead": 4.0}
    assert result.ranks.loc["partial", "mean_rank"] == 1.0  # its own cases alone would put it first
    assert result.standing.loc["partial", "completed"] == 1 and result.standing.loc["dead", "failed"] == 3


def test_no_best_from_fewer_cases_and_n_beside_the_mean() -> None:
    result = _result()
    jct = result.table[result.table["metric"] == "avg_jct"].set_index("scheduler")
    assert jct["best"].to_dict() == {"fifo": False, "sjf": True, "partial": False, "dead": False}
    assert not result.table.loc[result.table["scheduler"].isin(["partial", "dead"]), "best"].any()
    assert jct.loc["partial", "n"] == 1 and jct.loc["dead", "n"] == 0 and jct.loc["dead", "failed_runs"] == 3


def test_the_tables_show_n_failed_and_no_nan() -> None:
    result = _result()
    header, rows = rank_rows(result)
    assert header == ["Scheduler", "c#1", "c#2", "c#3", "Mean rank", "Place"]
    cells = {name: shown for name, shown, _ in rows}
    assert cells["partial"] == ["1", "failed", "failed", "1.00 (n=1)", "3"]
    assert cells["dead"] == ["failed", "failed", "failed", "failed (3 of 3)", "4"]
    assert [name for name, _, best in rows if best] == ["sjf"]
    markdown = to_markdown(result)
    assert "| Avg JCT (s) | 300.00 ± 0.00 | **200.00 ± 0.00** | 100.00 (n=1) | failed |" in markdown
    assert "| `dead` | failed | failed | failed | failed (3 of 3) | 4 |" in markdown
    console = Console(file=io.StringIO(), width=250)
    for table in rich_tables(result):
        console.print(table)
    text = console.file.getvalue()
    assert "failed (3 of 3)" in text and "1.00 (n=1)" in text
    for shown in (markdown, text):
        assert "nan" not in shown.lower()


def test_the_rule_among_the_failed_more_cases_completed_first() -> None:
    completed = pd.Series({"a": 4, "b": 3, "c": 1, "d": 4, "e": 0})
    mean_rank = pd.Series({"a": 2.0, "b": 1.0, "c": 1.0, "d": 1.5, "e": float("nan")})
    assert standing(completed, 4, mean_rank).to_dict() == {"a": 2.0, "b": 3.0, "c": 4.0, "d": 1.0, "e": 5.0}


def test_an_experiment_places_a_scheduler_with_fewer_cases_last_by_the_same_rule() -> None:
    from simsched.present.experiment_tables import summary_rows
    from simsched.runs.experiment.stats import compute

    class Spec:  # the few fields the statistics read
        metric, sweep_keys, headline, higher_is_better = "objective", (), "fifo", False
        scheduler_names = ("fifo", "sjf", "partial")

    rows = []
    for name, per_case in {"fifo": [3.0, 3.0, 3.0, 3.0], "sjf": [2.0, 2.0, 2.0, 2.0], "partial": [1.0]}.items():
        for case, value in enumerate(per_case):
            rows.append({"run_id": f"{name}{case}", "scenario": "s", "instance": f"i{case // 2}", "scheduler": name,
                         "seed": case % 2, "ea_stream": float("nan"), "scenario_hash": "h", "objective": value})
    stats = compute(pd.DataFrame(rows), Spec())
    summary = stats.summary.set_index("scheduler")
    assert summary["place"].to_dict() == {"sjf": 1.0, "fifo": 2.0, "partial": 3.0}
    _, shown = summary_rows(stats, Spec(), "")
    by_name = {row[0]: row for row in shown}
    assert by_name["partial"][2] == "1.0 (n=1)" and by_name["partial"][4] == "1.00 (n=1)"
    assert by_name["sjf"][2] == "*2.0" and by_name["sjf"][4].startswith("*")
