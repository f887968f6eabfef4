"""Derive the hourly per-VC aggregates of Helios Earth (workloads/helios/earth/) from the raw minute files.

Input: HeliosArtifact's ``analysis/2_cluster characterization/Earth_vcs/<vc>/cluster_sequence_vc.csv``
(one row per minute of May 2020 per VC; S-Lab-System-Group/HeliosArtifact, MIT licence), read from a
checkout of that repository (``--checkout``) or from a bare git directory (``--git``, read with
``git show <commit>:<path>``). Output (workloads/helios/earth/SOURCE.md describes every column):

- ``earth_vcs_hourly.csv``: one row per VC and hour: means over the hour's minutes, and per size
  class the GPUs that arrived (the sum of the rises, minute to minute, of the class's running +
  pending GPUs), started (rises of its running GPUs) and ended (falls of its running GPUs);
- ``earth_vc_sizes.csv``: per VC and size class, the GPUs of the jobs seen starting alone (a minute
  in which the class's running jobs rise by exactly one and its running GPUs rise: the rise is
  the job's size), counted: ``vc,size_class,gpus,starts``;
- ``earth_vc_quotas.csv``: a dated quota table (docs/scenarios.md), one row per day, each VC's largest
  ``total_gpu_num`` of the day.

    python tools/derive_earth_vcs.py --git /path/to/HeliosArtifact.git [--commit bdaae10...] [--out DIR]
    python tools/derive_earth_vcs.py --checkout /path/to/HeliosArtifact [--out DIR]

The output is deterministic: the same input gives byte-identical files.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
FOLDER = "analysis/2_cluster characterization/Earth_vcs"
COMMIT = "bdaae109c21f8038a2331e6a23a582d5ae78ab5b"
CLASSES = (("ge8", "noless_8"), ("lt8", "less_8"))
#: the columns of the hourly file, in order
COLUMNS = ("hour", "vc", "total_gpu", "running_gpu", "pending_gpu", "running_gpu_ge8", "running_gpu_lt8",
           "arrived_gpu_ge8", "arrived_gpu_lt8", "started_gpu_ge8", "started_gpu_lt8", "ended_gpu_ge8",
           "ended_gpu_lt8", "pending_jobs")


def read_raw(args: argparse.Namespace) -> dict[str, pd.DataFrame]:
    """VC name -> its minute table."""
    out: dict[str, pd.DataFrame] = {}
    if args.checkout:
        base = Path(args.checkout) / FOLDER
        for path in sorted(base.glob("vc*/cluster_sequence_vc.csv")):
            out[path.parent.name] = pd.read_csv(path)
        return out
    listing = subprocess.run(["git", "--git-dir", args.git, "ls-tree", "--name-only", f"{args.commit}:{FOLDER}/"],
                             capture_output=True, text=True, check=True).stdout.split()
    for vc in sorted(name for name in listing if name.startswith("vc")):
        text = subprocess.run(["git", "--git-dir", args.git, "show",
                               f"{args.commit}:{FOLDER}/{vc}/cluster_sequence_vc.csv"],
                              capture_output=True, text=True, check=True).stdout
        out[vc] = pd.read_csv(io.StringIO(text))
    return out


def hourly(vc: str, minutes: pd.DataFrame) -> pd.DataFrame:
    """One VC's hourly aggregates (see the module docstring)."""
    d = minutes.copy()
    d["time"] = pd.to_datetime(d["time"])
    if d["time"].duplicated().any() or not d["time"].is_monotonic_increasing:
        raise SystemExit(f"{vc}: minute rows are not strictly increasing in time")
    d["hour"] = d["time"].dt.strftime("%Y-%m-%d %H:00")
    cols: dict[str, pd.Series] = {}
    for short, raw in CLASSES:
        running = d[f"running_gpu_num_{raw}"]
        demand = running + d[f"pending_gpu_num_{raw}"]
        d[f"running_gpu_{short}"] = running
        # a GPU that arrived: a rise of the class's running + pending GPUs from one minute to the next
        d[f"arrived_gpu_{short}"] = demand.diff().clip(lower=0).fillna(0) + 0.0  # + 0.0: no "-0"
        d[f"started_gpu_{short}"] = running.diff().clip(lower=0).fillna(0) + 0.0  # + 0.0: no "-0"
        d[f"ended_gpu_{short}"] = (-running.diff()).clip(lower=0).fillna(0) + 0.0  # + 0.0: no "-0"
    g = d.groupby("hour", sort=True)
    cols["total_gpu"] = g["total_gpu_num"].mean()
    cols["running_gpu"] = g["running_gpu_num"].mean()
    cols["pending_gpu"] = g["pending_gpu_num"].mean()
    for short, _ in CLASSES:
        cols[f"running_gpu_{short}"] = g[f"running_gpu_{short}"].mean()
    for kind in ("arrived", "started", "ended"):
        for short, _ in CLASSES:
            cols[f"{kind}_gpu_{short}"] = g[f"{kind}_gpu_{short}"].sum()
    cols["pending_jobs"] = g["pending_gpujob_num"].mean()
    out = pd.DataFrame(cols).reset_index()
    out.insert(1, "vc", vc)
    return out[list(COLUMNS)]


def sizes(vc: str, minutes: pd.DataFrame) -> pd.DataFrame:
    """One VC's sizes of the jobs seen starting alone, counted per class."""
    rows = []
    for short, raw in CLASSES:
        jobs = minutes[f"running_job_num_{raw}"].diff()
        gpus = minutes[f"running_gpu_num_{raw}"].diff()
        seen = gpus[(jobs == 1) & (gpus > 0)].astype(int)
        for size, count in sorted(seen.value_counts().items()):
            rows.append({"vc": vc, "size_class": short, "gpus": int(size), "starts": int(count)})
    return pd.DataFrame(rows, columns=["vc", "size_class", "gpus", "starts"])


def quotas(vcs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The dated quota table: each VC's largest total_gpu_num of each day."""
    columns = {}
    for vc, d in vcs.items():
        day = pd.to_datetime(d["time"]).dt.strftime("%Y-%m-%d")
        columns[vc] = d.groupby(day)["total_gpu_num"].max()
    table = pd.DataFrame(columns).fillna(0).astype(int)
    table["total"] = table.sum(axis=1)
    table.index.name = "date"
    return table.reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--git", help="a bare git directory of S-Lab-System-Group/HeliosArtifact")
    source.add_argument("--checkout", help="a checkout (work tree) of S-Lab-System-Group/HeliosArtifact")
    parser.add_argument("--commit", default=COMMIT, help="with --git: the commit to read (default %(default)s)")
    parser.add_argument("--out", default=str(REPO / "workloads" / "helios" / "earth"))
    args = parser.parse_args()
    raw = read_raw(args)
    if not raw:
        raise SystemExit(f"no {FOLDER}/vc*/cluster_sequence_vc.csv found")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    table = pd.concat([hourly(vc, d) for vc, d in raw.items()], ignore_index=True)
    table.to_csv(out / "earth_vcs_hourly.csv", index=False, float_format="%.4g", lineterminator="\n")
    pd.concat([sizes(vc, d) for vc, d in raw.items()], ignore_index=True).to_csv(
        out / "earth_vc_sizes.csv", index=False, lineterminator="\n")
    quotas(raw).to_csv(out / "earth_vc_quotas.csv", index=False, lineterminator="\n")
    print(f"wrote {len(table)} hourly rows of {len(raw)} VCs and {table['hour'].nunique() // 24} days of "
          f"quotas to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
