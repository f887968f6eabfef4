"""evo-gp cost against instance size: seconds per decision and per run on the paper's test instances.

    python tools/bench/evo_sizes.py [--instances 13,18,22,26,3,9,29] [--trigger arrival|event]
                                    [--max-jobs N] [--no-floor | --compare-floor] [--profile] [--json]

Each instance is the Fig. 4 ``medium`` preset's ``evo-gp`` run of that test instance
(experiments/paper/fig4.toml: its fixed jobs, EA stream 0, n = 100, 200 generations), run end
to end through the engine in this process, with the trigger given (default: the paper specs'
``arrival``). The test instances span 350 (13) to 15,940 jobs (29).

Warm: one small evo-gp run (instance 13, first 60 jobs) comes first and is not counted, so
numba's compiled kernels are loaded (or compiled) before any timing. Per run it prints the
wall and CPU seconds (CPU = this process's user + system time, which moves less with the load
of a shared machine), the engine's decisions, the plans made (allocation + planner runs), the EA
runs and their seconds, and CPU ms per decision and per plan. ``--max-jobs N`` runs the first N
jobs only (by submit time): those rows say "first N" and are not whole runs. Nothing is
extrapolated here; the per-job cost of the measured sizes is what an estimate for a whole
experiment should scale (docs/paper.md says how it was done).

The EA stops at the objective's floor when an initial individual already reaches it (every job
starts now; simsched/evo/floor.py): "floor stops" counts those EA runs. ``--no-floor`` runs every
generation instead (the code before that stop; the same results), and ``--compare-floor`` runs each
instance both ways, one after the other, checks that the objectives are equal and prints the CPU
ratio.

``--profile`` runs cProfile over the last instance and prints the 25 functions with the most
internal time, to see whether the simulation around the planner (views, per-decision copies)
or the EA dominates.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import io
import json
import os
import pstats
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from simsched.evo import scheduler as evo_scheduler  # noqa: E402
from simsched.evo.ea import evolve  # noqa: E402
from simsched.runs.experiment.grid import plan  # noqa: E402
from simsched.runs.experiment.spec import load_spec  # noqa: E402
from simsched.runs.single import simulation  # noqa: E402

SPEC = REPO / "experiments" / "paper" / "fig4.toml"


def tasks_by_instance(preset: str = "medium") -> dict[int, object]:
    """Test-set index -> the preset's evo-gp task of that instance."""
    out = {}
    for task in plan(load_spec(SPEC, preset)):
        if task.scheduler == "evo-gp":
            out[int(task.instance.split("test")[1].split("-")[0])] = task
    return out


def run_one(task, trigger: str, max_jobs: int | None, profile: bool = False, floor: bool = True) -> dict:
    scenario = task.resolved.with_scheduler_keys({"decide_on": trigger}, "evo_sizes.py")
    sim = simulation(scenario, jobs=max_jobs)
    scheduler = sim.engine.scheduler
    evo_scheduler.evolve = evolve if floor else functools.partial(evolve, floor=False)
    profiler = cProfile.Profile() if profile else None
    cpu0, wall0 = time.process_time(), time.perf_counter()
    if profiler:
        profiler.enable()
    result = sim.run()
    if profiler:
        profiler.disable()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    stats = scheduler.stats
    row = {
        "instance": task.instance, "jobs": int(result.summary["jobs"]), "whole_run": max_jobs is None,
        "clusters": len(scenario.clusters), "trigger": trigger,
        "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "decisions": int(result.summary.get("decisions", stats["decisions"])), "plans": stats["plans"],
        "ea_runs": stats["ea_runs"], "ea_floor_stops": stats["ea_floor_stops"], "floor": floor,
        "ea_s": round(stats["ea_seconds"], 2),
        "cpu_ms_per_decision": round(1000 * cpu / max(stats["decisions"], 1), 2),
        "cpu_ms_per_plan": round(1000 * cpu / max(stats["plans"], 1), 2),
        "objective": result.summary["objective"],
    }
    if profiler:
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
        row["profile"] = text.getvalue()
    return row


def _print(row: dict, args) -> None:
    if args.json:
        return
    size = f"{row['jobs']:,}" + ("" if row["whole_run"] else f" (first {args.max_jobs:,})")
    print(f"{row['instance']:>16} {size:>18} jobs {row['clusters']:>3} clusters | {row['decisions']:>6} "
          f"decisions {row['plans']:>6} plans {row['ea_runs']:>6} EA runs ({row['ea_floor_stops']} floor stops"
          f"{'' if row['floor'] else ', stop off'}) | wall {row['wall_s']:>8.1f} s CPU {row['cpu_s']:>8.1f} s "
          f"(EA wall {row['ea_s']:.1f} s) | {row['cpu_ms_per_decision']:.2f} ms/decision "
          f"{row['cpu_ms_per_plan']:.2f} ms/plan", flush=True)
    if "profile" in row:
        print(row["profile"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", default="13,18,22,26,3,9,29",
                        help="test-set indices, smallest first (default spans 350 to 15,940 jobs)")
    parser.add_argument("--trigger", choices=("arrival", "event"), default="arrival")
    parser.add_argument("--max-jobs", type=int, default=None, help="run only the first N jobs of each instance")
    floor = parser.add_mutually_exclusive_group()
    floor.add_argument("--no-floor", action="store_true", help="run every EA generation (no stop at the floor)")
    floor.add_argument("--compare-floor", action="store_true",
                       help="run each instance with and without the stop at the floor and compare")
    parser.add_argument("--profile", action="store_true", help="cProfile the last instance")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    indices = [int(x) for x in args.instances.split(",") if x.strip()]
    tasks = tasks_by_instance()
    unknown = [i for i in indices if i not in tasks]
    if unknown:
        print(f"evo_sizes.py: --instances: no test instance {unknown[0]}; valid: 0..{max(tasks)}", file=sys.stderr)
        return 2
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    run_one(tasks[13], args.trigger, 60)  # warm-up: numba kernels loaded (or compiled); not counted
    modes = (True, False) if args.compare_floor else (not args.no_floor,)
    rows = []
    for k, i in enumerate(indices):
        pair = []
        for floor_on in modes:
            last = k == len(indices) - 1 and floor_on == modes[0]
            row = run_one(tasks[i], args.trigger, args.max_jobs, profile=args.profile and last, floor=floor_on)
            rows.append(row)
            pair.append(row)
            _print(row, args)
        if len(pair) == 2:
            if pair[0]["objective"] != pair[1]["objective"]:
                print(f"evo_sizes.py: {pair[0]['instance']}: the objective differs with and without the floor "
                      f"stop ({pair[0]['objective']!r} against {pair[1]['objective']!r})", file=sys.stderr)
                return 1
            if not args.json:
                print(f"{'':>16} same objective; CPU with the floor stop / without it: "
                      f"{pair[0]['cpu_s'] / max(pair[1]['cpu_s'], 1e-9):.3f}", flush=True)
    if args.json:
        print(json.dumps({"trigger": args.trigger, "warm": True, "load_average_1min_at_start": load, "rows": rows},
                         indent=1))
    else:
        print(f"warm (one small evo-gp run first, not counted); 1-min load average at start {load:.1f} on "
              f"{os.cpu_count()} cores: wall times are this machine's under that load, CPU times move less")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
