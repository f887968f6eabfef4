"""Engine throughput: simsched vs a minimal heapq loop of the same model, in one run.

    python tools/bench/engine.py [--jobs 100000] [--nodes 32] [--load 0.9] [--backfill] [--json]
    python tools/bench/engine.py --jobs 20000 --backfill --reserve easy [--repeat 3]

A seeded workload (1-8 GPU jobs, 8-GPU nodes, Poisson arrivals at the given
offered load) runs through simsched (fifo + best_fit) and through a plain
heapq event loop with the same semantics (completions, then arrivals, then
one FIFO best-fit pass). Both get the workload already in memory in their own
input form; simsched's time includes building the engine (job records,
containers, processes). Both must give the same start times; the script
prints jobs/s of each and their ratio. With ``--reserve easy`` (or conservative) it
also times simsched with that backfill mode against simsched's greedy backfill on the same
workload (warm: after a warm-up run in the same process; no numba code is involved), and
prints each round's CPU-time ratio (issue 21: easy within 2x of greedy).
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
import time

import numpy as np

from simsched.core.engine import Engine, EngineConfig
from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
from simsched.policies import ORDERINGS, PLACEMENTS
from simsched.policies.allocation import Home
from simsched.policies.queue import QueueScheduler


def workload(jobs: int, nodes: int, load: float, seed: int = 7) -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(seed)
    gpus = rng.choice([1, 2, 4, 8], size=jobs, p=[0.4, 0.2, 0.2, 0.2])
    duration = np.maximum(1.0, np.floor(rng.exponential(3600.0, size=jobs)))
    rate = load * nodes * 8 / float(np.mean(gpus) * 3600.0)
    submit = np.floor(np.cumsum(rng.exponential(1.0 / rate, size=jobs)))
    return [(float(s), float(d), int(g)) for s, d, g in zip(submit, duration, gpus)]


def job_specs(rows) -> list[JobSpec]:
    """The workload in simsched's input form (built before timing, like the heapq loop's tuples)."""
    return [JobSpec(str(i), s, d, float(g), 1) for i, (s, d, g) in enumerate(rows)]


def run_simsched(specs: list[JobSpec], nodes: int, backfill: bool, reserve: str = "none",
                 reserve_depth: int = 1) -> list[float]:
    """Engine construction (job records, SimPy processes) and the run, fifo + best_fit."""
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(nodes, 8, "V100"),)),), builtin_gpu_types())
    scheduler = QueueScheduler(ORDERINGS["fifo"], PLACEMENTS["best_fit"](), Home(), backfill, reserve=reserve,
                               reserve_depth=reserve_depth)
    engine = Engine(fleet, specs, scheduler, EngineConfig())
    engine.run()
    return engine.jobs.first_start.tolist()  # the store's column: no record rebuilt per job (timed)


def run_heapq(rows, nodes: int, backfill: bool) -> list[float]:
    """The same model in a bare event loop: integer GPUs, one FIFO best-fit pass per timestamp."""
    free = [8] * nodes
    start = [float("nan")] * len(rows)
    events: list[tuple[float, int, int, int]] = []  # (time, kind 0=finish 1=arrive, job, node)
    for i, (s, _, _) in enumerate(rows):
        events.append((s, 1, i, -1))
    heapq.heapify(events)
    queue: list[int] = []
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, i, node = heapq.heappop(events)
            if kind == 0:
                free[node] += rows[i][2]
            else:
                queue.append(i)
        kept = []
        blocked = False
        for i in queue:
            g = rows[i][2]
            best, best_free = -1, 99
            if not blocked:
                for n in range(nodes):
                    f = free[n]
                    if g <= f < best_free:
                        best, best_free = n, f
            if best < 0:
                kept.append(i)
                blocked = not backfill
                continue
            free[best] -= g
            start[i] = now
            heapq.heappush(events, (now + rows[i][1], 0, i, best))
        queue = kept
    return start


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--nodes", type=int, default=32)
    p.add_argument("--load", type=float, default=0.9)
    p.add_argument("--backfill", action="store_true", help="backfill instead of strict FIFO")
    p.add_argument("--reserve", choices=("easy", "conservative"),
                   help="also time simsched with this backfill mode (reservations) on the same workload, "
                        "against simsched's greedy backfill and the heapq loop (start times differ by design)")
    p.add_argument("--reserve-depth", type=int, default=1, help="with --reserve easy: reservations per walk")
    p.add_argument("--repeat", type=int, default=1,
                   help="with --reserve: rounds of greedy then the reservation mode, interleaved (default 1)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    if args.reserve:
        return reserve_ratio(args)
    rows = workload(args.jobs, args.nodes, args.load)
    specs = job_specs(rows)
    t0 = time.perf_counter()
    ours = run_simsched(specs, args.nodes, args.backfill)
    t1 = time.perf_counter()
    base = run_heapq(rows, args.nodes, args.backfill)
    t2 = time.perf_counter()
    if ours != base:
        first = next(i for i, (a, b) in enumerate(zip(ours, base)) if a != b)
        print(f"MISMATCH at job {first}: simsched {ours[first]} vs heapq {base[first]}", file=sys.stderr)
        return 1
    result = {
        "jobs": args.jobs,
        "simsched_jobs_per_s": args.jobs / (t1 - t0),
        "heapq_jobs_per_s": args.jobs / (t2 - t1),
        "slowdown_vs_heapq": (t1 - t0) / (t2 - t1),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"simsched: {result['simsched_jobs_per_s']:,.0f} jobs/s   heapq loop: "
              f"{result['heapq_jobs_per_s']:,.0f} jobs/s   simsched is {result['slowdown_vs_heapq']:.1f}x slower "
              f"(same start times for all {args.jobs:,} jobs)")
    return 0


def reserve_ratio(args) -> int:
    """Warm-up run first (imports, caches), then greedy simsched and the reservation mode, ``--repeat``
    rounds interleaved, and the heapq loop once, on one workload. Figures are warm, of this one
    process: wall and CPU time (process_time) per round; the ratio is of each round's CPU times."""
    rows = workload(args.jobs, args.nodes, args.load)
    specs = job_specs(rows)
    run_simsched(job_specs(rows[:2000]), args.nodes, True, args.reserve, args.reserve_depth)  # warm-up
    rounds = []
    for _ in range(args.repeat):
        wall0, cpu0 = time.perf_counter(), time.process_time()
        greedy = run_simsched(specs, args.nodes, True)
        wall1, cpu1 = time.perf_counter(), time.process_time()
        reserved = run_simsched(specs, args.nodes, True, args.reserve, args.reserve_depth)
        wall2, cpu2 = time.perf_counter(), time.process_time()
        rounds.append({"greedy_s": wall1 - wall0, "reserve_s": wall2 - wall1,
                       "greedy_cpu_s": cpu1 - cpu0, "reserve_cpu_s": cpu2 - cpu1,
                       "reserve_vs_greedy_cpu": (cpu2 - cpu1) / (cpu1 - cpu0)})
    t2 = time.perf_counter()
    base = run_heapq(rows, args.nodes, True)
    t3 = time.perf_counter()
    if greedy != base:
        print("MISMATCH: greedy simsched and the heapq loop disagree", file=sys.stderr)
        return 1
    waits = np.array(reserved) - np.array([r[0] for r in rows])
    greedy_waits = np.array(greedy) - np.array([r[0] for r in rows])
    best = min(rounds, key=lambda r: r["reserve_cpu_s"])
    best_greedy = min(r["greedy_cpu_s"] for r in rounds)
    result = {"jobs": args.jobs, "mode": args.reserve, "reserve_depth": args.reserve_depth, "warm": True, "rounds": rounds, "heapq_s": t3 - t2,
              "reserve_vs_greedy_cpu_best": best["reserve_cpu_s"] / best_greedy,
              "reserve_vs_heapq": best["reserve_s"] / (t3 - t2),
              "max_wait_greedy_s": float(greedy_waits.max()), "max_wait_reserve_s": float(waits.max())}
    if args.json:
        print(json.dumps(result))
    else:
        for i, r in enumerate(rounds, 1):
            print(f"warm, round {i}: greedy {r['greedy_s']:.2f} s wall / {r['greedy_cpu_s']:.2f} s CPU, "
                  f"{args.reserve} {r['reserve_s']:.2f} s wall / {r['reserve_cpu_s']:.2f} s CPU: "
                  f"{r['reserve_vs_greedy_cpu']:.2f}x greedy (CPU)")
        print(f"best of {len(rounds)} CPU: {args.reserve} {result['reserve_vs_greedy_cpu_best']:.2f}x greedy; "
              f"{result['reserve_vs_heapq']:.2f}x the heapq loop's {result['heapq_s']:.2f} s (wall); "
              f"max wait {result['max_wait_greedy_s']:,.0f} s greedy, {result['max_wait_reserve_s']:,.0f} s "
              f"{args.reserve}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
