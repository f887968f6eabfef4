"""The ``gavel`` generator: the job mix of Gavel's simulations (Narayanan et al., OSDI '20), issue 38.

Gavel's simulator draws each job (scheduler/utils.py ``generate_job`` at stanford-futuredata/gavel
@c4fa400, the "continuous-single" trace of its Fig. 8): a job template uniformly from its 26
(ResNet-18 at 5 batch sizes, ResNet-50 at 4, Transformer 5, LM 5, Recommendation 5, A3C, CycleGAN),
one GPU, and a run time on a V100 of 10^U(1.5, 3) minutes with probability 0.8, else 10^U(3, 4)
minutes (its "Philly distribution"); arrivals are a Poisson process. Here:

- each job gets ``model`` = its template's model (simsched/data/model_speeds.toml) and reference
  type V100, so it runs at that model's measured speed on every type. A template's batch size is not
  kept: the model's speed is the geometric mean over its batch sizes (Gavel's own matrix per batch
  size is finer);
- ``tenants`` names who the fair-share policies (simsched shares between tenants) share between:
  ``"model"`` (the default: a job's tenant is its model), ``"job"`` (each job its own tenant, as
  Gavel's LAS is max-min fair between jobs) or ``"none"``. simsched holds whole GPUs where Gavel
  time-slices them, so with one tenant per job and more jobs than GPUs every tenant's fair share is
  under one GPU and ``maxmin-hetero`` can only hand out leftovers in order (docs/comparison.md);
  per model, the shares are many GPUs and the allocation decides which model gets which type;
- ``jobs_per_hour`` (default 3.0) is the Poisson rate (Gavel's ``lam`` is its mean gap, 3600 /
  rate seconds); ``load = x`` instead spaces the jobs so that the offered load in V100 GPU-time is x.

The draws come in this order: templates, durations (a branch draw, then an exponent), arrivals.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.model import Fleet
from simsched.workloads.generators.sampling import arrivals_for_load
from simsched.workloads.registry import Params, generator
from simsched.workloads.table import normalize

#: Gavel's JobTable (scheduler/job_table.py): model -> number of templates (batch sizes) it has
TEMPLATES: dict[str, int] = {"resnet18": 5, "resnet50": 4, "transformer": 5, "lm": 5, "recommendation": 5,
                             "a3c": 1, "cyclegan": 1}
#: Gavel's _generate_duration: with probability 0.8 10^U(1.5, 3) minutes, else 10^U(3, 4)
SHORT_SHARE = 0.8
SHORT_EXPONENTS = (1.5, 3.0)
LONG_EXPONENTS = (3.0, 4.0)
DEFAULT_JOBS = 1000
DEFAULT_JOBS_PER_HOUR = 3.0
#: ``tenants``: whom a job belongs to
TENANTS = ("model", "job", "none")


@generator("gavel")
def generate_gavel(params: Params, rng: np.random.Generator, fleet: Fleet) -> pd.DataFrame:
    """Single-GPU jobs with Gavel's model mix and run times (see the module docstring)."""
    n_jobs = params.get("jobs", int, DEFAULT_JOBS, min_value=1)
    if params.has("load") and params.has("jobs_per_hour"):
        raise params.error("load", "give either load (offered load) or jobs_per_hour (arrival rate), not both")
    load = params.get("load", float, None, min_value=0.0, exclusive_min=True, max_value=limits.MAX_LOAD)
    per_hour = params.get("jobs_per_hour", float, DEFAULT_JOBS_PER_HOUR, min_value=0.0, exclusive_min=True,
                          max_value=1e6)
    tenants = params.get("tenants", str, "model", choices=TENANTS)
    params.finish()
    limits.check_memory(f"{params.file}: {params.key('jobs')}", "jobs", n_jobs, limits.BYTES_PER_JOB)
    if fleet.total_gpus == 0:
        raise InputError(f"{params.file}: the gavel generator needs a fleet with GPUs")
    names = list(TEMPLATES)
    weights = np.array([TEMPLATES[m] for m in names], dtype=float)
    models = np.array(names, dtype=object)[rng.choice(len(names), size=n_jobs, p=weights / weights.sum())]
    short = rng.random(n_jobs) < SHORT_SHARE
    low = np.where(short, SHORT_EXPONENTS[0], LONG_EXPONENTS[0])
    high = np.where(short, SHORT_EXPONENTS[1], LONG_EXPONENTS[1])
    durations = np.round(60.0 * 10.0 ** rng.uniform(low, high), 3)
    if load is None:
        submits = np.cumsum(rng.exponential(3600.0 / per_hour, size=n_jobs))
        submits = np.round(submits - submits[0], 3)
    else:
        submits = np.round(arrivals_for_load(rng, float(durations.sum()), fleet.total_gpus, load, n_jobs), 3)
    ids = [f"gavel-{k}" for k in range(n_jobs)]
    return normalize(pd.DataFrame({
        "job_id": ids,
        "submit": submits,
        "duration": durations,
        "gpus": np.ones(n_jobs),
        "workers": np.ones(n_jobs, dtype=int),
        "gpu_type": "V100",
        "tenant": {"model": models, "job": ids, "none": None}[tenants],
        "model": models,
    }))
