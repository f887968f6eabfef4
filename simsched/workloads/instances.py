"""The EVO-GP paper's multi-cluster instances (PAPER.md, Experiments): fleets drawn from one seed.

An instance is a fleet of P ~ U{2..26} homogeneous clusters, each of
N_p ~ U{10..100} nodes of 8 GPUs (GPU type V100), with the paper's Table II
workload per cluster (the ``paper`` generator, :mod:`simsched.workloads.generators.paper`)
and ``evo-gp`` as the default scheduler (the scenario is built by
:mod:`simsched.config.instances`). Instance ``index`` of seed ``s``
draws from its own stream, ``SeedSequence(s, spawn_key=(crc32("paper-instance"), index))``,
in a fixed order: P, then the P node counts, then the scenario seed (the
workload seed of that instance, uniform in [0, 2^31)). So instance k never
depends on how many other instances were drawn.

Named sets are disjoint slices of the index space of one seed: ``train`` =
indices 0..49, ``validation`` = 50..59, ``test`` = 60..89 (the paper's 50
training, 10 validation and 30 test instances). A scenario TOML selects one
with an ``[instance]`` table (docs/scenarios.md).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, NodeGroup

#: instance generators an ``[instance]`` table may name
GENERATORS = ("paper",)
#: set name -> (first index, number of instances)
SETS: dict[str, tuple[int, int]] = {"train": (0, 50), "validation": (50, 10), "test": (60, 30)}
#: the paper's ranges (inclusive) and node shape
CLUSTERS_RANGE = (2, 26)
NODES_RANGE = (10, 100)
GPUS_PER_NODE = 8
GPU_TYPE = "V100"


@dataclass(frozen=True, slots=True)
class InstanceSpec:
    """What an instance fixes: its fleet, workload table, default name, seed and description."""

    name: str
    seed: int
    clusters: tuple[ClusterSpec, ...]
    workload: dict[str, Any]
    description: str


def _rng(seed: int, index: int) -> np.random.Generator:
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"paper instance: seed must be an integer >= 0, got {seed!r}")
    if not isinstance(index, (int, np.integer)) or index < 0:
        raise InputError(f"paper instance: index must be an integer >= 0, got {index!r}")
    key = (zlib.crc32(b"paper-instance"), int(index))
    return np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=key))


def fleet_shape(seed: int, index: int) -> tuple[list[int], int]:
    """(nodes per cluster, scenario seed) of instance ``index`` of ``seed``; cheap, nothing built."""
    rng = _rng(seed, index)
    n_clusters = int(rng.integers(CLUSTERS_RANGE[0], CLUSTERS_RANGE[1] + 1))
    nodes = [int(n) for n in rng.integers(NODES_RANGE[0], NODES_RANGE[1] + 1, size=n_clusters)]
    scenario_seed = int(rng.integers(0, 2**31))
    return nodes, scenario_seed


def instance_name(seed: int, index: int) -> str:
    """``paper-test07-s0`` for an index inside a named set, else ``paper-i95-s0``."""
    for set_name, (first, count) in SETS.items():
        if first <= index < first + count:
            return f"paper-{set_name}{index - first:02d}-s{seed}"
    return f"paper-i{index}-s{seed}"


def instance_spec(seed: int, index: int, set_name: str | None = None) -> InstanceSpec:
    """The fleet and workload of instance ``index`` (global index) of ``seed``; with ``set_name``,
    ``index`` counts within that set."""
    if set_name is not None:
        if set_name not in SETS:
            raise InputError(f"paper instance: unknown set {set_name!r}; valid: {', '.join(SETS)}")
        first, count = SETS[set_name]
        if not 0 <= index < count:
            raise InputError(f"paper instance: index {index} outside set {set_name!r} (0..{count - 1})")
        index = first + index
    nodes, scenario_seed = fleet_shape(seed, index)
    clusters = tuple(ClusterSpec(f"c{p:02d}", (NodeGroup(n, GPUS_PER_NODE, GPU_TYPE),))
                     for p, n in enumerate(nodes))
    name = instance_name(seed, index)
    description = (f"EVO-GP paper instance {index} of seed {seed}: {len(nodes)} clusters of "
                   f"{', '.join(map(str, nodes))} nodes x {GPUS_PER_NODE} GPUs, Table II workload")
    return InstanceSpec(name, scenario_seed, clusters, {"source": "synthetic", "generator": "paper"},
                        description)
