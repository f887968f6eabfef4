"""``--format parquet`` (issue 22): a run's tables and compare's per-job tables as Parquet, read back
by ``simsched plot`` and the API with the same content and column types as the CSV files."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

import simsched
from simsched.cli.main import main
from simsched.core.outputs import DTYPES, RUN_TABLES, read_table
from tests.helpers import write_scenario

TWO_NODES = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]'
# one job never runs (8 GPUs on 4-GPU nodes with one worker): empty texts and NaN times round-trip too
JOBS = ["a,0,100,2,,,,,", "b,1,10,4,,,,,", "c,2,200,2,,,,,", "d,3,90,2,2,,,,", "big,4,30,8,1,,,,"]


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    return write_scenario(tmp_path, clusters=TWO_NODES, jobs=JOBS, scheduler='policy = "fifo"')


def test_parquet_round_trip_equals_the_csv_tables(scenario: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="Parquet needs the extra 'parquet' (pyarrow)")
    assert main([str(scenario), "--out", str(tmp_path / "csv"), "--quiet"]) == 0
    assert main([str(scenario), "--out", str(tmp_path / "pq"), "--format", "parquet", "--quiet"]) == 0
    for name in RUN_TABLES:
        assert not (tmp_path / "pq" / f"{name}.csv").exists()
        csv = read_table(tmp_path / "csv" / f"{name}.csv")
        parquet = read_table(tmp_path / "pq" / f"{name}.parquet")
        pd.testing.assert_frame_equal(parquet, csv)  # values and dtypes
        assert {c: str(t) for c, t in parquet.dtypes.items()} == {
            c: ("string" if t == "string" else t) for c, t in DTYPES[f"{name}.csv"].items() if c in parquet}
    jobs = read_table(tmp_path / "pq" / "jobs.parquet").set_index("job_id")
    assert jobs.loc["big", "status"] == "infeasible" and jobs.loc["big", "nodes"] == "" and pd.isna(jobs.loc["big", "end"])
    # the API reads either folder to the same result
    a, b = simsched.load_run(tmp_path / "pq"), simsched.Result.load(tmp_path / "csv")
    for name in RUN_TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    assert a.summary["avg_jct"] == b.summary["avg_jct"]
    # writing the other format replaces, not duplicates, the tables
    assert main([str(scenario), "--out", str(tmp_path / "pq"), "--quiet"]) == 0
    assert sorted(p.name for p in (tmp_path / "pq").iterdir()) == sorted([f"{n}.csv" for n in RUN_TABLES] + [
        "summary.json"])


@pytest.mark.filterwarnings("ignore:1 of 5 jobs")
def test_parquet_tables_written_in_chunks_read_back_as_the_one_shot_write(scenario: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """write() converts and writes a table a chunk of rows at a time (the events straight from the
    engine's log): with the default chunk a small run's files are to_parquet's bytes; with a chunk
    of 2 rows (every table in several row groups) they are the bytes of to_parquet with row groups
    of 2 rows, and read back as the one-shot write's tables, schema and pandas metadata included."""
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet needs the extra 'parquet' (pyarrow)")
    from simsched.core import outputs

    simsched.run(scenario).write(tmp_path / "default", format="parquet")
    monkeypatch.setattr(outputs, "PARQUET_CHUNK", 2)
    simsched.run(scenario).write(tmp_path / "chunked", format="parquet")
    whole = simsched.run(scenario)
    (tmp_path / "one").mkdir()
    for name in RUN_TABLES:
        frame = getattr(whole, name)
        frame.to_parquet(tmp_path / "one" / f"{name}.parquet", engine="pyarrow", index=False, compression="zstd")
        one, chunked = tmp_path / "one" / f"{name}.parquet", tmp_path / "chunked" / f"{name}.parquet"
        assert (tmp_path / "default" / f"{name}.parquet").read_bytes() == one.read_bytes()
        assert pq.ParquetFile(chunked).metadata.num_row_groups == max(1, -(-len(frame) // 2))
        frame.to_parquet(tmp_path / "one" / "groups.parquet", engine="pyarrow", index=False, compression="zstd",
                         row_group_size=2)  # the same row groups in one call: the same bytes
        assert chunked.read_bytes() == (tmp_path / "one" / "groups.parquet").read_bytes()
        a, b = pq.read_table(one), pq.read_table(chunked)
        assert b.schema.equals(a.schema, check_metadata=True) and b.equals(a)
        pd.testing.assert_frame_equal(pd.read_parquet(chunked), pd.read_parquet(one))
        pd.testing.assert_frame_equal(read_table(chunked), read_table(one))
    assert len(whole.events) > 2 and len(whole.timeline) > 2  # several chunks, not one


def test_write_parquet_joins_chunks_with_empty_texts_and_nan(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="Parquet needs the extra 'parquet' (pyarrow)")
    from simsched.core.outputs import row_chunks, write_parquet

    frame = pd.DataFrame({"t": [0.5, float("nan"), 2.0, 3.0, 4.5], "s": ["a", "", "", "=b", "c"],
                          "n": [1, 2, 3, 4, 5]})
    write_parquet(tmp_path / "three.parquet", row_chunks(frame, 2))
    frame.to_parquet(tmp_path / "one.parquet", index=False)
    assert pq.ParquetFile(tmp_path / "three.parquet").metadata.num_row_groups == 3
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "three.parquet"), frame)
    assert pq.read_schema(tmp_path / "three.parquet").equals(pq.read_schema(tmp_path / "one.parquet"),
                                                             check_metadata=True)
    with pytest.raises(ValueError, match="no chunk"):
        write_parquet(tmp_path / "none.parquet", iter(()))


def test_plot_draws_a_parquet_run_like_a_csv_run(scenario: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="Parquet needs the extra 'parquet' (pyarrow)")
    pytest.importorskip("matplotlib", reason="figures need the extra 'plots'")
    from simsched.present.plots.run import load_run

    assert main([str(scenario), "--out", str(tmp_path / "pq"), "--format", "parquet", "--quiet"]) == 0
    assert main(["plot", str(tmp_path / "pq")]) == 0
    assert sorted(p.stem for p in (tmp_path / "pq" / "plots").iterdir()) == [
        "cdf", "gantt", "queue", "utilization", "wait_by_weight"]
    tables = load_run(tmp_path / "pq")
    assert len(tables["jobs"]) == len(JOBS) and tables["summary"]["jobs"] == len(JOBS)


def test_compare_keep_jobs_in_parquet(scenario: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="Parquet needs the extra 'parquet' (pyarrow)")
    from simsched.present.plots.compare import load_compare

    out = tmp_path / "cmp"
    assert main(["compare", str(scenario), "--schedulers", "fifo,sjf", "--workers", "1", "--keep-jobs",
                 "--format", "parquet", "--out", str(out), "--quiet"]) == 0
    index = pd.read_csv(out / "jobs" / "index.csv")
    assert list(index["file"]) == ["0.parquet", "1.parquet"]
    jobs = load_compare(out)["jobs"]
    direct = simsched.run(scenario, scheduler="sjf").jobs
    pd.testing.assert_frame_equal(jobs["sjf"][0], read_table_like(direct))


def read_table_like(frame: pd.DataFrame) -> pd.DataFrame:
    """A run's in-memory jobs table with the dtypes read_table gives (text as string)."""
    out = frame.copy()
    for column, kind in DTYPES["jobs.csv"].items():
        if column in out:
            out[column] = out[column].astype(kind) if kind != "string" else out[column].astype("string")
    return out


def test_parquet_without_pyarrow_is_one_line_exit_2(scenario: Path, tmp_path: Path, capsys,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow now raises ImportError
    out = tmp_path / "out"
    assert main([str(scenario), "--out", str(out), "--format", "parquet", "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: --format parquet needs pyarrow, which is not installed: pip install -e '.[parquet]'"]
    assert not out.exists()  # refused before anything ran or was written
    assert main(["compare", str(scenario), "--keep-jobs", "--format", "parquet", "--out", str(out), "--quiet"]) == 2
    assert "needs pyarrow" in capsys.readouterr().err
    assert main([str(scenario), "--format", "parquet", "--quiet"]) == 2
    assert "--format needs --out" in capsys.readouterr().err
    spec = tmp_path / "spec.toml"
    spec.write_text(f'name = "e"\nscenarios = ["{scenario}"]\nschedulers = ["fifo"]\nrecord = ["jobs"]\n')
    assert main(["experiment", str(spec), "--format", "parquet", "--out", str(out), "--quiet"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --format parquet needs pyarrow, which is not installed: pip install -e '.[parquet]'"]
    assert not out.exists()


def test_experiment_records_per_job_tables_in_parquet(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="Parquet needs the extra 'parquet' (pyarrow)")
    pytest.importorskip("scipy.stats", reason="statistics need the extra 'experiment' (scipy)")
    from tests.test_experiment import _spec_dir

    spec = _spec_dir(tmp_path)  # record = ["decisions", "jobs"]
    for fmt in ("csv", "parquet"):
        assert main(["experiment", str(spec), "--preset", "quick", "--workers", "1", "--format", fmt,
                     "--out", str(tmp_path / fmt), "--quiet"]) == 0
        assert sorted({p.suffix for p in (tmp_path / fmt / "jobs").iterdir()}) == [f".{fmt}"]
    csv_jobs = sorted((tmp_path / "csv" / "jobs").iterdir())
    for path in csv_jobs:  # the same per-job table in either format
        parquet = pd.read_parquet(tmp_path / "parquet" / "jobs" / f"{path.stem}.parquet")
        assert parquet["job_id"].astype(str).tolist() == pd.read_csv(path)["job_id"].astype(str).tolist()
        assert parquet["wait"].tolist() == pytest.approx(pd.read_csv(path)["wait"].tolist(), nan_ok=True)
    # the statistics drawn from them are the same
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "csv" / "by_priority.csv"),
                                  pd.read_csv(tmp_path / "parquet" / "by_priority.csv"))
