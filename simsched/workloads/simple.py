"""The ``simple`` synthetic generator: a seeded, easy-to-reason-about workload for tests and teaching."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.model import Fleet
from simsched.workloads.csv_reader import MAX_SECONDS
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize


@generator("simple")
def generate_simple(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """``jobs`` jobs with Poisson arrivals, exponential integer durations and a GPU-count mix.

    Options: ``jobs`` (100), ``gpus`` ([1, 2, 4, 8]) with ``gpu_weights`` (uniform),
    ``mean_duration_s`` (3600), and ``load`` (0.9): the arrival rate that offers
    that fraction of the fleet's GPUs, rate = load x GPUs / E[g x d].
    """
    jobs = params.get("jobs", int, 100, min_value=1)
    limits.check_memory(f"{params.file}: {params.key('jobs')}", "jobs", jobs, limits.BYTES_PER_JOB)
    sizes = params.get_list("gpus", int, [1, 2, 4, 8])
    if not sizes or min(sizes) < 1:
        raise params.error("gpus", f"must be a non-empty list of integers >= 1, got {sizes!r}")
    weights = params.get_list("gpu_weights", (int, float), [1.0] * len(sizes))
    if len(weights) != len(sizes) or min(weights) < 0 or not 0 < sum(weights) < math.inf:
        # each weight finite (get_list), and their sum too: [1e308, 1e308] sums to inf
        raise params.error("gpu_weights", "must give one weight >= 0 per entry of gpus (not all 0, with a "
                                          f"finite sum), got {weights!r}")
    mean_duration = params.get("mean_duration_s", float, 3600.0, min_value=1, max_value=MAX_SECONDS)
    load = params.get("load", float, 0.9, min_value=0, exclusive_min=True, max_value=limits.MAX_LOAD)
    params.finish()
    p = np.asarray(weights, float) / sum(weights)
    gpus = rng.choice(np.asarray(sizes, float), size=jobs, p=p)
    duration = np.maximum(1.0, np.floor(rng.exponential(mean_duration, size=jobs)))
    rate = load * max(fleet.total_gpus, 1) / (float(np.dot(p, sizes)) * mean_duration)
    submit = np.floor(np.cumsum(rng.exponential(1.0 / rate, size=jobs)))
    submit -= submit[0]
    return normalize(pd.DataFrame({
        "job_id": [str(i) for i in range(jobs)],
        "submit": submit,
        "duration": duration,
        "gpus": gpus,
    }))
