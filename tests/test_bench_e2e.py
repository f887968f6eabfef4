"""tools/bench/e2e.py on a small workload (and scale.py's check of its two jobs tables): simsched, the SimPy floor and the heapq reference give every
job the same start and end time (the bench stops with MISMATCH otherwise), and it reports each ratio."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_e2e_bench_checks_every_program_against_the_reference() -> None:
    out = subprocess.run([sys.executable, str(REPO / "tools" / "bench" / "e2e.py"), "--jobs", "400",
                          "--repeat", "1", "--json"], capture_output=True, text=True, cwd=REPO, timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["checked"].startswith("csv")
    assert set(result["cpu_ratio"]) == {"simsched --quiet", "simsched --out (csv)", "simsched --out (parquet)",
                                        "simpy floor"}
    assert set(result["cpu_ratio_to_floor"]) == {"simsched --quiet", "simsched --out (csv)",
                                                 "simsched --out (parquet)"}
    assert all(ratio > 0 for ratio in result["cpu_ratio"].values())


def test_scale_bench_compares_the_csv_and_parquet_jobs_tables(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    sys.path.insert(0, str(REPO / "tools" / "bench"))
    try:
        import scale
    finally:
        sys.path.remove(str(REPO / "tools" / "bench"))
    table = pd.DataFrame({"job_id": ["0", "1", "2"], "start": [0.0, 5.0, 7.5], "end": [5.0, 9.0, 8.0]})
    table.to_csv(tmp_path / "jobs.csv", index=False)
    table.to_parquet(tmp_path / "same.parquet")
    assert scale.same_times(tmp_path / "jobs.csv", tmp_path / "same.parquet")
    table.loc[2, "end"] = 8.5
    table.to_parquet(tmp_path / "other.parquet")
    assert not scale.same_times(tmp_path / "jobs.csv", tmp_path / "other.parquet")
