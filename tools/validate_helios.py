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

    python tools/validate_helios.py --cluster earth [--seeds 5] [--hours N]

runs instead Earth as it really was (scenarios/helios/earth_dated.toml: May 2020's VCs, their
measured sizes and offered load) and prints, per VC, the simulated against the measured mean
pending jobs, pending GPUs and utilisation over the month, the correlation of their daily
series, and the cluster's mean queue time (simulated, and by Little's law from the measured
pending jobs) against the published 319 s. ``--hours`` keeps the first N hours (a quick look).
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
EARTH_DATED = REPO / "scenarios" / "helios" / "earth_dated.toml"
EARTH_HOURLY = REPO / "workloads" / "helios" / "earth" / "earth_vcs_hourly.csv"
HOUR_S = 3600.0
#: a VC's utilisation is "off" beyond this distance from the measured one (issue 36's goal)
UTIL_TOLERANCE = 0.1


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


def time_integrals(starts, ends, weights, edges):
    """For intervals [starts, ends) (ends may be inf) with weights, the integral of their weighted
    count over each [edges[k], edges[k+1]) (exact: piecewise linear cumulative sums)."""
    import numpy as np

    def cumulative(points, w):
        order = np.argsort(points, kind="stable")
        p, ww = points[order], w[order]
        keep = np.isfinite(p)
        p, ww = p[keep], ww[keep]
        count = np.concatenate(([0.0], np.cumsum(ww)))
        moment = np.concatenate(([0.0], np.cumsum(ww * p)))
        k = np.searchsorted(p, edges, side="right")
        return edges * count[k] - moment[k]  # sum over points <= x of w (x - point)

    total = cumulative(np.asarray(starts, float), np.asarray(weights, float)) \
        - cumulative(np.asarray(ends, float), np.asarray(weights, float))
    return np.diff(total)


def vc_series(jobs, vcs, hours: int) -> dict[str, dict]:
    """Per VC, hourly means over [0, hours h) of its pending jobs, pending GPUs, running GPUs and
    pending jobs of >= 8 GPUs, from a run's jobs table (submit, start, end, gpus, tenant)."""
    import numpy as np

    edges = np.arange(hours + 1) * HOUR_S
    out = {}
    for vc in vcs:
        mine = jobs[jobs["tenant"] == vc]
        submit = mine["submit"].to_numpy(float)
        start = mine["start"].to_numpy(float)
        start = np.where(np.isnan(start), np.inf, start)
        end = mine["end"].to_numpy(float)
        end = np.where(np.isnan(end), np.inf, end)
        gpus = mine["gpus"].to_numpy(float)
        ran = np.isfinite(start)
        out[vc] = {
            "pending_jobs": time_integrals(submit, start, np.ones(len(mine)), edges) / HOUR_S,
            "pending_gpu": time_integrals(submit, start, gpus, edges) / HOUR_S,
            "running_gpu": time_integrals(start[ran], end[ran], gpus[ran], edges) / HOUR_S,
            "pending_jobs_wide": time_integrals(submit, start, (gpus >= 8).astype(float), edges) / HOUR_S,
        }
    return out


def earth_table(series: list[dict], measured, hours: int, waits: list[float], arrivals: list[int]) -> tuple[list[str], dict]:
    """The per-VC Markdown table and the cluster figures of runs (``series``: one vc_series per
    seed; ``waits``: each run's mean wait of the jobs submitted in the window; ``arrivals``: their
    count) against the measured hourly table."""
    import numpy as np

    from simsched.workloads.generators.helios import HELIOS
    from simsched.workloads.vc_hourly import correlation, daily_means

    lines = ["| VC | GPUs | pending jobs: measured | simulated | pending GPUs: measured | simulated | "
             "utilisation: measured | simulated | difference | daily correlation: pending jobs | utilisation | "
             "simulated pending jobs of >= 8 GPUs | off |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    sim_pending = 0.0
    meas_pending = 0.0
    within = 0
    for vc in measured.vcs:
        total = measured.column("total_gpu", vc)[:hours]
        mean = {key: np.mean([run[vc][key] for run in series], axis=0)
                for key in ("pending_jobs", "pending_gpu", "running_gpu", "pending_jobs_wide")}
        m_jobs = float(measured.column("pending_jobs", vc)[:hours].mean())
        m_gpus = float(measured.column("pending_gpu", vc)[:hours].mean())
        m_util = float(measured.column("running_gpu", vc)[:hours].sum() / total.sum())
        s_jobs = float(mean["pending_jobs"].mean())
        s_util = float(mean["running_gpu"].sum() / total.sum())
        wide = float(mean["pending_jobs_wide"].mean()) / s_jobs if s_jobs > 0 else math.nan
        sim_pending += s_jobs
        meas_pending += m_jobs
        r_jobs = correlation(daily_means(mean["pending_jobs"]), daily_means(measured.column("pending_jobs", vc)[:hours]))
        r_util = correlation(daily_means(mean["running_gpu"]), daily_means(measured.column("running_gpu", vc)[:hours]))
        off = []
        if abs(s_util - m_util) > UTIL_TOLERANCE:
            off.append("utilisation")
        if max(s_jobs, m_jobs) >= 0.1 and not 0.5 <= (s_jobs / m_jobs if m_jobs else math.inf) <= 2.0:
            off.append("pending jobs")
        within += abs(s_util - m_util) <= UTIL_TOLERANCE
        def r(x: float) -> str:
            return "-" if math.isnan(x) else f"{x:.2f}"
        lines.append(f"| {vc} | {total.mean():.0f} | {m_jobs:.2f} | {s_jobs:.2f} | {m_gpus:.1f} | "
                     f"{float(mean['pending_gpu'].mean()):.1f} | {m_util:.2f} | {s_util:.2f} | {s_util - m_util:+.2f} | "
                     f"{r(r_jobs)} | {r(r_util)} | {'-' if math.isnan(wide) else f'{100 * wide:.0f} %'} | "
                     f"{', '.join(off) or '-'} |")
    span = hours * HOUR_S
    rate = float(np.mean(arrivals)) / span  # GPU jobs a second, the runs' arrivals in the window
    published_rate = HELIOS["earth"]["gpu_job_num"] / (181 * 86_400.0) * sum(
        float(measured.column("total_gpu", vc)[:hours].mean()) for vc in measured.vcs) / HELIOS["earth"]["gpu_num"]
    published = HELIOS["earth"]["avg_que_time_gpu"]
    figures = {
        "published": published,
        "simulated": float(np.mean(waits)),
        "simulated_little": sim_pending / rate,
        "measured_little": meas_pending / rate,
        "measured_little_published_rate": meas_pending / published_rate,
        "simulated_little_published_rate": sim_pending / published_rate,
        "sim_pending": sim_pending,
        "meas_pending": meas_pending,
        "rate_per_day": rate * 86_400.0,
        "published_rate_per_day": published_rate * 86_400.0,
        "util_within": within,
        "vcs": len(measured.vcs),
    }
    return lines, figures


def run_earth_dated(seeds: range, hours: int | None) -> None:
    """Earth as it really was: the per-VC table and the cluster's queue time (see the docstring)."""
    import simsched
    from simsched.config.overrides import apply_overrides
    from simsched.config.scenario import load_scenario
    from simsched.workloads.vc_hourly import read_vc_hourly

    measured = read_vc_hourly(EARTH_HOURLY)
    span_hours = measured.hours if hours is None else min(hours, measured.hours)
    scenario = load_scenario(EARTH_DATED)
    if hours is not None:
        scenario = apply_overrides(scenario, {"workload.hours": span_hours}, "validate_helios.py")
    series, waits, arrivals = [], [], []
    for seed in seeds:
        started = time.process_time()
        jobs = simsched.run(scenario, seed=seed).jobs
        inside = jobs[jobs["submit"] < span_hours * HOUR_S]
        series.append(vc_series(jobs, measured.vcs, span_hours))
        waits.append(float(inside["wait"].mean()))
        arrivals.append(len(inside))
        print(f"earth_dated seed {seed}: {len(jobs)} jobs, mean wait {waits[-1]:.0f} s "
              f"({time.process_time() - started:.1f} CPU-s)", file=sys.stderr, flush=True)
    lines, f = earth_table(series, measured, span_hours, waits, arrivals)
    print(f"Earth, {span_hours} hours from {measured.start:%Y-%m-%d %H:%M}, {len(measured.vcs)} VCs, "
          f"seeds {seeds.start}..{seeds.stop - 1} (simulated: the mean over the seeds; a daily correlation "
          "of the seeds' mean daily series; '-' where a series is constant).\n")
    print("\n".join(lines))
    print(f"\nUtilisation within ±{UTIL_TOLERANCE} of the measured on {f['util_within']} of {f['vcs']} VCs.\n")
    print("| cluster (the 16 VCs) | mean queue time (s) | ratio to published |")
    print("|---|---:|---:|")
    print(f"| published (Helios, Earth, all GPU jobs, Apr-Sep 2020) | {f['published']:,.0f} | 1.00 |")
    print(f"| simulated (mean wait of the jobs submitted in the window) | {f['simulated']:,.0f} | "
          f"{f['simulated'] / f['published']:.2f} |")
    print(f"| simulated, Little's law ({f['sim_pending']:.2f} pending jobs / {f['rate_per_day']:,.0f} jobs a day) | "
          f"{f['simulated_little']:,.0f} | {f['simulated_little'] / f['published']:.2f} |")
    print(f"| measured, Little's law ({f['meas_pending']:.2f} pending jobs / the same {f['rate_per_day']:,.0f} jobs "
          f"a day) | {f['measured_little']:,.0f} | {f['measured_little'] / f['published']:.2f} |")
    print(f"| simulated, Little's law (/ Earth's published {f['published_rate_per_day']:,.0f} GPU jobs a day "
          f"scaled to these VCs' GPUs) | {f['simulated_little_published_rate']:,.0f} | "
          f"{f['simulated_little_published_rate'] / f['published']:.2f} |")
    print(f"| measured, Little's law (/ Earth's published {f['published_rate_per_day']:,.0f} GPU jobs a day "
          f"scaled to these VCs' GPUs) | {f['measured_little_published_rate']:,.0f} | "
          f"{f['measured_little_published_rate'] / f['published']:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cluster", choices=("earth",), default=None,
                        help="Earth as it really was (scenarios/helios/earth_dated.toml): the per-VC table")
    parser.add_argument("--hours", type=int, default=None, help="with --cluster earth: the first N hours only")
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
    if args.hours is not None and (args.cluster is None or args.hours < 24):
        parser.error("--hours needs --cluster earth and at least 24 (one day)")
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.cluster == "earth":
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        print(f"Generated by `python tools/validate_helios.py --cluster earth --seeds {args.seeds}"
              f"{f' --hours {args.hours}' if args.hours else ''}` at commit {commit} on {platform.machine()} "
              f"{platform.python_version()}.\n")
        started = time.process_time()
        run_earth_dated(range(1, args.seeds + 1), args.hours)
        print(f"\n{time.process_time() - started:.0f} CPU-s in all.")
        return
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
