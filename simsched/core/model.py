"""The model (SPEC §2): GPU types, nodes, clusters and jobs as frozen specs.

Capacity is counted in integer milli-GPUs (:data:`MILLI`) inside the engine so
that fractional shares (PAI's ``plan_gpu`` percent, openb's ``gpu_milli``) add
and subtract exactly; a float sum of shares could leave a node at 0.9999999.
"""

from __future__ import annotations

import functools
import math
import sys
from dataclasses import dataclass, field
from importlib import resources

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from simsched.core.errors import InputError

#: milli-GPUs per GPU: the engine's integer capacity unit.
MILLI = 1000


@dataclass(frozen=True, slots=True)
class GpuType:
    """A GPU model: throughput relative to the reference V100 and memory of one GPU."""

    name: str
    speedup: float
    memory_gb: float
    source: str = ""

    def __post_init__(self) -> None:
        if not self.speedup > 0:
            raise InputError(f'GPU type {self.name!r}: "speedup" must be > 0, got {self.speedup}')
        if not self.memory_gb > 0:
            raise InputError(
                f'GPU type {self.name!r}: "memory_gb" must be > 0, got {self.memory_gb}'
            )


#: speed bases of the built-in catalog (top-level scenario key ``speed_basis``): "training" =
#: published training throughputs (the default, issue 38), "fp32" = FP32 datasheet TFLOPS ratios
SPEED_BASES: tuple[str, ...] = ("training", "fp32")
DEFAULT_SPEED_BASIS = "training"


def _catalog_table() -> dict:
    text = resources.files("simsched").joinpath("data/gpu_types.toml").read_text("utf-8")
    return tomllib.loads(text)


def builtin_gpu_types(basis: str = DEFAULT_SPEED_BASIS) -> dict[str, GpuType]:
    """The catalog shipped in ``simsched/data/gpu_types.toml`` on one speed basis (each entry
    cites its source): ``"training"`` (measured training throughputs) or ``"fp32"`` (datasheets)."""
    if basis not in SPEED_BASES:
        raise InputError(f"speed_basis: unknown basis {basis!r}; valid: {', '.join(SPEED_BASES)}")
    suffix = "" if basis == "training" else f"_{basis}"
    return {
        name: GpuType(name, float(v["speedup" + suffix]), float(v["memory_gb"]), str(v["source" + suffix]))
        for name, v in _catalog_table().items()
    }


@functools.cache
def _measured_as() -> dict[str, str]:
    """Catalog type -> the measured type whose per-model speeds it uses (itself unless aliased)."""
    return {name: str(v.get("measured_as", name)) for name, v in _catalog_table().items()}


@functools.cache
def model_speed_table() -> dict[str, dict[str, float]]:
    """model -> {measured GPU type: training speed relative to V100}, from
    ``simsched/data/model_speeds.toml`` (Gavel's and Lambda's published throughputs)."""
    text = resources.files("simsched").joinpath("data/model_speeds.toml").read_text("utf-8")
    return {model: {k: float(v) for k, v in row.items() if k != "source"}
            for model, row in tomllib.loads(text).items()}


def model_sources() -> dict[str, str]:
    """model -> where its figures come from (``source`` of its row in model_speeds.toml)."""
    text = resources.files("simsched").joinpath("data/model_speeds.toml").read_text("utf-8")
    return {model: str(row["source"]) for model, row in tomllib.loads(text).items()}


def model_names() -> tuple[str, ...]:
    """The models a job may name (``model`` column, ``workload.model_mix``)."""
    return tuple(model_speed_table())


def type_speed(gpu_type: GpuType, model: str | None) -> float:
    """Training speed of ``model`` on ``gpu_type`` relative to V100: the model's measured figure
    for the type (or for the type it stands for, ``measured_as``), else the type's own ``speedup``
    (a job without a model, or a type the model was not measured on)."""
    if model is None:
        return gpu_type.speedup
    row = model_speed_table().get(model)
    if row is None:
        raise InputError(f"job model {model!r} is not in the model table; valid: {', '.join(model_names())}")
    return row.get(_measured_as().get(gpu_type.name, gpu_type.name), gpu_type.speedup)


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``count`` identical nodes, each with ``gpus`` GPUs of ``gpu_type``."""

    count: int
    gpus: int
    gpu_type: str


@dataclass(frozen=True, slots=True)
class TenantQuota:
    """A tenant's GPU quota in one cluster (SPEC §3): ``gpus`` in total, or ``per_type`` GPUs of
    each listed type (a type not listed is quota 0 for the tenant). Counted in GPUs held."""

    name: str
    gpus: float | None = None
    per_type: tuple[tuple[str, float], ...] | None = None

    @property
    def total(self) -> float:
        return self.gpus if self.per_type is None else sum(g for _, g in self.per_type)


@dataclass(frozen=True, slots=True)
class QuotaSchedule:
    """Quotas that change over time (a dated table such as Helios Earth's daily GPU numbers):
    from ``times[k]`` (simulated seconds, ascending, the first 0) the tenants' GPUs are ``gpus[k]``."""

    tenants: tuple[str, ...]
    times: tuple[float, ...]
    gpus: tuple[tuple[float, ...], ...]  # per time, one number per tenant
    source: str = ""

    def at(self, t: float) -> tuple[float, ...]:
        from bisect import bisect_right

        return self.gpus[max(0, bisect_right(self.times, t) - 1)]


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """A named set of nodes; it may mix GPU types. ``tenants`` (or a dated ``quota_schedule``)
    give tenants GPU quotas in this cluster."""

    name: str
    nodes: tuple[NodeGroup, ...]
    tenants: tuple[TenantQuota, ...] = ()
    quota_schedule: QuotaSchedule | None = None

    @property
    def total_gpus(self) -> int:
        return sum(g.count * g.gpus for g in self.nodes)


def keep_nodes_per_type(clusters: tuple[ClusterSpec, ...], limit: int) -> tuple[ClusterSpec, ...]:
    """The first ``limit`` nodes of every GPU type, in file order (the course simulator's
    ``--gpus_limit``, which counts machines per type); clusters left without nodes are dropped."""
    if limit < 1:
        raise InputError(f"nodes per GPU type must be >= 1, got {limit}")
    kept: dict[str, int] = {}
    out = []
    for cluster in clusters:
        groups = []
        for group in cluster.nodes:
            count = min(group.count, limit - kept.get(group.gpu_type, 0))
            if count > 0:
                kept[group.gpu_type] = kept.get(group.gpu_type, 0) + count
                groups.append(NodeGroup(count, group.gpus, group.gpu_type))
        if groups:
            out.append(ClusterSpec(cluster.name, tuple(groups), cluster.tenants, cluster.quota_schedule))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One node after expansion: global index, owning cluster, type, GPUs."""

    index: int
    cluster: int
    gpu_type: str
    gpus: int


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job as the workload gives it (SPEC §2). ``duration`` is on the reference type."""

    job_id: str
    submit: float
    duration: float
    gpus: float
    workers: int
    weight: int = 1
    deadline: float | None = None
    home_cluster: str | None = None
    gpu_type: str | None = None
    allowed_types: tuple[str, ...] | None = None
    tenant: str | None = None  # the VC, user or group the job belongs to (SPEC §3 quotas)
    model: str | None = None  # a model of simsched/data/model_speeds.toml: per-model speeds (issue 38)

    @property
    def gpus_per_worker(self) -> float:
        return self.gpus / self.workers


def derive_workers(gpus: float, largest_node: int) -> int:
    """Worker count when a trace gives none (SPEC §2).

    1 if the job fits one node, else the smallest r >= ceil(g / largest node)
    that divides g (for a non-integer g, just the ceiling).
    """
    if gpus <= largest_node:
        return 1
    low = math.ceil(gpus / largest_node)
    if float(gpus).is_integer():
        g = int(gpus)
        for r in range(low, g + 1):
            if g % r == 0:
                return r
    return low


@dataclass(frozen=True, slots=True)
class Fleet:
    """Every cluster and node of a scenario, with the GPU types they use."""

    clusters: tuple[ClusterSpec, ...]
    gpu_types: dict[str, GpuType] = field(hash=False)
    nodes: tuple[NodeSpec, ...] = field(init=False, hash=False)

    def __post_init__(self) -> None:
        nodes: list[NodeSpec] = []
        for c, cluster in enumerate(self.clusters):
            for group in cluster.nodes:
                for _ in range(group.count):
                    nodes.append(NodeSpec(len(nodes), c, group.gpu_type, group.gpus))
        object.__setattr__(self, "nodes", tuple(nodes))

    @property
    def cluster_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.clusters)

    @property
    def largest_node(self) -> int:
        return max((n.gpus for n in self.nodes), default=0)

    @property
    def total_gpus(self) -> int:
        return sum(n.gpus for n in self.nodes)

    def type_names(self) -> tuple[str, ...]:
        """GPU types present in the fleet, in order of first appearance."""
        return tuple(dict.fromkeys(n.gpu_type for n in self.nodes))


def worker_share(job: JobSpec, target: GpuType, ref: GpuType | None, heterogeneous: bool) -> float | None:
    """GPUs one worker of ``job`` needs on ``target`` (SPEC §2), or None if it may not run there.

    Without heterogeneity a typed job runs only on its reference type. With it,
    absolute memory is kept: f x mem(ref)/mem(T), rounded up to whole GPUs above 1.
    A job with no reference type runs anywhere with its own GPU count.
    """
    if job.allowed_types is not None and target.name not in job.allowed_types:
        return None
    f = job.gpus / job.workers
    if ref is None or ref.name == target.name:
        return f
    if not heterogeneous:
        return None
    scaled = f * ref.memory_gb / target.memory_gb
    return float(math.ceil(scaled - 1e-9)) if scaled > 1 else scaled


def to_milli(gpus: float) -> int:
    """GPUs as integer milli-GPUs, rounded up so a share is never under-counted."""
    return int(math.ceil(gpus * MILLI - 1e-6))


def speed_factor(target: GpuType, ref: GpuType | None, model: str | None = None) -> float:
    """Run-time divisor on ``target``: work = duration x speed(ref); time = work / speed(T), where
    speed is the type's ``speedup``, or the job's ``model``'s measured speed (:func:`type_speed`)."""
    if ref is None:
        return 1.0
    if model is None:
        return target.speedup / ref.speedup
    return type_speed(target, model) / type_speed(ref, model)
