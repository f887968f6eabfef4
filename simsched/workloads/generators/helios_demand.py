"""The ``helios_demand`` generator: each VC's jobs replayed from a real cluster's hourly measurements.

Input: an hourly per-VC table (:mod:`simsched.workloads.vc_hourly`; Helios Earth's May 2020 is
``workloads/helios/earth/earth_vcs_hourly.csv``). Only the offered and run workload is read, per
size class (jobs of >= 8 GPUs, jobs of < 8): the GPUs that arrived in each hour (rises of running
+ pending GPUs), that started and that ended (rises and falls of running GPUs), and the running
GPUs of the first hour. Pending counts, pending GPUs, utilisation and queue times are never read
(docs/validation.md compares the run with them).

Model, per VC and class, hour by hour (a replay of the measured GPU flows as whole jobs):
- Sizes: with ``sizes_file`` (:func:`simsched.workloads.vc_hourly.read_vc_sizes`; Earth's is
  ``workloads/helios/earth/earth_vc_sizes.csv``), each VC's class draws the sizes seen starting
  in it, in proportion to how often; a VC and class with none seen, or without the file, draw
  Helios' law of the ``cluster`` (:func:`simsched.workloads.generators.helios.gpu_shares`:
  P(1) = ``single_gpu_share``, 2^k geometric) restricted to the class, {1, 2, 4} or {8, 16, 32,
  64}. Either way only sizes up to the VC's largest ``total_gpu`` (a class no size fits is
  dropped). A job above 8 GPUs has ceil(g / 8) workers (Helios nodes hold 8 GPUs).
- Arrivals: job sizes are drawn one after another; in hour h jobs arrive while the next job's
  size is at most twice the GPUs arrived and not yet given to a job (so the replayed arrivals
  follow the measured ones within half a job), submit times uniform in the hour (whole seconds).
  With ``warm_start`` (default) the first hour's running GPUs are made into jobs the same way,
  submitted and started at 0 (the cluster was busy).
- Run times: the measured starts and ends are matched to these jobs. Each hour's started GPUs
  start the newest replayed jobs not yet started (most Helios jobs start as they arrive; while
  the newest one's size is at most twice the GPUs still to start: whole jobs, rounded), and its
  ended GPUs end replayed running jobs in a random order (each drawn among all running jobs
  when the previous one has ended, and ended once the GPUs still to end reach half its size:
  drawing only among jobs that fit would pass over wide jobs and lengthen them). Start and end
  times are uniform in their hour (an end at least 1 s after its start). Whole jobs round: where
  at an hour's end the replay runs a whole job more than the hour's measured mean running GPUs
  of the class, a random job that fits in the excess ends (a job less: the newest waiting one
  starts), and the measured ends (starts) still to come pay for it. Last, the run times of the
  jobs that start and end within one hour are scaled, hour by hour, so that the hour's
  GPU-seconds match the measured mean running GPUs (:func:`fit_short_jobs`). A job's duration
  is its replayed end minus its replayed start: a measured run time, never its wait. A job
  still running when the table ends runs on for a duration drawn from the class's finished
  jobs. A job never started in the replay is dropped: measured demand that left without
  running (on Earth's busy VCs 9-36 % of the GPUs that arrived in jobs of >= 8 GPUs never
  started: jobs cancelled while pending; Helios cancels 13.6 % of Earth's GPU jobs).
- ``hours`` keeps the first N hours of the table (default all).

So each class's GPUs in use follow the measured running GPUs hour by hour when the simulated
scheduler starts jobs as the real one did; what the simulated scheduler does with the same
arrivals is the experiment. Each VC is a tenant named as in the table (give the cluster a dated
quota table with the same names, e.g. ``workloads/helios/earth/earth_vc_quotas.csv``). Draws go
VC by VC in table order, then class by class.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import Fleet
from simsched.workloads.generators.helios import GPUS_PER_NODE, HELIOS, SIZES, gpu_shares
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize
from simsched.workloads.vc_hourly import CLASSES, HOUR_S, VcHourly, read_vc_hourly, read_vc_sizes


def class_sizes(size_class: str, largest: float, single_gpu_share: float, cluster: str) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, probabilities) of a class (``"ge8"`` or ``"lt8"``) for a VC of ``largest`` GPUs."""
    sizes = np.array(SIZES)
    shares = gpu_shares(cluster, single_gpu_share)
    keep = (sizes >= GPUS_PER_NODE) if size_class == "ge8" else (sizes < GPUS_PER_NODE)
    keep &= sizes <= largest
    if not keep.any():
        return sizes[keep], shares[keep]
    return sizes[keep], shares[keep] / shares[keep].sum()


def vc_size_law(seen: tuple[np.ndarray, np.ndarray] | None, size_class: str, largest: float, single: float,
                cluster: str) -> tuple[np.ndarray, np.ndarray]:
    """(sizes, probabilities) of a VC's class: the sizes seen starting (``seen``: sizes, counts) up
    to ``largest`` GPUs, else the cluster's law (:func:`class_sizes`)."""
    if seen is not None:
        keep = seen[0] <= largest
        if keep.any():
            return seen[0][keep], seen[1][keep] / seen[1][keep].sum()
    return class_sizes(size_class, largest, single, cluster)


def replay_class(rng: np.random.Generator, table: VcHourly, vc: str, size_class: str, hours: int,
                 size_law: tuple[np.ndarray, np.ndarray], warm_start: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(submit, gpus, duration) of one VC's jobs of one class, sizes drawn from ``size_law``
    (sizes, probabilities); see the module docstring."""
    arrived = table.column(f"arrived_gpu_{size_class}", vc)[:hours]
    started = table.column(f"started_gpu_{size_class}", vc)[:hours]
    ended = table.column(f"ended_gpu_{size_class}", vc)[:hours]
    running_mean = table.column(f"running_gpu_{size_class}", vc)[:hours]
    sizes, probabilities = size_law
    empty = np.empty(0)
    if len(sizes) == 0:
        return empty, empty, empty
    submit: list[float] = []
    gpus: list[float] = []
    start: list[float] = []
    end: list[float] = []
    waiting: deque[int] = deque()
    running: list[int] = []

    def arrive(t: float, size: float) -> None:
        submit.append(t)
        gpus.append(size)
        start.append(math.nan)
        end.append(math.nan)
        waiting.append(len(submit) - 1)

    def draw_size() -> float:
        return float(sizes[min(int(np.searchsorted(cumulative, rng.random(), side="right")), len(sizes) - 1)])

    cumulative = np.cumsum(probabilities)
    next_size = draw_size()  # drawn before it may arrive, so wide jobs are not passed over
    to_arrive = to_start = to_end = 0.0
    if warm_start:
        to_arrive = float(table.column(f"running_gpu_{size_class}", vc)[0])
        while next_size <= 2 * to_arrive:
            arrive(0.0, next_size)
            to_arrive -= next_size
            next_size = draw_size()
        to_start = to_arrive  # what the warm start's whole jobs gave too much (< 0) or too little
        while waiting:
            job = waiting.popleft()
            start[job] = 0.0
            running.append(job)
    next_end: int | None = None  # drawn before it may end, likewise
    for hour in range(hours):
        t0 = hour * HOUR_S
        to_arrive += arrived[hour]
        times = []
        while next_size <= 2 * to_arrive:
            times.append((t0 + math.floor(rng.random() * HOUR_S), next_size))
            to_arrive -= next_size
            next_size = draw_size()
        for t, size in sorted(times):
            arrive(t, size)
        to_start += started[hour]
        while waiting and gpus[waiting[-1]] <= 2 * to_start:
            job = waiting.pop()  # the newest: most Helios jobs start as they arrive (median wait 0 s)
            start[job] = max(submit[job], t0 + math.floor(rng.random() * HOUR_S))
            to_start -= gpus[job]
            running.append(job)
        if not waiting:
            to_start = min(to_start, 0.0)  # no job to start: measured starts of jobs not replayed are dropped
        to_end += ended[hour]
        while running:
            if next_end is None:
                next_end = running[int(rng.integers(len(running)))]
            if gpus[next_end] > 2 * to_end:
                break
            end[next_end] = max(start[next_end] + 1.0, t0 + math.floor(rng.random() * HOUR_S))
            to_end -= gpus[next_end]
            running.remove(next_end)
            next_end = None
        if not running:
            to_end = min(to_end, 0.0)
        # whole jobs round: a wide job drawn to end next can hold back the ends of narrower ones
        # for days (the measured class then idle). Where the replay holds a whole job more (or
        # less) than the hour's measured mean running GPUs, end (start) one more; the measured
        # ends (starts) still to come pay for it.
        excess = sum(gpus[job] for job in running) - running_mean[hour]
        while True:
            fits = [job for job in running if gpus[job] <= excess]
            if not fits:
                break
            job = fits[int(rng.integers(len(fits)))]
            end[job] = max(start[job] + 1.0, t0 + math.floor(rng.random() * HOUR_S))
            to_end -= gpus[job]
            excess -= gpus[job]
            running.remove(job)
            if job == next_end:
                next_end = None
        while waiting and gpus[waiting[-1]] <= -excess:
            job = waiting.pop()
            start[job] = max(submit[job], t0 + math.floor(rng.random() * HOUR_S))
            to_start -= gpus[job]
            excess += gpus[job]
            running.append(job)
    fit_short_jobs(start, end, gpus, running_mean, hours)
    # a job never started in the replay is measured demand that left without running (cancelled
    # while pending): dropped; one still running at the end runs on for a finished job's duration
    finished = np.array([e - s for s, e in zip(start, end) if not math.isnan(e)])
    kept = [job for job in range(len(submit)) if not math.isnan(start[job])]
    durations = np.empty(len(kept))
    span = hours * HOUR_S
    for k, job in enumerate(kept):
        if math.isnan(end[job]):
            drawn = float(finished[rng.integers(len(finished))]) if len(finished) else span
            durations[k] = span - start[job] + drawn
        else:
            durations[k] = end[job] - start[job]
    return (np.array([submit[job] for job in kept]), np.array([gpus[job] for job in kept]),
            np.maximum(np.floor(durations), 1.0))


def fit_short_jobs(start: list[float], end: list[float], gpus: list[float], running_mean: np.ndarray,
                   hours: int) -> None:
    """Scale (in place) the run times of the jobs that start and end in the same hour so that each
    hour's GPU-seconds are the measured mean running GPUs x 3600 (as near as those jobs allow: each
    still ends within its hour, at least 1 s after its start). Their start and end times drawn
    uniformly in the hour would make a burst of short jobs (hundreds of 1-GPU jobs in an hour)
    hold far more GPUs at once than it did."""
    s = np.array(start, float)
    e = np.array(end, float)
    g = np.array(gpus, float)
    span = hours * HOUR_S
    done = ~np.isnan(s)
    e = np.where(done & np.isnan(e), span, e)
    first = np.floor(s / HOUR_S)
    short = done & (np.floor(np.maximum(e - 1e-6, s) / HOUR_S) == first) & (e < span)
    used = np.zeros(hours)
    for job in np.flatnonzero(done & ~short):
        a, b = s[job], min(e[job], span)
        if b <= a:
            continue
        h0, h1 = int(a // HOUR_S), int(min(math.ceil(b / HOUR_S), hours))
        edges = np.arange(h0, h1 + 1) * HOUR_S
        used[h0:h1] += g[job] * np.clip(np.minimum(b, edges[1:]) - np.maximum(a, edges[:-1]), 0.0, None)
    short_jobs = np.flatnonzero(short)
    if not len(short_jobs):
        return
    hour = first[short_jobs].astype(int)
    work = np.bincount(hour, weights=g[short_jobs] * (e[short_jobs] - s[short_jobs]), minlength=hours)
    budget = np.maximum(running_mean * HOUR_S - used, 0.0)
    factor = np.divide(budget, work, out=np.ones(hours), where=work > 0)
    for job, h in zip(short_jobs, hour):
        length = (e[job] - s[job]) * factor[h]
        end[job] = float(min(max(s[job] + math.floor(length), s[job] + 1.0), (h + 1) * HOUR_S))


@generator("helios_demand")
def generate_helios_demand(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """Each VC's jobs from its measured hourly demand (see the module docstring)."""
    path = params.get_path("demand_file", params.base_dir, None)  # required: checked after finish(), so an
    # unknown key is reported first
    cluster = params.get("cluster", str, "earth", choices=tuple(HELIOS))
    single = params.get("single_gpu_share", float, 0.6, min_value=0.5, max_value=0.95)
    sizes_path = params.get_path("sizes_file", params.base_dir, None)
    warm_start = params.get("warm_start", bool, True)
    hours_wanted = params.get("hours", int, None, min_value=1)
    params.finish()
    if path is None:
        raise params.error("demand_file", "is required: an hourly per-VC table, e.g. "
                                          "workloads/helios/earth/earth_vcs_hourly.csv")
    if fleet.total_gpus == 0:
        raise InputError(f"{params.file}: the helios_demand generator needs a fleet with GPUs")
    table = read_vc_hourly(path)
    seen = read_vc_sizes(sizes_path) if sizes_path is not None else {}
    hours = table.hours if hours_wanted is None else min(hours_wanted, table.hours)
    parts = []
    for vc in table.vcs:
        for size_class in CLASSES:
            largest = float(table.column("total_gpu", vc)[:hours].max())
            law = vc_size_law(seen.get((vc, size_class)), size_class, largest, single, cluster)
            submit, gpus, durations = replay_class(rng, table, vc, size_class, hours, law, warm_start)
            parts.append(pd.DataFrame({"submit": submit, "gpus": gpus, "duration": durations, "tenant": vc}))
    jobs = pd.concat(parts, ignore_index=True)
    if not len(jobs):
        raise InputError(f"{path}: no VC offered any GPUs in the first {hours} hours")
    limits.check_memory(f"{params.file}: {params.key('demand_file')}", "jobs", len(jobs), limits.BYTES_PER_JOB)
    jobs = jobs.sort_values("submit", kind="stable").reset_index(drop=True)
    gpus = jobs["gpus"].to_numpy(float)
    return normalize(pd.DataFrame({
        "job_id": [f"{vc}-{k}" for k, vc in enumerate(jobs["tenant"])],
        "submit": jobs["submit"].to_numpy(float),
        "duration": jobs["duration"].to_numpy(float),
        "gpus": gpus,
        "workers": np.where(gpus > GPUS_PER_NODE, np.ceil(gpus / GPUS_PER_NODE), 1).astype(int),
        "tenant": jobs["tenant"].to_numpy(object),
    }))
