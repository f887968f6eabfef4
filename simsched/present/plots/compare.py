"""Figures of a comparison (``compare --out``): metrics per scheduler over cases, JCT CDFs, ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.core.outputs import read_csv_checked, read_table
from simsched.present.plots.run import ecdf
from simsched.present.plots.style import colormap, colors, figure

#: metrics drawn as box/strip panels (keys of the summary)
BOX_METRICS = (("avg_jct", "avg JCT (s)"), ("weighted_jct", "weighted JCT (s)"), ("avg_wait", "avg wait (s)"),
               ("cq_max", "C_q,max (s)"), ("utilization", "GPU-time utilisation"), ("objective", "objective (Eq. 5)"))


def load_compare(folder: str | Path) -> dict[str, Any]:
    """compare_runs.csv, compare.csv (when there) and the per-job tables of ``--keep-jobs`` (``jobs/``)."""
    folder = Path(folder)
    runs = read_csv_checked(folder / "compare_runs.csv", "a compare_runs.csv table",
                            ("instance", "seed", "scheduler"), dtype={"instance": str, "scheduler": str},
                            numbers=lambda column: column not in ("instance", "scheduler"))  # seed, metrics, rank
    table = read_csv_checked(folder / "compare.csv", "a compare.csv table", ("metric", "scheduler", "mean"),
                             dtype={"scheduler": str}, numbers=("mean", "std", "n")) \
        if (folder / "compare.csv").is_file() \
        else None
    jobs: dict[str, list[pd.DataFrame]] = {}
    index = folder / "jobs" / "index.csv"
    if index.is_file():
        for row in read_csv_checked(index, "a jobs/index.csv table", ("scheduler", "file"), dtype=str).itertuples(index=False):
            jobs.setdefault(row.scheduler, []).append(read_table(folder / "jobs" / row.file, "jobs.csv"))
    return {"runs": runs, "table": table, "jobs": jobs}


def metric_box_figure(runs: pd.DataFrame, metrics: tuple[tuple[str, str], ...] = BOX_METRICS) -> Any:
    """One panel per metric: a box per scheduler over every (instance, seed) case, the cases as dots."""
    metrics = tuple((k, label) for k, label in metrics if k in runs.columns)
    order = list(dict.fromkeys(runs["scheduler"]))
    cols = 3 if len(metrics) > 2 else len(metrics)
    rows = -(-len(metrics) // cols)
    fig, axes = figure(rows, cols, height=2.6 * rows + 0.4, width=max(7.5, 1.0 * len(order) * cols))
    rng = np.random.default_rng(0)  # jitter of the dots only (drawing, not simulation)
    palette = colors(len(order))
    for i, (key, label) in enumerate(metrics):
        ax = axes[i // cols, i % cols]
        values = [runs.loc[runs["scheduler"] == name, key].to_numpy(float) for name in order]
        ax.boxplot(values, positions=range(len(order)), widths=0.6, showfliers=False,
                   medianprops={"color": "black"})
        for j, (v, color) in enumerate(zip(values, palette)):
            ax.plot(j + rng.uniform(-0.15, 0.15, len(v)), v, linestyle="none", marker="o", markersize=3.5,
                    color=color, alpha=0.8, label=order[j])
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, rotation=30, ha="right", fontsize="small")
        ax.set_title(label, fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
    for k in range(len(metrics), rows * cols):
        axes[k // cols, k % cols].set_visible(False)
    cases = runs[["instance", "seed"]].drop_duplicates().shape[0]
    fig.suptitle(f"Metrics per scheduler over {cases} case(s) (dots: one per instance and seed)",
                 fontsize="medium")
    return fig


def jct_cdf_figure(jobs: dict[str, list[pd.DataFrame]]) -> Any:
    """The JCT CDF of every scheduler on one plot (completed jobs of all its runs pooled; log x)."""
    fig, axes = figure()
    ax = axes[0, 0]
    for (name, tables), color in zip(jobs.items(), colors(len(jobs))):
        done = pd.concat([t[t["status"] == "done"] for t in tables], ignore_index=True)
        x, y = ecdf(done["jct"].to_numpy(float))
        keep = x > 0
        ax.step(x[keep], y[keep], where="post", color=color, label=f"{name} ({len(done):,} jobs)")
    ax.set_xscale("log")
    ax.set_xlabel("JCT (s, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize="small")
    ax.set_title("JCT CDF per scheduler (every run's completed jobs)")
    return fig


def rank_heatmap_figure(runs: pd.DataFrame, rank_column: str = "rank") -> Any:
    """Rank of each scheduler (rows) in each case (columns); 1 = best. Cells carry the rank; a case with no
    run of the scheduler (its run failed under --keep-going: compare_runs.csv has no row) is grey and says
    ``failed``, as the terminal's rank table does."""
    order = list(dict.fromkeys(runs["scheduler"]))
    case = runs["instance"].astype(str) + " #" + runs["seed"].astype(str)
    grid = runs.assign(case=case).pivot(index="scheduler", columns="case", values=rank_column)
    cases = list(dict.fromkeys(case))
    grid = grid.loc[order, cases]
    width = min(14.0, max(5.0, 0.55 * len(cases) + 3))
    fig, axes = figure(height=max(2.4, 0.4 * len(order) + 1.4), width=width)
    ax = axes[0, 0]
    values = grid.to_numpy(float)
    cmap = colormap("RdYlGn_r", bad="lightgrey")
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, vmin=1, vmax=max(1, len(order)), aspect="auto")
    if len(cases) * len(order) <= 400:
        for (r, c), value in np.ndenumerate(values):
            ax.text(c, r, "failed" if value != value else f"{value:g}", ha="center", va="center",
                    fontsize="x-small" if value != value else "small")
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels(order)
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases, rotation=45, ha="right", fontsize="x-small")
    fig.colorbar(image, ax=ax, label="rank (1 = best)")
    ax.set_title("Rank per case")
    return fig


def compare_figures(data: dict[str, Any]) -> dict[str, Any]:
    """Every compare figure by file stem; the JCT CDF only when per-job tables were kept."""
    figures = {"metrics": metric_box_figure(data["runs"])}
    if data.get("jobs"):
        figures["jct_cdf"] = jct_cdf_figure(data["jobs"])
    if "rank" in data["runs"].columns:
        figures["ranks"] = rank_heatmap_figure(data["runs"])
    return figures
