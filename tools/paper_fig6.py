"""The paper's Fig. 6 (the objective's terms per method) from committed Fig. 4 stores.

    python tools/paper_fig6.py experiments/paper/results/fig4-medium-arrival [--png docs/img/paper/fig6-medium.png]

Prints, per scheduler over the store's complete instances, how often some job waits (C_q,max > 0),
how often C_q,max is more than half of the objective, and its median share; then the terms on the
representative instance (simsched.present.plots.experiment.representative_instance), and draws
that instance's four panels when --png is given. docs/paper.md ("Fig. 6") quotes its output.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from simsched.present.plots import experiment as plots
from simsched.runs.results import read_experiment


def complete_instances(results: pd.DataFrame, plan: pd.DataFrame | None) -> pd.DataFrame:
    """Only the instances whose every planned run has a row (a store that is still growing)."""
    if plan is None:
        return results
    planned = plan.groupby("instance")["run_id"].apply(set)
    done = results.groupby("instance")["run_id"].apply(set)
    keep = [i for i in planned.index if i in done.index and planned[i] <= done[i]]
    return results[results["instance"].isin(keep)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--png", type=Path, help="draw the representative instance's panels here")
    args = parser.parse_args(argv)
    data = read_experiment(args.store)
    plan_path = args.store / "plan.csv"
    results = complete_instances(data["results"], pd.read_csv(plan_path) if plan_path.is_file() else None)
    terms = plots.objective_terms(results)
    print(f"{args.store}: {terms['instance'].nunique()} complete instances")
    print("| scheduler | some job waits | C_q,max > half the objective | median share of C_q,max | mean C_u |")
    print("|---|---:|---:|---:|---:|")
    n = terms["instance"].nunique()
    for name, group in terms.groupby("scheduler", sort=False):
        share = group["cq_max_share"]
        print(f"| {name} | {int((group['cq_max'] > 0).sum())} of {n} | {int((share > 0.5).sum())} of {n} | "
              f"{share.fillna(0).median():.3f} | {group['utilization'].mean():.3f} |")
    instance = plots.representative_instance(terms)
    rows = terms[terms["instance"] == instance]
    print(f"\nrepresentative instance: {instance}")
    print("| scheduler | C_q,avg (s) | C_q,max (s) | C_u | objective |")
    print("|---|---:|---:|---:|---:|")
    for r in rows.itertuples():
        print(f"| {r.scheduler} | {r.cq_avg:,.1f} | {r.cq_max:,.0f} | {r.utilization:.3f} | {r.objective:,.0f} |")
    if args.png:
        figure = plots.objective_terms_figure(results, instance)
        figure.savefig(args.png, dpi=100)
        print(f"\nwrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
