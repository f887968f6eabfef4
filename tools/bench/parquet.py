"""Parquet against CSV for a run's tables: file sizes, write and read times.

    python tools/bench/parquet.py [--jobs 1000000] [--repeat 3] [--json]

The workload is tools/bench/soak.py's ``--pipeline`` one (tools/bench/engine.py: 1-8 GPU jobs,
Poisson arrivals, exponential durations, load 0.9 on 32 nodes of 8 GPUs), run once by
``simsched.run`` (fifo + best_fit + backfill). Then, for each format, ``RunResult.write`` writes
every table (jobs, events, nodes, spells, timeline, as ``--out DIR [--format parquet]``), and
``simsched.core.outputs.read_table`` reads each back with the documented types (as ``simsched plot``
and ``simsched.load_run`` do). Each write and read is repeated ``--repeat`` times and the
fastest is reported (warm: the files are in the page cache, the code imported), with its user
CPU seconds, which depend less than wall time on other processes of a shared machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _timed(action) -> tuple[float, float]:
    t0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
    action()
    return time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0


def best(action, repeat: int) -> dict[str, float]:
    """The fastest of ``repeat`` calls: wall and user-CPU seconds."""
    runs = [_timed(action) for _ in range(repeat)]
    wall, cpu = min(runs)
    return {"wall_s": wall, "cpu_s": cpu}


def measure(jobs: int, repeat: int, nodes: int = 32, load: float = 0.9) -> dict:
    from engine import workload

    import simsched.runs.single
    from simsched.core.outputs import RUN_TABLES, read_table

    with tempfile.TemporaryDirectory(prefix="simsched-parquet-") as tmp:
        folder = Path(tmp)
        with open(folder / "jobs_in.csv", "w") as f:
            f.write("job_id,submit,duration,gpus\n")
            for i, (submit, duration, gpus) in enumerate(workload(jobs, nodes, load)):
                f.write(f"{i},{submit!r},{duration!r},{gpus}\n")
        (folder / "bench.toml").write_text(
            f'name = "bench"\nseed = 1\n[[cluster]]\nname = "c0"\n'
            f'nodes = [{{ count = {nodes}, gpus = 8, gpu_type = "V100" }}]\n'
            f'[workload]\nsource = "csv"\npath = "jobs_in.csv"\n'
            f'[scheduler]\npolicy = "fifo"\nplacement = "best_fit"\nbackfill = true\n')
        started = time.perf_counter()
        result = simsched.runs.single.run(folder / "bench.toml")
        for name in RUN_TABLES:  # build every derived table before timing the writes
            getattr(result, name)
        simulate_s = time.perf_counter() - started
        assert result.summary["completed"] == jobs
        report: dict = {"jobs": jobs, "repeat": repeat, "simulate_s": simulate_s,
                        "rows": {name: len(getattr(result, name)) for name in RUN_TABLES}, "formats": {}}
        for fmt in ("csv", "parquet"):
            out = folder / fmt
            entry = {"write": best(lambda out=out, fmt=fmt: result.write(out, format=fmt), repeat)}
            entry["bytes"] = {name: (out / f"{name}.{fmt}").stat().st_size for name in RUN_TABLES}
            entry["read"] = {name: best(lambda path=out / f"{name}.{fmt}", name=name:
                                        read_table(path, f"{name}.csv"), repeat) for name in RUN_TABLES}
            report["formats"][fmt] = entry
        for name in RUN_TABLES:  # the same tables back, whatever the format
            a = read_table(folder / "csv" / f"{name}.csv")
            b = read_table(folder / "parquet" / f"{name}.parquet")
            assert a.equals(b), name
    report["load_average"] = list(os.getloadavg())
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return report


def table(report: dict) -> str:
    from simsched.core.outputs import RUN_TABLES

    csv, pq = report["formats"]["csv"], report["formats"]["parquet"]
    lines = [f"{report['jobs']:,} jobs (simulated in {report['simulate_s']:.1f} s); fastest of {report['repeat']}; "
             f"load average at the end {report['load_average'][0]:.1f}",
             "| table | rows | CSV MB | Parquet MB | size ratio | CSV read s | Parquet read s | read speed-up |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name in RUN_TABLES:
        a, b = csv["bytes"][name] / 1e6, pq["bytes"][name] / 1e6
        ra, rb = csv["read"][name]["wall_s"], pq["read"][name]["wall_s"]
        lines.append(f"| {name} | {report['rows'][name]:,} | {a:,.1f} | {b:,.1f} | {a / b:.1f}x | {ra:.2f} | "
                     f"{rb:.2f} | {ra / rb:.1f}x |")
    total_a, total_b = sum(csv["bytes"].values()) / 1e6, sum(pq["bytes"].values()) / 1e6
    read_a = sum(r["wall_s"] for r in csv["read"].values())
    read_b = sum(r["wall_s"] for r in pq["read"].values())
    lines.append(f"| **all** | | **{total_a:,.1f}** | **{total_b:,.1f}** | {total_a / total_b:.1f}x | "
                 f"**{read_a:.2f}** | **{read_b:.2f}** | {read_a / read_b:.1f}x |")
    wa, wb = csv["write"], pq["write"]
    lines.append(f"\nwrite every table: CSV {wa['wall_s']:.2f} s (user CPU {wa['cpu_s']:.2f} s), Parquet "
                 f"{wb['wall_s']:.2f} s (user CPU {wb['cpu_s']:.2f} s): {wa['wall_s'] / wb['wall_s']:.1f}x")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    report = measure(args.jobs, args.repeat)
    print(json.dumps(report, indent=2) if args.json else table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
