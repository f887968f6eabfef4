"""Cost of the owner holds (``quota = "borrow"``, ``reclaim = "wait"``; issue 36), in one process.

    python tools/bench/owner_holds.py [--scenario scenarios/course/philly_vc.toml] [--jobs 4000]
                                      [--policy fifo] [--repeat 3] [--json]

Three runs of the same scenario and seed, built and run once untimed first
(warm), then ``--repeat`` times interleaved, best CPU time (time.process_time)
per case:

* ``wait``: ``borrow`` + ``wait``, as shipped: every decision that may borrow
  computes the holds (:meth:`QuotaScheduler.owner_holds`);
* ``wait-noholds``: the same with the holds switched off in this process
  (``owner_holds`` returns None: the behaviour before issue 36, when GPUs freed
  by borrowed work went to whoever came first);
* ``preempt``: ``borrow`` + ``preempt`` (no holds; the reclaim step instead).

The runs schedule differently (the holds change who starts when), so the
figure compared is CPU per event of the loop (arrivals, starts, preemptions,
finishes); ``ratio`` is ``wait``'s CPU per event over the other case's. The
``wait`` run also reports the CPU spent inside ``owner_holds`` itself and how
many times it was called, which is the holds' own cost whatever the events.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CASES = ("wait", "wait-noholds", "preempt")


@contextmanager
def holds(case: str, clock: dict):
    """Time ``owner_holds`` (``clock``: seconds, calls), or switch it off for ``wait-noholds``."""
    from simsched.policies.quota import QuotaScheduler

    shipped = QuotaScheduler.owner_holds

    def timed(self, *args):
        started = time.process_time()
        try:
            return shipped(self, *args)
        finally:
            clock["s"] += time.process_time() - started
            clock["calls"] += 1

    QuotaScheduler.owner_holds = (lambda self, *args: None) if case == "wait-noholds" else timed
    try:
        yield
    finally:
        QuotaScheduler.owner_holds = shipped


def timed_run(scenario_path: Path, case: str, jobs: int, policy: str) -> dict:
    from simsched.config.scenario import load_scenario
    from simsched.runs.single import simulation

    reclaim = "preempt" if case == "preempt" else "wait"
    scenario = load_scenario(scenario_path).with_scheduler_keys(
        {"policy": policy, "quota": "borrow", "reclaim": reclaim}, "bench")
    ready = simulation(scenario, jobs=jobs)
    clock = {"s": 0.0, "calls": 0}
    with holds(case, clock):
        started = time.process_time()
        ready.engine.run()
        loop_s = time.process_time() - started
    return {"loop_s": loop_s, "events": len(ready.engine.events), "holds_s": clock["s"],
            "holds_calls": clock["calls"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "course" / "philly_vc.toml")
    parser.add_argument("--jobs", type=int, default=4000)
    parser.add_argument("--policy", default="fifo")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    for case in CASES:  # warm-up: imports, the workload's parse, caches
        timed_run(args.scenario, case, args.jobs, args.policy)
    runs: dict[str, list[dict]] = {case: [] for case in CASES}
    for _ in range(args.repeat):
        for case in CASES:
            runs[case].append(timed_run(args.scenario, case, args.jobs, args.policy))
    best = {case: min(rows, key=lambda r: r["loop_s"]) for case, rows in runs.items()}
    per_event = {case: row["loop_s"] / row["events"] for case, row in best.items()}
    report = {"scenario": str(args.scenario), "jobs": args.jobs, "policy": args.policy, "repeat": args.repeat,
              "cases": {case: {**best[case], "cpu_per_event_us": 1e6 * per_event[case],
                               "wait_ratio": per_event["wait"] / per_event[case]} for case in CASES},
              "holds_share_of_loop": best["wait"]["holds_s"] / best["wait"]["loop_s"]}
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{args.scenario.name}, {args.jobs:,} jobs, {args.policy}, quota = borrow; warm, best of {args.repeat}")
    print(f"{'case':13} {'events':>8} {'loop cpu s':>10} {'us/event':>9} {'wait / this':>11} "
          f"{'holds cpu s':>11} {'holds calls':>11}")
    for case in CASES:
        row = report["cases"][case]
        print(f"{case:13} {row['events']:>8,} {row['loop_s']:>10.3f} {row['cpu_per_event_us']:>9.1f} "
              f"{row['wait_ratio']:>11.2f} {row['holds_s']:>11.3f} {row['holds_calls']:>11,}")
    print(f"owner_holds: {100 * report['holds_share_of_loop']:.1f} % of the wait run's loop CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
