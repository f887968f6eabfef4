"""``experiment --verify K``: committed rows are re-run and compared exactly; a tampered metric is
caught with a non-zero exit, and nothing in the store changes."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from simsched.cli.main import main

pytest.importorskip("scipy.stats", reason="experiment statistics need the extra 'experiment' (scipy)")
REPO = Path(__file__).resolve().parents[1]
SPEC = str(REPO / "experiments" / "paper" / "fig4.toml")


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fig4") / "tiny"
    assert main(["experiment", SPEC, "--preset", "tiny", "--out", str(out), "--quiet", "--workers", "1"]) == 0
    return out


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_every_row_reproduces_and_the_store_is_untouched(store: Path, capsys) -> None:
    before = (store / "results.csv").read_bytes()
    assert main(["experiment", SPEC, "--preset", "tiny", "--out", str(store), "--verify", "10"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(line.startswith("ok ") for line in out) == 4 and "4 of 4 rows reproduce exactly" in out
    assert out[-1] == "tables: summary.csv, instance_ranks.csv, tests.csv, report.md rebuilt from the rows: identical"
    assert (store / "results.csv").read_bytes() == before


@pytest.mark.parametrize("name, edit", [
    ("summary.csv", lambda text: text.replace(".", ",", 1)),
    ("tests.csv", lambda text: text.rstrip("\n") + "0\n"),
    ("report.md", lambda text: text.replace("evo-gp", "evo-GP", 1)),
    ("instance_ranks.csv", lambda text: text + "\n"),
])
def test_a_tampered_table_is_caught(store: Path, tmp_path: Path, capsys, name: str, edit) -> None:
    """The tables the docs quote are rebuilt from the stored rows and compared byte for byte."""
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in store.iterdir():
        if path.is_file():
            (copy / path.name).write_bytes(path.read_bytes())
    (copy / name).write_text(edit((copy / name).read_text()))
    code = main(["experiment", SPEC, "--preset", "tiny", "--out", str(copy), "--verify", "1"])
    captured = capsys.readouterr()
    assert code == 3
    assert "1 of 1 rows reproduce exactly" in captured.out
    assert f"MISMATCH  {copy / name}: differs from the table rebuilt from results.csv" in captured.err
    untouched = [p for p in ("summary.csv", "tests.csv", "report.md", "instance_ranks.csv") if p != name]
    assert not any(f"{copy / other}:" in captured.err for other in untouched)


def test_a_tampered_metric_is_a_mismatch_with_a_non_zero_exit(store: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.csv", "plan.csv"):
        (copy / name).write_bytes((store / name).read_bytes())
    rows = _rows(copy / "results.csv")
    target = next(row for row in rows if row["scheduler"] == "mct-spark")
    stored = float(target["avg_wait"])
    target["avg_wait"] = repr(stored + 0.001)
    with open(copy / "results.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    code = main(["experiment", SPEC, "--preset", "tiny", "--out", str(copy), "--verify", "1",
                 "--only", "scheduler=mct-spark"])
    captured = capsys.readouterr()
    assert code == 3
    assert f"avg_wait: stored {stored + 0.001!r}, now {stored!r}" in captured.out
    assert "0 of 1 rows reproduce exactly; 1 do not" in captured.err


@pytest.mark.parametrize("only, message", [
    ("scheduler=nope", "no finished row matches scheduler=nope"),
    ("colour=red", "unknown key 'colour'"),
    ("scheduler", "give key=value pairs"),
])
def test_bad_only_filters_are_one_line(store: Path, capsys, only: str, message: str) -> None:
    assert main(["experiment", SPEC, "--preset", "tiny", "--out", str(store), "--verify", "1", "--only", only]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def test_tables_only_reports_complete_instances_and_runs_nothing(store: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in ("results.csv", "plan.csv"):
        (copy / name).write_bytes((store / name).read_bytes())
    assert main(["experiment", SPEC, "--preset", "tiny", "--out", str(copy), "--tables-only", "--quiet"]) == 0
    # complete: the tables are the full run's, title and all
    assert (copy / "report.md").read_bytes() == (store / "report.md").read_bytes()
    assert "1 of 1 instances complete (4 of 4 runs)" in capsys.readouterr().err
    lines = (copy / "results.csv").read_text().splitlines()
    (copy / "results.csv").write_text("\n".join(lines[:-1]) + "\n")  # one run still missing
    before = (copy / "results.csv").read_bytes()
    assert main(["experiment", SPEC, "--preset", "tiny", "--out", str(copy), "--tables-only", "--quiet"]) == 2
    assert "no instance of fig4 has all its runs" in capsys.readouterr().err
    assert (copy / "results.csv").read_bytes() == before  # nothing was run


@pytest.mark.parametrize("mode", [["--verify", "1"], ["--tables-only"]])
@pytest.mark.parametrize("flag", ["--plots", "--report"])
def test_plots_are_not_silently_dropped_by_verify_or_tables_only(store: Path, capsys, mode, flag) -> None:
    before = {p.name: p.read_bytes() for p in store.iterdir() if p.is_file()}
    assert main(["experiment", SPEC, "--preset", "tiny", "--out", str(store), *mode, flag]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "python -m simsched plot" in err[0], err
    assert {p.name: p.read_bytes() for p in store.iterdir() if p.is_file()} == before
