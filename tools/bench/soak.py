"""Soak: time per job and peak memory as the job count grows, at a steady load.

    python tools/bench/soak.py [--jobs 100000 1000000] [--nodes 32] [--load 0.9] [--pipeline] [--json]

The workload is tools/bench/engine.py's (1-8 GPU jobs, Poisson arrivals,
exponential durations) at an offered load below 1, so the backlog stays
bounded and every job count sees the same queue depths. Each job count runs
in a fresh subprocess (fifo + best_fit + backfill): the workload is built,
then the engine is built and run (timed together), then the per-job table
(``jobs_frame``) is made as ``simsched.run`` would. The engine keeps columns,
not the specs, so the specs are dropped once it is built, as ``simsched.run``
drops them. The figures are the seconds per 1,000 jobs of the timed part, the
user CPU seconds of the same part (less sensitive than wall time to other
processes on a shared machine), the load average, and the peak resident set
size of the whole subprocess (``ru_maxrss``, inputs included; the peak after
building the input is reported beside it). With ``--extrapolate-to N``
the figures are extrapolated linearly to N jobs (time per job of the largest
run; memory from the growth per job between the two largest runs), and the
output says so.

``--pipeline`` measures the whole user path instead: the workload is written
as a job CSV with a scenario file (untimed), then ``simsched.run`` loads,
validates, simulates and collects it, and ``RunResult.write`` writes every
output file (jobs, events, nodes, spells, timeline, summary), as
``python -m simsched SCENARIO --out DIR`` does. The time is that of run +
write; the peak RSS is the subprocess's.

Targets (issue 14): time per job at 1M within 1.5x of that at 100k; peak RSS
of a 1M-job run at most 1.2 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def child(jobs: int, nodes: int, load: float) -> dict:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine import job_specs, workload

    from simsched.core.engine import Engine
    from simsched.core.metrics import jobs_frame
    from simsched.core.model import ClusterSpec, Fleet, NodeGroup, builtin_gpu_types
    from simsched.policies import ORDERINGS, PLACEMENTS
    from simsched.policies.allocation import Home
    from simsched.policies.queue import QueueScheduler

    specs = job_specs(workload(jobs, nodes, load))
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(nodes, 8, "V100"),)),), builtin_gpu_types())
    input_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
    engine = Engine(fleet, specs, QueueScheduler(ORDERINGS["fifo"], PLACEMENTS["best_fit"](), Home(), True))
    del specs  # the engine keeps columns, not the specs; simsched.run drops them here too
    engine.run()
    seconds = time.perf_counter() - t0
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0
    frame = jobs_frame(engine.jobs, fleet.cluster_names)
    assert (frame["status"] == "done").all()
    return {"jobs": jobs, "seconds": seconds, "ms_per_1000_jobs": 1e6 * seconds / jobs,
            "user_cpu_s": cpu, "cpu_ms_per_1000_jobs": 1e6 * cpu / jobs,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "input_peak_rss_mb": input_rss_mb, "decisions": engine.decisions,
            "load_average": list(os.getloadavg())}


def pipeline_child(jobs: int, nodes: int, load: float) -> dict:
    """simsched.run + RunResult.write on the same workload, from a scenario with a job CSV."""
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine import workload

    import simsched.runs.single

    with tempfile.TemporaryDirectory(prefix="simsched-soak-") as tmp:
        folder = Path(tmp)
        with open(folder / "jobs.csv", "w") as f:
            f.write("job_id,submit,duration,gpus\n")
            for i, (submit, duration, gpus) in enumerate(workload(jobs, nodes, load)):
                f.write(f"{i},{submit!r},{duration!r},{gpus}\n")
        (folder / "soak.toml").write_text(
            f'name = "soak"\nseed = 1\n[[cluster]]\nname = "c0"\n'
            f'nodes = [{{ count = {nodes}, gpus = 8, gpu_type = "V100" }}]\n'
            f'[workload]\nsource = "csv"\npath = "jobs.csv"\n'
            f'[scheduler]\npolicy = "fifo"\nplacement = "best_fit"\nbackfill = true\n')
        input_rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t0, cpu0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
        result = simsched.runs.single.run(folder / "soak.toml")
        result.write(folder / "out")
        seconds = time.perf_counter() - t0
        cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu0
        assert result.summary["completed"] == jobs
    return {"jobs": jobs, "seconds": seconds, "ms_per_1000_jobs": 1e6 * seconds / jobs,
            "user_cpu_s": cpu, "cpu_ms_per_1000_jobs": 1e6 * cpu / jobs,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "input_peak_rss_mb": input_rss_mb, "decisions": result.summary["decisions"],
            "load_average": list(os.getloadavg())}


def measure(jobs: int, nodes: int, load: float, pipeline: bool = False) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, __file__, "--child", str(jobs), "--nodes", str(nodes),
                          "--load", str(load), *(["--pipeline"] if pipeline else [])],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, nargs="+", default=[100_000, 1_000_000])
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--load", type=float, default=0.9)
    p.add_argument("--extrapolate-to", type=int, help="scale the largest run linearly to this many jobs")
    p.add_argument("--pipeline", action="store_true",
                   help="time simsched.run + writing every output file instead of the engine alone")
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.child:
        print(json.dumps((pipeline_child if args.pipeline else child)(args.child, args.nodes, args.load)))
        return 0
    measure(2000, args.nodes, args.load, args.pipeline)  # warm-up: imports, .pyc files
    runs = [measure(n, args.nodes, args.load, args.pipeline) for n in sorted(args.jobs)]
    small, large = runs[0], runs[-1]
    result = {"warm": True, "path": "simsched.run + write" if args.pipeline else "engine + jobs table",
              "load_average": list(os.getloadavg()), "runs": runs,
              "time_per_job_ratio": large["ms_per_1000_jobs"] / small["ms_per_1000_jobs"],
              "cpu_per_job_ratio": large["cpu_ms_per_1000_jobs"] / small["cpu_ms_per_1000_jobs"],
              "extrapolated": False}
    if args.extrapolate_to:
        # time: the largest run's time per job; memory: its RSS plus the per-job growth between
        # the two largest runs (the interpreter and libraries are a fixed part)
        if len(runs) < 2:
            p.error("--extrapolate-to needs at least two --jobs counts")
        below = runs[-2]
        per_job_mb = (large["peak_rss_mb"] - below["peak_rss_mb"]) / (large["jobs"] - below["jobs"])
        result["extrapolated"] = True
        result["extrapolated_to"] = {
            "jobs": args.extrapolate_to,
            "seconds": large["seconds"] * args.extrapolate_to / large["jobs"],
            "peak_rss_mb": large["peak_rss_mb"] + per_job_mb * (args.extrapolate_to - large["jobs"]),
            "basis": f"linear from the {below['jobs']:,}- and {large['jobs']:,}-job runs"}
    if args.json:
        print(json.dumps(result))
        return 0
    for run in runs:
        print(f"  {run['jobs']:>9,} jobs  {run['seconds']:8.1f} s  {run['ms_per_1000_jobs']:7.1f} ms per 1,000 jobs"
              f" (user CPU {run['cpu_ms_per_1000_jobs']:.1f} ms)  peak RSS {run['peak_rss_mb']:7.0f} MB"
              f" ({run['peak_rss_mb'] * 1024 / run['jobs']:.2f} KB/job; {run['input_peak_rss_mb']:.0f} MB"
              f" after building the input)  load average {run['load_average'][0]:.1f}")
    print(f"  time per job, {large['jobs']:,} vs {small['jobs']:,} jobs: {result['time_per_job_ratio']:.2f}x "
          f"(user CPU per job {result['cpu_per_job_ratio']:.2f}x); warm; load average {result['load_average'][0]:.1f}")
    if args.extrapolate_to:
        e = result["extrapolated_to"]
        print(f"  EXTRAPOLATED to {e['jobs']:,} jobs ({e['basis']}): about {e['seconds']:.0f} s, "
              f"peak RSS about {e['peak_rss_mb']:.0f} MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
