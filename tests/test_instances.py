"""The paper's multi-cluster instance generator and named sets (simsched.workloads.instances)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from simsched.config.instances import instance_set, paper_instance
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.runs.single import prepare
from simsched.workloads.generators import paper
from simsched.workloads.instances import SETS, fleet_shape


def test_cluster_and_node_counts_cover_the_paper_ranges_uniformly() -> None:
    shapes = [fleet_shape(11, i)[0] for i in range(4000)]
    p = Counter(len(s) for s in shapes)
    nodes = Counter(n for s in shapes for n in s)
    assert set(p) == set(range(2, 27))  # every P in U{2..26}, nothing outside
    assert set(nodes) == set(range(10, 101))  # every N_p in U{10..100}, nothing outside
    # uniform: each of the 25 values of P has probability 1/25 (4 sigma of a binomial count)
    for count in p.values():
        assert abs(count / 4000 - 1 / 25) <= 4 * np.sqrt((1 / 25) * (24 / 25) / 4000)
    total = sum(nodes.values())
    mean = sum(n * c for n, c in nodes.items()) / total
    assert mean == pytest.approx(55.0, abs=4 * np.sqrt((91**2 - 1) / 12 / total))


def test_instances_are_reproducible_and_independent_of_each_other() -> None:
    a, b = paper_instance(5, 3), paper_instance(5, 3)
    assert a.clusters == b.clusters and a.seed == b.seed and a.digest == b.digest
    assert paper_instance(6, 3).clusters != a.clusters
    assert all(len(g.nodes) == 1 and g.nodes[0].gpus == 8 and g.nodes[0].gpu_type == "V100" for g in a.clusters)
    assert a.scheduler.policy == "evo-gp" and a.workload.generator == "paper"
    assert prepare(a)[1].equals(prepare(b)[1])  # same jobs


def test_named_sets_have_the_paper_sizes_and_are_disjoint() -> None:
    sets = {name: instance_set(name, 2) for name in SETS}
    assert {name: len(s) for name, s in sets.items()} == {"train": 50, "validation": 10, "test": 30}
    names = [s.name for group in sets.values() for s in group]
    assert len(set(names)) == 90
    shapes = [tuple(c.nodes[0].count for c in s.clusters) for group in sets.values() for s in group]
    assert len(set(shapes)) == 90  # distinct fleets: no instance is in two sets
    assert sets["test"][4].clusters == paper_instance(2, 64).clusters
    assert sets["test"][4].name == "paper-test04-s2"
    with pytest.raises(InputError, match="unknown set"):
        instance_set("dev", 0)


def test_workload_mix_follows_table_ii_over_many_instances() -> None:
    """Over 12 instances the job-type counts match sum_p jobs_p x (Table II weights renormalised
    over the types cluster p can host), within 4 binomial sigmas for every type."""
    observed: Counter = Counter()
    expected = np.zeros(len(paper.JOB_TYPES))
    total = 0
    for index in range(12):
        scenario = paper_instance(7, index, workload={"jobs_per_node": 4})
        _, table, _ = prepare(scenario)
        observed.update(zip(table["workers"], table["gpus"].astype(int)))
        for cluster in scenario.clusters:
            nodes, gpus, _ = paper.cluster_shape(cluster)
            types, probabilities = paper.type_distribution(nodes, gpus)
            expected[types] += 4 * nodes * probabilities
            total += 4 * nodes
    assert sum(observed.values()) == total
    for i, job_type in enumerate(paper.JOB_TYPES):
        count = observed[job_type.workers, job_type.gpus]
        p = expected[i] / total
        assert abs(count - expected[i]) <= 4 * np.sqrt(total * p * (1 - p)) + 1, job_type


def _write(tmp_path, text: str):
    path = tmp_path / "instance.toml"
    path.write_text(text)
    return path


def test_scenario_instance_table_selects_the_same_instance(tmp_path) -> None:
    path = _write(tmp_path, '[instance]\nset = "test"\nindex = 7\nseed = 3\n'
                            '[workload]\njobs_per_node = 2\n[scheduler]\npolicy = "mct-gp"\n')
    scenario = load_scenario(path)
    reference = paper_instance(3, 67)
    assert scenario.clusters == reference.clusters and scenario.seed == reference.seed
    assert scenario.name == "paper-test07-s3"
    assert scenario.workload.params == {"jobs_per_node": 2}
    overridden = load_scenario(_write(tmp_path, 'seed = 9\n[instance]\nindex = 67\nseed = 3\n'))
    assert overridden.seed == 9 and overridden.clusters == reference.clusters


@pytest.mark.parametrize("text, message", [
    ('[instance]\nset = "test"\nindex = 30\n', "instance.index: must be <= 29"),
    ('[instance]\nset = "dev"\nindex = 0\n', "instance.set: unknown value 'dev'"),
    ('[instance]\nseed = 1\n', "instance.index: is required"),
    ('[instance]\nindex = 1\ngenerator = "x"\n', "instance.generator: unknown value 'x'"),
    ('[instance]\nindex = 1\nsize = 3\n', "instance.size: unknown key"),
    ('[instance]\nindex = 1\n[[cluster]]\nname = "a"\nnodes = [{count = 1, gpus = 8}]\n',
     "cluster: is given by \\[instance\\]"),
])
def test_bad_instance_tables_name_the_key(tmp_path, text, message) -> None:
    with pytest.raises(InputError, match=message):
        load_scenario(_write(tmp_path, text))
