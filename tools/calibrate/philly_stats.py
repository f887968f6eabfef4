"""Compute the Philly figures the ``philly`` generator ships (simsched/data/philly_stats.json).

Input: the per-job table ``timestamp,duration,num_gpus,gpu_time,cluster``
(Pollux's extraction of the Philly trace, 82,247 jobs; see
../shared/traces/philly/SOURCE.md). Output: figures only, never rows:
GPU-count mix, per-size duration quantiles, VC shares and the arrival
pattern (mean rate and an hour-of-week profile, local Philly time).

    python tools/calibrate/philly_stats.py [CSV] [--out simsched/data/philly_stats.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CSV = REPO.parent / "shared" / "traces" / "philly" / "pollux_philly.csv"
DEFAULT_OUT = REPO / "simsched" / "data" / "philly_stats.json"

#: Quantile levels of the duration tables (dense in the tail, which carries the GPU time).
QUANTILE_LEVELS = (0.0, 0.01, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9,
                   0.95, 0.98, 0.99, 0.995, 0.999, 1.0)
#: Duration buckets by GPU count: (name, smallest size, largest size). Sizes of 12 and
#: more have under 300 jobs together, so they share one table.
DURATION_BUCKETS = (("1", 1, 1), ("2", 2, 3), ("4", 4, 7), ("8", 8, 11), ("12+", 12, 10**9))


def _round(x: float, digits: int = 6) -> float:
    return float(f"{x:.{digits}g}")


def compute_stats(csv_path: Path | str) -> dict:
    """The figures, rounded to 6 significant digits, from the per-job Philly CSV."""
    df = pd.read_csv(csv_path)
    timestamps = pd.to_datetime(df["timestamp"])
    sizes = df["num_gpus"].astype(int)
    durations = df["duration"].astype(float)

    counts = sizes.value_counts().sort_index()
    gpu_mix = {str(size): _round(n / len(df)) for size, n in counts.items()}

    duration_quantiles = {}
    for name, low, high in DURATION_BUCKETS:
        bucket = durations[(sizes >= low) & (sizes <= high)].to_numpy()
        duration_quantiles[name] = {
            "min_gpus": low,
            "max_gpus": min(high, int(sizes.max())),
            "jobs": len(bucket),
            "mean_s": _round(bucket.mean()),
            "quantiles_s": [_round(q) for q in np.quantile(bucket, QUANTILE_LEVELS)],
        }

    vc_counts = df["cluster"].astype(str).value_counts()
    vc_shares = {vc: _round(n / len(df)) for vc, n in vc_counts.items()}

    # Hour-of-week profile (Monday 00:00 = hour 0): jobs per hour-of-week slot divided by
    # how many such slots the span covers, normalised to mean 1.
    start, end = timestamps.min().floor("h"), timestamps.max().floor("h")
    hours = pd.date_range(start, end, freq="h")
    slot_of = (timestamps.dt.day_of_week * 24 + timestamps.dt.hour).to_numpy()
    slot_hours = np.bincount(hours.day_of_week * 24 + hours.hour, minlength=168)
    slot_jobs = np.bincount(slot_of, minlength=168)
    rate = slot_jobs / np.maximum(slot_hours, 1)
    profile = rate / rate.mean()
    span_s = (timestamps.max() - timestamps.min()).total_seconds()

    return {
        "source": "Philly trace (Jeon et al., ATC'19), per-job extraction by Pollux "
        "(petuum/adaptdl osdi21-artifact simulator/traces/philly.csv); "
        "computed by tools/calibrate/philly_stats.py",
        "jobs": len(df),
        "span_s": _round(span_s),
        "first_submit": str(timestamps.min()),
        "mean_rate_per_hour": _round(len(df) / span_s * 3600),
        "mean_gpus": _round(sizes.mean()),
        "mean_duration_s": _round(durations.mean()),
        "mean_gpu_time_s": _round((sizes * durations).mean()),
        "gpu_mix": gpu_mix,
        "quantile_levels": list(QUANTILE_LEVELS),
        "duration_quantiles": duration_quantiles,
        "vc_shares": vc_shares,
        "hour_of_week_profile": [_round(p, 4) for p in profile],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="?", type=Path, default=DEFAULT_CSV)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    stats = compute_stats(args.csv)
    args.out.write_text(json.dumps(stats, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} from {stats['jobs']} jobs")


if __name__ == "__main__":
    main()
