"""Mean wait per tenant of several runs, as a Markdown table, from their jobs.csv.

    python tools/tenant_waits.py out/vc/fifo out/vc/drf ... [--unit h|s]

Each argument is a run's output folder (``--out``) or its jobs.csv. One row per
tenant (most jobs first; jobs without a tenant are "(none)"), one column per run
(named after its folder): the mean wait of the tenant's jobs, and a last row
over all jobs. Unfinished jobs count with their censored wait (jobs.csv's
``wait``), as the run's own means do. docs/assignment.md, exercise "FIFO per VC
versus fair share", shows it on scenarios/course/philly_vc.toml.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

UNITS = {"h": 3600.0, "s": 1.0}


def table(runs: list[Path], unit: str = "h") -> str:
    scale = UNITS[unit]
    waits: dict[str, pd.Series] = {}
    counts = None
    overall: dict[str, float] = {}
    for run in runs:
        path = run / "jobs.csv" if run.is_dir() else run
        jobs = pd.read_csv(path, usecols=["job_id", "wait", "tenant", "status"], dtype={"tenant": str})
        jobs = jobs[jobs["status"] != "infeasible"]
        jobs["tenant"] = jobs["tenant"].fillna("(none)")
        name = (run if run.is_dir() else run.parent).name
        waits[name] = jobs.groupby("tenant")["wait"].mean() / scale
        overall[name] = jobs["wait"].mean() / scale
        if counts is None:
            counts = jobs.groupby("tenant").size()
    frame = pd.DataFrame(waits)
    frame.insert(0, "jobs", counts)
    frame = frame.sort_values("jobs", ascending=False, kind="stable")
    lines = ["| Tenant | Jobs | " + " | ".join(f"`{n}`" for n in waits) + " |",
             "|---|---:|" + "---:|" * len(waits)]
    for tenant, row in frame.iterrows():
        cells = " | ".join(f"{row[n]:,.2f}" for n in waits)
        lines.append(f"| {tenant} | {int(row['jobs']):,} | {cells} |")
    lines.append(f"| all | {int(frame['jobs'].sum()):,} | " + " | ".join(f"**{overall[n]:,.2f}**" for n in waits)
                 + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run output folders (or their jobs.csv)")
    parser.add_argument("--unit", choices=sorted(UNITS), default="h", help="wait unit (default: hours)")
    args = parser.parse_args(argv)
    missing = [str(r) for r in args.runs if not (r / "jobs.csv" if r.is_dir() else r).is_file()]
    if missing:
        print(f"tenant_waits: no jobs.csv in {missing[0]} (give run folders written with --out)", file=sys.stderr)
        return 2
    print(table(args.runs, args.unit))
    return 0


if __name__ == "__main__":
    sys.exit(main())
