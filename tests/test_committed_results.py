"""The committed paper results stay re-checkable: every row of a committed store belongs to its
spec's plan on the current code (a change to the scenario hash would orphan them and make --resume
re-run the whole experiment; simsched.runs.experiment.grid.ADDED_LATER keeps new fields out of it)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simsched.runs.experiment.grid import plan
from simsched.runs.experiment.spec import load_spec

REPO = Path(__file__).resolve().parents[1]
STORES = [("fig4.toml", "medium-event", "fig4-medium-event"), ("fig9b.toml", "full", "fig9b-full"),
          ("fig9a.toml", "medium", "fig9a-medium"),
          ("fig11a.toml", "medium", "fig11a-medium"),
          ("fig4.toml", "medium", "fig4-medium-arrival"),
          ("learned_test.toml", "medium", "learned-test-medium"),
          ("fig5.toml", "medium", "fig5-medium"),
          ("fig11b.toml", "medium", "fig11b-medium"),
          ("fig4.toml", "full", "fig4-full"),
          ("fig4.toml", "contended-medium", "fig4-contended-medium"),
          ("fig7_8.toml", "medium", "fig7_8-medium")]


@pytest.mark.parametrize("spec_name, preset, folder", STORES)
def test_every_committed_row_belongs_to_the_plan(spec_name: str, preset: str, folder: str) -> None:
    results = REPO / "experiments" / "paper" / "results" / folder / "results.csv"
    if not results.is_file():
        pytest.skip(f"{results} is not committed")
    planned = {task.run_id: task for task in plan(load_spec(REPO / "experiments" / "paper" / spec_name, preset))}
    with open(results, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows
    for row in rows:
        task = planned.get(row["run_id"])
        assert task is not None, f"{row['run_id']} ({row['instance']}, {row['scheduler']}) is not in the plan"
        assert (task.instance, task.scheduler, str(task.seed)) == (row["instance"], row["scheduler"], row["seed"])


@pytest.mark.parametrize("spec_name, preset, folder", STORES)
def test_committed_tables_rebuild_from_the_rows(spec_name: str, preset: str, folder: str, tmp_path: Path) -> None:
    """Every committed table is what --tables-only makes from the committed rows, byte for byte (what
    --verify checks after its re-runs; here without running anything). A change to the statistics or
    the report that is not followed by re-made tables fails here, not in a reader's --verify."""
    from simsched.present.experiment_tables import write_tables
    from simsched.runs.experiment.verify import rebuild

    store = REPO / "experiments" / "paper" / "results" / folder
    if not (store / "results.csv").is_file():
        pytest.skip(f"{store} is not committed")
    spec = load_spec(REPO / "experiments" / "paper" / spec_name, preset)
    rebuilt = rebuild(spec, store)
    for made in write_tables(rebuilt.stats, spec, tmp_path, rebuilt.title):
        if made.name == "by_priority.csv" and rebuilt.jobs_missing:
            continue
        committed = store / made.name
        assert committed.is_file(), f"{committed} is missing; make it with --tables-only"
        assert committed.read_bytes() == made.read_bytes(), f"{committed} is stale; re-make it with --tables-only"
