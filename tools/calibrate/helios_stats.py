"""Re-derive the Venus figures the ``venus`` generator ships (simsched/workloads/generators/venus.py).

Input: HeliosArtifact's ``helios_cluster_summary.csv`` (one row per Helios
cluster) and ``earth_cluster_gpu_number.csv`` (the per-day window), in
../shared/traces/helios/ by default. Output: the figures only (never rows),
with the fitted model parameters, as JSON on stdout.

    python tools/calibrate/helios_stats.py [FOLDER]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
DEFAULT_DIR = REPO.parent / "shared" / "traces" / "helios"

COLUMNS = ("gpu_num", "gpu_job_num", "avg_run_time_gpu", "med_run_time_gpu", "avg_gpu_num", "med_gpu_num",
           "avg_que_time_gpu")


def venus_figures(folder: Path) -> dict:
    summary = pd.read_csv(folder / "helios_cluster_summary.csv").set_index("id")
    row = summary.loc["Venus"]
    figures = {key: float(row[key]) for key in COLUMNS}
    figures["gpu_time"] = float(row["complete_gpu_time"] + row["cancel_gpu_time"] + row["fail_gpu_time"])
    days = pd.read_csv(folder / "earth_cluster_gpu_number.csv", usecols=["date"])["date"]
    figures["trace_days"] = int((pd.Timestamp(days.iloc[-1]) - pd.Timestamp(days.iloc[0])).days) + 1
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args()
    from simsched.workloads.generators import venus

    figures = venus_figures(args.folder)
    mu, sigma = venus.duration_law(venus.DEFAULT_MAX_DURATION_S)
    figures.update({
        "jobs_per_day": figures["gpu_job_num"] / figures["trace_days"],
        "gpu_time_per_job": figures["gpu_time"] / figures["gpu_job_num"],
        "fitted_gpu_shares(single_gpu_share=0.6)": dict(zip(map(str, venus.SIZES),
                                                            venus.gpu_shares(0.6).round(5).tolist())),
        "fitted_lognormal(mu, sigma; cap 14 days)": [mu, sigma],
    })
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
