"""Figures of a run with tenants (issue 20), drawn from its output tables and summary.json:

- :func:`tenant_wait_figure`: one box of queue times per tenant;
- :func:`tenant_usage_figure`: GPUs each tenant holds over time against its quota.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from simsched.core.fairness import NO_TENANT
from simsched.present.plots.style import HOUR, figure, time_axis

#: the usage figure draws at most this many tenants (those with the most GPU-hours)
MAX_PANELS = 12
#: the box plot draws at most this many tenants (those with the most counted jobs)
MAX_BOXES = 30
#: usage is averaged over this many equal bins of the run (exact time averages of the step function)
BINS = 400


def _tenant_names(jobs: pd.DataFrame) -> np.ndarray:
    return jobs["tenant"].fillna("").astype(str).replace("", NO_TENANT).to_numpy(object)


def tenant_wait_figure(jobs: pd.DataFrame) -> Any:
    """Queue time per tenant: a box (quartiles, whiskers at 1.5 IQR, outliers as dots) and the mean
    (triangle) over the counted jobs (completed and unfinished, censored as in the metrics).
    Symlog y: most waits are 0, a few are days."""
    counted = jobs[jobs["status"].isin(("done", "unfinished"))]
    names = _tenant_names(counted)
    sizes = pd.Series(names).value_counts()
    every = len(sizes)
    order = sorted(sizes.index[:MAX_BOXES].tolist()) if every > MAX_BOXES else sorted(sizes.index.tolist())
    waits = [counted["wait"].to_numpy(float)[names == name] for name in order]
    hours = max((float(w.max()) for w in waits if len(w)), default=0.0) > 3 * HOUR
    scale = HOUR if hours else 1.0
    fig, axes = figure(width=max(7.5, 0.45 * len(order) + 2.5))
    ax = axes[0, 0]
    if order:
        ax.boxplot([w / scale for w in waits], showmeans=True, widths=0.6,
                   flierprops={"marker": ".", "markersize": 3, "alpha": 0.5},
                   meanprops={"marker": "^", "markerfacecolor": "C3", "markeredgecolor": "C3", "markersize": 5},
                   medianprops={"color": "C0"})
        ax.set_xticks(np.arange(1, len(order) + 1))
        ax.set_xticklabels([f"{name}\n({len(w):,}; {100 * float((w <= 0).mean()):.0f}% 0 s)" for name, w in zip(order, waits)],
                           rotation=45 if len(order) > 8 else 0, ha="right" if len(order) > 8 else "center",
                           fontsize="x-small" if len(order) > 8 else "small")
        ax.set_yscale("symlog", linthresh=1 / 60 if hours else 60.0)  # linear up to a minute
        ax.set_ylim(bottom=0)
    unit = "h" if hours else "s"
    ax.set_ylabel(f"queue time ({unit}, symlog)")
    ax.set_xlabel("tenant (counted jobs; share that did not wait)")
    ax.set_title("Queue time per tenant (box: quartiles; triangle: mean)"
                 + (f"; {len(order)} of {every} tenants, the most jobs" if every > len(order) else ""),
                 fontsize="medium")
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def usage_steps(spells: pd.DataFrame, jobs: pd.DataFrame, end_time: float,
                only: set[str] | None = None) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tenant (of ``only``, when given), GPUs held as a step function: change times and the
    GPUs held from each. A spell holds share x workers milli-GPUs from its start to its end (a
    still-running one, to ``end_time``)."""
    tenant_of = dict(zip(jobs["job_id"].astype(str), _tenant_names(jobs)))
    tenant = np.array([tenant_of.get(j, NO_TENANT) for j in spells["job_id"].astype(str)], dtype=object)
    gpus = spells["share"].to_numpy(float) * spells["workers"].to_numpy(float) / 1000.0
    start = spells["start"].to_numpy(float)
    end = np.where(np.isnan(spells["end"].to_numpy(float)), end_time, spells["end"].to_numpy(float))
    steps = {}
    for name in sorted(set(tenant.tolist()) if only is None else only):
        mine = tenant == name
        times = np.concatenate([start[mine], end[mine]])
        delta = np.concatenate([gpus[mine], -gpus[mine]])
        order = np.argsort(times, kind="stable")
        times, held = times[order], np.cumsum(delta[order])
        last = np.append(times[1:] != times[:-1], True)  # the value after every change at one instant
        steps[name] = (times[last], np.maximum(0.0, held[last]))
    return steps


def bin_means(times: np.ndarray, values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The exact time average of a step function (``values[k]`` from ``times[k]``, 0 before the
    first) over each bin between consecutive ``edges``."""
    if not len(times):
        return np.zeros(len(edges) - 1)
    widths = np.diff(times)
    area = np.concatenate(([0.0], np.cumsum(values[:-1] * widths)))  # integral from times[0] to each time

    def integral(x: np.ndarray) -> np.ndarray:
        k = np.searchsorted(times, x, side="right") - 1
        inside = k >= 0
        kk = np.maximum(k, 0)
        return np.where(inside, area[kk] + values[kk] * (x - times[kk]), 0.0)

    total = integral(edges)
    return np.diff(total) / np.diff(edges)


def tenant_usage_figure(spells: pd.DataFrame, jobs: pd.DataFrame, summary: dict) -> Any:
    """One panel per tenant (the MAX_PANELS with the most GPU-hours): GPUs held, averaged over
    BINS equal bins of the run, and the tenant's quota (summed over its clusters) dashed."""
    tenants = summary.get("tenants") or {}
    start = float(jobs["submit"].min()) if len(jobs) else 0.0
    end = max(start + float(summary.get("makespan") or 0.0), float(summary.get("simulated_until") or 0.0))
    ranked = sorted(tenants, key=lambda name: (-(tenants[name].get("gpu_hours") or 0.0), name))
    shown = ranked[:MAX_PANELS]
    steps = usage_steps(spells, jobs, end, set(shown))
    cols = min(3, max(1, len(shown)))
    rows = max(1, math.ceil(len(shown) / cols))
    fig, axes = figure(rows, cols, height=1.9 * rows + 0.7, sharex=True)
    edges = np.linspace(start, end if end > start else start + 1.0, BINS + 1)
    for k, ax in enumerate(axes.flat):
        if k >= len(shown):
            ax.set_visible(False)
            continue
        name = shown[k]
        block = tenants[name]
        times, held = steps.get(name, (np.zeros(0), np.zeros(0)))
        mean = bin_means(times, held, edges)
        ax.stairs(mean, edges, fill=True, color="C0", alpha=0.5, label="GPUs held")
        quota = block.get("quota_steps")
        if quota:  # the quota in force at each bin's start (a dated table changes at bin resolution)
            q_times = np.array([t for t, _ in quota], dtype=float)
            q_gpus = np.array([g for _, g in quota], dtype=float)
            at = np.maximum(0, np.searchsorted(q_times, edges[:-1], side="right") - 1)
            ax.stairs(q_gpus[at], edges, baseline=None, color="black", linestyle="--", linewidth=1.0, label="quota")
        share = block.get("usage_over_quota")
        ax.set_title(f"{name}: {share:.0%} of its quota's GPU-hours" if share is not None else
                     f"{name}: {block.get('gpu_hours', 0.0):,.0f} GPU-h, no quota", fontsize="small")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        if k % cols == 0:
            ax.set_ylabel("GPUs")
        if k == 0:
            ax.legend(loc="upper right", fontsize="x-small")
    for k in range(len(shown)):  # the lowest panel of each column carries the time axis
        if k + cols >= len(shown):
            ax = axes.flat[k]
            ax.xaxis.set_tick_params(labelbottom=True)
            time_axis(ax, end - start)
    title = "GPUs held per tenant against its quota"
    if len(shown) < len(ranked):
        title += f" ({len(shown)} of {len(ranked)} tenants: the most GPU-hours)"
    fig.suptitle(title + f"; mean over {BINS} bins", fontsize="medium")
    return fig
