"""Start-up time: ``python -m simsched --help`` against ``python -c pass``, in one run.

    python tools/bench/startup.py [--repeat 7] [--json]

Each command runs once untimed (so the files are in the OS cache: the figures
are warm), then ``--repeat`` times; the script prints the median wall time of
each, the difference (what simsched itself costs) and the ratio. It also times
``python -c "import simsched"`` and ``python -m simsched validate --help``.
The target of issue 14 is ``--help`` under 0.5 s; on a loaded machine compare
the difference to ``python -c pass`` rather than the absolute figure.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "python -c 'import simsched'": ["-c", "import simsched"],
    "python -m simsched --help": ["-m", "simsched", "--help"],
    "python -m simsched validate --help": ["-m", "simsched", "validate", "--help"],
}


def wall(args: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for command in COMMANDS.values():
        wall(command, env)  # warm-up: file cache, .pyc files
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(args.repeat):  # interleaved, so load changes hit every command alike
        for name, command in COMMANDS.items():
            times[name].append(wall(command, env))
    median = {name: statistics.median(values) for name, values in times.items()}
    base = median["python -c pass"]
    result = {
        "repeat": args.repeat, "warm": True, "extrapolated": False, "load_average": list(os.getloadavg()),
        "median_s": median,
        "over_python_s": {name: value - base for name, value in median.items()},
        "ratio_to_python": {name: value / base for name, value in median.items()},
        "help_under_0_5_s": median["python -m simsched --help"] < 0.5,
    }
    if args.json:
        print(json.dumps(result))
        return 0
    for name, value in median.items():
        print(f"  {name:38s} {value * 1000:7.0f} ms  (+{(value - base) * 1000:5.0f} ms over python, "
              f"{value / base:4.1f}x)")
    print(f"  medians of {args.repeat} warm runs; load average {result['load_average'][0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
