"""Deep queues: every built-in ordering against fifo, and fifo against a heapq loop, in one run.

    python tools/bench/deep_queue.py [--jobs 10000] [--source auto|trace|generator]
                                     [--policies fifo hrrn ...] [--floor] [--json]

The case of issue 14: the first 10,000 real Philly jobs (by submit time) on
50 GPUs, 5 nodes of each Philly node class (5 x 2 GPUs of 12 GB, 5 x 8 GPUs
of 24 GB), heterogeneous placement, best fit, backfill. Offered load is
about 7x the fleet, so the queue holds thousands of jobs for most of the run.
The trace is read from ../shared/traces/philly/pollux_philly.csv when it is
there (``--source auto``, the default); otherwise the ``philly`` generator
forms the same kind of backlog: 10,000 Philly-like jobs at the trace's
offered load (7.0).

Each policy's scenario is loaded and its engine built first (untimed); the
figure is the simulation alone (``Engine.run``), warm (imports, numba, gp's
compiled priority graph and a small run of every policy happen before any
timing), as wall seconds and as the process's CPU seconds (steadier when other
processes share the machine); each ratio is to fifo in the same run. Each
policy's run also reports what it made the engine do: policy calls
(``decide``), starts and preemptions.

``--floor`` splits each policy's time into the engine's share and the
policy's: an untimed run records every decision the policy returns (and every
``quiet_until`` answer), then a fresh engine replays them with no policy work
at all, timed. The replay must give the same start and end for every job. Its
time is the engine's own cost of that policy's events, a floor no change to
the policy can go below (``las``: about 5x fifo's policy calls and starts plus
5 preemptions per job).

The heapq loop is the
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
import gc
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
#: also accepted by --policies (not run by default): the other preemptive policies
EXTRA = ("srtf-preemptive", "srsf-preemptive")

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


def time_policy(path: Path) -> tuple[float, object, float]:
    """Seconds of ``Engine.run`` for one scenario (engine built untimed), the engine, and the
    process CPU seconds of the run (steadier than wall time on a shared machine)."""
    from simsched.runs.single import simulation

    sim = simulation(path)
    t0, c0 = time.perf_counter(), time.process_time()
    sim.engine.run()
    return time.perf_counter() - t0, sim.engine, time.process_time() - c0


class Recorder:
    """Passes every call to the policy and keeps its answers, in order, for :class:`Replay`."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.interval_s = getattr(policy, "interval_s", None)
        self.decisions: list = []
        self.quiets: list[float] = []
        if callable(getattr(policy, "quiet_until", None)):
            self.quiet_until = self._quiet_until

    def decide(self, view):
        decision = self.policy.decide(view)
        self.decisions.append(decision)
        return decision

    def _quiet_until(self, view) -> float:
        quiet = self.policy.quiet_until(view)
        self.quiets.append(quiet)
        return quiet


class Replay:
    """Gives back a :class:`Recorder`'s answers in order: the engine's work without the policy's."""

    def __init__(self, recorder: Recorder) -> None:
        self.interval_s = recorder.interval_s
        self._decisions = iter(recorder.decisions)
        quiets = iter(recorder.quiets)
        if hasattr(recorder, "quiet_until"):
            self.quiet_until = lambda view: next(quiets)

    def decide(self, view):
        return next(self._decisions)


def engine_for(path: Path, wrap):
    """A fresh engine for the scenario whose scheduler is ``wrap(the scenario's policy)``, built
    as :func:`simsched.runs.single.simulation` builds it (an object from outside simsched given to
    ``simulation`` would run behind read-only views, which would add their own cost)."""
    from simsched.core.engine import Engine
    from simsched.runs.single import prepare, simulation
    from simsched.workloads.table import to_job_specs

    sim = simulation(path)
    fleet, table, _ = prepare(sim.scenario)
    return Engine(fleet, to_job_specs(table, fleet.largest_node), wrap(sim.engine.scheduler), sim.engine.config)


def engine_floor(path: Path, timed_engine) -> tuple[float, int]:
    """Seconds of ``Engine.run`` replaying the policy's recorded decisions, and how many
    decisions it replayed; fails unless every job starts and ends as in ``timed_engine``."""
    recorders: list[Recorder] = []

    def record(policy) -> Recorder:
        recorders.append(Recorder(policy))
        return recorders[0]

    recording = engine_for(path, record)
    recording.run()
    check_same(recording, timed_engine, path.stem, "its recorded run")
    del recording
    recorder = recorders[0]
    replaying = engine_for(path, lambda policy: Replay(recorder))
    gc.collect()
    t0 = time.perf_counter()
    replaying.run()
    seconds = time.perf_counter() - t0
    check_same(replaying, timed_engine, path.stem, "the replay of its decisions")
    return seconds, len(recorder.decisions)


def check_same(engine, timed_engine, policy: str, what: str) -> None:
    """Every job's first start and end in ``engine`` as in ``timed_engine`` (NaN = NaN)."""
    for a, b in zip(engine.jobs, timed_engine.jobs):
        for x, y in ((a.first_start, b.first_start), (a.end, b.end)):
            if not (x == y or (x != x and y != y)):
                raise SystemExit(f"deep_queue: {policy}: {what} differs from the timed run at job {a.job_id}")


def event_counts(engine) -> dict[str, int]:
    """What the policy made the engine do: starts and preemptions (from the event log)."""
    counts = {"start": 0, "preempt": 0}
    for _, event, _, _ in engine.events:
        if event in counts:
            counts[event] += 1
    return {"starts": counts["start"], "preemptions": counts["preempt"]}


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
        time_policy(scenario_file(folder, policy, 300, source))  # (gp's 300 jobs stay under compile_after)
    if "gp" in policies:  # gp compiles its priority graph for deep buckets only: compile it now
        from simsched.evo.gp_kernel import compiled_keys
        from simsched.evo.priority import load_priority

        compiled_keys(load_priority("gp-paper"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=10_000)
    p.add_argument("--source", choices=("auto", "trace", "generator"), default="auto")
    p.add_argument("--policies", nargs="+", default=list(POLICIES), choices=POLICIES + EXTRA)
    p.add_argument("--floor", action="store_true",
                   help="also replay each policy's decisions without the policy: the engine's share")
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
        cpu: dict[str, float] = {}
        counts: dict[str, dict[str, int]] = {}
        floor: dict[str, float] = {}
        fifo_engine = None
        for policy in policies:
            path = scenario_file(folder, policy, args.jobs, source)
            seconds[policy], engine, cpu[policy] = time_policy(path)
            counts[policy] = event_counts(engine)
            if policy == "fifo":
                fifo_engine = engine
            if args.floor:
                floor[policy], counts[policy]["policy_calls"] = engine_floor(path, engine)
            if not args.json:
                print(f"  {policy:10s} {seconds[policy]:7.2f} s  ({seconds[policy] / seconds['fifo']:.2f}x fifo)"
                      f"   cpu {cpu[policy]:7.2f} s ({cpu[policy] / cpu['fifo']:.2f}x)   "
                      + ", ".join(f"{v:,} {k.replace('_', ' ')}" for k, v in counts[policy].items()), flush=True)
                if args.floor:
                    print(f"  {'':10s} engine floor {floor[policy]:5.2f} s ({floor[policy] / seconds['fifo']:.2f}x "
                          f"fifo's whole run): the engine replaying these decisions, no policy work", flush=True)
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
        "cpu_seconds": cpu, "cpu_ratio_to_fifo": {k: v / cpu["fifo"] for k, v in cpu.items()},
        "fifo_vs_heapq": seconds["fifo"] / heapq_s,
        "counts": counts,
        "engine_floor_s": floor,
        "engine_floor_ratio_to_fifo": {k: v / seconds["fifo"] for k, v in floor.items()},
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
