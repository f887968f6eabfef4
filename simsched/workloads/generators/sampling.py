"""Sampling helpers shared by the calibrated generators (``philly``, ``pai``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

HOUR_S = 3600.0
WEEK_HOURS = 168


def sample_quantile_table(
    rng: np.random.Generator, levels: Sequence[float], values: Sequence[float], size: int
) -> np.ndarray:
    """Inverse-CDF draws from a quantile table, interpolated linearly in log(value).

    Log interpolation suits durations spanning seconds to weeks; ``levels``
    must run from 0 to 1 and ``values`` must be positive and non-decreasing.
    """
    u = rng.random(size)
    return np.exp(np.interp(u, np.asarray(levels, float), np.log(np.asarray(values, float))))


def arrivals_for_load(
    rng: np.random.Generator,
    work_gpu_s: float,
    capacity_gpus: float,
    load: float,
    size: int,
    hour_of_week_profile: Sequence[float] | None = None,
) -> np.ndarray:
    """Submit times whose offered load work / (capacity x span) equals ``load`` exactly.

    The span is fixed to work / (capacity x load); the first job submits at 0 and
    the last at the span. In between, the jobs are the points of a Poisson
    process conditioned on that span: normalised cumulative sums of unit
    exponentials, mapped through the cumulative hour-of-week intensity
    (hour 0 = Monday 00:00), so busy hours get proportionally more arrivals.
    """
    if size <= 1:
        return np.zeros(size)
    span = work_gpu_s / (capacity_gpus * load)
    steps = np.cumsum(rng.exponential(1.0, size=size))
    fraction = (steps - steps[0]) / (steps[-1] - steps[0])
    hours = int(np.ceil(span / HOUR_S)) + 1
    if hour_of_week_profile is None or hours > 10_000_000:
        return fraction * span
    profile = np.maximum(np.asarray(hour_of_week_profile, float), 1e-6)
    edges = np.arange(hours + 1) * HOUR_S
    intensity = np.concatenate(([0.0], np.cumsum(profile[np.arange(hours) % WEEK_HOURS] * HOUR_S)))
    total = np.interp(span, edges, intensity)
    submits = np.interp(fraction * total, intensity, edges)
    submits[-1] = span  # exact end despite float round-off
    return submits
