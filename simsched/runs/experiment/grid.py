"""The spec -> one :class:`RunTask` per run, in the fixed order results are reported in.

Order: sweep point, instance, seed, scheduler, EA stream. Each task carries
its fully resolved :class:`~simsched.config.scenario.Scenario` (small, picklable
data), so a worker process or a Ray node needs nothing but the task.

A run's ``run_id`` is a digest of what it runs (instance, scheduler label,
seed, EA stream, swept values and the resolved scenario's hash), so
``--resume`` recognises a finished run by its id, and a run whose scenario
changed since (an edited scenario file, another override) is run again.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from simsched.config.instances import instance_set as generate
from simsched.config.overrides import apply_overrides
from simsched.config.scenario import Scenario, load_scenario
from simsched.core.errors import InputError
from simsched.runs.experiment.spec import ExperimentSpec, SchedulerEntry
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.isolated import Limits, run_watched
from simsched.runs.single import is_user_code, simulation, user_code_file


@dataclass(frozen=True, slots=True)
class Source:
    """One instance of the grid: a scenario file or a generated paper instance."""

    scenario: str  # the scenario's name (a set's name for generated instances)
    instance: str  # label of this instance
    base: Scenario


@dataclass(frozen=True, slots=True)
class RunTask:
    """One simulation: identity columns of its result row and the resolved scenario."""

    run_id: str
    scenario: str
    instance: str
    scheduler: str
    seed: int
    ea_stream: int | None  # None: the scheduler draws from no EA stream
    point: tuple[tuple[str, Any], ...]  # swept key -> value of this grid point
    scenario_hash: str
    resolved: Scenario
    record: tuple[str, ...]
    metric: str = ""  # the spec's metric: a tenant's mean wait (avg_wait@<tenant>) is recorded only when named


def sources(spec: ExperimentSpec) -> list[Source]:
    """The instances of the spec: its scenario files, or the named paper instance set."""
    if spec.instances is None:
        stems = [path.stem for path in spec.scenarios]
        unique = len(set(stems)) == len(stems)  # else label by path relative to the spec
        return [Source(scenario.name, path.stem if unique else _relative(path, spec.path.resolve().parent),
                       scenario) for path, scenario in ((p, load_scenario(p)) for p in spec.scenarios)]
    wanted = spec.instances
    chosen = instance_set(wanted.name, wanted.seed)
    indices = list(range(len(chosen)))
    if wanted.count is not None:
        indices = indices[: wanted.count]
    if wanted.indices is not None:
        indices = list(wanted.indices)
    if max(indices) >= len(chosen) or (wanted.count or 0) > len(chosen):
        raise InputError(f"{spec.path}: instances: the {wanted.name} set has {len(chosen)} instances "
                         f"(indices 0..{len(chosen) - 1}), got " + (f"count = {wanted.count}" if wanted.count
                                                                   else f"indices = {list(wanted.indices)}"))
    label = f"paper-{wanted.name}-s{wanted.seed}"
    return [Source(label, chosen[i].name, chosen[i]) for i in indices]


@lru_cache(maxsize=8)
def instance_set(name: str, seed: int) -> tuple[Scenario, ...]:
    """The paper's named instance set (simsched.workloads.instances), cached per process."""
    return tuple(generate(name, seed))


def points(spec: ExperimentSpec) -> list[tuple[tuple[str, Any], ...]]:
    """Every combination of the sweep axes (one empty point when nothing is swept)."""
    keys = spec.sweep_keys
    return [tuple(zip(keys, combo)) for combo in itertools.product(*(values for _, values in spec.sweep))]


def seeds_of(spec: ExperimentSpec, scenario: Scenario) -> tuple[int, ...]:
    if isinstance(spec.seeds, int):
        return tuple(range(scenario.seed, scenario.seed + spec.seeds))
    return spec.seeds


def resolve(spec: ExperimentSpec, base: Scenario, entry: SchedulerEntry, seed: int,
            ea_stream: int | None, point: tuple[tuple[str, Any], ...]) -> Scenario:
    """The scenario one run simulates.

    The scheduler keeps the scenario's placement, backfill, allocation and other
    common keys; its policy options only when the policy is the scenario's own.
    Precedence, low to high: the scenario, [overrides], the scheduler entry's
    keys, the sweep point, the EA stream.
    """
    own = base.scheduler
    scheduler = replace(own, policy=entry.policy, options=dict(own.options) if entry.policy == own.policy else {})
    keys: dict[str, Any] = dict(spec.overrides)
    keys.update({f"scheduler.{k}": v for k, v in entry.at(dict(point))})
    keys.update(point)
    if ea_stream:  # stream 0 is the scheduler's default stream: no key, so older builds run it too
        keys["scheduler.ea_stream"] = ea_stream
    scenario = replace(base, scheduler=scheduler, seed=seed)
    return apply_overrides(scenario, keys, where=f"{spec.path}")


def plan(spec: ExperimentSpec) -> list[RunTask]:
    """Every run of the spec, in report order."""
    tasks = []
    spec_dir = spec.path.resolve().parent
    for point in points(spec):
        for source in sources(spec):
            for seed in seeds_of(spec, source.base):
                for entry in spec.schedulers:
                    for ea_stream in (spec.ea_streams if entry.uses_ea else (None,)):
                        resolved = resolve(spec, source.base, entry, seed, ea_stream, point)
                        digest = scenario_hash(resolved, spec_dir)
                        identity = [source.scenario, source.instance, entry.name, seed, ea_stream,
                                    [[k, _jsonable(v, spec_dir)] for k, v in point], digest]
                        run_id = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]
                        tasks.append(RunTask(run_id, source.scenario, source.instance, entry.name, seed,
                                             ea_stream, point, digest, resolved, spec.record, spec.metric))
    return tasks


#: (section, field, default) of scenario fields added after stores existed (see scenario_hash)
ADDED_LATER = (("scheduler", "reserve", "none"), ("scheduler", "reserve_depth", 1),
               ("scheduler", "quota", "none"), ("scheduler", "reclaim", "preempt"),
               ("workload", "tenant_mix", None), ("scheduler", "decide_on", "event"),
               ("scheduler", "max_wait_s", None), ("workload", "model_mix", None))
#: the same for each cluster's fields (tenants' quotas came later)
CLUSTER_ADDED_LATER = (("tenants", []), ("quota_schedule", None))
#: keys a section's ``known_keys`` list gained later (the list is validation metadata, kept in the hash
#: only as it was when the first stores were written)
KNOWN_KEYS_ADDED_LATER = {"scheduler": ("quota", "reclaim", "decide_on", "max_wait_s"),
                          "workload": ("tenant_mix", "model_mix")}


def scenario_hash(scenario: Scenario, relative_to: Path) -> str:
    """A digest of everything a resolved scenario simulates (paths relative to the spec's folder)."""
    data = _jsonable(replace(scenario, digest=""), relative_to)
    # where the scenario came from and the labels its errors use are not what it simulates;
    # base_dir is the working directory for generated instances (pseudo-path "<name>")
    data.pop("path", None)
    data["workload"].pop("params_file", None)
    data["workload"].pop("base_dir", None)
    # whether the file wrote `backfill` is validation metadata (a user policy refuses it), not what runs
    data.get("scheduler", {}).pop("backfill_given", None)
    # the speed basis is only how the catalog was chosen: its speeds are in gpu_types, which are hashed
    data.pop("speed_basis", None)
    # fields added after result stores were written count only away from their defaults, so a
    # store's run_ids stay those of the same runs (a hash change would re-run a whole experiment)
    for section, key, default in ADDED_LATER:
        if data.get(section, {}).get(key) == default:
            data[section].pop(key)
    for section, names in KNOWN_KEYS_ADDED_LATER.items():
        known = data.get(section, {}).get("known_keys")
        if isinstance(known, list):
            data[section]["known_keys"] = [k for k in known if k not in names]
    for cluster in data.get("clusters", []):
        for key, default in CLUSTER_ADDED_LATER:
            if cluster.get(key) == default:
                cluster.pop(key)
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _jsonable(value: Any, relative_to: Path) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _jsonable(getattr(value, f.name), relative_to) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): _jsonable(v, relative_to) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, relative_to) for v in value]
    if isinstance(value, Path):
        return _relative(value, relative_to)
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)  # 60 and 60.0 in a spec are the same run
    return value


def _relative(path: Path, base: Path) -> str:
    try:
        return Path(os.path.relpath(path.resolve(), base)).as_posix()
    except ValueError:  # another drive (Windows)
        return path.resolve().as_posix()


def _check_one(scenario: Scenario) -> None:
    simulation(scenario, jobs=1, whole_workload=False)


def check_runs(spec: ExperimentSpec, tasks: list[RunTask]) -> None:
    """Build every (grid point, scheduler) once on the first instance, so a bad generator option,
    policy option or policy file fails before any run, not in the middle of the experiment."""
    seen: set[tuple] = set()
    first = tasks[0].instance if tasks else None
    for task in tasks:
        key = (json.dumps(_jsonable(task.point, Path("."))), task.scheduler, task.ea_stream)
        if task.instance != first or key in seen:
            continue
        seen.add(key)
        try:
            if ISOLATION and is_user_code(task.resolved, None):  # its import and __init__ are user code
                run_watched(_check_one, (task.resolved,), who=f"{task.scheduler} (loading it)",
                            file=user_code_file(task.resolved, None), limits=Limits(60.0, 60.0), returns=type(None))
            else:
                simulation(task.resolved, jobs=1, whole_workload=False)
        except InputError as exc:
            where = ", ".join(f"{k} = {v!r}" for k, v in task.point)
            raise InputError(f"{spec.path}: scheduler {task.scheduler!r}" + (f" at {where}" if where else "")
                             + f": {exc}") from None
