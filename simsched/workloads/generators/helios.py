"""The ``helios`` generator: GPU jobs like one of SenseTime's four Helios clusters, from figures only.

The figures are the rows of HeliosArtifact's ``helios_cluster_summary.csv``
(Hu et al., SC'21; ../shared/traces/helios/SOURCE.md), copied into
:data:`HELIOS` below; ``tests/test_helios.py`` checks them against the file.
Only job statistics are inputs: the GPU job count, the mean and median GPUs
per job, the mean and median run time and the GPU time of all GPU jobs. The
published queue times are validation targets (docs/validation.md), never
inputs.

Model (``cluster = "venus" | "earth" | "saturn" | "uranus"``):
- GPUs in {1, 2, 4, 8, 16, 32, 64}: P(1) = ``single_gpu_share`` (0.6, an
  assumption: Helios gives only the median, 1), P(2^k) for k >= 1
  proportional to r^(k-1), r fitted to the cluster's mean GPUs per job
  (the ``venus`` generator's law, with each cluster's mean).
- Durations: min(X, ``max_duration_s``) whole seconds, at least 1, X
  lognormal with the cluster's median; sigma fitted so the capped mean is
  the cluster's mean run time.
- Size and duration are coupled (``coupling = "gpu_time"``, the default) by
  a Gaussian copula whose correlation rho is fitted so that the mean GPU time
  per job is the published one (GPU time of all GPU jobs / GPU job count);
  the two marginal laws stay exactly as above. In Helios, large jobs run
  longer: the mean GPU time per job is 1.1 to 2.5 times mean GPUs x mean run
  time. ``coupling = "independent"`` draws them independently (the ``venus``
  generator's model). When even rho = 1 cannot reach the published GPU time,
  rho = 1 is used (:func:`coupling_rho` says how far it gets).
- Arrivals: submission events at the cluster's rate (GPU jobs / 181 days,
  the Helios window) divided by ``batch_mean``; each event submits a
  geometric number of jobs with mean ``batch_mean`` (1 = a Poisson process;
  larger = users submitting sweeps at once). ``jobs_per_day`` overrides the
  rate.
- ``early_end_share`` (default 0): that share of the jobs (drawn last) holds
  its GPUs for a uniform fraction of its drawn duration, as a failed or
  cancelled job that ends before its request. A sensitivity knob: the
  published run times already include such jobs, so 0 is the calibrated
  model and a share above 0 removes work.
- VCs (``vcs = "quota"``, the default, when the fleet's first cluster has
  ``[[cluster.tenant]]`` quotas): each job's tenant is drawn among the VCs
  whose quota holds it so that every VC receives GPU time in proportion to
  its quota (:func:`draw_vcs`; the cluster's GPUs no VC owns form one more,
  unnamed pool); a job larger than every VC goes to the largest. An
  assumption: Helios publishes no per-VC job mix; a VC's demand follows
  its size and a VC does not submit jobs larger than itself. Drawn last, so
  ``vcs = "none"`` leaves every other draw unchanged.
- ``jobs`` defaults to two weeks of the cluster's arrivals. Jobs above 8
  GPUs get g/8 workers of 8 GPUs (Helios nodes hold 8 GPUs).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import Fleet
from simsched.workloads.generators.venus import bisect_increasing, check_arrivals
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize

#: helios_cluster_summary.csv (HeliosArtifact @ bdaae10), one row per cluster; CSV columns in brackets:
#: gpu_num [gpu_num], gpu_job_num [gpu_job_num], avg_run_time_gpu / med_run_time_gpu [s],
#: avg_gpu_num / med_gpu_num, gpu_time [complete_gpu_time + cancel_gpu_time + fail_gpu_time] (GPU-s),
#: cancel_rate_gpu / fail_rate_gpu (shares of GPU jobs), and the validation targets
#: avg_que_time_gpu / med_que_time_gpu [s] (never used by the generator)
HELIOS = {
    "venus": {"gpu_num": 1022, "gpu_job_num": 125_303, "avg_run_time_gpu": 13_040.598, "med_run_time_gpu": 204.0,
              "avg_gpu_num": 6.736, "med_gpu_num": 1.0, "gpu_time": 12_345_612_608.0,
              "cancel_rate_gpu": 0.272, "fail_rate_gpu": 0.202,
              "avg_que_time_gpu": 1_253.288, "med_que_time_gpu": 0.0},
    "earth": {"gpu_num": 997, "gpu_job_num": 427_148, "avg_run_time_gpu": 5_130.609, "med_run_time_gpu": 234.0,
              "avg_gpu_num": 2.101, "med_gpu_num": 1.0, "gpu_time": 11_439_202_755.0,
              "cancel_rate_gpu": 0.136, "fail_rate_gpu": 0.129,
              "avg_que_time_gpu": 319.483, "med_que_time_gpu": 0.0},
    "saturn": {"gpu_num": 2080, "gpu_job_num": 698_896, "avg_run_time_gpu": 5_252.927, "med_run_time_gpu": 124.0,
               "avg_gpu_num": 4.01, "med_gpu_num": 1.0, "gpu_time": 27_652_361_263.0,
               "cancel_rate_gpu": 0.272, "fail_rate_gpu": 0.145,
               "avg_que_time_gpu": 611.561, "med_que_time_gpu": 0.0},
    "uranus": {"gpu_num": 2119, "gpu_job_num": 329_117, "avg_run_time_gpu": 9_163.725, "med_run_time_gpu": 280.0,
               "avg_gpu_num": 4.038, "med_gpu_num": 1.0, "gpu_time": 26_560_563_521.0,
               "cancel_rate_gpu": 0.201, "fail_rate_gpu": 0.192,
               "avg_que_time_gpu": 1_949.182, "med_que_time_gpu": 0.0},
}
#: days in the Helios window (earth_cluster_gpu_number.csv: 2020-04-01 .. 2020-09-28)
TRACE_DAYS = 181
SIZES = (1, 2, 4, 8, 16, 32, 64)
GPUS_PER_NODE = 8
DEFAULT_MAX_DURATION_S = 14 * 86_400.0
COUPLINGS = ("gpu_time", "independent")
VC_MODES = ("quota", "none")
#: the largest mean batch: a batch of more jobs than any run holds is one batch; beyond it the
#: geometric draw's counts overflow
MAX_BATCH_MEAN = 1e6

#: the standard-normal grid the copula's expectation is integrated on
_GRID = np.linspace(-8.0, 8.0, 4001)


def figures(cluster: str) -> dict:
    """The published figures of ``cluster`` (a key of :data:`HELIOS`)."""
    return HELIOS[cluster]


def jobs_per_day(cluster: str) -> float:
    return HELIOS[cluster]["gpu_job_num"] / TRACE_DAYS


@cache
def gpu_shares(cluster: str, single_gpu_share: float) -> np.ndarray:
    """Shares of :data:`SIZES`: P(1) given, the rest geometric in log2(size), mean = the cluster's."""
    target = HELIOS[cluster]["avg_gpu_num"]
    rest = np.array(SIZES[1:], dtype=float)
    powers = np.arange(len(rest), dtype=float)

    def mean(r: float) -> float:
        tail = r**powers
        return single_gpu_share + (1 - single_gpu_share) * float((rest * tail).sum() / tail.sum())

    if not mean(1e-9) <= target <= mean(1e9):
        raise InputError(f"{cluster}: single_gpu_share = {single_gpu_share} cannot give a mean of {target} GPUs")
    r = bisect_increasing(mean, 1e-9, 1e9, target) if mean(1.0) < target else bisect_increasing(mean, 1e-9, 1.0, target)
    tail = r**powers
    return np.concatenate(([single_gpu_share], (1 - single_gpu_share) * tail / tail.sum()))


_ERF = np.vectorize(math.erf, otypes=[float])


def _phi(x):
    """The standard normal CDF (scalar or array)."""
    return 0.5 * (1.0 + _ERF(np.asarray(x, float) / math.sqrt(2.0)))


def _normal_quantile(p: float) -> float:
    """The standard normal quantile (bisection on the CDF; -inf / inf at 0 / 1)."""
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return bisect_increasing(lambda z: float(_phi(z)), -40.0, 40.0, p, iterations=100)


def capped_lognormal_mean(mu, sigma: float, cap: float):
    """E[min(X, cap)] for X lognormal(mu, sigma) (``mu`` a scalar or an array)."""
    mu = np.asarray(mu, float)
    z = (math.log(cap) - mu) / sigma
    out = np.exp(mu + sigma**2 / 2) * _phi(z - sigma) + cap * (1.0 - _phi(z))
    return float(out) if out.ndim == 0 else out


@cache
def duration_law(cluster: str, max_duration_s: float) -> tuple[float, float]:
    """(mu, sigma) of the lognormal: median = the cluster's, mean of min(X, cap) = the cluster's."""
    mu = math.log(HELIOS[cluster]["med_run_time_gpu"])
    target = HELIOS[cluster]["avg_run_time_gpu"]
    if capped_lognormal_mean(mu, 20.0, max_duration_s) < target:
        raise InputError(f"{cluster}: max_duration_s = {max_duration_s} is too small for the mean run "
                         f"time {target} s")
    return mu, bisect_increasing(lambda s: capped_lognormal_mean(mu, s, max_duration_s), 1e-6, 20.0, target)


def _size_thresholds(shares: np.ndarray) -> np.ndarray:
    """Normal quantiles splitting z1 into the size classes (size k when z1 <= thresholds[k])."""
    cumulative = np.cumsum(shares)[:-1]
    return np.array([_normal_quantile(float(p)) for p in cumulative] + [math.inf])


def mean_gpu_time(sizes: np.ndarray, shares: np.ndarray, mu: float, sigma: float, cap: float,
                  rho: float) -> float:
    """E[g x min(X, cap)] under the Gaussian copula with correlation ``rho`` (numerical integral over z1)."""
    thresholds = _size_thresholds(shares)
    g = sizes[np.searchsorted(thresholds, _GRID)].astype(float)
    conditional = capped_lognormal_mean(mu + sigma * rho * _GRID, sigma * math.sqrt(max(1.0 - rho**2, 0.0)) or 1e-9,
                                        cap)
    density = np.exp(-_GRID**2 / 2) / math.sqrt(2 * math.pi)
    return float(np.trapezoid(g * conditional * density, _GRID))


@cache
def coupling_rho(cluster: str, single_gpu_share: float, max_gpus: int, max_duration_s: float) -> tuple[float, float]:
    """(rho, mean GPU time per job it gives): the copula correlation fitted to the published GPU time."""
    sizes, shares = size_law(cluster, single_gpu_share, max_gpus)
    mu, sigma = duration_law(cluster, max_duration_s)
    target = HELIOS[cluster]["gpu_time"] / HELIOS[cluster]["gpu_job_num"]

    def fn(rho: float) -> float:
        return mean_gpu_time(sizes, shares, mu, sigma, max_duration_s, rho)

    if len(sizes) == 0 or fn(0.0) >= target:
        return 0.0, fn(0.0)
    if fn(0.999) <= target:
        return 0.999, fn(0.999)
    rho = bisect_increasing(fn, 0.0, 0.999, target, iterations=60)
    return rho, fn(rho)


@cache
def size_law(cluster: str, single_gpu_share: float, max_gpus: int) -> tuple[np.ndarray, np.ndarray]:
    sizes = np.array(SIZES)
    shares = gpu_shares(cluster, single_gpu_share)
    keep = sizes <= max_gpus
    if not keep.any():
        return sizes[keep], shares[keep]
    return sizes[keep], shares[keep] / shares[keep].sum()


def sizes_and_durations(rng: np.random.Generator, n_jobs: int, cluster: str, single: float, max_gpus: int,
                        cap: float, coupling: str) -> tuple[np.ndarray, np.ndarray]:
    """GPU counts and durations (whole seconds) of ``n_jobs`` jobs."""
    sizes, shares = size_law(cluster, single, max_gpus)
    mu, sigma = duration_law(cluster, cap)
    rho = coupling_rho(cluster, single, max_gpus, cap)[0] if coupling == "gpu_time" else 0.0
    z1 = rng.standard_normal(n_jobs)
    z2 = rho * z1 + math.sqrt(1.0 - rho**2) * rng.standard_normal(n_jobs)
    gpus = sizes[np.searchsorted(_size_thresholds(shares), z1)]
    durations = np.minimum(np.exp(mu + sigma * z2), cap)
    return gpus, np.maximum(np.floor(durations), 1.0)


def draw_vcs(rng: np.random.Generator, gpus: np.ndarray, durations: np.ndarray, fleet: Fleet) -> np.ndarray | None:
    """Each job's VC (see the module docstring), or None when the fleet's first cluster has no quotas.

    Each VC (and the pool of GPUs no VC owns) should receive GPU time in proportion to its
    quota, but a job may go only to a VC whose quota holds it. Jobs are assigned in
    decreasing GPU time, each drawn among the VCs that hold it with weights proportional to
    the GPU time each still lacks of its share (randomised water-filling; a VC already at its
    share is drawn only when no VC that holds the job lacks any). So the few VCs large
    enough for the largest jobs are not handed more than their share on top of their small
    jobs, and one 64-GPU two-week job does not overload a VC at random.
    """
    cluster = fleet.clusters[0] if fleet.clusters else None
    if cluster is None or not cluster.tenants:
        return None
    names = [t.name for t in cluster.tenants] + [None]
    owned = sum(t.total for t in cluster.tenants)
    room = np.array([t.total for t in cluster.tenants] + [max(cluster.total_gpus - owned, 0.0)], dtype=float)
    work = gpus * durations
    lacking = room / room.sum() * float(work.sum())
    chosen = np.empty(len(gpus), dtype=int)
    u = rng.random(len(gpus))
    largest = room == room.max()
    for job in np.argsort(-work, kind="stable"):
        fits = room >= gpus[job]
        if not fits.any():
            fits = largest
        weights = np.where(fits, np.maximum(lacking, 0.0), 0.0)
        if weights.sum() <= 0.0:
            weights = np.where(fits, room, 0.0)
        cumulative = np.cumsum(weights)
        k = min(int(np.searchsorted(cumulative, u[job] * cumulative[-1], side="right")), len(names) - 1)
        chosen[job] = k
        lacking[k] -= work[job]
    return np.array(names, dtype=object)[chosen]


def bursty_arrivals(rng: np.random.Generator, n_jobs: int, per_day: float, batch_mean: float) -> np.ndarray:
    """Submit times: events at per_day / batch_mean a day, each with a geometric(mean batch_mean) job count."""
    submits: list[np.ndarray] = []
    count = 0
    clock = 0.0
    gap = 86_400.0 * batch_mean / per_day
    while count < n_jobs:
        chunk = max(16, int((n_jobs - count) / batch_mean) + 16)
        times = clock + np.cumsum(rng.exponential(gap, size=chunk))
        sizes = rng.geometric(1.0 / batch_mean, size=chunk)
        submits.append(np.repeat(times, sizes))
        count += int(sizes.sum())
        clock = float(times[-1])
    return np.floor(np.concatenate(submits)[:n_jobs])


@generator("helios")
def generate_helios(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """GPU jobs like one Helios cluster (see the module docstring)."""
    cluster = params.get("cluster", str, None, choices=tuple(HELIOS))
    known = cluster or "venus"  # defaults read before finish(), so an unknown key is reported first
    n_jobs = params.get("jobs", int, round(14 * jobs_per_day(known)), min_value=1)
    single = params.get("single_gpu_share", float, 0.6, min_value=0.5, max_value=0.95)
    largest_cluster = max((c.total_gpus for c in fleet.clusters), default=0)
    max_gpus = params.get("max_gpus", int, min(largest_cluster, SIZES[-1]) or 1, min_value=1)
    cap = params.get("max_duration_s", float, DEFAULT_MAX_DURATION_S, min_value=3600.0)
    coupling = params.get("coupling", str, "gpu_time", choices=COUPLINGS)
    per_day = params.get("jobs_per_day", float, jobs_per_day(known), min_value=0.0, exclusive_min=True)
    batch_mean = params.get("batch_mean", float, 1.0, min_value=1.0, max_value=MAX_BATCH_MEAN)
    early = params.get("early_end_share", float, 0.0, min_value=0.0, max_value=1.0)
    vc_mode = params.get("vcs", str, "quota", choices=VC_MODES)
    params.finish()
    if cluster is None:
        raise params.error("cluster", f"is required: one of {', '.join(HELIOS)}")
    if fleet.total_gpus == 0:
        raise InputError(f"{params.file}: the helios generator needs a fleet with GPUs")
    if not (np.array(SIZES) <= max_gpus).any():
        raise params.error("max_gpus", f"keeps no Helios job size (smallest is 1 GPU), got {max_gpus}")
    limits.check_memory(f"{params.file}: {params.key('jobs')}", "jobs", n_jobs, limits.BYTES_PER_JOB)
    figures = HELIOS[cluster]
    check_arrivals(params, n_jobs, per_day, figures["gpu_time"] / figures["gpu_job_num"], fleet.total_gpus)
    try:
        gpus, durations = sizes_and_durations(rng, n_jobs, cluster, single, max_gpus, cap, coupling)
    except InputError as exc:
        raise InputError(f"{params.file}: workload: {exc}") from None
    submits = bursty_arrivals(rng, n_jobs, per_day, batch_mean)
    if early > 0:
        cut = rng.random(n_jobs) < early
        durations = np.where(cut, np.maximum(np.floor(durations * rng.random(n_jobs)), 1.0), durations)
    workers = np.where(gpus > GPUS_PER_NODE, gpus // GPUS_PER_NODE, 1)
    tenants = draw_vcs(rng, gpus, durations, fleet) if vc_mode == "quota" else None
    return normalize(pd.DataFrame({
        "job_id": [f"{cluster}-{k}" for k in range(n_jobs)],
        "submit": submits,
        "duration": durations,
        "gpus": gpus.astype(float),
        "workers": workers,
        "tenant": tenants,
    }))
