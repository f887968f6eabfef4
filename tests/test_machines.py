"""Cluster builders (SPEC §5): machine tables of the real samples against their SOURCE.md."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, NodeGroup, builtin_gpu_types
from simsched.workloads.machines import openb_nodes, pai_machines, philly_machines
from simsched.workloads.registry import CLUSTER_BUILDERS, Params, ReadContext


def build(fn, path: Path, strict: bool = False, **options) -> tuple[list[ClusterSpec], ReadContext]:
    ctx = ReadContext(strict=strict)
    return fn(Path(path), Params(options, "cluster"), ctx), ctx


def make_up(clusters: list[ClusterSpec]) -> Counter:
    """(gpu_type, gpus per node) -> node count over all clusters."""
    counts: Counter = Counter()
    for cluster in clusters:
        for group in cluster.nodes:
            counts[group.gpu_type, group.gpus] += group.count
    return counts


def gpus_by_type(clusters: list[ClusterSpec]) -> dict[str, int]:
    totals: Counter = Counter()
    for (gpu_type, gpus), count in make_up(clusters).items():
        totals[gpu_type] += gpus * count
    return dict(totals)


def test_builders_registered() -> None:
    assert {"philly_machines", "pai_machines", "openb_nodes"} <= set(CLUSTER_BUILDERS)


def test_philly_machine_list(traces_dir: Path) -> None:
    clusters, ctx = build(philly_machines, traces_dir / "philly/cluster_machine_list.csv")
    assert clusters == [ClusterSpec("philly", (NodeGroup(321, 2, "2x12"), NodeGroup(231, 8, "8x24")))]
    assert ctx.report.rows_read == 552 and ctx.report.skipped == 0
    clusters, _ = build(philly_machines, traces_dir / "philly/cluster_machine_list.csv",
                        name="msr", gpus_limit=64)
    assert clusters == [ClusterSpec("msr", (NodeGroup(32, 2, "2x12"), NodeGroup(8, 8, "8x24")))]


def test_philly_machine_list_bad_memory(tmp_path: Path) -> None:
    path = tmp_path / "machines.csv"
    path.write_text("machineId, number of GPUs, single GPU mem\nm0,2, 12GB\nm1,4, 16GB\nm2,8, 24GB\n")
    with pytest.raises(InputError, match=rf"^{path}:3: unknown GPU memory"):
        build(philly_machines, path, strict=True)
    clusters, ctx = build(philly_machines, path)
    assert clusters[0].nodes == (NodeGroup(1, 2, "2x12"), NodeGroup(1, 8, "8x24"))
    assert ctx.report.counts == Counter({"unknown GPU memory": 1})


def test_pai_machine_spec(traces_dir: Path) -> None:
    path = traces_dir / "alibaba-pai-2020/pai_machine_spec.csv"
    clusters, ctx = build(pai_machines, path, split_by_type=True)
    assert make_up(clusters) == Counter({("P100", 2): 798, ("T4", 2): 497, ("V100", 8): 104,
                                         ("V100M32", 8): 135, ("MISC", 8): 280})
    assert ctx.report.counts == Counter({"CPU-only machine": 83})
    assert gpus_by_type(clusters) == {"MISC": 2240, "P100": 1596, "V100M32": 1080, "T4": 994,
                                      "V100": 832}
    # one pool per GPU type, each holding only its type
    assert sorted(c.name for c in clusters) == ["pai-MISC", "pai-P100", "pai-T4", "pai-V100",
                                                "pai-V100M32"]
    assert all(len({g.gpu_type for g in c.nodes}) == 1 for c in clusters)
    single, _ = build(pai_machines, path)
    assert [c.name for c in single] == ["pai"] and single[0].total_gpus == 6742


def test_pai_limits(traces_dir: Path) -> None:
    path = traces_dir / "alibaba-pai-2020/pai_machine_spec.csv"
    clusters, ctx = build(pai_machines, path, gpus_limit=100)
    # 8-GPU types stop at 96 (the next node would pass 100), 2-GPU types reach 100
    assert gpus_by_type(clusters) == {"MISC": 96, "P100": 100, "V100M32": 96, "T4": 100, "V100": 96}
    assert ctx.report.counts["over gpus_limit"] == 1897 - 83 - (12 + 50 + 12 + 50 + 12)
    clusters, ctx = build(pai_machines, path, nodes_limit=10)
    assert sum(g.count for g in clusters[0].nodes) == 10
    with pytest.raises(InputError, match="cluster.gpus_limit: must be >= 1"):
        build(pai_machines, path, gpus_limit=0)
    # nodes_per_type: machines per type, the count --nodes-per-type (alias --gpus-limit) keeps
    clusters, ctx = build(pai_machines, path, nodes_per_type=3)
    assert make_up(clusters) == Counter({("P100", 2): 3, ("T4", 2): 3, ("V100", 8): 3, ("V100M32", 8): 3,
                                         ("MISC", 8): 3})
    assert ctx.report.counts["over nodes_per_type"] == 1897 - 83 - 15


def test_openb_nodes(traces_dir: Path) -> None:
    path = traces_dir / "alibaba-gpu-2023/openb_node_list_gpu_node.csv"
    clusters, ctx = build(openb_nodes, path, type_map={"G2": "G2", "G3": "G3"})
    assert make_up(clusters) == Counter({
        ("G2", 8): 549, ("G3", 8): 39, ("T4", 2): 387, ("T4", 4): 17, ("P100", 2): 131,
        ("P100", 1): 3, ("V100M16", 4): 28, ("V100M16", 1): 19, ("V100M16", 8): 8,
        ("V100M32", 8): 21, ("V100M32", 4): 9, ("A10", 1): 2})
    assert gpus_by_type(clusters) == {"G2": 4392, "T4": 842, "G3": 312, "P100": 265,
                                      "V100M32": 204, "V100M16": 195, "A10": 2}
    assert ctx.report.rows_read == 1213 and ctx.report.skipped == 0
    all_nodes, ctx = build(openb_nodes, path.with_name("openb_node_list_all_node.csv"))
    assert ctx.report.counts == Counter({"CPU-only machine": 1523 - 1213})
    assert gpus_by_type(all_nodes)["V100"] == 4392 + 312  # default map G2, G3 -> V100


def test_default_types_are_in_the_catalog(traces_dir: Path) -> None:
    catalog = builtin_gpu_types()
    for fn, path in [(philly_machines, "philly/cluster_machine_list.csv"),
                     (pai_machines, "alibaba-pai-2020/pai_machine_spec.csv"),
                     (openb_nodes, "alibaba-gpu-2023/openb_node_list_gpu_node.csv")]:
        clusters, _ = build(fn, traces_dir / path, split_by_type=True) if fn is not philly_machines \
            else build(fn, traces_dir / path)
        assert {t for t, _ in make_up(clusters)} <= set(catalog), fn.__name__


def test_missing_file_and_unknown_key(tmp_path: Path) -> None:
    for fn in (philly_machines, pai_machines, openb_nodes):
        with pytest.raises(InputError, match="file not found"):
            build(fn, tmp_path / "none.csv")
        with pytest.raises(InputError, match="cluster.split: unknown key"):
            build(fn, tmp_path / "none.csv", split=True)
