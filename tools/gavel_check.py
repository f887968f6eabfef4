"""Gavel's heterogeneity check (issue 38; docs/comparison.md): maxmin-hetero against the
heterogeneity-agnostic drf on scenarios/gavel_hetero.toml, over arrival rates and seeds.

    python tools/gavel_check.py                      # rates 4 6 8 10 jobs/hour, seeds 0 1 2
    python tools/gavel_check.py --rates 6 --seeds 0  # one point

Prints one row per (rate, seed): mean JCT and makespan of each policy and drf / maxmin-hetero,
then the geometric mean of the JCT ratio per rate. Gavel (OSDI '20) reports that its
heterogeneity-aware policies improve average JCT by up to 3.5x over heterogeneity-agnostic ones.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import simsched

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "gavel_hetero.toml"
POLICIES = ("maxmin-hetero", "drf")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", type=float, nargs="+", default=[4.0, 6.0, 8.0, 10.0], help="jobs per hour")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--jobs", type=int, default=None, help="jobs the generator draws (default: the scenario's)")
    args = parser.parse_args()
    print("rate,seed,jct_maxmin_hetero,jct_drf,makespan_maxmin_hetero,makespan_drf,jct_ratio_drf_over_maxmin")
    for rate in args.rates:
        ratios = []
        for seed in args.seeds:
            overrides = {"workload.jobs_per_hour": rate}
            if args.jobs is not None:
                overrides["workload.jobs"] = args.jobs
            summary = {p: simsched.run(SCENARIO, seed=seed, scheduler=p, overrides=overrides).summary
                       for p in POLICIES}
            ratio = summary["drf"]["avg_jct"] / summary["maxmin-hetero"]["avg_jct"]
            ratios.append(ratio)
            print(f"{rate:g},{seed},{summary['maxmin-hetero']['avg_jct']:.0f},{summary['drf']['avg_jct']:.0f},"
                  f"{summary['maxmin-hetero']['makespan']:.0f},{summary['drf']['makespan']:.0f},{ratio:.3f}",
                  flush=True)
        print(f"# rate {rate:g}: geometric mean of drf / maxmin-hetero JCT over {len(ratios)} seeds = "
              f"{statistics.geometric_mean(ratios):.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
