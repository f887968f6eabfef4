"""Fair share against the number of tenants: the same jobs with 3 tenants and with one tenant per job.

    python tools/bench/tenant_count.py [--jobs 3000] [--load 1.3] [--policies drf ftf maxmin-hetero fifo]
                                       [--repeat 3] [--seed 1] [--json]

The case of issue 35 (item 4): PAI's reader gives every user a tenant of its
own, so a fair-share policy may see thousands of tenants. A seeded synthetic
workload (``--jobs`` jobs asking 1, 2, 4 or 8 GPUs, exponential durations,
Poisson arrivals at offered load ``--load``) runs on 24 GPUs of two types
(2 nodes of 8 x 24 GB, 4 nodes of 2 x 12 GB: heterogeneity for
maxmin-hetero to weigh), ``quota = "none"``, twice per policy: the jobs
split between 3 tenants (drawn 50/30/20 %), and the very same jobs each
with a tenant of its own.

Each (policy, tenants) run is built and run once untimed first (imports, the
CSV's parse), then ``--repeat`` times, interleaved over every run, so load on
a shared machine hits every run alike; the best CPU time (time.process_time)
of the event loop (``engine.run()``) counts. Printed per policy: the loop's
CPU seconds with 3 tenants and with one per job, their ratio (target <= 2),
and maxmin-hetero's time per job over drf's at one tenant per job (target <= 3).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
GPUS = 24
SIZES = (1, 2, 4, 8)
SIZE_P = (0.5, 0.25, 0.15, 0.1)
MEAN_DURATION_S = 3600.0

SCENARIO = """name = "tenant_count_{label}"
seed = {seed}

[[cluster]]
name = "c0"
nodes = [{{ count = 2, gpus = 8, gpu_type = "8x24" }}, {{ count = 4, gpus = 2, gpu_type = "2x12" }}]

[workload]
source = "csv"
path = "{csv}"

[scheduler]
policy = "fifo"
placement = "best_fit"
backfill = true
heterogeneous = true
quota = "none"
"""


def write_inputs(folder: Path, jobs: int, load: float, seed: int) -> dict[str, Path]:
    """The jobs' CSV twice (3 tenants; one tenant per job) and a scenario for each; returns label -> scenario."""
    rng = np.random.default_rng(seed)
    gpus = rng.choice(SIZES, size=jobs, p=SIZE_P)
    duration = np.maximum(1.0, np.round(rng.exponential(MEAN_DURATION_S, size=jobs)))
    mean_gap = float(np.mean(gpus * duration)) / (GPUS * load)
    submit = np.round(np.cumsum(rng.exponential(mean_gap, size=jobs)) - mean_gap, 3).clip(0.0)
    three = rng.choice(("a", "b", "c"), size=jobs, p=(0.5, 0.3, 0.2))
    out = {}
    for label, tenants in (("3", three), ("per-job", [f"u{i}" for i in range(jobs)])):
        csv = folder / f"jobs_{label}.csv"
        with csv.open("w") as f:
            f.write("job_id,submit,duration,gpus,tenant\n")
            for i in range(jobs):
                f.write(f"j{i},{submit[i]:.3f},{duration[i]:.0f},{gpus[i]},{tenants[i]}\n")
        scenario = folder / f"tenants_{label}.toml"
        scenario.write_text(SCENARIO.format(label=label.replace("-", "_"), seed=seed, csv=csv.name))
        out[label] = scenario
    return out


def timed_run(scenario_path: Path, policy: str) -> dict:
    """One run: CPU seconds of the event loop and its event count."""
    from simsched.config.scenario import load_scenario
    from simsched.runs.single import simulation

    scenario = load_scenario(scenario_path).with_scheduler_keys({"policy": policy}, "bench")
    ready = simulation(scenario)
    started = time.process_time()
    ready.engine.run()
    loop_s = time.process_time() - started
    ends = sorted((job.job_id, job.end) for job in ready.engine.jobs)
    return {"loop_s": loop_s, "events": len(ready.engine.events), "ends": hash(tuple(ends))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=3000)
    parser.add_argument("--load", type=float, default=1.3)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--policies", nargs="+", default=["drf", "ftf", "maxmin-hetero", "fifo"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.jobs < 1 or args.load <= 0 or args.repeat < 1:
        parser.error("--jobs and --repeat must be >= 1 and --load > 0")

    with tempfile.TemporaryDirectory() as tmp:
        scenarios = write_inputs(Path(tmp), args.jobs, args.load, args.seed)
        cases = [(policy, label) for policy in args.policies for label in scenarios]
        for policy, label in cases:  # warm-up
            timed_run(scenarios[label], policy)
        runs: dict[tuple, list[dict]] = {case: [] for case in cases}
        for _ in range(args.repeat):
            for policy, label in cases:
                runs[policy, label].append(timed_run(scenarios[label], policy))
    best = {case: min(rows, key=lambda r: r["loop_s"]) for case, rows in runs.items()}
    report = {"jobs": args.jobs, "load": args.load, "seed": args.seed, "gpus": GPUS, "repeat": args.repeat,
              "policies": {}}
    for policy in args.policies:
        three, each = best[policy, "3"], best[policy, "per-job"]
        report["policies"][policy] = {"three_tenants_s": three["loop_s"], "per_job_s": each["loop_s"],
                                      "events_3": three["events"], "events_per_job": each["events"],
                                      "ratio": each["loop_s"] / three["loop_s"]}
    if "drf" in args.policies and "maxmin-hetero" in args.policies:
        report["maxmin_over_drf_per_job"] = (best["maxmin-hetero", "per-job"]["loop_s"]
                                             / best["drf", "per-job"]["loop_s"])
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.jobs:,} jobs on {GPUS} GPUs, load {args.load}, seed {args.seed}; warm, best of {args.repeat} "
          f"(loop CPU s)")
    print(f"{'policy':14} {'3 tenants':>10} {'per job':>10} {'ratio':>7}  (target <= 2)")
    for policy, row in report["policies"].items():
        print(f"{policy:14} {row['three_tenants_s']:>10.3f} {row['per_job_s']:>10.3f} {row['ratio']:>7.2f}")
    if "maxmin_over_drf_per_job" in report:
        print(f"maxmin-hetero / drf, one tenant per job: {report['maxmin_over_drf_per_job']:.2f} (target <= 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
