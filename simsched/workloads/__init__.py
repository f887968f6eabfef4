"""Workloads: trace readers, generators and the filters that turn them into jobs (SPEC §5)."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable

import numpy as np
import pandas as pd

from simsched.core.errors import InputError
from simsched.core.inputs import missing_or_irregular
from simsched.core.model import Fleet
from simsched.core.seeding import stream
from simsched.workloads import (  # noqa: F401  each module registers its names
    csv_reader,
    generators,
    machines,
    readers,
    simple,
    transforms,
)
from simsched.workloads.csv_reader import MAX_GPUS, MAX_SECONDS, MIN_GPUS
from simsched.workloads.registry import CLUSTER_BUILDERS, GENERATORS, READERS, Params, ReadContext
from simsched.workloads.table import SkipReport


def readers_registry() -> dict[str, Callable]:
    return READERS


def generators_registry() -> dict[str, Callable]:
    return GENERATORS


def builders_registry() -> dict[str, Callable]:
    return CLUSTER_BUILDERS


def _check_times(df: pd.DataFrame, spec) -> None:
    """Every job time finite and within range, whatever reader, generator or filter made it
    (the engine then never meets NaN or overflowing times)."""
    for column, required in (("submit", True), ("duration", True), ("deadline", False)):
        values = df[column].to_numpy(float)
        bad = (np.isnan(values) if required else np.zeros(len(values), bool)) | (np.abs(values) > MAX_SECONDS) \
            | np.isinf(values)
        if bad.any():
            i = int(np.argmax(bad))
            raise InputError(f"{spec.params_file}: workload produced job {df['job_id'].iloc[i]!r} with {column} = "
                             f"{values[i]:g}; times must be finite and at most {MAX_SECONDS:g} s "
                             "(check the workload's parameters)")


def _check_gpus(df: pd.DataFrame, spec) -> None:
    """GPU demands the engine can count (whole milli-GPUs), whatever made the table."""
    values = df["gpus"].to_numpy(float)
    bad = ~np.isfinite(values) | (values < MIN_GPUS) | (values > MAX_GPUS)
    if bad.any():
        i = int(np.argmax(bad))
        raise InputError(f"{spec.params_file}: workload produced job {df['job_id'].iloc[i]!r} with gpus = "
                         f"{values[i]:g}; valid: {MIN_GPUS:g} .. {MAX_GPUS:g}")


def _why_empty(spec, report: SkipReport) -> str:
    if report.skipped:
        reasons = ", ".join(f"{n} {reason}" for reason, n in report.counts.most_common())
        return f"all {report.skipped} rows skipped: {reasons}"
    if spec.source == "synthetic":
        return f"generator {spec.generator!r} produced none"
    return f"{spec.path} has no job rows"


def load_jobs(spec, fleet: Fleet, seed: int) -> tuple[pd.DataFrame, SkipReport]:
    """Read or generate the workload of a scenario, then filter and fill fields.

    Order: read/generate -> cluster (VC) selection -> time window -> load scaling
    -> ``jobs_limit`` (first N by submit) -> field synthesis -> tenant mix -> reference GPU type.
    """
    ctx = ReadContext(strict=spec.strict, clusters=tuple(fleet.cluster_names), gpu_types=tuple(fleet.gpu_types))
    params = Params(spec.params, "workload", spec.params_file, spec.base_dir)
    params.allow(*spec.known_keys)  # the scenario's own workload keys, so "valid keys" lists them
    if spec.source == "synthetic":
        df = generators_registry()[spec.generator](params, stream(seed, "workload"), fleet)
    else:
        if not spec.path.is_file() and not spec.path.is_dir():
            hint = f"; {spec.download_hint}" if spec.download_hint else ""
            raise InputError(f"{spec.params_file}: workload.path: trace file {spec.path} {missing_or_irregular(spec.path)}{hint}")
        source = "csv" if spec.source == "csv" else spec.source
        try:
            df = readers_registry()[source](spec.path, params, ctx)
        except UnicodeDecodeError:
            raise InputError(f"{spec.path}: not a UTF-8 text file; save it as UTF-8") from None
        except csv.Error as exc:  # e.g. a field over the csv module's 128 KB limit
            raise InputError(f"{spec.path}: not a readable CSV: {exc}") from None
        except (json.JSONDecodeError, RecursionError) as exc:
            raise InputError(f"{spec.path}: not readable JSON: {str(exc) or type(exc).__name__}") from None
        except OSError as exc:
            raise InputError(f"{getattr(exc, 'filename', None) or spec.path}: cannot read the file "
                             f"({exc.strerror or exc})") from None
    params.finish()
    if not len(df):
        raise InputError(f"{spec.params_file}: workload has no jobs: {_why_empty(spec, ctx.report)}")

    def apply(key: str, fn: Callable, *args) -> pd.DataFrame:
        try:
            out = fn(df, *args)
        except InputError as exc:
            raise InputError(f"{spec.params_file}: workload.{key}: {exc}") from None
        if not len(out):  # a run with zero jobs is an error that says why
            span = f"{df['submit'].min():g} .. {df['submit'].max():g} s"
            raise InputError(f"{spec.params_file}: workload.{key}: keeps none of the {len(df)} jobs "
                             f"(their submit times span {span})")
        return out

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
    if spec.tenant_mix is not None:
        df = transforms.assign_tenants(df, spec.tenant_mix, stream(seed, "tenants"))
    if spec.model_mix is not None:
        df = transforms.assign_models(df, spec.model_mix, stream(seed, "models"))
    if spec.reference_gpu_type is not None:
        df = df.assign(gpu_type=df["gpu_type"].where(df["gpu_type"].notna(), spec.reference_gpu_type))
    _check_times(df, spec)
    _check_gpus(df, spec)
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
