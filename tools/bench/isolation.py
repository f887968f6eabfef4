"""What the watched child costs (issue 37): the assignment's compare with the user policy's runs in
a forked child (as shipped) against the same runs in-process, in one process, warm.

    python tools/bench/isolation.py [--repeat 7] [--seeds 3] [--json]

It times, alternating the two modes so a load change hits both alike:

- the whole comparison of docs/examples/compare_mine.toml (fifo, sjf, hrrn, my_policy.py:MyPolicy;
  ``--seeds`` seeds; ``workers=1``), watched and in-process (``simsched.runs.compare.ISOLATION``
  set to False): the ratio is what a student or a teacher waits more;
- one run of the user policy alone, watched and in-process, and their difference (the cost per run);
- ``run_watched`` of a function that does nothing: the fixed cost of a child (fork, pipe, board, exit).

Each figure is the median of ``--repeat`` timings after one untimed warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from simsched.runs import compare
from simsched.runs.isolated import Limits, run_watched

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "docs" / "examples" / "compare_mine.toml"
SCHEDULERS = ["fifo", "sjf", "hrrn", "my_policy.py:MyPolicy"]


def _nothing() -> None:
    return None


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    spec = compare.compare_spec(SCENARIO, schedulers=SCHEDULERS, seeds=args.seeds)
    user_task = next(t for t in compare.plan(spec) if t.scheduler.endswith(":MyPolicy"))
    limits = Limits(memory_bytes=None)

    def whole(watched: bool) -> float:
        compare.ISOLATION = watched
        try:
            return timed(lambda: compare.run_compare(spec, workers=1))
        finally:
            compare.ISOLATION = True

    def one(watched: bool) -> float:
        compare.ISOLATION = watched
        try:
            return timed(lambda: compare.run_task_guarded(user_task, limits=limits))
        finally:
            compare.ISOLATION = True

    timings: dict[str, list[float]] = {k: [] for k in ("compare watched", "compare in-process", "run watched",
                                                       "run in-process", "empty child")}
    whole(True), whole(False), one(True), one(False), run_watched(_nothing, (), who="bench")  # warm-up
    for _ in range(args.repeat):
        timings["compare watched"].append(whole(True))
        timings["compare in-process"].append(whole(False))
        timings["run watched"].append(one(True))
        timings["run in-process"].append(one(False))
        timings["empty child"].append(timed(lambda: run_watched(_nothing, (), who="bench")))
    median = {k: statistics.median(v) for k, v in timings.items()}
    out = {**{k: round(v, 4) for k, v in median.items()},
           "compare ratio": round(median["compare watched"] / median["compare in-process"], 3),
           "per-run cost s": round(median["run watched"] - median["run in-process"], 4),
           "runs": len(compare.plan(spec)), "user runs": args.seeds, "repeat": args.repeat}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            print(f"{key:>20}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
