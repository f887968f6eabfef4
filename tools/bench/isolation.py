"""What the watched child costs (issue 37): the assignment's compare with the user policy's runs in
a forked child (as shipped) against the same runs in-process, in one process, warm.

    python tools/bench/isolation.py [--repeat 7] [--seeds 3] [--json]

It times, alternating the two modes so a load change hits both alike:

- ``compare``: the assignment's compare as ``python -m simsched compare compare_mine.toml
  --workers 1`` does it -- the up-front check that loads every policy, then every run -- of
  docs/examples/compare_mine.toml (fifo, sjf, hrrn, my_policy.py:MyPolicy; ``--seeds`` seeds),
  watched and in-process (``simsched.runs.compare.ISOLATION`` set to False): the ratio is what a
  student or a teacher waits more. The policy's check and runs share one kept child;
- ``runs``: the runs alone (:func:`run_compare` of a spec made beforehand);
- one run of the user policy alone in a fresh child and in-process, and their difference (the
  fixed cost of a child of its own: fork, its first touch of the memory it shares, its exit);
- ``run_watched`` of a function that does nothing: the bare cost of a child (fork, pipe, board, exit);
- ``command``: the whole command a student types, ``python -m simsched compare compare_mine.toml
  --workers 1`` (its tables to /dev/null), as a fresh process each time: once as shipped and once with
  ``ISOLATION`` set to False before the CLI runs (the same process otherwise); wall and CPU time
  (``os.wait4``) of the process and the children it reaps (it reaps the killed kept child before it
  exits, so that child's CPU time is counted), medians: what the child adds to the wait a student or a teacher sees,
  interpreter start, imports and printing included;
- the page faults of the two compares (this process and its children, ``resource.getrusage``
  minflt), and the CPU cost of one copy-on-write fault on this machine (a child writing one byte in
  each of 4,096 pages it shares with this process, less the same writes without a fork): with fork's
  own cost (the empty child), what the watched compare's extra CPU time is made of;
- the size of a run's result as its child sends it (simsched.runs.messages), in bytes per job, for a
  ``--size-jobs`` run (default 20,000) of tests/data/class37/class.toml: what the message limit
  (``messages.MAX_MESSAGE_BYTES``) must allow for a run of a million jobs.

Each figure is the median of ``--repeat`` timings after one untimed warm-up (wall time), with the
CPU time of this process and its children for the two compares (load-independent where the wall
time is not); the machine's load average is printed before and after.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import sys
import time
from pathlib import Path

import simsched
from simsched.runs import compare, messages
from simsched.runs.isolated import Limits, run_watched

sys.path.insert(0, str(Path(__file__).resolve().parent))
from e2e import timed as e2e_timed  # noqa: E402  (beside this file: a whole process's CPU time)

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "docs" / "examples" / "compare_mine.toml"
SCHEDULERS = ["fifo", "sjf", "hrrn", "my_policy.py:MyPolicy"]
SIZE_SCENARIO = REPO / "tests" / "data" / "class37" / "class.toml"


def _nothing() -> None:
    return None


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _faults() -> tuple[int, int]:
    """Minor page faults so far: (this process, its reaped children)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt


def cow_fault_us(pages: int = 4096) -> float:
    """CPU microseconds of one copy-on-write fault: a forked child writes a byte in each of ``pages``
    pages it shares with this process; the same writes without a fork are subtracted."""
    page = os.sysconf("SC_PAGE_SIZE")
    buffer = bytearray(pages * page)

    def touch() -> float:
        start = time.process_time()
        for offset in range(0, len(buffer), page):
            buffer[offset] = 1
        return time.process_time() - start

    touch()
    plain = min(touch() for _ in range(3))
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its writes copy each page once
        os.write(writer, f"{touch():.9f}".encode())
        os._exit(0)
    os.close(writer)
    with os.fdopen(reader) as fh:
        forked = float(fh.read())
    os.waitpid(pid, 0)
    return (forked - plain) / pages * 1e6


def _reap() -> None:
    """Wait for every child to end, so its CPU time is counted (a kept child is killed, not awaited)."""
    for child in multiprocessing.active_children():
        child.join()


def timed(fn, faults: list[tuple[int, int]] | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of ``fn()``; the CPU time includes the children it started. ``faults``
    gets the (this process, children) minor page faults of the call appended."""
    cpu, before, t0 = _cpu(), _faults(), time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    _reap()
    if faults is not None:
        faults.append(tuple(b - a for a, b in zip(before, _faults())))
    return wall, _cpu() - cpu


#: the command line under a switch, as ``python -m simsched`` runs it (its entry, which freezes the
#: loaded libraries' objects out of the collector), then the killed kept child is reaped so that its
#: CPU time is the process's: ``python -c COMMAND WATCHED SCENARIO SEEDS``
COMMAND = """
import os, sys
from simsched.runs import compare
compare.ISOLATION = sys.argv[1] == "watched"
sys.argv = ["simsched", "compare", sys.argv[2], "--workers", "1", "--seeds", sys.argv[3]]
from simsched.cli.console import entry
try:
    entry()
except SystemExit as end:
    code = end.code
while True:
    try:
        os.waitpid(-1, 0)
    except ChildProcessError:
        break
sys.exit(code)
"""


def command_time(watched: bool, seeds: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole ``simsched compare`` process of the assignment's scenario
    (e2e.py's ``timed``: it stops the bench if the process fails)."""
    t0 = time.perf_counter()
    cpu, _ = e2e_timed([sys.executable, "-c", COMMAND, "watched" if watched else "in-process", str(SCENARIO),
                        str(seeds)])
    return time.perf_counter() - t0, cpu


def result_bytes_per_job(jobs: int) -> int:
    """Bytes per job of a run's result as a child sends it (a fifo run, in-process: a built-in, encoded)."""
    result = simsched.run(SIZE_SCENARIO, scheduler="fifo", overrides={"workload.jobs": jobs})
    return round(len(messages.dumps(("ok", result))) / jobs)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--size-jobs", type=int, default=20_000)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    spec = compare.compare_spec(SCENARIO, schedulers=SCHEDULERS, seeds=args.seeds)
    user_task = next(t for t in compare.plan(spec) if t.scheduler.endswith(":MyPolicy"))
    limits = Limits(memory_bytes=None)

    def in_mode(watched: bool, fn, faults: list[tuple[int, int]] | None = None) -> tuple[float, float]:
        compare.ISOLATION = watched
        try:
            return timed(fn, faults)
        finally:
            compare.ISOLATION = True

    def whole() -> None:
        compare.run_compare(compare.compare_spec(SCENARIO, schedulers=SCHEDULERS, seeds=args.seeds), workers=1)

    cases = {"compare": whole, "runs": lambda: compare.run_compare(spec, workers=1),
             "run": lambda: compare.run_task_guarded(user_task, limits=limits)}
    load_before = os.getloadavg()
    wall: dict[str, list[float]] = {}
    cpu: dict[str, list[float]] = {}
    faults: dict[str, list[tuple[int, int]]] = {}
    for fn in cases.values():  # warm-up
        in_mode(True, fn), in_mode(False, fn)
    timed(lambda: run_watched(_nothing, (), who="bench"))
    for _ in range(args.repeat):
        for name, fn in cases.items():
            for watched in (True, False):
                key = f"{name} {'watched' if watched else 'in-process'}"
                w, c = in_mode(watched, fn, faults.setdefault(key, []))
                wall.setdefault(key, []).append(w)
                cpu.setdefault(key, []).append(c)
        w, _ = timed(lambda: run_watched(_nothing, (), who="bench"))
        wall.setdefault("empty child", []).append(w)
    command_time(True, args.seeds), command_time(False, args.seeds)  # warm-up (the OS file cache)
    for _ in range(args.repeat):
        for watched in (True, False):
            w, c = command_time(watched, args.seeds)
            key = f"command {'watched' if watched else 'in-process'}"
            wall.setdefault(key, []).append(w)
            cpu.setdefault(key, []).append(c)
    median = {k: statistics.median(v) for k, v in wall.items()}
    cpu_median = {k: statistics.median(cpu[k]) for k in
                  ("compare watched", "compare in-process", "command watched", "command in-process")}
    out = {**{f"{k} s": round(v, 4) for k, v in median.items()},
           "compare ratio": round(median["compare watched"] / median["compare in-process"], 3),
           "runs ratio": round(median["runs watched"] / median["runs in-process"], 3),
           "compare CPU ratio": round(cpu_median["compare watched"] / cpu_median["compare in-process"], 3),
           "command ratio": round(median["command watched"] / median["command in-process"], 3),
           "command CPU ratio": round(cpu_median["command watched"] / cpu_median["command in-process"], 3),
           **{f"{k} CPU s": round(v, 4) for k, v in cpu_median.items()},
           "per-run cost of a fresh child s": round(median["run watched"] - median["run in-process"], 4),
           **{f"{k} faults (self, children)": tuple(round(statistics.median(f[i] for f in faults[k]))
                                                    for i in (0, 1))
              for k in ("compare watched", "compare in-process")},
           "copy-on-write fault us": round(cow_fault_us(), 2),
           "result bytes per job": result_bytes_per_job(args.size_jobs),
           "runs": len(compare.plan(spec)), "user runs": args.seeds, "repeat": args.repeat,
           "timings": "warm, medians, both modes alternated in one process (command: whole processes, "
                      "warm in the OS file cache)",
           "load before": " ".join(f"{x:.2f}" for x in load_before),
           "load after": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            print(f"{key:>32}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
