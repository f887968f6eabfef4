"""Issue 35's scale figures in one sitting, on one machine state: wall time, CPU time and peak RSS of
whole ``python -m simsched`` processes at the sizes users meet.

    python tools/bench/scale.py [--jobs 1000000] [--skip-evo] [--json]

Each row is one fresh process (files in the OS cache, nothing else warm), timed with ``os.wait4``
(CPU: user + system of the process and the children it reaped; peak RSS: ``ru_maxrss``, the
largest of them, as ``/usr/bin/time -v`` reports it):

- ``run 1M, --out csv`` and ``run 1M, --out parquet``: ``python -m simsched SCENARIO --quiet --out
  DIR --format F`` on tools/bench/e2e.py's job CSV (``--jobs`` jobs, 1/2/4/8 GPUs, exponential
  durations, Poisson arrivals at load 0.85; one cluster of 32 x 8 GPUs, fifo, first fit, strict);
  the two jobs tables are checked to hold the same start and end times;
- ``compare 4 x 3``: ``python -m simsched compare scenarios/philly_hetero.toml --schedulers
  fifo,sjf,srsf,hrrn --seeds 3 --workers 1 --quiet`` (the main scenario, 12 runs in one process);
- ``evo-gp, largest test instance``: ``experiment experiments/paper/fig4.toml --preset medium
  --verify 1 --only scheduler=evo-gp,instance=paper-test29-s0`` against the committed
  fig4-medium-arrival store (test29: 15,940 jobs on 26 clusters): the run again, checked to
  reproduce the stored row exactly (exit 0), the check's own work included. ``--skip-evo`` leaves it
  out (it takes minutes).

The load average is printed before and after: on a shared machine the seconds follow it, the
peak RSS does not.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from e2e import REPO, timed  # noqa: E402  (beside this file; imports nothing heavy)

STORE = REPO / "experiments" / "paper" / "results" / "fig4-medium-arrival"


def measured(args: list[str]) -> dict[str, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one whole process (it must exit 0)."""
    start = time.perf_counter()
    cpu, rss = timed(args)
    return {"wall_s": round(time.perf_counter() - start, 2), "cpu_s": round(cpu, 2), "peak_rss_mib": round(rss)}


def same_times(first: Path, second: Path) -> bool:
    """Whether two jobs tables (CSV and Parquet, rows in the same order) give every job the same start
    and end."""
    import pandas as pd  # (only here: the rest of this script stays light, see e2e.py's docstring)

    a = pd.read_csv(first, usecols=["job_id", "start", "end"], dtype={"job_id": str})
    b = pd.read_parquet(second, columns=["job_id", "start", "end"])
    return bool(len(a) == len(b) and (a["job_id"] == b["job_id"].astype(str)).all()
                and a["start"].equals(b["start"]) and a["end"].equals(b["end"]))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--skip-evo", action="store_true", help="leave out the evo-gp run (minutes)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    python = sys.executable
    load_before = os.getloadavg()
    rows: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="simsched-scale-") as tmp:
        folder = Path(tmp)
        subprocess.run([python, str(HERE / "e2e.py"), "--jobs", str(args.jobs), "--child", "inputs", tmp],
                       check=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
        for form in ("csv", "parquet"):
            rows[f"run {args.jobs:,} jobs, --out {form}"] = measured(
                [python, "-m", "simsched", str(folder / "e2e.toml"), "--quiet", "--out", str(folder / form),
                 "--format", form])
        if not same_times(folder / "csv" / "jobs.csv", folder / "parquet" / "jobs.parquet"):
            raise SystemExit("MISMATCH: jobs.csv and jobs.parquet differ in start or end times")
        rows["compare 4 schedulers x 3 seeds (philly_hetero)"] = measured(
            [python, "-m", "simsched", "compare", "scenarios/philly_hetero.toml", "--schedulers",
             "fifo,sjf,srsf,hrrn", "--seeds", "3", "--workers", "1", "--quiet"])
    if not args.skip_evo:
        rows["evo-gp, test29 (15,940 jobs, 26 clusters), --verify"] = measured(
            [python, "-m", "simsched", "experiment", "experiments/paper/fig4.toml", "--preset", "medium",
             "--out", str(STORE), "--verify", "1", "--only", "scheduler=evo-gp,instance=paper-test29-s0"])
    result = {"rows": rows, "timings": "whole processes, fresh interpreters, files in the OS cache (cold otherwise)",
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()], "cores": os.cpu_count()}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{'process':55s} {'wall s':>8s} {'CPU s':>8s} {'peak RSS MiB':>13s}")
    for name, row in rows.items():
        print(f"{name:55s} {row['wall_s']:8.1f} {row['cpu_s']:8.1f} {row['peak_rss_mib']:13,.0f}")
    print(f"{result['timings']}; load average {' '.join(map(str, result['load_average_before']))} before, "
          f"{' '.join(map(str, result['load_average_after']))} after ({result['cores']} cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
