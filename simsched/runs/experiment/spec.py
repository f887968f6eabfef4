"""Experiment spec TOML -> validated, frozen :class:`ExperimentSpec`.

A spec is a grid (docs/experiment.md)::

    name = "fig4"
    scenarios = ["../../scenarios/paper_multicluster.toml"]   # files or example names, or:
    instances = { set = "test", seed = 0, count = 30 }         # a named paper instance set
    schedulers = ["mct-gp", { name = "evo-gp/fixed", policy = "evo-gp", migrate = false },
                  { name = "gp/w", policy = "mct-gp", priority = "f_w{objective.w}.json" }]  # per sweep point
    seeds = 15               # seeds seed .. seed+14 of each scenario, or an explicit list
    ea_streams = 1           # EA random streams 0 .. k-1 (evo-gp only), or a list
    headline = "evo-gp"      # the method the tests compare against each baseline
    metric = "objective"     # what ranks, CIs and tests are computed on
    record = ["decisions"]   # extra per-run records: "decisions" (decisions.csv), "jobs" (jobs/)

    [overrides]              # any scenario key, dotted; applied to every run
    "workload.jobs_per_node" = 2
    [sweep]                  # axes: every combination of these values is a grid point
    "scheduler.restart_penalty_s" = [0, 60, 600]

    [preset.quick]           # --preset quick: these keys are deep-merged over the spec
    seeds = 2
    instances = { count = 3 }

Keys are checked like a scenario's: a bad key or value raises one
:class:`~simsched.core.errors.InputError` naming the file, the key and what is valid.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simsched.config.catalog import policy_names
from simsched.config.resolve import scenario_path
from simsched.config.scenario import read_toml
from simsched.core.errors import InputError
from simsched.core.metrics import (
    FAIRNESS_METRICS,
    STARVATION_METRICS,
    SUMMARY_METRICS,
    TENANT_WAIT,
    metric_name,
)
from simsched.core.params import Params, check_name

INSTANCE_SETS = ("train", "validation", "test")
RECORDS = ("decisions", "jobs")
#: metrics a spec may rank and test on (summary keys, lower or higher better as in SUMMARY_METRICS)
class _Metrics(dict):
    """metric -> higher is better; a tenant's mean wait ``avg_wait@<tenant>`` is one too (lower better)."""

    def __missing__(self, key: str) -> bool:
        if isinstance(key, str) and key.startswith(TENANT_WAIT) and len(key) > len(TENANT_WAIT):
            return False
        raise KeyError(key)


METRICS: dict[str, bool] = _Metrics({key: higher for key, _, higher, _ in
                                     SUMMARY_METRICS + STARVATION_METRICS + FAIRNESS_METRICS})
#: the sections of a scenario that overrides may change
OVERRIDE_SECTIONS = ("workload", "scheduler", "objective")
#: ``{objective.w}`` in a scheduler entry's text value: that grid point's value of the swept key
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class SchedulerEntry:
    """One scheduler of the grid: a label, a policy and its ``[scheduler]`` keys."""

    name: str
    policy: str
    options: tuple[tuple[str, Any], ...] = ()  # scheduler.* keys, sorted by key

    def at(self, point: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
        """The entry's ``[scheduler]`` keys at one grid point: every ``{swept.key}`` in a text value
        replaced by that point's value of the key (``0.5``; whole numbers without ``.0``)."""
        return tuple((key, PLACEHOLDER.sub(lambda m: point_text(point[m.group(1)]), value)
                      if isinstance(value, str) else value) for key, value in self.options)

    @property
    def uses_ea(self) -> bool:
        """Whether the scheduler draws from an EA random stream (the ``ea_streams`` axis)."""
        return self.policy == "evo-gp"


@dataclass(frozen=True, slots=True)
class InstanceSet:
    """A named set of the paper's generated instances (train 50, validation 10, test 30)."""

    name: str
    seed: int
    count: int | None  # the first ``count`` instances; None = all
    indices: tuple[int, ...] | None = None  # these instances of the set (0-based), instead of count


@dataclass(frozen=True, slots=True)
class ExperimentSpec:
    path: Path
    name: str
    description: str
    preset: str | None
    scenarios: tuple[Path, ...]  # empty when ``instances`` is given
    instances: InstanceSet | None
    schedulers: tuple[SchedulerEntry, ...]
    seeds: int | tuple[int, ...]  # a count (from each scenario's seed) or explicit seeds
    ea_streams: tuple[int, ...]
    headline: str
    metric: str
    record: tuple[str, ...]
    overrides: tuple[tuple[str, Any], ...]  # dotted key -> value, sorted
    sweep: tuple[tuple[str, tuple[Any, ...]], ...]  # dotted key -> values, in spec order

    @property
    def sweep_keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.sweep)

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(entry.name for entry in self.schedulers)

    @property
    def higher_is_better(self) -> bool:
        return METRICS[self.metric]


def point_text(value: Any) -> str:
    """A swept value as it appears in a scheduler key's text: ``0.5``, ``1`` (for 1 or 1.0), ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value == int(value):
        return str(int(value))
    return str(value)


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` over ``base``: tables merge key by key, anything else is replaced."""
    out = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"workload": {"load": 1}}`` and ``{"workload.load": 1}`` both give ``{"workload.load": 1}``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


#: runs a spec may plan before ``--max-runs`` must raise it (docs/outputs.md): the grid is counted
#: from the axes' sizes before anything is expanded, so a bomb of 3 axes x 300 values is refused at once
MAX_RUNS = 1_000_000
#: instances in each named set (simsched.workloads.instances)
SET_SIZES = {"train": 50, "validation": 10, "test": 30}


def load_spec(path: str | Path, preset: str | None = None, max_runs: int = MAX_RUNS) -> ExperimentSpec:
    """Read and validate an experiment spec, with ``preset`` (a ``[preset.NAME]`` table) merged in.

    A grid of more than ``max_runs`` runs (counted from the axes, before expansion) is refused."""
    path = Path(path)
    raw = read_toml(path)
    presets = raw.pop("preset", {})
    if not isinstance(presets, dict) or not all(isinstance(v, dict) for v in presets.values()):
        raise InputError(f"{path}: preset: must be tables [preset.NAME] of spec keys")
    if preset is not None:
        if preset not in presets:
            valid = ", ".join(sorted(presets)) or "none defined"
            raise InputError(f"{path}: --preset {preset!r}: no [preset.{preset}] table; valid: {valid}")
        if "preset" in presets[preset]:
            raise InputError(f"{path}: preset.{preset}.preset: a preset cannot define presets")
        raw = deep_merge(raw, presets[preset])
    where = f"{path} (preset {preset})" if preset else str(path)
    top = Params(raw, "", where)
    name = top.get("name", str, path.stem)
    description = top.get("description", str, "")
    base = path.resolve().parent
    scenarios, instances = _sources(top, base)
    schedulers = _schedulers(top)
    seeds = _int_axis(top, "seeds", 1)
    ea = _int_axis(top, "ea_streams", 1)
    names = [entry.name for entry in schedulers]
    headline = top.get("headline", str, names[0], choices=names)
    metric = metric_name(top.get("metric", str, "objective"), f"{where}: metric")  # compare's grammar too
    record = top.get_list("record", str, [])
    for item in record:
        if item not in RECORDS:
            raise top.error("record", f"unknown record {item!r}; valid: {', '.join(RECORDS)}")
    overrides = flatten(top.get("overrides", dict, {}))
    for key in overrides:
        _check_dotted(top, "overrides", key)
    sweep_raw = flatten(top.get("sweep", dict, {}))
    sweep = []
    for key, values in sweep_raw.items():
        _check_dotted(top, "sweep", key)
        if not isinstance(values, list) or not values:
            raise top.error(f"sweep.{key}", f"must be a non-empty list of values, got {values!r}")
        if len({repr(v) for v in values}) != len(values):
            raise top.error(f"sweep.{key}", f"a value is listed twice: {values!r}")
        if key in overrides:
            raise top.error(f"sweep.{key}", "is also in [overrides]; keep it in one of the two")
        sweep.append((key, tuple(values)))
    _check_scheduler_decides(top, schedulers, "overrides", list(overrides))
    _check_scheduler_decides(top, schedulers, "sweep", [key for key, _ in sweep])
    _check_grid_size(top, scenarios, instances, schedulers, seeds, ea, sweep, max_runs)
    ea_streams = tuple(range(ea)) if isinstance(ea, int) else ea
    _check_placeholders(top, schedulers, dict(sweep))
    top.finish()
    return ExperimentSpec(
        path=path, name=name, description=description, preset=preset, scenarios=scenarios,
        instances=instances, schedulers=schedulers, seeds=seeds, ea_streams=ea_streams, headline=headline,
        metric=metric, record=tuple(dict.fromkeys(record)), overrides=tuple(sorted(overrides.items())),
        sweep=tuple(sweep),
    )


def _sources(top: Params, base: Path) -> tuple[tuple[Path, ...], InstanceSet | None]:
    if top.has("scenarios") == top.has("instances"):
        raise top.error("scenarios", "give exactly one of scenarios = [files] or "
                        "instances = { set = \"test\", seed = 0 } (sets: " + ", ".join(INSTANCE_SETS) + ")")
    if top.has("scenarios"):
        files = top.get_list("scenarios", str)
        if not files:
            raise top.error("scenarios", "must list at least one scenario file")
        paths = tuple(_scenario_file(top, f, base) for f in files)
        if len(set(paths)) != len(paths):
            raise top.error("scenarios", "a scenario file is listed twice")
        return paths, None
    table = top.sub("instances")
    indices = table.get_list("indices", int, None)
    instances = InstanceSet(
        table.get("set", str, choices=INSTANCE_SETS),
        table.get("seed", int, 0, min_value=0),
        table.get("count", int, None, min_value=1),
        None if indices is None else tuple(indices),
    )
    if indices is not None:
        if instances.count is not None:
            raise table.error("indices", "give count (the first N instances) or indices, not both")
        if not indices or len(set(indices)) != len(indices) or min(indices) < 0:
            raise table.error("indices", f"must be distinct integers >= 0, got {indices!r}")
    table.finish()
    return (), instances


def _scenario_file(top: Params, raw: str, base: Path) -> Path:
    """A ``scenarios`` entry: a file relative to the spec's folder (or absolute), else a shipped
    example's name (``philly_hetero``); otherwise one line naming both places looked in."""
    try:
        path = scenario_path(raw, base=base, base_name="relative to the spec's folder")
    except InputError as exc:
        raise top.error("scenarios", str(exc)) from None
    if not path.is_file():
        raise top.error("scenarios", f"scenario file {raw!r} not found (looked in {path.parent})")
    return path


def _schedulers(top: Params) -> tuple[SchedulerEntry, ...]:
    raw = top.get("schedulers", list)
    if not raw:
        raise top.error("schedulers", "must list at least one scheduler")
    valid = policy_names()
    entries = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            item = {"policy": item}
        if not isinstance(item, dict):
            raise top.error("schedulers", f"item {i} must be a policy name or a table "
                            f"{{ name = ..., policy = ..., <scheduler keys> }}, got {item!r}")
        p = Params(item, f"schedulers[{i}]", top.file)
        policy = p.get("policy", str)
        if ":" not in policy and policy not in valid:
            raise p.error("policy", f"unknown policy {policy!r}; valid: {', '.join(valid)}, "
                          "or 'my_policy.py:MyPolicy'")
        name = p.get("name", str, policy)
        check_name(name, lambda message, p=p: p.error("name" if p.has("name") else "policy", message))  # a label
        options = p.rest(("name", "policy"))
        for key, value in options.items():
            if isinstance(value, dict):
                raise p.error(key, "a scheduler key must be a value, not a table")
        p.finish()
        entries.append(SchedulerEntry(name, policy, tuple(sorted(options.items()))))
    names = [entry.name for entry in entries]
    for name in names:
        if names.count(name) > 1:
            raise top.error("schedulers", f"scheduler name {name!r} is used twice; "
                            "give variants a name, e.g. { name = \"evo-gp/fixed\", policy = \"evo-gp\", ... }")
    return tuple(entries)


def _check_grid_size(top: Params, scenarios: tuple[Path, ...], instances: InstanceSet | None,
                     schedulers: Sequence[Any], seeds: int | tuple[int, ...], ea: int | tuple[int, ...],
                     sweep: list[tuple[str, tuple[Any, ...]]], max_runs: int) -> None:
    """The number of runs the grid would plan, from its axes' sizes alone (an upper bound: EA
    streams multiply only evo-gp), against ``max_runs``."""
    if instances is None:
        sources = len(scenarios)
    elif instances.indices is not None:
        sources = len(instances.indices)
    else:
        sources = instances.count or SET_SIZES.get(instances.name, 50)
    sizes = [len(values) for _, values in sweep]
    runs = math.prod(sizes) * sources * (seeds if isinstance(seeds, int) else len(seeds)) * len(schedulers) * (
        ea if isinstance(ea, int) else len(ea))
    if runs > max_runs:
        axes = " x ".join(f"{n} ({key})" for n, (key, _) in zip(sizes, sweep)) or "no sweep"
        raise top.error("sweep" if sweep else "seeds",
                        f"the grid has {runs:,} runs ({axes}; {sources} scenario(s) or instance(s), "
                        f"{seeds if isinstance(seeds, int) else len(seeds)} seed(s), {len(schedulers)} scheduler(s), "
                        f"{ea if isinstance(ea, int) else len(ea)} EA stream(s)), more than the limit of "
                        f"{max_runs:,}; make the grid smaller, or raise the limit with --max-runs N")


def _int_axis(top: Params, key: str, default: int) -> int | tuple[int, ...]:
    value = top.get(key, (int, list), default)
    if isinstance(value, int):
        if value < 1:
            raise top.error(key, f"must be a count >= 1 or a list of integers >= 0, got {value!r}")
        return value
    if not value or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise top.error(key, f"must be a count >= 1 or a non-empty list of integers >= 0, got {value!r}")
    if len(set(value)) != len(value):
        raise top.error(key, f"a value is listed twice: {value!r}")
    return tuple(value)


def _check_dotted(top: Params, table: str, key: str) -> None:
    section, _, rest = key.partition(".")
    if (section not in OVERRIDE_SECTIONS or not rest) and key != "cluster.nodes":
        raise top.error(f"{table}.{key}", "must be a dotted scenario key in one of "
                        + ", ".join(f"{s}.*" for s in OVERRIDE_SECTIONS)
                        + " (e.g. workload.load), or cluster.nodes; seeds and schedulers have their own keys")


def _check_scheduler_decides(top: Params, schedulers: tuple[SchedulerEntry, ...], table: str,
                             keys: list[str]) -> None:
    """An override or sweep of a key that the ``schedulers`` entries decide (``scheduler.policy``,
    or a ``[scheduler]`` key an entry sets) would run the same thing under every label: the table
    would show different names with one scheduler's numbers (issue 39). Refused."""
    decided = {"policy"} | {key for entry in schedulers for key, _ in entry.options}
    for key in keys:
        section, _, rest = key.partition(".")
        if section == "scheduler" and rest in decided:
            raise top.error(f"{table}.{key}", "is decided by each entry of schedulers = [...] (it would run "
                            "the same setting under every label); set it in the entries instead")


def _check_placeholders(top: Params, schedulers: tuple[SchedulerEntry, ...],
                        sweep: dict[str, tuple[Any, ...]]) -> None:
    """``{key}`` in a scheduler entry's text value must name a swept key with number, text or boolean
    values, so every grid point gives that scheduler one concrete value."""
    for i, entry in enumerate(schedulers):
        for key, value in entry.options:
            if not isinstance(value, str):
                continue
            if set("{}") & set(PLACEHOLDER.sub("", value)):
                raise top.error(f"schedulers[{i}].{key}", f"unbalanced braces in {value!r}; "
                                "{swept.key} takes the grid point's value of a [sweep] key")
            for name in PLACEHOLDER.findall(value):
                if name not in sweep:
                    valid = ", ".join(sweep) or "none (the spec sweeps nothing)"
                    raise top.error(f"schedulers[{i}].{key}", f"{{{name}}} names no swept key; "
                                    f"a placeholder takes the grid point's value of a [sweep] key: {valid}")
                if any(isinstance(v, (list, dict)) for v in sweep[name]):
                    raise top.error(f"schedulers[{i}].{key}", f"{{{name}}}: the swept values of {name} "
                                    "are lists or tables; a placeholder takes numbers, text or booleans")
