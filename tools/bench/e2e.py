"""The speed a user sees: the whole ``python -m simsched`` process against a bare event loop.

    python tools/bench/e2e.py [--jobs 100000] [--repeat 5] [--load 0.85] [--seed 7] [--json]

It writes a synthetic job CSV (tools/bench/engine.py's workload: 1/2/4/8-GPU jobs,
exponential durations, Poisson arrivals at the offered load, seeded) and a scenario on
one cluster of 32 nodes x 8 GPUs with fifo, first fit and strict order (``backfill =
false``), then times, interleaved, ``--repeat`` rounds of four whole processes:

- ``python -m simsched SCENARIO --quiet`` (no output files);
- the same with ``--out DIR`` (CSV files), and with ``--out DIR --format parquet``;
- tools/bench/e2e_simpy_floor.py, the smallest SimPy process-based program of the same
  model (an arrival process, a process per job, a decision event per timestamp; no
  validation, records, metrics or log): what the process-based design itself costs;
- tools/bench/e2e_reference.py, a bare heapq script of the same model that reads the
  same CSV (the reference).

Each figure is the median over the rounds of the child's CPU time (user + system, from
``os.wait4``) and its peak RSS (``ru_maxrss``). Linux carries a process's peak RSS over
fork and exec, so this script stays small while it starts them: the inputs are written and
the outputs checked by child processes of its own. One untimed round comes first (warm: the
files are in the OS cache; every timed run is a fresh interpreter, so nothing else is
warm). The check: simsched's jobs.csv (and jobs.parquet) give every job the reference's
start and end times, and so does the SimPy floor's; the script stops if not. The ratios
are simsched's CPU and peak RSS over the reference's, and its CPU over the floor's. The load average is printed with them: on a shared machine
the ratios move less than the seconds.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
REFERENCE = Path(__file__).resolve().parent / "e2e_reference.py"
FLOOR = Path(__file__).resolve().parent / "e2e_simpy_floor.py"
NODES, GPUS = 32, 8


def write_inputs(folder: Path, jobs: int, load: float, seed: int) -> None:
    """The job CSV (tools/bench/engine.py's workload) and the scenario (in a child: see the docstring)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from engine import workload  # (imports numpy: only in the child that writes the inputs)

    with open(folder / "jobs.csv", "w") as f:
        f.write("job_id,submit,duration,gpus\n")
        for i, (submit, duration, gpus) in enumerate(workload(jobs, NODES, load, seed)):
            f.write(f"{i},{submit!r},{duration!r},{gpus}\n")
    (folder / "e2e.toml").write_text(
        f'name = "e2e"\nseed = {seed}\n[[cluster]]\nname = "c0"\n'
        f'nodes = [{{ count = {NODES}, gpus = {GPUS}, gpu_type = "V100" }}]\n'
        f'[workload]\nsource = "csv"\npath = "jobs.csv"\n'
        f'[scheduler]\npolicy = "fifo"\nplacement = "first_fit"\nbackfill = false\n')


def commands(folder: Path, scenario: Path) -> dict[str, list[str]]:
    simsched = [sys.executable, "-m", "simsched", str(scenario), "--quiet"]
    return {
        "simsched --quiet": simsched,
        "simsched --out (csv)": [*simsched, "--out", str(folder / "out-csv"), "--format", "csv"],
        "simsched --out (parquet)": [*simsched, "--out", str(folder / "out-parquet"), "--format", "parquet"],
        "simpy floor": [sys.executable, str(FLOOR), str(folder / "jobs.csv"), "--nodes", str(NODES),
                        "--gpus", str(GPUS)],
        "reference": [sys.executable, str(REFERENCE), str(folder / "jobs.csv"), "--nodes", str(NODES),
                      "--gpus", str(GPUS)],
    }


def timed(args: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS MiB) of one whole child process."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    _, status, usage = os.wait4(child.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(args)} exited {code}: {child.stderr.read().decode()[-2000:]}")
    child.stderr.close()
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def interleaved(runs: dict[str, list[str]], repeat: int) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each command ``repeat`` times, in turn (so a change of the machine's load hits them alike):
    the CPU seconds and peak RSS (MiB) of every run, by name."""
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    rss: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, command in runs.items():
            seconds, peak = timed(command)
            cpu[name].append(seconds)
            rss[name].append(peak)
    return cpu, rss


def check(folder: Path, jobs: int) -> str:
    """Every job's start and end: simsched's jobs.csv (and jobs.parquet) against the reference's."""
    reference = folder / "reference.csv"
    subprocess.run([sys.executable, str(REFERENCE), str(folder / "jobs.csv"), "--nodes", str(NODES),
                    "--gpus", str(GPUS), "--out", str(reference)], check=True)
    with open(reference, newline="") as f:
        want = {row["job_id"]: (float(row["start"]), float(row["end"])) for row in csv.DictReader(f)}
    with open(folder / "out-csv" / "jobs.csv", newline="") as f:
        got = {row["job_id"]: (float(row["start"]), float(row["end"])) for row in csv.DictReader(f)}
    if len(want) != jobs or got != want:
        differ = sorted(k for k in want if got.get(k) != want[k])
        raise SystemExit(f"MISMATCH: {len(differ)} jobs differ in start or end time (first: job {differ[:1]}: "
                         f"simsched {got.get(differ[0]) if differ else None} vs reference "
                         f"{want[differ[0]] if differ else None})")
    floor = folder / "floor.csv"
    subprocess.run([sys.executable, str(FLOOR), str(folder / "jobs.csv"), "--nodes", str(NODES),
                    "--gpus", str(GPUS), "--out", str(floor)], check=True)
    if floor.read_bytes() != reference.read_bytes():
        raise SystemExit("MISMATCH: e2e_simpy_floor.py's start or end times differ from the reference's")
    checked = "csv"
    try:
        import pyarrow.parquet as pq  # optional: the parquet output needs it anyway
    except ImportError:
        return checked
    table = pq.read_table(folder / "out-parquet" / "jobs.parquet", columns=["job_id", "start", "end"]).to_pydict()
    parquet = {str(k): (s, e) for k, s, e in zip(table["job_id"], table["start"], table["end"])}
    if parquet != want:
        raise SystemExit("MISMATCH: jobs.parquet's start or end times differ from the reference's")
    return checked + " and parquet"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--load", type=float, default=0.85)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=5, help="timed rounds (medians); one untimed round first")
    p.add_argument("--json", action="store_true")
    p.add_argument("--child", nargs=2, metavar=("STEP", "DIR"), help=argparse.SUPPRESS)  # inputs / check
    args = p.parse_args()
    if args.child:
        step, folder = args.child
        if step == "inputs":
            write_inputs(Path(folder), args.jobs, args.load, args.seed)
        else:
            print(check(Path(folder), args.jobs))
        return 0
    own = [sys.executable, str(Path(__file__).resolve()), "--jobs", str(args.jobs), "--load", str(args.load),
           "--seed", str(args.seed), "--child"]
    with tempfile.TemporaryDirectory(prefix="simsched-e2e-") as tmp:
        folder = Path(tmp)
        subprocess.run([*own, "inputs", tmp], check=True)
        runs = commands(folder, folder / "e2e.toml")
        for command in runs.values():  # warm-up round (untimed); leaves the outputs the check reads
            timed(command)
        checked = subprocess.run([*own, "check", tmp], check=True, capture_output=True, text=True).stdout.strip()
        cpu, rss = interleaved(runs, args.repeat)
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    median_rss = {name: statistics.median(values) for name, values in rss.items()}
    base_cpu, base_rss = median_cpu["reference"], median_rss["reference"]
    result = {
        "jobs": args.jobs, "load": args.load, "seed": args.seed, "repeat": args.repeat, "warm": True,
        "checked": checked, "load_average": list(os.getloadavg()),
        "cpu_s": cpu, "peak_rss_mib": rss,
        "median_cpu_s": median_cpu, "median_peak_rss_mib": median_rss,
        "cpu_ratio": {name: median_cpu[name] / base_cpu for name in runs if name != "reference"},
        "rss_ratio": {name: median_rss[name] / base_rss for name in runs if name != "reference"},
        "cpu_ratio_to_floor": {name: median_cpu[name] / median_cpu["simpy floor"]
                               for name in runs if name.startswith("simsched")},
    }
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.jobs:,} jobs, one cluster 32 x 8 GPUs, fifo + first fit, strict; load {args.load}, seed {args.seed}")
    print(f"warm (one untimed round first), medians of {args.repeat} interleaved rounds, whole processes")
    print(f"start and end times of all {args.jobs:,} jobs: identical to the reference's ({checked})")
    for name in runs:
        ratio = "" if name == "reference" else (f"   {result['cpu_ratio'][name]:.2f}x CPU, "
                                                f"{result['rss_ratio'][name]:.2f}x peak RSS")
        if name.startswith("simsched"):
            ratio += f"   ({result['cpu_ratio_to_floor'][name]:.2f}x the SimPy floor's CPU)"
        print(f"  {name:26s} {median_cpu[name]:7.2f} CPU-s  {median_rss[name]:7.1f} MiB{ratio}")
    load_average = result["load_average"]
    print(f"load average {load_average[0]:.2f} {load_average[1]:.2f} {load_average[2]:.2f} (2 cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
