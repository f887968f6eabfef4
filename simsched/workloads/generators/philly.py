"""The ``philly`` generator: Philly-like jobs from published figures, never trace rows.

The figures live in ``simsched/data/philly_stats.json``, computed by
``tools/calibrate/philly_stats.py`` from the 82,247-job per-job extraction of
the Philly trace (Jeon et al., ATC'19; Pollux's ``philly.csv``): GPU-count
mix, duration quantiles per GPU-count bucket, VC job shares and an
hour-of-week arrival profile.

Draws, in this order: GPU counts from the mix (sizes above ``max_gpus``
dropped, shares renormalised); durations from their bucket's quantile table
(log-linear inverse CDF, whole seconds, at least 1 s); VCs from the top
``vcs`` VC shares; submit times by :func:`arrivals_for_load`, so the offered
load sum(g d) / (fleet GPUs x span) equals ``load`` exactly and busy hours of
the week get more arrivals (``diurnal = false`` for a flat rate). Choices:
VC is drawn independently of size and duration; ``workers``, ``weight`` and
``deadline`` are left empty (the SPEC §2 worker rule and field synthesis
fill them); the default ``max_gpus`` is the GPUs of the largest cluster,
since a job never spans clusters. ``gpu_type`` is the type the figures were
measured on, Philly's 24 GB GPUs (:data:`CALIBRATED_TYPE`), when the fleet
has that type (so heterogeneous placement rescales speed and memory); on a
fleet without it the jobs stay untyped (they run anywhere at one speed).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import Fleet
from simsched.workloads.generators.sampling import arrivals_for_load, sample_quantile_table
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize

#: the GPU type the Philly figures were measured on (the 8 x 24 GB machines hold most GPUs)
CALIBRATED_TYPE = "8x24"


@cache
def philly_stats() -> dict:
    """The shipped Philly figures (read once)."""
    text = resources.files("simsched").joinpath("data/philly_stats.json").read_text("utf-8")
    return json.loads(text)


def gpu_mix(max_gpus: float) -> tuple[np.ndarray, np.ndarray]:
    """GPU sizes up to ``max_gpus`` and their renormalised shares."""
    mix = philly_stats()["gpu_mix"]
    sizes = np.array([int(s) for s in mix], dtype=int)
    shares = np.array(list(mix.values()), dtype=float)
    keep = sizes <= max_gpus
    return sizes[keep], shares[keep] / shares[keep].sum() if keep.any() else shares[keep]


@generator("philly")
def generate_philly(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """Philly-like jobs against ``fleet`` at a target offered load."""
    stats = philly_stats()
    n_jobs = params.get("jobs", int, 1000, min_value=1)
    limits.check_memory(f"{params.file}: {params.key('jobs')}", "jobs", n_jobs, limits.BYTES_PER_JOB)
    load = params.get("load", float, 0.9, min_value=0.0, exclusive_min=True, max_value=limits.MAX_LOAD)
    n_vcs = params.get("vcs", int, 0, min_value=0, max_value=len(stats["vc_shares"]))
    largest_cluster = max((c.total_gpus for c in fleet.clusters), default=0)
    max_gpus = params.get("max_gpus", int, largest_cluster, min_value=1)
    diurnal = params.get("diurnal", bool, True)
    params.finish()
    if fleet.total_gpus == 0:
        raise InputError(f"{params.file}: the philly generator needs a fleet with GPUs")

    sizes, shares = gpu_mix(max_gpus)
    if len(sizes) == 0:
        raise params.error("max_gpus", f"keeps no Philly job size (smallest is 1 GPU), got {max_gpus}")
    gpus = sizes[rng.choice(len(sizes), size=n_jobs, p=shares)]

    durations = np.empty(n_jobs)
    levels = stats["quantile_levels"]
    for bucket in stats["duration_quantiles"].values():
        # A full-length draw per bucket keeps each bucket's stream independent of the sizes.
        draw = sample_quantile_table(rng, levels, bucket["quantiles_s"], n_jobs)
        in_bucket = (gpus >= bucket["min_gpus"]) & (gpus <= bucket["max_gpus"])
        durations[in_bucket] = draw[in_bucket]
    durations = np.maximum(np.round(durations), 1.0)

    if n_vcs:
        names = list(stats["vc_shares"])[:n_vcs]
        vc_shares = np.array([stats["vc_shares"][v] for v in names])
        home = np.array(names, dtype=object)[rng.choice(n_vcs, size=n_jobs, p=vc_shares / vc_shares.sum())]
    else:
        home = None

    profile = stats["hour_of_week_profile"] if diurnal else None
    work = float(np.sum(gpus * durations))
    submits = arrivals_for_load(rng, work, fleet.total_gpus, load, n_jobs, profile)
    return normalize(
        pd.DataFrame(
            {
                "job_id": [f"philly-{k}" for k in range(n_jobs)],
                "submit": submits,
                "duration": durations,
                "gpus": gpus.astype(float),
                "home_cluster": home,
                "gpu_type": CALIBRATED_TYPE if CALIBRATED_TYPE in fleet.type_names() else None,
            }
        )
    )
