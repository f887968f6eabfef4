"""The ``pai`` generator: PAI-like jobs (Alibaba PAI 2020, Weng et al., NSDI'22 "MLaaS in the Wild").

The trace's job and task tables could not be obtained (see
../shared/traces/alibaba-pai-2020/SOURCE.md), so nothing here is computed
from job rows. Where each number comes from:

- Fleet make-up, **from data**: ``pai_machine_spec`` (1,896 machines) has
  MISC 280x8, P100 798x2, T4 497x2, V100 104x8, V100M32 135x8 GPUs; the
  GPU-type request shares default to each type's share of those GPUs
  (:data:`PAI_TYPE_GPUS`). That demand follows capacity is an
  **assumption**.
- GPU request mix (:data:`GPU_REQUEST_MIX`), including the share of
  GPU-sharing jobs with a fractional ``plan_gpu`` (25 and 50 percent):
  **assumption**, shaped after the paper's qualitative finding that most
  task instances ask for at most one GPU, many only a fraction of one, and
  few for several GPUs. The exact shares are ours, not read from the paper.
- Duration quantiles (:data:`DURATION_QUANTILES`): **assumption**, shaped
  after the paper's report of a long-tailed run time from seconds to days
  (median in minutes). Not read from the paper's figures.
- Arrivals: a flat rate (**assumption**; the paper shows diurnal variation
  but no figure we could read off), placed so the offered load
  sum(g d) / (fleet GPUs x span) equals ``load`` exactly.

Each job gets a reference ``gpu_type``, drawn among the PAI types present in
the fleet whose largest node holds the job on one node (shares
renormalised); with none of them in the fleet, ``gpu_type`` stays empty.
Sharing jobs keep their fractional ``gpus`` (< 1). ``workers``, ``weight``
and ``deadline`` are left empty. Replace these tables when the job rows or
the paper's exact figures are at hand.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import Fleet
from simsched.workloads.generators.sampling import arrivals_for_load, sample_quantile_table
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize

#: GPUs per PAI GPU type in pai_machine_spec (data, see module docstring).
PAI_TYPE_GPUS: dict[str, int] = {"MISC": 2240, "P100": 1596, "V100M32": 1080, "T4": 994, "V100": 832}

#: GPUs requested per job (plan_gpu / 100) -> share of jobs. ASSUMPTION (see docstring).
GPU_REQUEST_MIX: dict[float, float] = {0.25: 0.10, 0.5: 0.35, 1.0: 0.45, 2.0: 0.05, 4.0: 0.03, 8.0: 0.02}

#: Job run time quantiles in seconds (level, value). ASSUMPTION (see docstring).
DURATION_QUANTILES: tuple[tuple[float, float], ...] = (
    (0.0, 10.0),
    (0.10, 60.0),
    (0.25, 300.0),
    (0.50, 1200.0),
    (0.75, 3600.0),
    (0.90, 14400.0),
    (0.95, 36000.0),
    (0.99, 172800.0),
    (1.0, 604800.0),
)


def request_mix(max_gpus: float) -> tuple[np.ndarray, np.ndarray]:
    """GPU requests up to ``max_gpus`` and their renormalised shares."""
    sizes = np.array(list(GPU_REQUEST_MIX), dtype=float)
    shares = np.array(list(GPU_REQUEST_MIX.values()), dtype=float)
    keep = sizes <= max_gpus
    return sizes[keep], shares[keep] / shares[keep].sum() if keep.any() else shares[keep]


def fleet_type_nodes(fleet: Fleet) -> dict[str, int]:
    """Largest node (GPUs) per PAI GPU type present in ``fleet``, in :data:`PAI_TYPE_GPUS` order."""
    largest: dict[str, int] = {}
    for node in fleet.nodes:
        if node.gpu_type in PAI_TYPE_GPUS:
            largest[node.gpu_type] = max(largest.get(node.gpu_type, 0), node.gpus)
    return {name: largest[name] for name in PAI_TYPE_GPUS if name in largest}


@generator("pai")
def generate_pai(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """PAI-like jobs against ``fleet`` at a target offered load."""
    n_jobs = params.get("jobs", int, 1000, min_value=1)
    limits.check_memory(f"{params.file}: {params.key('jobs')}", "jobs", n_jobs, limits.BYTES_PER_JOB)
    load = params.get("load", float, 0.9, min_value=0.0, exclusive_min=True, max_value=limits.MAX_LOAD)
    max_gpus = params.get("max_gpus", float, float(fleet.largest_node), min_value=0.0, exclusive_min=True)
    params.finish()
    if fleet.total_gpus == 0:
        raise InputError(f"{params.file}: the pai generator needs a fleet with GPUs")

    sizes, shares = request_mix(max_gpus)
    if len(sizes) == 0:
        raise params.error("max_gpus", f"keeps no PAI GPU request (smallest is 0.25), got {max_gpus}")
    gpus = sizes[rng.choice(len(sizes), size=n_jobs, p=shares)]
    levels, values = zip(*DURATION_QUANTILES)
    durations = np.maximum(np.round(sample_quantile_table(rng, levels, values, n_jobs)), 1.0)

    types = fleet_type_nodes(fleet)
    gpu_type = np.full(n_jobs, None, dtype=object)
    type_draw = rng.random(n_jobs)  # one uniform per job, mapped per size below
    for size in np.unique(gpus):
        fits = [name for name, node_gpus in types.items() if node_gpus >= size]
        if not fits:
            continue
        weights = np.array([PAI_TYPE_GPUS[name] for name in fits], dtype=float)
        cumulative = np.cumsum(weights / weights.sum())
        rows = gpus == size
        picks = np.minimum(np.searchsorted(cumulative, type_draw[rows], side="right"), len(fits) - 1)
        gpu_type[rows] = np.array(fits, dtype=object)[picks]

    work = float(np.sum(gpus * durations))
    submits = arrivals_for_load(rng, work, fleet.total_gpus, load, n_jobs)
    return normalize(
        pd.DataFrame(
            {
                "job_id": [f"pai-{k}" for k in range(n_jobs)],
                "submit": submits,
                "duration": durations,
                "gpus": gpus,
                "gpu_type": gpu_type,
            }
        )
    )
