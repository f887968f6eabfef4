"""Workloads: trace readers, generators and the filters that turn them into jobs (SPEC §5)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from simsched.errors import InputError
from simsched.model import Fleet
from simsched.workloads import transforms
from simsched.workloads.registry import CLUSTER_BUILDERS, GENERATORS, READERS, Params, ReadContext
from simsched.workloads.table import SkipReport


def readers_registry() -> dict[str, Callable]:
    import simsched.workloads.csv_reader  # noqa: F401  (registers "csv")
    import simsched.workloads.readers  # noqa: F401

    return READERS


def generators_registry() -> dict[str, Callable]:
    import simsched.workloads.generators  # noqa: F401
    import simsched.workloads.simple  # noqa: F401

    return GENERATORS


def builders_registry() -> dict[str, Callable]:
    import simsched.workloads.machines  # noqa: F401

    return CLUSTER_BUILDERS


def load_jobs(spec, fleet: Fleet, seed: int) -> tuple[pd.DataFrame, SkipReport]:
    """Read or generate the workload of a scenario, then filter and fill fields.

    Order: read/generate -> cluster (VC) selection -> time window -> load scaling
    -> ``jobs_limit`` (first N by submit) -> field synthesis -> reference GPU type.
    """
    from simsched.seeding import stream

    ctx = ReadContext(strict=spec.strict)
    params = Params(spec.params, "workload", spec.params_file)
    params.allow(*spec.known_keys)  # the scenario's own workload keys, so "valid keys" lists them
    if spec.source == "synthetic":
        df = generators_registry()[spec.generator](params, stream(seed, "workload"), fleet)
    else:
        if not spec.path.is_file() and not spec.path.is_dir():
            hint = f"; {spec.download_hint}" if spec.download_hint else ""
            raise InputError(f"{spec.params_file}: workload.path: trace file {spec.path} not found{hint}")
        source = "csv" if spec.source == "csv" else spec.source
        df = readers_registry()[source](spec.path, params, ctx)
    params.finish()

    def apply(key: str, fn: Callable, *args) -> pd.DataFrame:
        try:
            return fn(df, *args)
        except InputError as exc:
            raise InputError(f"{spec.params_file}: workload.{key}: {exc}") from None

    if spec.clusters is not None:
        df = apply("clusters", transforms.select_clusters, spec.clusters)
    if spec.time_window is not None:
        df = apply("time_window", transforms.time_window, *spec.time_window)
    if spec.load is not None:
        df = apply("load", transforms.scale_to_load, fleet.total_gpus, spec.load)
    if spec.jobs_limit is not None:
        df = transforms.limit_jobs(df, spec.jobs_limit)
    if spec.synthesize_deadline or spec.synthesize_weight:
        filled = transforms.synthesize_fields(df, stream(seed, "fields"), deadline_slack=spec.deadline_slack,
                                              weight_range=spec.weight_range)
        if spec.synthesize_deadline:
            df = df.assign(deadline=filled["deadline"])
        if spec.synthesize_weight:
            df = df.assign(weight=filled["weight"])
    if spec.reference_gpu_type is not None:
        df = df.assign(gpu_type=df["gpu_type"].where(df["gpu_type"].notna(), spec.reference_gpu_type))
    if len(df) and np.isnan(df["submit"].to_numpy(float)).any():
        raise InputError(f"{spec.params_file}: workload produced jobs without a submit time")
    return df.reset_index(drop=True), ctx.report


def untyped_warning(table: pd.DataFrame, heterogeneous: bool) -> str | None:
    """With heterogeneous placement, jobs without a GPU type run at one speed on every type:
    say so (once per run), naming the key that fixes it."""
    if not heterogeneous or not len(table):
        return None
    untyped = int(table["gpu_type"].isna().sum())
    if not untyped:
        return None
    return (f"heterogeneous = true but {untyped:,} of {len(table):,} jobs have no GPU type: they run at the "
            "same speed and memory on every type; set workload.reference_gpu_type to the type their "
            "durations were measured on")
