"""What the command line adds over the Python API: peak RSS and CPU of two whole processes.

    python tools/bench/cli_api.py [--jobs 1000000] [--repeat 1] [--format csv] [--json]

Both run the same scenario with tools/bench/e2e.py's job CSV (1/2/4/8-GPU jobs, exponential
durations, Poisson arrivals at load 0.85, one cluster of 32 x 8 GPUs, fifo, first fit, strict)
and write every output file:

- the CLI: ``python -m simsched SCENARIO --quiet --out DIR [--format F]``;
- the API: ``python -c "import simsched; simsched.run(SCENARIO).write(DIR, format=F)"``.

Each figure is the child's peak RSS (``ru_maxrss``, as ``/usr/bin/time -v`` reports it) and
CPU time (user + system), from ``os.wait4``; with ``--repeat N`` the medians of N interleaved
rounds (a 1M-job round takes minutes: the default is one). The inputs are written by a child
process (Linux carries a parent's peak RSS into its children), and no warm-up round is run:
every figure is a fresh interpreter with the files in the OS cache. The two jobs.csv files are
checked to be the same bytes. Issue 35's target: the CLI's peak RSS at 1M jobs at most 1.2 GB
and within 5% of the API's.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from e2e import REPO, interleaved  # noqa: E402  (beside this file; imports nothing heavy)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=1_000_000)
    p.add_argument("--load", type=float, default=0.85)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=int, default=1, help="interleaved rounds (medians)")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="simsched-cli-api-") as tmp:
        folder = Path(tmp)
        subprocess.run([sys.executable, str(HERE / "e2e.py"), "--jobs", str(args.jobs), "--load", str(args.load),
                        "--seed", str(args.seed), "--child", "inputs", tmp], check=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)))
        scenario = folder / "e2e.toml"
        runs = {
            "cli": [sys.executable, "-m", "simsched", str(scenario), "--quiet", "--out", str(folder / "cli"),
                    "--format", args.format],
            "api": [sys.executable, "-c", "import sys, simsched; "
                    "simsched.run(sys.argv[1]).write(sys.argv[2], format=sys.argv[3])",
                    str(scenario), str(folder / "api"), args.format],
        }
        cpu, rss = interleaved(runs, args.repeat)
        same = filecmp.cmp(folder / "cli" / f"jobs.{args.format}", folder / "api" / f"jobs.{args.format}",
                           shallow=False)
    if not same:
        raise SystemExit("MISMATCH: the CLI's and the API's jobs tables differ")
    median_cpu = {name: statistics.median(values) for name, values in cpu.items()}
    median_rss = {name: statistics.median(values) for name, values in rss.items()}
    result = {"jobs": args.jobs, "format": args.format, "repeat": args.repeat, "warm": False,
              "load_average": list(os.getloadavg()), "cpu_s": cpu, "peak_rss_mib": rss,
              "median_cpu_s": median_cpu, "median_peak_rss_mib": median_rss,
              "cli_over_api_rss": median_rss["cli"] / median_rss["api"],
              "cli_over_api_cpu": median_cpu["cli"] / median_cpu["api"]}
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"{args.jobs:,} jobs, --out as {args.format}; medians of {args.repeat} interleaved round(s), "
          "whole processes (fresh interpreters, files in the OS cache)")
    for name, label in (("cli", "python -m simsched ... --quiet --out"), ("api", "simsched.run(...).write(...)")):
        print(f"  {label:40s} {median_cpu[name]:8.1f} CPU-s  peak RSS {median_rss[name]:7.0f} MiB "
              f"({median_rss[name] * 2**20 / 1e9:.2f} GB)")
    print(f"  the CLI over the API: {result['cli_over_api_rss']:.3f}x peak RSS, {result['cli_over_api_cpu']:.3f}x CPU; "
          f"jobs tables identical; load average {' '.join(f'{x:.2f}' for x in result['load_average'])} (2 cores)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
