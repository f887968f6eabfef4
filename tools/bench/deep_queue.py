"""Deep queues: every built-in ordering against fifo, and fifo against a heapq loop, in one run.

    python tools/bench/deep_queue.py [--jobs 10000] [--source auto|trace|generator]
                                     [--policies fifo hrrn ...] [--json]

The case of issue 14: the first 10,000 real Philly jobs (by submit time) on
50 GPUs, 5 nodes of each Philly node class (5 x 2 GPUs of 12 GB, 5 x 8 GPUs
of 24 GB), heterogeneous placement, best fit, backfill. Offered load is
about 7x the fleet, so the queue holds thousands of jobs for most of the run.
The trace is read from ../shared/traces/philly/pollux_philly.csv when it is
there (``--source auto``, the default); otherwise the ``philly`` generator
forms the same kind of backlog: 10,000 Philly-like jobs at the trace's
offered load (7.0).

Each policy's scenario is loaded and its engine built first (untimed); the
figure is the simulation alone (``Engine.run``), warm (imports, numba and a
small run of every policy happen before any timing). The heapq loop is the
same model (completions, then arrivals, then one best-fit backfill pass over
the FIFO queue per timestamp; each job on the fastest GPU type that fits,
milli-GPU shares) with the two tricks any hand-written loop would use on a
deep queue: a shape that failed in a pass is not tried again, and the pass
stops once every kind of queued job has failed. Its inputs are built before
timing, and its start times must equal simsched's fifo run, or the script
fails.
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TRACE = REPO.parent / "shared" / "traces" / "philly" / "pollux_philly.csv"
#: offered load sum(g d) / (50 GPUs x span) of the trace's first 10,000 jobs
TRACE_LOAD = 7.0
POLICIES = ("fifo", "sjf", "hrrn", "edf", "sufferage", "lyra", "las", "srsf", "gp")

SCENARIO = """\
name = "deep_queue"
seed = 1

[[cluster]]
name = "philly"
nodes = [{{ count = 5, gpus = 2, gpu_type = "2x12" }}, {{ count = 5, gpus = 8, gpu_type = "8x24" }}]

[workload]
{workload}
jobs_limit = {jobs}
reference_gpu_type = "8x24"
synthesize_deadline = true
synthesize_weight = true

[scheduler]
policy = "{policy}"
placement = "best_fit"
backfill = true
heterogeneous = true
"""


def scenario_file(folder: Path, policy: str, jobs: int, source: str) -> Path:
    if source == "trace":
        workload = f'source = "philly"\npath = "{TRACE}"'
    else:
        workload = f'source = "synthetic"\ngenerator = "philly"\njobs = {jobs}\nload = {TRACE_LOAD}\nvcs = 11'
    path = folder / f"{policy}.toml"
    path.write_text(SCENARIO.format(workload=workload, jobs=jobs, policy=policy))
    return path


def time_policy(path: Path) -> tuple[float, object]:
    """Seconds of ``Engine.run`` for one scenario (engine built untimed), and the engine."""
    from simsched.api import simulation

    sim = simulation(path)
    t0 = time.perf_counter()
    sim.engine.run()
    return time.perf_counter() - t0, sim.engine


def heapq_inputs(engine) -> tuple[list, dict]:
    """Each job as (submit, index, work, workers, signature, options) and the node groups."""
    signatures: dict[tuple, int] = {}
    rows = []
    for job in engine.jobs:
        options = tuple((o.cluster, o.gpu_type, o.per_worker, o.speed) for o in job.options)
        signature = signatures.setdefault((options, job.workers), len(signatures))
        rows.append((job.submit, job.index, job.duration, job.workers, signature, options))
    groups = {key: list(nodes) for key, nodes in engine.fleet_state.groups.items()}
    return rows, groups


def run_heapq(rows: list, groups: dict, capacity: list[int]) -> list[float]:
    """The same model as a bare event loop (see the module docstring); start time per job."""
    free = list(capacity)
    start = [float("nan")] * len(rows)
    events: list[tuple] = []  # (time, kind 0=finish 1=arrive, job, nodes, share)
    for s, i, *_ in rows:
        events.append((s, 1, i, (), 0))
    heapq.heapify(events)
    queue: list[int] = []  # FIFO: arrivals come in (submit, index) order
    counts: dict[int, int] = {}  # queued jobs per signature
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, kind, i, nodes, share = heapq.heappop(events)
            if kind == 0:
                for n in nodes:
                    free[n] += share
            elif rows[i][5]:
                queue.append(i)
                sig = rows[i][4]
                counts[sig] = counts.get(sig, 0) + 1
        failed_shapes: set = set()
        failed_sigs: set = set()
        started: list[int] = []
        for pos, i in enumerate(queue):
            if len(failed_sigs) == len(counts):
                break
            _, _, work, workers, sig, options = rows[i]
            if sig in failed_sigs:
                continue
            for option in options:
                shape = (option, workers)
                if shape in failed_shapes:
                    continue
                share = option[2]
                taken = []
                group = groups[option[0], option[1]]
                for _ in range(workers):  # best fit, one worker at a time
                    best, best_free = -1, 1 << 62
                    for n in group:
                        f = free[n]
                        if share <= f < best_free:
                            best, best_free = n, f
                    if best < 0:
                        break
                    free[best] -= share
                    taken.append(best)
                if len(taken) == workers:
                    start[i] = now
                    heapq.heappush(events, (now + (0.0 + work / option[3]), 0, i, tuple(taken), share))
                    started.append(pos)
                    left = counts[sig] - 1
                    if left:
                        counts[sig] = left
                    else:
                        del counts[sig]
                    break
                for n in taken:
                    free[n] += share
                failed_shapes.add(shape)
            else:
                failed_sigs.add(sig)
        for pos in reversed(started):
            del queue[pos]
    return start


def warm_up(folder: Path, policies: list[str], source: str) -> None:
    """Imports, numba compilation (also gp's compiled priority graph) and a small run of every
    policy, before anything is timed."""
    for policy in policies:
        time_policy(scenario_file(folder, policy, 300, source))
    if "gp" in policies:  # gp compiles its priority graph for deep buckets only: compile it now
        from simsched.evo.gp_kernel import compiled_keys
        from simsched.evo.priority import load_priority

        compiled_keys(load_priority("gp-paper"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--source", choices=("auto", "trace", "generator"), default="auto")
    p.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    source = args.source
    if source == "auto":
        source = "trace" if TRACE.is_file() else "generator"
    if source == "trace" and not TRACE.is_file():
        print(f"deep_queue: trace {TRACE} not found; use --source generator", file=sys.stderr)
        return 2
    policies = ["fifo", *[q for q in args.policies if q != "fifo"]]
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm_up(folder, policies, source)
        seconds: dict[str, float] = {}
        fifo_engine = None
        for policy in policies:
            seconds[policy], engine = time_policy(scenario_file(folder, policy, args.jobs, source))
            if policy == "fifo":
                fifo_engine = engine
            if not args.json:
                print(f"  {policy:10s} {seconds[policy]:7.2f} s  ({seconds[policy] / seconds['fifo']:.2f}x fifo)",
                      flush=True)
    rows, groups = heapq_inputs(fifo_engine)
    t0 = time.perf_counter()
    base = run_heapq(rows, groups, list(fifo_engine.fleet_state.node_capacity))
    heapq_s = time.perf_counter() - t0
    ours = [job.first_start for job in fifo_engine.jobs]
    same = [a for a, b in zip(ours, base) if not (a == b or (a != a and b != b))]
    if same:
        first = next(i for i, (a, b) in enumerate(zip(ours, base)) if not (a == b or (a != a and b != b)))
        print(f"MISMATCH at job {first}: simsched {ours[first]} vs heapq {base[first]}", file=sys.stderr)
        return 1
    result = {
        "jobs": args.jobs, "source": source, "warm": True, "extrapolated": False,
        "load_average": list(load), "seconds": seconds, "heapq_s": heapq_s,
        "ratio_to_fifo": {k: v / seconds["fifo"] for k, v in seconds.items()},
        "fifo_vs_heapq": seconds["fifo"] / heapq_s,
        "max_queue": max_queue(fifo_engine),
    }
    if args.json:
        print(json.dumps(result))
    else:
        print(f"  heapq loop {heapq_s:7.2f} s  (fifo is {result['fifo_vs_heapq']:.2f}x the heapq loop; "
              f"same start times for all {len(ours):,} jobs)")
        print(f"  {args.jobs:,} jobs from the {source}, deepest fifo queue {result['max_queue']:,} jobs, "
              f"warm; load average {load[0]:.1f}")
    return 0


def max_queue(engine) -> int:
    """The longest fifo queue, from the event log."""
    depth = deepest = 0
    for _, event, _, _ in engine.events:
        if event == "arrive":
            depth += 1
        elif event in ("start", "unscheduled"):
            depth -= 1
        deepest = max(deepest, depth)
    return deepest


if __name__ == "__main__":
    raise SystemExit(main())
