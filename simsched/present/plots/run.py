"""Figures of one run, drawn from its output tables (docs/outputs.md).

- :func:`cdf_figure`: JCT and wait CDFs on a log x axis;
- :func:`queue_figure`: queue length and running jobs over time;
- :func:`utilization_figure`: GPU utilisation over time per (cluster, GPU type);
- :func:`gantt_figure`: one lane per node, one bar per worker and run spell;
- :func:`wait_by_weight_figure`: queue time by weight class (the paper's Fig. 5);
- with tenants, :mod:`simsched.present.plots.tenants`' wait box plot and usage against quota.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from simsched.core.outputs import ALL, read_json_object, read_table, table_path
from simsched.present.plots.style import HEIGHT, colors, figure, time_axis
from simsched.present.plots.tenants import tenant_usage_figure, tenant_wait_figure

#: the Gantt chart draws at most this many nodes (evenly spaced ids) so lanes stay readable
GANTT_MAX_NODES = 32
LANE = 0.9  # height of a node's lane in the Gantt chart; capacity maps onto it


def load_run(out_dir: str | Path) -> dict[str, Any]:
    """The tables of a run's output folder (``jobs``, ``nodes``, ``spells``, ``timeline``; CSV or
    Parquet) and ``summary``."""
    out = Path(out_dir)
    tables: dict[str, Any] = {name: read_table(table_path(out, name), f"{name}.csv")
                              for name in ("jobs", "nodes", "spells", "timeline")}
    tables["summary"] = read_json_object(out / "summary.json", "a run's summary.json")
    return tables


def ecdf(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and the fraction of all values at or below each (ties: the last, highest step)."""
    values = np.sort(np.asarray(values, dtype=float))
    fraction = np.arange(1, len(values) + 1) / max(1, len(values))
    last_of_tie = np.append(values[1:] != values[:-1], True) if len(values) else np.zeros(0, bool)
    return values[last_of_tie], fraction[last_of_tie]


def cdf_figure(jobs: pd.DataFrame, columns: tuple[str, ...] = ("jct", "wait")) -> Any:
    """CDFs of JCT and wait (or of the ``columns`` named) over completed jobs, one panel each; log x
    (zero values cannot sit on a log axis: the curve starts at the share of jobs with value 0,
    which the legend states)."""
    labels = {"jct": "JCT", "wait": "wait"}
    fig, axes = figure(1, len(columns), width=7.5 if len(columns) > 1 else 5.0)
    done = jobs[jobs["status"] == "done"]
    for ax, column, label in zip(axes[0], columns, (labels[c] for c in columns)):
        x, y = ecdf(done[column].to_numpy(float))
        zero = float(y[x <= 0].max()) if (x <= 0).any() else 0.0
        positive = x > 0
        name = f"{len(done):,} jobs" + (f"; {100 * zero:.0f}% at 0 s" if zero > 0 else "")
        if positive.any():
            ax.step(x[positive], y[positive], where="post", label=name, color="C0")
            ax.set_xscale("log")
        else:
            ax.text(0.5, 0.5, f"every {label} is 0 s", transform=ax.transAxes, ha="center")
        ax.set_xlabel(f"{label} (s, log scale)")
        ax.set_ylabel("fraction of jobs")
        ax.set_ylim(0, 1.02)
        ax.grid(True, which="major", alpha=0.3)
        ax.set_title(f"{label} CDF")
        if positive.any():
            ax.legend(loc="lower right", fontsize="small")
    return fig


def _fleet(timeline: pd.DataFrame) -> pd.DataFrame:
    return timeline[(timeline["cluster"] == ALL) & (timeline["gpu_type"] == ALL)]


def queue_figure(timeline: pd.DataFrame) -> Any:
    """Queue length and running jobs after every change (step functions of the timeline's fleet rows)."""
    fig, axes = figure()
    ax = axes[0, 0]
    fleet = _fleet(timeline)
    t = fleet["time"].to_numpy(float)
    ax.step(t, fleet["queued"].to_numpy(float), where="post", label="queued jobs", color="C3")
    ax.step(t, fleet["running"].to_numpy(float), where="post", label="running jobs", color="C0")
    ax.set_ylabel("jobs")
    ax.set_title("Queue length and running jobs")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper right", fontsize="small")
    time_axis(ax, float(t[-1] - t[0]) if len(t) else 0.0)
    return fig


def group_capacity(nodes: pd.DataFrame) -> dict[tuple[str, str], int]:
    """Milli-GPUs per (cluster, GPU type), in node order."""
    grouped = nodes.groupby(["cluster", "gpu_type"], sort=False)["capacity_milli"].sum()
    return {(str(c), str(g)): int(v) for (c, g), v in grouped.items()}


def utilization_figure(timeline: pd.DataFrame, nodes: pd.DataFrame) -> Any:
    """Busy GPUs / GPUs of each (cluster, GPU type) over time, and the whole fleet dashed."""
    fig, axes = figure()
    ax = axes[0, 0]
    capacity = group_capacity(nodes)
    palette = colors(len(capacity))
    groups = timeline[timeline["cluster"] != ALL]
    for (key, cap), color in zip(capacity.items(), palette):
        rows = groups[(groups["cluster"] == key[0]) & (groups["gpu_type"] == key[1])]
        if rows.empty:
            continue
        ax.step(rows["time"].to_numpy(float), rows["busy_milli"].to_numpy(float) / cap, where="post",
                label=f"{key[0]} · {key[1]} ({cap / 1000:g} GPUs)", color=color, linewidth=1.2)
    fleet = _fleet(timeline)
    total = sum(capacity.values())
    if len(capacity) > 1 and not fleet.empty:
        ax.step(fleet["time"].to_numpy(float), fleet["busy_milli"].to_numpy(float) / total, where="post",
                label=f"fleet ({total / 1000:g} GPUs)", color="black", linestyle="--", linewidth=1.0)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("busy GPUs / GPUs")
    ax.set_title("GPU utilisation per cluster and GPU type")
    ax.grid(True, alpha=0.3)
    if len(ax.lines) > 3:  # many groups: the legend goes beside the axes, not over the curves
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="x-small", borderaxespad=0)
    elif ax.lines:
        ax.legend(loc="upper right", fontsize="small")
    t = timeline["time"].to_numpy(float)
    time_axis(ax, float(t.max() - t.min()) if len(t) else 0.0)
    return fig


def sample_nodes(count: int, limit: int = GANTT_MAX_NODES) -> list[int]:
    """All node ids when there are at most ``limit``; else ``limit`` evenly spaced ids (first and last kept)."""
    if count <= limit:
        return list(range(count))
    return sorted({int(round(i)) for i in np.linspace(0, count - 1, limit)})


def pack(bars: list[tuple[float, float, int]], capacity: int) -> list[list[tuple[int, int]]]:
    """Vertical placement of a node's bars: for each (start, end, milli-GPUs), the [lo, hi) pieces of
    [0, capacity) it occupies. First fit into the lowest free gap; when the free capacity is split
    (a node's GPUs are one pool, SPEC §2), the bar is drawn in several pieces that add up to its size.
    Bars that overlap in time never overlap in space."""
    order = sorted(range(len(bars)), key=lambda i: (bars[i][0], bars[i][1]))
    placed: list[list[tuple[int, int]]] = [[] for _ in bars]
    active: list[tuple[float, int, int]] = []  # (end, lo, hi) of pieces in use
    for i in order:
        start, end, amount = bars[i]
        active = [piece for piece in active if piece[0] > start]
        if end <= start or amount <= 0:
            continue
        used = sorted((lo, hi) for _, lo, hi in active)
        gaps, cursor = [], 0
        for lo, hi in used:
            if lo > cursor:
                gaps.append((cursor, lo))
            cursor = max(cursor, hi)
        if cursor < capacity:
            gaps.append((cursor, capacity))
        whole = next(((lo, lo + amount) for lo, hi in gaps if hi - lo >= amount), None)
        pieces = [whole] if whole else []
        if whole is None:
            left = amount
            for lo, hi in gaps:
                take = min(left, hi - lo)
                if take > 0:
                    pieces.append((lo, lo + take))
                    left -= take
                if left == 0:
                    break
        placed[i] = pieces
        active.extend((end, lo, hi) for lo, hi in pieces)
    return placed


def gantt_figure(spells: pd.DataFrame, nodes: pd.DataFrame, limit: int = GANTT_MAX_NODES,
                 end_time: float | None = None) -> Any:
    """One lane per node (height = its capacity), one bar per worker and run spell, coloured by job.

    A still-running spell (partial run) is drawn up to ``end_time`` (default: the last time in
    the spells). For more than ``limit`` nodes, ``limit`` evenly spaced node ids are drawn and
    the title says so.
    """
    shown = sample_nodes(len(nodes), limit)
    lane_of = {node: lane for lane, node in enumerate(shown)}
    height = min(9.0, max(HEIGHT, 0.25 * len(shown) + 1.2))
    fig, axes = figure(height=height)
    ax = axes[0, 0]
    if end_time is None:
        ends = spells["end"].to_numpy(float)
        end_time = float(np.nanmax(np.concatenate([ends, spells["start"].to_numpy(float)]))) if len(spells) else 0.0
    palette = colors(20)
    job_color: dict[str, Any] = {}
    per_node: dict[int, list[tuple[float, float, int, str]]] = {node: [] for node in shown}
    for job_id, start, end, node_list, share in zip(spells["job_id"], spells["start"].to_numpy(float),
                                                    spells["end"].to_numpy(float), spells["nodes"],
                                                    spells["share"].to_numpy(int)):
        if job_id not in job_color:
            job_color[job_id] = palette[len(job_color) % len(palette)]
        stop = end_time if math.isnan(end) else float(end)
        for node in str(node_list).split(" "):
            node = int(node)
            if node in per_node:
                per_node[node].append((float(start), stop, int(share), str(job_id)))
    lefts, widths, bottoms, heights, fills = [], [], [], [], []
    for node, bars in per_node.items():
        capacity = int(nodes["capacity_milli"].iloc[node])
        for (start, stop, _, job_id), pieces in zip(bars, pack([b[:3] for b in bars], capacity)):
            for lo, hi in pieces:
                lefts.append(start)
                widths.append(stop - start)
                bottoms.append(lane_of[node] + LANE * lo / capacity)
                heights.append(LANE * (hi - lo) / capacity)
                fills.append(job_color[job_id])
    if lefts:
        # one collection, not one Rectangle artist per bar: thousands of bars draw in well under a second
        from matplotlib.collections import PolyCollection

        x0, w = np.asarray(lefts), np.asarray(widths)
        y0, h = np.asarray(bottoms), np.asarray(heights)
        boxes = np.stack([np.stack([x0, y0], 1), np.stack([x0 + w, y0], 1), np.stack([x0 + w, y0 + h], 1),
                          np.stack([x0, y0 + h], 1)], axis=1)
        ax.add_collection(PolyCollection(boxes, facecolors=fills, edgecolors="white", linewidths=0.2,
                                         label="gantt"))
        ax.set_xlim(float(x0.min()), float((x0 + w).max()))
    ax.set_yticks([lane + LANE / 2 for lane in range(len(shown))])
    label = nodes.set_index("node")
    ax.set_yticklabels([f"{n} {label.loc[n, 'cluster']}·{label.loc[n, 'gpu_type']}" for n in shown],
                       fontsize="x-small" if len(shown) > 16 else "small")
    ax.set_ylim(-0.1, len(shown))
    ax.invert_yaxis()
    ax.set_ylabel("node (lane height = its GPUs)")
    title = "Gantt chart: jobs on nodes"
    if len(shown) < len(nodes):
        title += f" — {len(shown)} of {len(nodes)} nodes shown (evenly spaced ids)"
    ax.set_title(title, fontsize="medium")
    ax.grid(True, axis="x", alpha=0.3)
    start = float(spells["start"].min()) if len(spells) else 0.0
    time_axis(ax, end_time - start)
    return fig


def wait_by_weight_figure(jobs: pd.DataFrame) -> Any:
    """Mean queue time of completed jobs per weight class (the paper's Fig. 5), with a 95% normal
    confidence interval of the mean, and the 90th percentile per class as a marker."""
    fig, axes = figure()
    ax = axes[0, 0]
    done = jobs[jobs["status"] == "done"]
    weights = sorted(int(w) for w in done["weight"].unique())
    waits = [done.loc[done["weight"] == w, "wait"].to_numpy(float) for w in weights]
    if weights:
        positions = np.arange(len(weights))
        means = np.array([w.mean() for w in waits])
        half = np.array([1.96 * w.std(ddof=1) / math.sqrt(len(w)) if len(w) > 1 else 0.0 for w in waits])
        ax.bar(positions, means, yerr=half, width=0.6, color="C0", capsize=4, label="mean (95% CI)")
        ax.plot(positions, [np.percentile(w, 90) for w in waits], linestyle="none", marker="_", markersize=18,
                color="C3", label="90th percentile")
        ax.set_xticks(positions)
        ax.set_xticklabels([f"u={w}\n({len(v):,} jobs)" for w, v in zip(weights, waits)], fontsize="small")
        ax.legend(loc="upper right", fontsize="small")
    ax.set_xlabel("weight class u (larger = more urgent)")
    ax.set_ylabel("queue time (s)")
    ax.set_title("Queue time by weight class (cf. the paper's Fig. 5)")
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def run_figures(tables: dict[str, Any]) -> dict[str, Any]:
    """Every run figure, by file stem, from :func:`load_run`'s tables (or a RunResult's); a run
    with tenants (summary.json's ``tenants`` block) also gets the per-tenant wait and usage figures."""
    figures = {
        "cdf": cdf_figure(tables["jobs"]),
        "queue": queue_figure(tables["timeline"]),
        "utilization": utilization_figure(tables["timeline"], tables["nodes"]),
        "gantt": gantt_figure(tables["spells"], tables["nodes"]),
        "wait_by_weight": wait_by_weight_figure(tables["jobs"]),
    }
    summary = tables.get("summary") or {}
    if summary.get("tenants"):
        figures["tenant_wait"] = tenant_wait_figure(tables["jobs"])
        figures["tenant_usage"] = tenant_usage_figure(tables["spells"], tables["jobs"], summary)
    return figures
