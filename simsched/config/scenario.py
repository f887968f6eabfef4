"""Scenario TOML -> validated, frozen :class:`Scenario` (SPEC §9, STYLE rule 5).

Every problem is reported once, as an :class:`InputError` naming the file,
the key path and the valid choices. Each key's type, default, choices and range
are declared once in :mod:`simsched.config.keys` (read here through
:class:`~simsched.config.keys.DeclaredParams`; the key reference,
docs/reference/keys.md, is generated from them). Keys:

- ``name``, ``seed``, ``description``
- ``speed_basis``: the built-in catalog's speeds, "training" (default) or "fp32" (issue 38)
- ``[[gpu_type]]`` name, speedup, memory_gb, source: add or override catalog types
- ``[[cluster]]`` name + ``nodes = [{count, gpus, gpu_type}]``, or ``file =
  "clusters/x.toml"`` (a file holding ``[[cluster]]`` tables), or ``from =
  "philly_machines"`` + ``path`` (a machine table read by a cluster builder)
- ``[workload]`` ``file`` (a workload TOML in ``workloads/`` whose keys this
  table overrides), ``source``, ``path``, ``generator``, filters and field
  synthesis; other keys go to the reader or generator, which validates them
- ``[scheduler]`` policy, placement, backfill, allocation, heterogeneous,
  interval_s, restart_penalty_s, plus policy options
- ``[objective]`` ``kind = "eq5"`` with ``weights = [w1, w2, w3]`` (Eq. 5), or ``kind = "eq16"``
  with ``w`` (Eq. 16: w AvgJCT + (1 - w) MaxQT)
- ``[instance]`` generator, seed, set, index: a generated paper fleet in place of ``[[cluster]]`` (simsched/workloads/instances.py)
- ``[compare]`` read only by ``python -m simsched compare`` (see simsched/runs/compare.py)
- ``[learn]`` read only by ``python -m simsched learn`` (see simsched/learning/gp.py)
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from simsched.config.catalog import policy_file_without_class, policy_names
from simsched.config.keys import (
    ALLOCATIONS,
    BACKFILL_MODES,
    DECIDE_ON,
    OBJECTIVE_KINDS,
    SOURCES,
    DeclaredParams,
    names,
)
from simsched.config.quota_table import read_quota_table
from simsched.core import limits
from simsched.core.errors import InputError, did_you_mean
from simsched.core.inputs import missing_or_irregular, note_read
from simsched.core.model import (
    DEFAULT_SPEED_BASIS,
    ClusterSpec,
    GpuType,
    NodeGroup,
    TenantQuota,
    builtin_gpu_types,
    keep_nodes_per_type,
    model_names,
)
from simsched.core.params import Params, check_name
from simsched.workloads import builders_registry
from simsched.workloads.instances import SETS, instance_spec
from simsched.workloads.registry import ReadContext

__all__ = ["ALLOCATIONS", "BACKFILL_MODES", "DECIDE_ON", "OBJECTIVE_KINDS", "SOURCES", "Scenario", "load_scenario",
           "scenario_from_table"]

#: keys the workload layer handles itself; everything else goes to the reader/generator
WORKLOAD_COMMON = names("workload")

#: keys read here; every other [scheduler] key is an option of the policy
SCHEDULER_COMMON = tuple(k for k in names("scheduler") if k != "reserve_depth")


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    source: str
    path: Path | None
    generator: str | None
    params: dict[str, Any]  # reader/generator options, validated by them
    params_file: str  # the file to name in their errors
    base_dir: Path  # where relative paths in params resolve
    jobs_limit: int | None = None
    time_window: tuple[float, float] | None = None
    clusters: tuple[str, ...] | None = None
    strict: bool = False
    synthesize_deadline: bool = False
    synthesize_weight: bool = False
    deadline_slack: tuple[float, float] = (1.5, 4.0)
    weight_range: tuple[int, int] = (1, 5)
    reference_gpu_type: str | None = None
    load: float | None = None
    download_hint: str | None = None
    tenant_mix: tuple[tuple[str, float], ...] | None = None  # tenant -> weight, for jobs without a tenant
    model_mix: tuple[tuple[str, float], ...] | None = None  # model -> weight, for jobs without a model
    known_keys: tuple[str, ...] = WORKLOAD_COMMON  # read here; listed in the reader's "valid keys"


@dataclass(frozen=True, slots=True)
class SchedulerSpec:
    policy: str
    placement: str = "best_fit"
    backfill: bool = True  # false only for backfill = "none"
    allocation: str = "home"
    heterogeneous: bool = False
    interval_s: float | None = None
    restart_penalty_s: float = 0.0
    decide_on: str = "event"  # "arrival": plans/allocations only when a job arrives (docs/evo.md)
    options: dict[str, Any] = field(default_factory=dict)  # policy-specific keys
    known_keys: tuple[str, ...] = SCHEDULER_COMMON  # read here; listed in the policy's "valid keys"
    reserve: str = "none"  # backfill = "easy" | "conservative": reservations (SPEC §3)
    reserve_depth: int = 1  # easy: the first k jobs that cannot start get reservations
    quota: str = "none"  # tenants' quotas: "none" | "strict" | "borrow" (SPEC §3)
    reclaim: str = "preempt"  # borrow: how an owner gets lent GPUs back, "preempt" | "wait"
    max_wait_s: float | None = None  # starvation guard (SPEC §3): jobs queued longer go first; None = off
    backfill_given: bool = False  # the table wrote `backfill` (a user policy refuses any but "none")

    @property
    def backfill_setting(self) -> bool | str:
        """The ``backfill`` value as written: true/false for greedy/none, else the mode's name."""
        return self.reserve if self.reserve != "none" else self.backfill


@dataclass(frozen=True, slots=True)
class ObjectiveSpec:
    """``[objective]``: Eq. 5 with ``weights`` (default), or Eq. 16 = w AvgJCT + (1 - w) MaxQT."""

    kind: str = "eq5"
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    w: float = 0.5

    @property
    def label(self) -> str:
        if self.kind == "eq16":
            return f"Eq. 16, w = {self.w:g}"
        return "Eq. 5, weights = " + ", ".join(f"{x:g}" for x in self.weights)




@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    seed: int
    path: Path
    clusters: tuple[ClusterSpec, ...]
    gpu_types: dict[str, GpuType]
    workload: WorkloadSpec
    scheduler: SchedulerSpec
    objective_weights: tuple[float, float, float] = (1.0, 1.0, 1.0)
    digest: str = ""
    description: str = ""
    objective: ObjectiveSpec = ObjectiveSpec()
    #: what replaced the file's values (command-line flags, API arguments); recorded in summary.json
    overrides: dict[str, Any] = field(default_factory=dict)
    #: the built-in catalog's speed basis (SPEED_BASES); its speeds are in ``gpu_types``
    speed_basis: str = DEFAULT_SPEED_BASIS

    def with_overrides(self, *, seed: int | None = None, jobs: int | None = None,
                       scheduler: SchedulerSpec | None = None, nodes_per_type: int | None = None) -> Scenario:
        """A copy with CLI overrides (``--seed``, ``--jobs``, ``--nodes-per-type`` alias ``--gpus-limit``:
        nodes kept per GPU type) or another scheduler."""
        workload = self.workload if jobs is None else replace(self.workload, jobs_limit=jobs)
        clusters = self.clusters if nodes_per_type is None else keep_nodes_per_type(self.clusters, nodes_per_type)
        return replace(self, seed=self.seed if seed is None else seed, workload=workload,
                       scheduler=scheduler or self.scheduler, clusters=clusters)

    def with_scheduler_keys(self, changes: dict[str, Any], source: str) -> Scenario:
        """A copy with ``[scheduler]`` keys replaced, checked exactly like the TOML keys
        (errors name ``source``, e.g. the command-line flag) and recorded in ``overrides``.

        A new ``policy`` drops the file's policy-specific options (they belong to the old one).
        """
        from dataclasses import replace

        spec = self.scheduler
        table: dict[str, Any] = {"policy": spec.policy, "placement": spec.placement,
                                 "allocation": spec.allocation, "heterogeneous": spec.heterogeneous,
                                 "restart_penalty_s": spec.restart_penalty_s, "quota": spec.quota,
                                 "decide_on": spec.decide_on}
        if spec.backfill_given:  # absent stays absent: the default, and no refusal for a user policy
            table["backfill"] = spec.backfill_setting
        if spec.quota == "borrow":
            table["reclaim"] = spec.reclaim
        if spec.interval_s is not None:
            table["interval_s"] = spec.interval_s
        if spec.reserve_depth != 1:
            table["reserve_depth"] = spec.reserve_depth
        if spec.max_wait_s is not None:
            table["max_wait_s"] = spec.max_wait_s
        if changes.get("policy", spec.policy) == spec.policy:
            table.update(spec.options)
        table.update(changes)
        new = _scheduler(Params(table, "scheduler", source), len(self.clusters))
        return replace(self, scheduler=new, overrides={**self.overrides, **changes})


def read_toml(path: Path) -> dict[str, Any]:
    if path.is_dir():
        raise InputError(f"{path}: is a folder; give a TOML file")
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if not path.is_file():
        raise InputError(f"{path}: is not a regular file; give a TOML file")
    note_read(path, "TOML file")
    try:
        with path.open("rb") as fh:
            # a UTF-8 BOM (Windows Notepad's "UTF-8 with BOM") is no statement: dropped, as the CSV readers do
            return tomllib.loads(fh.read().decode("utf-8").removeprefix("\ufeff"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None
    except RecursionError:
        raise InputError(f"{path}: not valid TOML: arrays or tables nested too deeply") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the file ({exc.strerror or exc})") from None


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    path = Path(path)
    raw = read_toml(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    return scenario_from_table(raw, path, digest)


def scenario_from_table(raw: dict[str, Any], path: Path, digest: str | None = None) -> Scenario:
    """Validate a scenario given as a parsed TOML table; ``path`` names it in errors and
    anchors relative paths. ``digest`` defaults to a hash of the table itself."""
    if digest is None:
        digest = hashlib.sha256(json.dumps(raw, sort_keys=True, default=str).encode()).hexdigest()[:16]
    base = path.resolve().parent
    top = DeclaredParams(raw, "", path)
    instance = _instance(top, path)
    name = top.get("name", str, path.stem if instance is None else instance.name)
    seed = top.get("seed", int, 0 if instance is None else instance.seed, min_value=0)
    description = top.get("description", str, "" if instance is None else instance.description)
    # the paper's instances are all-V100 fleets (speed 1 on every basis): they keep the catalog their
    # committed stores were made with, whose entries are part of every run id (runs/experiment/grid.py)
    speed_basis = top.get("speed_basis", str, DEFAULT_SPEED_BASIS if instance is None else "fp32")
    gpu_types = _gpu_types(top, path, speed_basis)
    if instance is None:
        clusters = _clusters(top, path, base, gpu_types)
    else:
        if top.has("cluster"):
            raise top.error("cluster", "is given by [instance]; remove [[cluster]] or [instance]")
        clusters = instance.clusters
    workload_raw = top.get("workload", dict, {})
    if instance is not None and "file" not in workload_raw:  # the instance's, the scenario's keys on top
        workload_raw = {**instance.workload, **workload_raw}
    workload = _workload(DeclaredParams(workload_raw, "workload", path), path, base, gpu_types)
    scheduler = _scheduler(top.sub("scheduler"), len(clusters))
    objective = _objective(top.sub("objective"))
    top.get("compare", dict, {})  # options of `python -m simsched compare`, validated by simsched.runs.compare
    top.get("learn", dict, {})  # options of `python -m simsched learn`, validated by simsched.learning.gp
    top.finish()
    return Scenario(name, seed, path, clusters, gpu_types, workload, scheduler,
                    objective.weights, digest, description, objective, speed_basis=speed_basis)


def _objective(p: Params) -> ObjectiveSpec:
    p = DeclaredParams.of(p)
    kind = p.get("kind")
    if kind == "eq5":
        if p.has("w"):
            raise p.error("w", 'is only used with kind = "eq16"; Eq. 5 takes weights = [w1, w2, w3]')
        weights = p.get("weights")
        if len(weights) != 3 or not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                                        and math.isfinite(w) and w >= 0 for w in weights) \
                or not sum(weights) <= limits.MAX_WEIGHT_SUM:  # each finite, and their products with times too
            raise p.error("weights", f"must be three numbers >= 0 [w1, w2, w3] with a sum of at most "
                                     f"{limits.MAX_WEIGHT_SUM:g}, got {weights!r}")
        p.finish()
        return ObjectiveSpec("eq5", tuple(float(w) for w in weights))
    if p.has("weights"):
        raise p.error("weights", 'is only used with kind = "eq5"; Eq. 16 takes w in [0, 1]')
    w = p.get("w")
    p.finish()
    return ObjectiveSpec("eq16", w=w)


def _instance(top: Params, path: Path):
    """The ``[instance]`` table: a generated fleet (and default workload) instead of ``[[cluster]]``."""
    if not top.has("instance"):
        return None
    p = top.sub("instance")
    p.get("generator")
    seed = p.get("seed")
    set_name = p.get("set")
    if set_name is None:
        index = p.get("index")
    else:
        index = p.get("index", max_value=SETS[set_name][1] - 1)
    p.finish()
    return instance_spec(seed, index, set_name)


def _gpu_types(top: Params, path: Path, speed_basis: str) -> dict[str, GpuType]:
    types = builtin_gpu_types(speed_basis)
    declared: dict[str, int] = {}  # name -> index of the [[gpu_type]] that declared it
    for i, entry in enumerate(top.get("gpu_type")):
        if not isinstance(entry, dict):
            raise top.error("gpu_type", "must be an array of tables [[gpu_type]]")
        p = DeclaredParams(entry, f"gpu_type[{i}]", path)
        name = p.get("name")
        if name in declared:
            raise p.error("name", f"{name!r} is also declared by gpu_type[{declared[name]}]; declare each type once "
                                  "(a [[gpu_type]] with a built-in name overrides the built-in)")
        declared[name] = i
        types[name] = GpuType(
            name,
            p.get("speedup", float, types[name].speedup if name in types else None,
                  min_value=0, exclusive_min=True) if (p.has("speedup") or name in types)
            else p.get("speedup", float),
            p.get("memory_gb", float, types[name].memory_gb if name in types else None,
                  min_value=0, exclusive_min=True) if (p.has("memory_gb") or name in types)
            else p.get("memory_gb", float),
            p.get("source"),
        )
        p.finish()
    return types


def _clusters(top: Params, path: Path, base: Path, gpu_types: dict[str, GpuType]) -> tuple[ClusterSpec, ...]:
    entries = top.get("cluster", list, None)
    if not entries:
        raise top.error("cluster", "at least one [[cluster]] is required, e.g. "
                        "nodes = [{ count = 4, gpus = 8, gpu_type = \"V100\" }]")
    clusters: list[ClusterSpec] = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise top.error("cluster", "must be an array of tables [[cluster]]")
        clusters.extend(_cluster_entry(DeclaredParams(entry, f"cluster[{i}]", path), path, base, gpu_types,
                                       (path.resolve(),)))
    check_fleet(f"{path}: cluster", clusters)
    names = [c.name for c in clusters]
    for name in names:
        if names.count(name) > 1:
            raise top.error("cluster", f"cluster name {name!r} is used twice; names must be unique")
    return tuple(clusters)


def check_fleet(where: str, clusters: tuple[ClusterSpec, ...] | list[ClusterSpec]) -> None:
    """The fleet-wide size checks, for a fleet read from a file and for one an override resized
    (``--set cluster.nodes``, an experiment's override or sweep): one place, so no path skips them."""
    nodes = sum(group.count for c in clusters for group in c.nodes)
    limits.check_memory(where, "nodes", nodes, limits.BYTES_PER_NODE)


def _cluster_entry(p: Params, path: Path, base: Path, gpu_types: dict[str, GpuType],
                   chain: tuple[Path, ...] = ()) -> list[ClusterSpec]:
    if p.has("file"):
        file = p.get_path("file", base)
        p.finish()
        if not file.is_file():
            raise p.error("file", f"cluster file {file} {missing_or_irregular(file)}")
        if file.resolve() in chain:
            cycle = " -> ".join(str(f) for f in (*chain[chain.index(file.resolve()):], file.resolve()))
            raise p.error("file", f"cluster files include each other in a cycle: {cycle}")
        raw = read_toml(file)
        nested = DeclaredParams(raw, "", file)
        entries = nested.get("cluster")
        nested.finish()
        out = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise nested.error("cluster", "must be an array of tables [[cluster]]")
            out.extend(_cluster_entry(DeclaredParams(entry, f"cluster[{i}]", file), file, file.parent, gpu_types,
                                      (*chain, file.resolve())))
        return out
    if p.has("from"):
        builders = builders_registry()
        builder = p.get("from", str, choices=sorted(builders))
        file = p.get_path("path", base)
        options = Params(p.rest(("from", "path", *TENANT_KEYS)), p.key("").rstrip("."), path)
        built = builders[builder](file, options, ReadContext())
        options.finish()
        for cluster in built:
            _check_types(cluster, gpu_types, p)
        if any(p.has(k) for k in TENANT_KEYS):
            if len(built) != 1:
                raise p.error("tenant", f"the machine table makes {len(built)} clusters; give tenants quotas in a "
                                        "cluster of its own")
            built = [_with_tenants(built[0], p, base)]
        return list(built)
    name = p.get("name")
    if not name.strip():
        raise p.error("name", "must be a non-empty cluster name")
    groups = []
    nodes = p.get("nodes")
    if not nodes:
        raise p.error("nodes", "must list at least one node group {count, gpus, gpu_type}")
    for j, group in enumerate(nodes):
        if not isinstance(group, dict):
            raise p.error("nodes", f"item {j} must be a table {{count, gpus, gpu_type}}")
        g = DeclaredParams(group, p.key(f"nodes[{j}]"), p.file)
        groups.append(NodeGroup(
            g.get("count"),
            g.get("gpus"),
            g.get("gpu_type", choices=sorted(gpu_types)),
        ))
        g.finish()
    cluster = _with_tenants(ClusterSpec(name, tuple(groups)), p, base)
    p.finish()
    return [cluster]


#: a cluster's tenant keys: ``[[cluster.tenant]]`` quotas, or a dated quota table
TENANT_KEYS = ("tenant", "quota_file", "quota_start")


def _with_tenants(cluster: ClusterSpec, p: Params, base: Path) -> ClusterSpec:
    """``cluster`` with the quotas its table gives: ``[[cluster.tenant]]`` with ``name`` and ``gpus``
    (a number, or a table of GPUs per type), or ``quota_file`` (a dated table, see
    :func:`simsched.config.quota_table.read_quota_table`) from ``quota_start``. Checked against capacity."""
    if p.has("quota_file"):
        if p.has("tenant"):
            raise p.error("quota_file", "give quotas either as [[cluster.tenant]] tables or as a quota_file, not both")
        file = p.get_path("quota_file", base)
        start = p.get("quota_start", (str, date))  # a TOML date (2020-01-02) or its text
        schedule = read_quota_table(file, start, f"{p.file}: {p.key('quota_start')}", cluster.name,
                                    cluster.total_gpus)
        return replace(cluster, quota_schedule=schedule)
    if p.has("quota_start"):
        raise p.error("quota_start", "only applies with quota_file (a dated quota table)")
    entries = p.get("tenant")
    tenants: list[TenantQuota] = []
    capacity = _type_capacity(cluster)
    for j, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise p.error("tenant", "must be an array of tables [[cluster.tenant]] with name and gpus")
        t = DeclaredParams(entry, p.key(f"tenant[{j}]"), p.file)
        name = t.get("name")
        if not name.strip():
            raise t.error("name", "must be a non-empty tenant name")
        if any(other.name == name for other in tenants):
            raise t.error("name", f"tenant {name!r} is listed twice in cluster {cluster.name!r}")
        gpus = t.get("gpus")
        if isinstance(gpus, dict):
            per_type = []
            for type_name, count in gpus.items():
                if type_name not in capacity:
                    raise t.error("gpus", f"GPU type {type_name!r} is not in cluster {cluster.name!r}; "
                                          f"valid: {', '.join(sorted(capacity))}")
                if isinstance(count, bool) or not isinstance(count, (int, float)) or not math.isfinite(count) \
                        or count < 0:
                    raise t.error("gpus", f"{type_name} = {count!r} must be a number of GPUs >= 0")
                if count > capacity[type_name]:
                    raise t.error("gpus", f"{type_name} = {count:g} GPUs is above the cluster's {capacity[type_name]:g} "
                                          f"{type_name} GPUs")
                per_type.append((type_name, float(count)))
            quota = TenantQuota(name, None, tuple(per_type))
        else:
            if gpus < 0:
                raise t.error("gpus", f"must be a number of GPUs >= 0, got {gpus:g}")
            if gpus > cluster.total_gpus:
                raise t.error("gpus", f"{gpus:g} GPUs is above the cluster's {cluster.total_gpus} GPUs")
            quota = TenantQuota(name, float(gpus))
        t.finish()
        tenants.append(quota)
    total = sum(t.total for t in tenants)
    if total > cluster.total_gpus + 1e-9:
        raise p.error("tenant", f"the quotas add up to {total:g} GPUs, above the {cluster.total_gpus} GPUs "
                                f"of cluster {cluster.name!r}")
    for type_name, count in capacity.items():
        typed = sum(dict(t.per_type).get(type_name, 0.0) for t in tenants if t.per_type is not None)
        if typed > count + 1e-9:
            raise p.error("tenant", f"the per-type quotas of {type_name} add up to {typed:g} GPUs, above the "
                                    f"{count} {type_name} GPUs of cluster {cluster.name!r}")
    return replace(cluster, tenants=tuple(tenants)) if tenants else cluster


def _type_capacity(cluster: ClusterSpec) -> dict[str, int]:
    capacity: dict[str, int] = {}
    for group in cluster.nodes:
        capacity[group.gpu_type] = capacity.get(group.gpu_type, 0) + group.count * group.gpus
    return capacity


def _check_types(cluster: ClusterSpec, gpu_types: dict[str, GpuType], p: Params) -> None:
    for group in cluster.nodes:
        if group.gpu_type not in gpu_types:
            raise p.error("from", f"machine table uses GPU type {group.gpu_type!r}, not in the catalog"
                          f"{did_you_mean(group.gpu_type, gpu_types)}; "
                          f"add it with [[gpu_type]] (known: {', '.join(sorted(gpu_types))})")


def _workload(p: Params, path: Path, base: Path, gpu_types: dict[str, GpuType]) -> WorkloadSpec:
    p = DeclaredParams.of(p)
    params_file = str(path)
    params_base = base
    if p.has("file"):
        file = p.get_path("file", base)
        if not file.is_file():
            raise p.error("file", f"workload file {file} {missing_or_irregular(file)}")
        table = p.rest(("file",))
        inherited, file = _workload_file(file, p, (path.resolve(),))
        merged = {**inherited, **table}
        p = DeclaredParams(merged, "workload", f"{path} (with {file})")
        params_file = f"{path} (with {file})"
        # paths written in the workload file resolve next to it, overrides next to the scenario
        if "path" in inherited and "path" not in table:
            params_base = file.parent
    source = p.get("source")
    generator = None
    data_path = None
    if source == "synthetic":
        generator = p.get("generator")
    else:
        data_path = p.get_path("path", params_base)
    window = p.get("time_window")
    if window is not None and (len(window) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                           and math.isfinite(x) for x in window)
                               or window[0] >= window[1]):
        raise p.error("time_window", f"must be [start_s, end_s] with start < end, got {window!r}")
    slack = p.get("deadline_slack")
    if len(slack) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                                  for x in slack) or not 0 < slack[0] <= slack[1]:
        raise p.error("deadline_slack", f"must be [low, high] with 0 < low <= high, got {slack!r}")
    weights = p.get("weight_range")
    if len(weights) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in weights) \
            or not 1 <= weights[0] <= weights[1] <= 2**31:
        raise p.error("weight_range", f"must be [low, high] integers with 1 <= low <= high, got {weights!r}")
    reference = p.get("reference_gpu_type")
    if reference is not None and reference not in gpu_types:
        raise p.error("reference_gpu_type", f"unknown GPU type {reference!r}{did_you_mean(reference, gpu_types)}; "
                      f"valid: {', '.join(sorted(gpu_types))} (python -m simsched gpu-types)")
    clusters = p.get_list("clusters", str, None)
    mix = p.get("tenant_mix")
    if mix is not None:
        for tenant in mix:
            check_name(tenant, lambda message: p.error("tenant_mix", message))
        if not mix or not all(isinstance(k, str) and k.strip() and isinstance(v, (int, float))
                              and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for k, v in mix.items()) \
                or not 0 < sum(mix.values()) < math.inf:  # each weight finite, and their sum too
            raise p.error("tenant_mix", "must be a table of tenant = weight (numbers >= 0, not all 0, finite sum), "
                                        f'e.g. {{ vc1 = 0.6, vc2 = 0.4 }}; got {mix!r}')
    models = p.get("model_mix")
    if models is not None:
        valid = model_names()
        for model in models:
            if model not in valid:
                raise p.error("model_mix", f"unknown model {model!r}{did_you_mean(model, valid)}; valid: "
                                           f"{', '.join(valid)} (python -m simsched gpu-types --models)")
        if not models or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                                 and v >= 0 for v in models.values()) or not 0 < sum(models.values()) < math.inf:
            raise p.error("model_mix", "must be a table of model = weight (numbers >= 0, not all 0, finite sum), "
                                       f'e.g. {{ resnet50 = 0.5, lm = 0.5 }}; got {models!r}')
    spec = WorkloadSpec(
        source=source,
        path=data_path,
        generator=generator,
        # a generator sets its own arrival rate from `load`; a trace is rescaled afterwards
        params=p.rest(tuple(k for k in WORKLOAD_COMMON if not (k == "load" and source == "synthetic"))),
        params_file=params_file,
        base_dir=params_base,
        jobs_limit=p.get("jobs_limit"),
        time_window=None if window is None else (float(window[0]), float(window[1])),
        clusters=None if clusters is None else tuple(clusters),
        strict=p.get("strict"),
        synthesize_deadline=p.get("synthesize_deadline"),
        synthesize_weight=p.get("synthesize_weight"),
        deadline_slack=(float(slack[0]), float(slack[1])),
        weight_range=(int(weights[0]), int(weights[1])),
        reference_gpu_type=reference,
        load=None if source == "synthetic" else p.get("load"),
        download_hint=p.get("download_hint"),
        tenant_mix=None if mix is None else tuple((str(k), float(v)) for k, v in mix.items()),
        model_mix=None if models is None else tuple((str(k), float(v)) for k, v in models.items()),
    )
    p.finish()
    return spec


def _workload_file(file: Path, p: Params, chain: tuple[Path, ...]) -> tuple[dict[str, Any], Path]:
    """A workload file's table, following its own ``file`` (a base it overrides); cycles are errors.

    Returns the merged table and the file that holds ``path`` (where relative paths resolve).
    """
    if file.resolve() in chain:
        cycle = " -> ".join(str(f) for f in (*chain[chain.index(file.resolve()):], file.resolve()))
        raise p.error("file", f"workload files include each other in a cycle: {cycle}")
    inherited = read_toml(file)
    if "workload" in inherited and isinstance(inherited["workload"], dict):
        inherited = inherited["workload"]
    if "file" not in inherited:
        return inherited, file
    inner = DeclaredParams(inherited, "workload", file)
    nested = inner.get_path("file", file.parent)
    if not nested.is_file():
        raise inner.error("file", f"workload file {nested} {missing_or_irregular(nested)}")
    base, holder = _workload_file(nested, inner, (*chain, file.resolve()))
    own = {k: v for k, v in inherited.items() if k != "file"}
    return {**base, **own}, (file if "path" in own else holder)


def _backfill_mode(p: Params) -> str:
    """``backfill``: true/false (greedy/none, as before) or one of :data:`BACKFILL_MODES`."""
    value = p.get("backfill")
    if isinstance(value, bool):
        return "greedy" if value else "none"
    if value not in BACKFILL_MODES:
        raise p.error("backfill", f"unknown mode {value!r}{did_you_mean(value, BACKFILL_MODES)}; valid: "
                                  f"{', '.join(BACKFILL_MODES)}, or true (greedy) / false (none)")
    return value


def _scheduler(p: Params, cluster_count: int) -> SchedulerSpec:
    p = DeclaredParams.of(p)
    policy = p.get("policy")
    if policy_file_without_class(policy):
        raise p.error("policy", policy_file_without_class(policy))
    if ":" not in policy and policy not in policy_names():
        raise p.error("policy", f"unknown policy {policy!r}{did_you_mean(policy, policy_names())}; "
                      f"valid: {', '.join(policy_names())}, "
                      "or 'my_policy.py:MyPolicy'")
    mode = _backfill_mode(p)
    depth = p.get("reserve_depth")
    if p.has("reserve_depth") and mode != "easy":
        raise p.error("reserve_depth", f'only applies to backfill = "easy" (here backfill = {mode!r}); '
                                       '"conservative" reserves for every waiting job')
    quota = p.get("quota")
    if p.has("reclaim") and quota != "borrow":
        raise p.error("reclaim", f'only applies to quota = "borrow" (here quota = {quota!r}): it says how an owner '
                                 'gets GPUs it lent back')
    spec = SchedulerSpec(
        policy=policy,
        quota=quota,
        reclaim=p.get("reclaim"),
        placement=p.get("placement"),
        backfill=mode != "none",
        reserve=mode if mode in ("easy", "conservative") else "none",
        reserve_depth=depth,
        backfill_given=p.has("backfill"),
        allocation=p.get("allocation"),
        heterogeneous=p.get("heterogeneous"),
        interval_s=p.get("interval_s"),
        restart_penalty_s=p.get("restart_penalty_s"),
        decide_on=p.get("decide_on"),
        max_wait_s=p.get("max_wait_s"),
        options=p.rest(SCHEDULER_COMMON + ("reserve_depth",)),
    )
    p.finish()
    return spec
