"""tools/bench/e2e.py on a small workload: simsched, the SimPy floor and the heapq reference give every
job the same start and end time (the bench stops with MISMATCH otherwise), and it reports each ratio."""

import json
import subprocess
import sys
from pathlib import Path

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
