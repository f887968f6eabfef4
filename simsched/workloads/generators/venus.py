"""The ``venus`` generator: jobs like SenseTime's Venus cluster (Helios traces), from figures only.

The EVO-GP paper's single-cluster experiments (Fig. 7-9b) run the Venus
trace on a cluster scaled down to 800 GPUs. The per-job Venus log is not in
the repository (tools/download/helios.sh fetches it; ``source = "helios"``
reads it). This generator reproduces its published statistics instead. The
figures are the ``Venus`` row of HeliosArtifact's
``helios_cluster_summary.csv`` (Hu et al., SC'21; ../shared/traces/helios/SOURCE.md),
copied into :data:`VENUS` below. ``tools/calibrate/helios_stats.py`` re-derives
them and ``tests/test_venus.py`` checks them against the file.

Model. The draws come in this order: GPU counts, durations, then arrivals.
- GPUs in {1, 2, 4, 8, 16, 32, 64}. P(1) = ``single_gpu_share`` (default
  0.6, an assumption: Helios gives only the median, 1, so P(1) >= 0.5).
  P(2^k), k >= 1, is proportional to r^(k-1), with r fitted so that the mean
  is Venus's 6.736 GPUs per GPU job. Sizes above ``max_gpus`` are dropped and
  the shares renormalised. Jobs above 8 GPUs get g/8 workers of 8 GPUs (the
  Helios nodes hold 8 GPUs); the others get 1 worker.
- Durations: min(X, ``max_duration_s``) in whole seconds, at least 1, with X
  lognormal. Its median is Venus's 204 s. Its sigma is fitted so that the
  mean of the capped law is Venus's 13,040.6 s. The default cap is 14 days,
  the length of the paper's Venus snapshots (an assumption: the summary
  gives no maximum).
- Arrivals: a Poisson process at ``jobs_per_day``. The default, 692.3, is
  Venus's 125,303 GPU jobs over the 181 days of the Helios window
  (2020-04-01..2020-09-28, the span of the Helios per-day GPU file). It
  agrees with the paper's snapshots: 9,281 and 9,820 jobs in two weeks,
  663 and 701 a day. ``load = x`` instead spaces the jobs so that the offered
  load sum(g d) / (GPUs x span) is exactly x (:func:`arrivals_for_load`).
- ``jobs`` defaults to 9,281, the paper's two-week test snapshot. CPU-only
  jobs (half of Venus) are not generated. Durations are drawn independently
  of GPU counts; in Venus they are correlated: the mean GPU time per job is
  98,526 GPU-s against 6.736 x 13,040.6 = 87,842.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import Fleet
from simsched.workloads.generators.sampling import arrivals_for_load
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize

#: the Venus row of helios_cluster_summary.csv (HeliosArtifact @ bdaae10, CSV columns in brackets)
VENUS = {
    "gpu_num": 1022,  # [gpu_num] GPUs in the cluster
    "gpu_job_num": 125_303,  # [gpu_job_num]
    "avg_run_time_gpu": 13_040.598,  # [avg_run_time_gpu] seconds
    "med_run_time_gpu": 204.0,  # [med_run_time_gpu] seconds
    "avg_gpu_num": 6.736,  # [avg_gpu_num] GPUs per GPU job
    "med_gpu_num": 1.0,  # [med_gpu_num]
    "avg_que_time_gpu": 1_253.288,  # [avg_que_time_gpu] seconds (a validation target, not an input)
    "gpu_time": 6_373_315_670.0 + 4_920_266_598.0 + 1_052_030_340.0,  # [complete+cancel+fail_gpu_time]
}
#: days in the Helios window (earth_cluster_gpu_number.csv: 2020-04-01 .. 2020-09-28)
TRACE_DAYS = 181
JOBS_PER_DAY = VENUS["gpu_job_num"] / TRACE_DAYS
SIZES = (1, 2, 4, 8, 16, 32, 64)
GPUS_PER_NODE = 8
DEFAULT_MAX_DURATION_S = 14 * 86_400.0
#: the paper's Venus test snapshot: 9,281 jobs in two weeks
DEFAULT_JOBS = 9_281


def bisect_increasing(fn, lo: float, hi: float, target: float, iterations: int = 200) -> float:
    """x in [lo, hi] with fn(x) = target for an increasing fn (bisection, deterministic)."""
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        if fn(mid) < target:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


@cache
def gpu_shares(single_gpu_share: float) -> np.ndarray:
    """Shares of :data:`SIZES`: P(1) given, the rest geometric in log2(size), mean = Venus's."""
    target = VENUS["avg_gpu_num"]
    rest = np.array(SIZES[1:], dtype=float)
    powers = np.arange(len(rest), dtype=float)

    def mean(r: float) -> float:
        tail = r**powers
        return single_gpu_share + (1 - single_gpu_share) * float((rest * tail).sum() / tail.sum())

    if not mean(1e-9) <= target <= mean(1e9):
        raise InputError(f"venus: single_gpu_share = {single_gpu_share} cannot give a mean of {target} GPUs")
    r = bisect_increasing(mean, 1e-9, 1e9, target) if mean(1.0) < target else bisect_increasing(mean, 1e-9, 1.0, target)
    tail = r**powers
    return np.concatenate(([single_gpu_share], (1 - single_gpu_share) * tail / tail.sum()))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def capped_lognormal_mean(mu: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for X lognormal(mu, sigma)."""
    z = (math.log(cap) - mu) / sigma
    return math.exp(mu + sigma**2 / 2) * _phi(z - sigma) + cap * (1.0 - _phi(z))


@cache
def duration_law(max_duration_s: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal: median = Venus's, mean of min(X, cap) = Venus's."""
    mu = math.log(VENUS["med_run_time_gpu"])
    target = VENUS["avg_run_time_gpu"]
    if capped_lognormal_mean(mu, 20.0, max_duration_s) < target:
        raise InputError(f"venus: max_duration_s = {max_duration_s} is too small for Venus's mean run "
                         f"time {target} s")
    return mu, bisect_increasing(lambda s: capped_lognormal_mean(mu, s, max_duration_s), 1e-6, 20.0, target)


#: the longest arrival span accepted (s): beyond it submit times lose whole seconds and overflow
MAX_SPAN_S = 1e12


def check_arrivals(params: Params, n_jobs: int, per_day: float, gpu_time_per_job: float, total_gpus: float) -> None:
    """The size guard of a ``jobs_per_day`` rate (venus, helios; issue 39): the offered load (mean GPU
    time per job at that rate, over the fleet's GPUs) stays within
    :data:`~simsched.core.limits.MAX_LOAD`, as ``load`` does for every generator (beyond it every job
    queues at once and the run would not finish), and the arrivals end within :data:`MAX_SPAN_S`."""
    load = per_day / 86_400.0 * gpu_time_per_job / total_gpus
    if not load <= limits.MAX_LOAD:
        raise params.error("jobs_per_day", f"{per_day:g} jobs a day offer {load:.3g}x the fleet's "
                           f"{total_gpus:g} GPUs (limit {limits.MAX_LOAD:g}x: beyond it every job queues at "
                           "once and the run would not finish)")
    span = n_jobs / per_day * 86_400.0
    if not span <= MAX_SPAN_S:
        raise params.error("jobs_per_day", f"{per_day:g} jobs a day spread {n_jobs} jobs over {span:.3g} s "
                           f"(limit {MAX_SPAN_S:.0e} s, about 30,000 years)")


@generator("venus")
def generate_venus(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """Venus-like GPU jobs (see the module docstring) for a single-cluster fleet."""
    n_jobs = params.get("jobs", int, DEFAULT_JOBS, min_value=1)
    single = params.get("single_gpu_share", float, 0.6, min_value=0.5, max_value=0.95)
    largest_cluster = max((c.total_gpus for c in fleet.clusters), default=0)
    max_gpus = params.get("max_gpus", int, min(largest_cluster, SIZES[-1]) or 1, min_value=1)
    cap = params.get("max_duration_s", float, DEFAULT_MAX_DURATION_S, min_value=3600.0)
    if params.has("load") and params.has("jobs_per_day"):
        raise params.error("load", "give either load (offered load) or jobs_per_day (arrival rate), not both")
    load = params.get("load", float, None, min_value=0.0, exclusive_min=True, max_value=limits.MAX_LOAD)
    per_day = params.get("jobs_per_day", float, JOBS_PER_DAY, min_value=0.0, exclusive_min=True)
    params.finish()
    limits.check_memory(f"{params.file}: {params.key('jobs')}", "jobs", n_jobs, limits.BYTES_PER_JOB)
    if fleet.total_gpus == 0:
        raise InputError(f"{params.file}: the venus generator needs a fleet with GPUs")
    try:
        shares = gpu_shares(single)
        mu, sigma = duration_law(cap)
    except InputError as exc:
        raise InputError(f"{params.file}: workload: {exc}") from None
    sizes = np.array(SIZES)
    keep = sizes <= max_gpus
    if not keep.any():
        raise params.error("max_gpus", f"keeps no Venus job size (smallest is 1 GPU), got {max_gpus}")
    sizes, shares = sizes[keep], shares[keep] / shares[keep].sum()

    gpus = sizes[rng.choice(len(sizes), size=n_jobs, p=shares)]
    durations = np.maximum(np.floor(np.minimum(rng.lognormal(mu, sigma, size=n_jobs), cap)), 1.0)
    if load is None:
        check_arrivals(params, n_jobs, per_day, float(np.mean(gpus * durations)), fleet.total_gpus)
        submits = np.floor(np.cumsum(rng.exponential(86_400.0 / per_day, size=n_jobs)))
    else:
        submits = np.floor(arrivals_for_load(rng, float(np.sum(gpus * durations)), fleet.total_gpus, load, n_jobs))
    workers = np.where(gpus > GPUS_PER_NODE, gpus // GPUS_PER_NODE, 1)
    return normalize(pd.DataFrame({
        "job_id": [f"venus-{k}" for k in range(n_jobs)],
        "submit": submits,
        "duration": durations,
        "gpus": gpus.astype(float),
        "workers": workers,
    }))
