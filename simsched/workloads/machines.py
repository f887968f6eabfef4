"""Cluster builders: machine tables of the traces -> :class:`ClusterSpec` lists (SPEC §5).

Each builder is ``fn(path, params, ctx) -> list[ClusterSpec]``, registered
under ``[[cluster]] from = "<name>"``. Nodes are grouped into
:class:`NodeGroup` s of equal (GPUs, type) in order of first appearance.
Options shared by all builders:

* ``name``: the cluster name (with ``split_by_type``, the prefix of
  ``<name>-<type>``);
* ``gpus_limit``: at most this many GPUs per GPU type: a type's nodes are
  kept in file order until the next one would pass the limit (so each type
  keeps a prefix of its nodes and never more GPUs than the limit);
* ``nodes_per_type``: at most this many nodes (machines) of each GPU type,
  in file order: the same count as the command line's ``--nodes-per-type``
  (the course's ``--gpus-limit``);
* ``nodes_limit``: at most this many nodes in all, in file order.

Machines without GPUs and machines dropped by a limit are counted in
``ctx.report`` by reason; malformed lines go through ``ctx.bad_row``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from simsched.core.model import ClusterSpec, NodeGroup
from simsched.workloads.readers._common import (
    BadRow,
    check_header,
    csv_rows,
    field_count,
    parse_number,
    require_file,
)
from simsched.workloads.readers.openb import read_type_map
from simsched.workloads.registry import Params, ReadContext, cluster_builder

#: Philly's machine list gives GPU memory, not models: 12 GB GPUs sit in
#: 2-GPU machines and 24 GB GPUs in 8-GPU machines, hence the catalog's
#: memory-class types ``2x12`` and ``8x24``.
PHILLY_MEMORY_TYPES: dict[int, str] = {12: "2x12", 24: "8x24"}


@cluster_builder("philly_machines")
def philly_machines(path: Path, params: Params, ctx: ReadContext) -> list[ClusterSpec]:
    """Philly ``cluster_machine_list`` (``machineId, number of GPUs, single GPU mem``): one cluster."""
    name = params.get("name", str, "philly")
    limits = _Limits.from_params(params)
    params.finish()
    check_header(require_file(path, "machine list"),
                 ("machineId", "number of GPUs", "single GPU mem"), skipinitialspace=True)
    nodes: list[tuple[int, str]] = []
    for line, fields in csv_rows(path, skipinitialspace=True):
        ctx.report.rows_read += 1
        try:
            field_count(fields, 3)
            gpus = _gpu_count(fields[1])
            memory = fields[2].strip().upper().removesuffix("GB")
            gpu_type = PHILLY_MEMORY_TYPES.get(int(parse_number(memory, "GPU memory")))
            if gpu_type is None:
                raise BadRow("unknown GPU memory")
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        if gpus == 0:
            ctx.report.skip("machine without GPUs")
            continue
        nodes.append((gpus, gpu_type))
    return [ClusterSpec(name, _groups(limits.apply(nodes, ctx)))]


@cluster_builder("pai_machines")
def pai_machines(path: Path, params: Params, ctx: ReadContext) -> list[ClusterSpec]:
    """PAI 2020 ``pai_machine_spec`` (headerless ``machine,gpu_type,cap_cpu,cap_mem,cap_gpu``).

    ``split_by_type = true`` gives one cluster per GPU type (PAI's GPU-type
    pools, named ``<name>-<type>``); default one cluster ``name`` (``"pai"``).
    CPU-only machines are counted as ``"CPU-only machine"``.
    """
    name = params.get("name", str, "pai")
    split = params.get("split_by_type", bool, False)
    limits = _Limits.from_params(params)
    params.finish()
    require_file(path, "machine table")
    nodes: list[tuple[int, str]] = []
    for line, fields in csv_rows(path, header=False):
        ctx.report.rows_read += 1
        try:
            field_count(fields, 5)
            gpus = _gpu_count(fields[4])
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        gpu_type = fields[1].strip()
        if gpus == 0 or gpu_type in ("", "CPU"):
            ctx.report.skip("CPU-only machine")
            continue
        nodes.append((gpus, gpu_type))
    return _clusters(name, limits.apply(nodes, ctx), split)


@cluster_builder("openb_nodes")
def openb_nodes(path: Path, params: Params, ctx: ReadContext) -> list[ClusterSpec]:
    """openb node list (``sn,cpu_milli,memory_mib,gpu,model``).

    GPU models go through ``type_map`` (the openb reader's map, by default
    the undisclosed G1/G2/G3 -> V100, see
    :data:`simsched.workloads.readers.openb.DEFAULT_TYPE_MAP`). Nodes without
    GPUs or model are counted as ``"CPU-only machine"``. ``split_by_type``
    as for ``pai_machines``; default one cluster ``name`` (``"openb"``).
    """
    name = params.get("name", str, "openb")
    split = params.get("split_by_type", bool, False)
    type_map = read_type_map(params)
    limits = _Limits.from_params(params)
    params.finish()
    check_header(require_file(path, "node list"), ("sn", "cpu_milli", "memory_mib", "gpu", "model"))
    nodes: list[tuple[int, str]] = []
    for line, fields in csv_rows(path):
        ctx.report.rows_read += 1
        try:
            field_count(fields, 5)
            gpus = _gpu_count(fields[3])
        except BadRow as bad:
            ctx.bad_row(path, line, bad.reason)
            continue
        model = fields[4].strip()
        if gpus == 0 or not model:
            ctx.report.skip("CPU-only machine")
            continue
        nodes.append((gpus, type_map.get(model, model)))
    return _clusters(name, limits.apply(nodes, ctx), split)


class _Limits:
    """The ``gpus_limit`` / ``nodes_per_type`` / ``nodes_limit`` options of every builder."""

    def __init__(self, gpus_limit: int | None, nodes_limit: int | None, nodes_per_type: int | None = None) -> None:
        self.gpus_limit = gpus_limit
        self.nodes_limit = nodes_limit
        self.nodes_per_type = nodes_per_type

    @classmethod
    def from_params(cls, params: Params) -> _Limits:
        return cls(params.get("gpus_limit", int, None, min_value=1),
                   params.get("nodes_limit", int, None, min_value=1),
                   params.get("nodes_per_type", int, None, min_value=1))

    def apply(self, nodes: list[tuple[int, str]], ctx: ReadContext) -> list[tuple[int, str]]:
        kept: list[tuple[int, str]] = []
        per_type: Counter = Counter()
        nodes_of_type: Counter = Counter()
        full: set[str] = set()  # types whose next node would pass gpus_limit
        for gpus, gpu_type in nodes:
            if self.nodes_limit is not None and len(kept) >= self.nodes_limit:
                ctx.report.skip("over nodes_limit")
                continue
            if self.gpus_limit is not None and (
                gpu_type in full or per_type[gpu_type] + gpus > self.gpus_limit
            ):
                full.add(gpu_type)
                ctx.report.skip("over gpus_limit")
                continue
            if self.nodes_per_type is not None and nodes_of_type[gpu_type] >= self.nodes_per_type:
                ctx.report.skip("over nodes_per_type")
                continue
            per_type[gpu_type] += gpus
            nodes_of_type[gpu_type] += 1
            kept.append((gpus, gpu_type))
        return kept


def _gpu_count(text: str) -> int:
    value = parse_number(text, "GPU count")
    if value < 0 or not value.is_integer():
        raise BadRow("bad GPU count")
    return int(value)


def _groups(nodes: Iterable[tuple[int, str]]) -> tuple[NodeGroup, ...]:
    """Equal (GPUs, type) nodes as one :class:`NodeGroup` each, in order of first appearance."""
    counts: Counter = Counter(nodes)
    return tuple(NodeGroup(count, gpus, gpu_type) for (gpus, gpu_type), count in counts.items())


def _clusters(name: str, nodes: list[tuple[int, str]], split: bool) -> list[ClusterSpec]:
    if not split:
        return [ClusterSpec(name, _groups(nodes))]
    types = list(dict.fromkeys(gpu_type for _, gpu_type in nodes))
    return [ClusterSpec(f"{name}-{t}", _groups(n for n in nodes if n[1] == t)) for t in types]
