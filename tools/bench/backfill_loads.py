"""Backfill modes against the offered load: CPU of the main scenario at several loads, in one run.

    python tools/bench/backfill_loads.py [--loads 0.7 0.8 0.9] [--modes greedy easy conservative]
                                         [--scenario scenarios/philly_hetero.toml] [--timeout 1800] [--json]
                                         [--baseline OTHER_CHECKOUT]

Each (load, mode) is a whole ``python -m simsched SCENARIO --quiet`` process with
``--set workload.load=LOAD`` and ``--set scheduler.backfill=MODE`` (greedy: ``true``), run
in turn, interleaved by load. The figure is the child's CPU time (user + system, from
``os.wait4``), imports included; a run still going after ``--timeout`` wall seconds is stopped
and printed as such (issue 35: conservative at load 0.9 did not finish in 37 minutes). Each line
also gives the ratio to greedy's CPU at the same load. One cold pass: the first run pays the
OS file cache, so the loads come in the order given and greedy first at each.

With ``--baseline`` (another checkout of simsched, e.g. ``git worktree add /tmp/main main``)
each (load, mode) also runs on that checkout's package, right after this one's, and each line
gives this one's CPU time against it: a before/after in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BACKFILL = {"greedy": "true", "easy": '"easy"', "conservative": '"conservative"'}


def run(scenario: str, load: float, mode: str, timeout: float, tree: Path = REPO) -> dict:
    """One whole process on the package of ``tree``; its CPU seconds, or None (with the wall seconds)
    when stopped at ``timeout``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    args = [sys.executable, "-m", "simsched", scenario, "--quiet", "--set", f"workload.load={load}",
            "--set", f"scheduler.backfill={BACKFILL[mode]}"]
    started = time.perf_counter()
    # (started in ``tree``: ``python -m`` puts the working directory first on the path, before PYTHONPATH)
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tree)
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        wall = time.perf_counter() - started
        if pid:
            cpu = usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            if code != 0:
                raise SystemExit(f"{' '.join(args)} exited {code}: {child.stderr.read().decode()[-2000:]}")
            return {"load": load, "mode": mode, "cpu_s": cpu, "wall_s": wall, "finished": True}
        if wall > timeout:
            child.send_signal(signal.SIGTERM)
            pid, status, usage = os.wait4(child.pid, 0)
            return {"load": load, "mode": mode, "cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall,
                    "finished": False}
        time.sleep(0.05)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scenario", default="scenarios/philly_hetero.toml")
    p.add_argument("--loads", type=float, nargs="+", default=[0.7, 0.8, 0.9])
    p.add_argument("--modes", nargs="+", choices=sorted(BACKFILL), default=["greedy", "easy", "conservative"])
    p.add_argument("--timeout", type=float, default=1800.0, help="wall seconds before a run is stopped")
    p.add_argument("--json", action="store_true")
    p.add_argument("--baseline", type=Path, help="another checkout of simsched to run each case on as well")
    args = p.parse_args()
    if args.baseline is not None and not (args.baseline / "simsched" / "__init__.py").is_file():
        p.error(f"--baseline {args.baseline}: not a checkout of simsched (no simsched/__init__.py there)")
    scenario = str(Path(args.scenario).resolve())  # (each run starts in its own checkout: one scenario file)
    trees = [("this", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline is not None else [])
    rows = []
    for load in args.loads:
        greedy: dict[str, float] = {}
        for mode in args.modes:
            mine = None
            for label, tree in trees:
                row = run(scenario, load, mode, args.timeout, tree)
                row["tree"] = label
                if mode == "greedy" and row["finished"]:
                    greedy[label] = row["cpu_s"]
                base = greedy.get(label)
                row["vs_greedy"] = row["cpu_s"] / base if base and row["finished"] else None
                if label == "this":
                    mine = row
                elif mine is not None and mine["finished"]:
                    # (a baseline stopped at the cap: this one took at most this share of its CPU time)
                    mine["vs_baseline"] = mine["cpu_s"] / row["cpu_s"]
                    mine["baseline_finished"] = row["finished"]
                rows.append(row)
                if not args.json:
                    ratio = f"{row['vs_greedy']:.2f}x greedy" if row["vs_greedy"] else ""
                    state = "" if row["finished"] else f"  STOPPED after {row['wall_s']:.0f} s wall (not finished)"
                    name = f"{mode} ({label})" if len(trees) > 1 else mode
                    print(f"load {load:.2f}  {name:25s} {row['cpu_s']:8.2f} CPU-s  {row['wall_s']:8.2f} s wall  "
                          f"{ratio}{state}", flush=True)
            if not args.json and mine is not None and "vs_baseline" in mine:
                bound = "" if mine["baseline_finished"] else " at most (the baseline did not finish)"
                print(f"load {load:.2f}  {mode}: this checkout {mine['vs_baseline']:.3f}x the baseline's CPU{bound}",
                      flush=True)
    load_average = os.getloadavg()
    if args.json:
        print(json.dumps({"scenario": args.scenario, "warm": False, "load_average": load_average, "runs": rows}))
    else:
        print(f"(whole processes, imports included; load average {load_average[0]:.2f} at the end)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
