"""tools/fill_added_later.py: an old store gains the counts columns by re-running its rows, and only
when every metric it holds reproduces."""

from __future__ import annotations

import csv
import importlib.util
import io
from pathlib import Path

from simsched.cli.main import main
from simsched.runs.experiment.store import COUNTS_ADDED_LATER

REPO = Path(__file__).resolve().parents[1]
SCENARIO = """name = "a"
seed = 3
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[[cluster]]
name = "c1"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 20
gpus = [1, 2, 4]
mean_duration_s = 600.0
[scheduler]
policy = "fifo"
"""
SPEC = """name = "old"
scenarios = ["a.toml"]
schedulers = ["fifo", { name = "tiresias", policy = "mct-tiresias" }, { name = "pre", policy = "srsf", preemptive = true }]
seeds = 2
metric = "avg_wait"
headline = "fifo"
"""


def _tool():
    spec = importlib.util.spec_from_file_location("fill_added_later", REPO / "tools" / "fill_added_later.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def _drop_counts(path: Path) -> None:
    rows = list(csv.reader(io.StringIO(path.read_text())))
    keep = [i for i, name in enumerate(rows[0]) if name not in COUNTS_ADDED_LATER]
    with path.open("w", newline="") as fh:
        csv.writer(fh, lineterminator="\n").writerows([[row[i] for i in keep] for row in rows])


def test_fill_restores_the_counts_and_refuses_a_row_that_does_not_reproduce(tmp_path, capsys):
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "store"
    assert main(["experiment", str(tmp_path / "spec.toml"), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    original = {row["run_id"]: row for row in _read(out / "results.csv")}
    assert any(float(row["preemptions"]) > 0 for row in original.values())  # the counts are not all zero
    _drop_counts(out / "results.csv")
    tool = _tool()
    # one sitting of 2 rows, then the rest: filled rows are skipped
    assert tool.main([str(tmp_path / "spec.toml"), "--out", str(out), "--limit", "2"]) == 0
    assert "2 rows filled in this sitting; 4 rows still lack" in capsys.readouterr().out
    # half filled: --verify re-checks every row, and skips only the counts a row does not hold yet
    assert main(["experiment", str(tmp_path / "spec.toml"), "--out", str(out), "--tables-only", "--quiet"]) == 0
    assert main(["experiment", str(tmp_path / "spec.toml"), "--out", str(out), "--verify", "6"]) == 0
    assert "6 of 6 rows reproduce exactly" in capsys.readouterr().out
    assert tool.main([str(tmp_path / "spec.toml"), "--out", str(out)]) == 0
    filled = {row["run_id"]: row for row in _read(out / "results.csv")}
    assert filled.keys() == original.keys()
    for run_id, row in original.items():
        for column in COUNTS_ADDED_LATER:
            assert filled[run_id][column] == row[column], (run_id, column)
    # a store whose stored metric no longer reproduces: exit 3, the row left as it was
    _drop_counts(out / "results.csv")
    text = (out / "results.csv").read_text().splitlines()
    header = text[0].split(",")
    first = text[1].split(",")
    column = header.index("avg_wait")
    first[column] = repr(float(first[column]) + 1.0)
    text[1] = ",".join(first)
    (out / "results.csv").write_text("\n".join(text) + "\n")
    assert tool.main([str(tmp_path / "spec.toml"), "--out", str(out), "--limit", "1"]) == 3
    assert "MISMATCH" in capsys.readouterr().err
    assert all(column not in (out / "results.csv").read_text().splitlines()[0] for column in COUNTS_ADDED_LATER)


def test_fill_with_workers_writes_what_a_serial_fill_writes(tmp_path, capsys):
    """``--workers 2`` runs rows in worker processes and writes each as it finishes: every row gets back
    the counts the original store had, the rows stay in their order and every other cell is unchanged
    (the counts columns move to the end of the header, as in a serial fill)."""
    (tmp_path / "a.toml").write_text(SCENARIO)
    (tmp_path / "spec.toml").write_text(SPEC)
    out = tmp_path / "store"
    assert main(["experiment", str(tmp_path / "spec.toml"), "--out", str(out), "--workers", "1", "--quiet"]) == 0
    original = _read(out / "results.csv")
    _drop_counts(out / "results.csv")
    assert _tool().main([str(tmp_path / "spec.toml"), "--out", str(out), "--workers", "2"]) == 0
    assert "6 rows filled in this sitting; 0 rows still lack" in capsys.readouterr().out
    assert _read(out / "results.csv") == original


def test_bad_workers_or_limit_exit_2(tmp_path, capsys):
    for flag in ("--workers", "--limit"):
        try:
            _tool().main([str(tmp_path / "spec.toml"), "--out", str(tmp_path), flag, "0"])
        except SystemExit as stop:
            assert stop.code == 2
        else:
            raise AssertionError(f"{flag} 0 was accepted")
        assert f"{flag} must be an integer >= 1, got 0" in capsys.readouterr().err
