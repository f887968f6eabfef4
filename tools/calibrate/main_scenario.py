"""Search the load / backfill / size space of the main scenario (scenarios/philly_hetero.toml).

Issue 21's targets for the main scenario: FIFO mean wait <= 4 h, no wait
over 7 days, FIFO/SJF mean JCT >= 1.5, utilisation >= 0.6. They pull against
each other (a low load gives short waits but FIFO ~ SJF), so this script runs
FIFO and SJF for every combination of the given values and prints one row per
(point, seed) with the four target figures and which targets hold.

    python tools/calibrate/main_scenario.py --load 0.8 0.9 --backfill easy conservative \
        --seeds 1 2 3 [--jobs 20000] [--set workload.max_gpus=32]

Each --set KEY=VALUE (repeatable) applies to every run, like ``simsched run --set``.
Rows are printed as they finish (tab-separated, with a header), so a long
search can be read while it runs; run it niced on a shared machine.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

HOUR = 3600.0
DAY = 86_400.0
TARGETS = {"wait<=4h": lambda r: r["fifo_wait_h"] <= 4.0,
           "max<=7d": lambda r: r["max_wait_d"] <= 7.0,
           "ratio>=1.5": lambda r: r["ratio"] >= 1.5,
           "util>=0.6": lambda r: r["util"] >= 0.6}


def setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value


def measure(scenario_path: Path, load: float, backfill: str, seed: int, jobs: int | None,
            settings: dict) -> dict:
    """FIFO and SJF on one point: the target figures (max wait over both policies' FIFO run)."""
    import simsched
    from simsched.experiment.overrides import apply_overrides
    from simsched.scenario import load_scenario

    base = load_scenario(scenario_path)
    keys = {"workload.load": load, "scheduler.backfill": backfill, **settings}
    out: dict = {}
    started = time.perf_counter()
    for policy in ("fifo", "sjf"):
        scenario = apply_overrides(base, {**keys, "scheduler.policy": policy}, "main_scenario.py")
        out[policy] = simsched.run(scenario, seed=seed, jobs=jobs).summary
    fifo, sjf = out["fifo"], out["sjf"]
    return {
        "fifo_wait_h": fifo["avg_wait"] / HOUR,
        "sjf_wait_h": sjf["avg_wait"] / HOUR,
        "max_wait_d": fifo["max_wait"] / DAY,
        "sjf_max_wait_d": sjf["max_wait"] / DAY,
        "ratio": fifo["avg_jct"] / sjf["avg_jct"],
        "util": fifo["utilization"],
        "p99_h": fifo["starvation"]["p99_wait"] / HOUR,
        "wall_s": time.perf_counter() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "philly_hetero.toml")
    parser.add_argument("--load", type=float, nargs="+", default=[0.9])
    parser.add_argument("--backfill", nargs="+", default=["easy"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--jobs", type=int, default=None, help="keep the first N jobs (jobs_limit)")
    parser.add_argument("--set", dest="settings", action="append", default=[], type=setting)
    args = parser.parse_args()
    settings = dict(args.settings)
    columns = ["load", "backfill", "seed", "fifo_wait_h", "sjf_wait_h", "max_wait_d", "sjf_max_wait_d", "ratio",
               "util", "p99_h", "wall_s", "met"]
    print("\t".join(columns), flush=True)
    for load, backfill, seed in itertools.product(args.load, args.backfill, args.seeds):
        row = measure(args.scenario, load, backfill, seed, args.jobs, settings)
        met = ",".join(name for name, ok in TARGETS.items() if ok(row)) or "-"
        cells = [f"{load:g}", backfill, str(seed)] + [f"{row[c]:.2f}" for c in columns[3:-1]] + [met]
        print("\t".join(cells), flush=True)


if __name__ == "__main__":
    main()
