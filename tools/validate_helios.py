"""Simulated against published GPU queue times of the four Helios clusters (docs/validation.md).

Runs scenarios/helios/<cluster>.toml over several seeds and prints, as
Markdown, the mean and median GPU queue time per cluster with 95% confidence
intervals (Student t over the seeds, scipy.stats) next to the published
figures, then a sensitivity table: each assumption changed alone (arrival
burstiness, early ends of failed/cancelled jobs, quotas, backfill mode,
size-duration coupling), over fewer seeds.

    python tools/validate_helios.py [--seeds 5] [--sens-seeds 3] [--jobs N] [--clusters earth venus]
        [--skip-sensitivity] [--sens-jobs N] [--sens-clusters venus earth]

``--jobs`` keeps the first N jobs of each run (workload.jobs_limit); without
it a run is the scenario's two weeks of arrivals. Run it niced on a shared
machine; it prints one progress line per run on stderr.
"""

from __future__ import annotations

import argparse
import math
import platform
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CLUSTERS = ("venus", "earth", "saturn", "uranus")


def variants(cluster: str) -> dict[str, dict]:
    """The sensitivity rows: one assumption changed each (dotted --set keys)."""
    from simsched.workloads.generators.helios import HELIOS

    f = HELIOS[cluster]
    early = round(f["cancel_rate_gpu"] + f["fail_rate_gpu"], 3)
    return {
        "as shipped (FIFO, EASY, strict VC quotas)": {},
        "bursty arrivals (batch_mean = 5)": {"workload.batch_mean": 5.0},
        "failed/cancelled end early (early_end_share = published cancel + fail rate)":
            {"workload.early_end_share": early},
        "size and duration independent": {"workload.coupling": "independent"},
        "quotas off (quota = none)": {"scheduler.quota": "none"},
        "quotas borrowable (quota = borrow, reclaim = wait)": {"scheduler.quota": "borrow",
                                                              "scheduler.reclaim": "wait"},
        "backfill none": {"scheduler.backfill": "none"},
        "backfill greedy": {"scheduler.backfill": "greedy"},
        "backfill conservative": {"scheduler.backfill": "conservative"},
    }


def queue_times(cluster: str, seed: int, jobs: int | None, settings: dict) -> tuple[float, float, float]:
    """(mean, median queue time in s, utilisation) of one run."""
    import numpy as np

    import simsched
    from simsched.config.overrides import apply_overrides
    from simsched.config.scenario import load_scenario

    scenario = load_scenario(REPO / "scenarios" / "helios" / f"{cluster}.toml")
    if settings:
        scenario = apply_overrides(scenario, settings, "validate_helios.py")
    result = simsched.run(scenario, seed=seed, jobs=jobs)
    waits = result.jobs["wait"].to_numpy(dtype=float)
    return float(np.mean(waits)), float(np.median(waits)), float(result.summary["utilization"])


def interval(values: list[float]) -> tuple[float, float, float]:
    """(mean, low, high) of a 95% Student t interval over the seeds."""
    import numpy as np
    from scipy import stats

    a = np.asarray(values, float)
    mean = float(a.mean())
    if len(a) < 2 or float(a.std(ddof=1)) == 0.0:
        return mean, mean, mean
    low, high = stats.t.interval(0.95, len(a) - 1, loc=mean, scale=stats.sem(a))
    return mean, float(low), float(high)


def fmt(x: float) -> str:
    return f"{x:,.0f}"


def run_many(cluster: str, seeds: range, jobs: int | None, settings: dict, label: str) -> list[tuple]:
    out = []
    for seed in seeds:
        started = time.process_time()
        out.append(queue_times(cluster, seed, jobs, settings))
        print(f"{cluster} {label} seed {seed}: mean {out[-1][0]:.0f} s median {out[-1][1]:.0f} s "
              f"({time.process_time() - started:.1f} CPU-s)", file=sys.stderr, flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sens-seeds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument("--sens-jobs", type=int, default=None, help="jobs_limit of the sensitivity runs")
    parser.add_argument("--clusters", nargs="+", default=list(CLUSTERS), choices=CLUSTERS)
    parser.add_argument("--sens-clusters", nargs="+", default=None, choices=CLUSTERS,
                        help="clusters of the sensitivity table (default: --clusters)")
    parser.add_argument("--skip-sensitivity", action="store_true")
    parser.add_argument("--skip-base", action="store_true", help="only the sensitivity table")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="a dotted scenario key for the base table's runs (e.g. scheduler.quota=none)")
    args = parser.parse_args()
    from simsched.workloads.generators.helios import HELIOS

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    base_settings = dict(item.split("=", 1) for item in args.settings)
    started = time.process_time()
    print(f"Generated by `python tools/validate_helios.py --seeds {args.seeds} --sens-seeds {args.sens_seeds}"
          f"{f' --jobs {args.jobs}' if args.jobs else ''}{f' --sens-jobs {args.sens_jobs}' if args.sens_jobs else ''}"
          f"{' --sens-clusters ' + ' '.join(args.sens_clusters) if args.sens_clusters else ''}"
          f"{''.join(' --set ' + item for item in args.settings)}`"
          f" at commit {commit} on {platform.machine()} {platform.python_version()}.\n")
    if not args.skip_base:
        print("| cluster | published mean (s) | simulated mean (s), 95% CI | ratio | published median (s) | "
              "simulated median (s), 95% CI | utilisation |")
        print("|---|---|---|---|---|---|---|")
    for cluster in [] if args.skip_base else args.clusters:
        rows = run_many(cluster, range(1, args.seeds + 1), args.jobs, base_settings, "base")
        mean, lo, hi = interval([r[0] for r in rows])
        med, mlo, mhi = interval([r[1] for r in rows])
        util = sum(r[2] for r in rows) / len(rows)
        published = HELIOS[cluster]["avg_que_time_gpu"]
        ratio = mean / published if published else math.inf
        print(f"| {cluster.capitalize()} | {fmt(published)} | {fmt(mean)} [{fmt(lo)}, {fmt(hi)}] | {ratio:.2f} | "
              f"{fmt(HELIOS[cluster]['med_que_time_gpu'])} | {fmt(med)} [{fmt(mlo)}, {fmt(mhi)}] | {util:.2f} |",
              flush=True)
    if not args.skip_sensitivity:
        print(f"\nSensitivity: mean GPU queue time (s) over seeds 1..{args.sens_seeds}, 95% CI, one assumption "
              "changed per row.\n")
        sens = args.sens_clusters or args.clusters
        print("| variant | " + " | ".join(c.capitalize() for c in sens) + " |")
        print("|---|" + "---|" * len(sens))
        labels = list(variants(sens[0]))
        cells: dict[str, list[str]] = {label: [] for label in labels}
        for cluster in sens:
            for label, settings in zip(labels, variants(cluster).values()):
                rows = run_many(cluster, range(1, args.sens_seeds + 1), args.sens_jobs, settings, label)
                mean, lo, hi = interval([r[0] for r in rows])
                cells[label].append(f"{fmt(mean)} [{fmt(lo)}, {fmt(hi)}]")
        for label in labels:
            print(f"| {label} | " + " | ".join(cells[label]) + " |", flush=True)
    print(f"\n{time.process_time() - started:.0f} CPU-s in all.")


if __name__ == "__main__":
    main()
