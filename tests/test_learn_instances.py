"""GP learning instance sources: the scenario's seeds, the paper's generated sets, cluster sizes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simsched.config.instances import paper_instance
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError
from simsched.evo.priority import BUILTIN, parse, to_json
from simsched.learning import gp_instances as learn_instances
from simsched.learning.gp import LearnConfig, learn, learn_config, run_objective
from tests.conftest import REPO

ONE = """name = "one"
seed = 2
[[cluster]]
name = "solo"
nodes = [{ count = 4, gpus = 8, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "venus"
jobs = 20
[scheduler]
policy = "fifo"
[objective]
kind = "eq16"
w = 1.0
"""


@pytest.fixture
def one(tmp_path: Path) -> Path:
    path = tmp_path / "one.toml"
    path.write_text(ONE)
    return path


def test_keys_of_each_source() -> None:
    seeds = LearnConfig(train=3, validation=2, alpha=1, first_seed=10)
    assert seeds.training_seeds == [10, 11, 12] and seeds.validation_seeds == [13, 14]  # as before
    paper = LearnConfig(instances="paper", instance_seed=4, train=2, validation=3, alpha=1)
    assert paper.training_seeds == ["paper:4:0", "paper:4:1"]
    assert paper.validation_seeds == ["paper:4:50", "paper:4:51", "paper:4:52"]
    sizes = LearnConfig(instances="sizes", sizes=(5, 9), train=2, validation=2, alpha=1, first_seed=7)
    assert sizes.training_seeds == ["size:5:7", "size:9:7"] and sizes.validation_seeds == ["size:5:8", "size:9:8"]


def test_resolve_builds_the_named_instances(one: Path) -> None:
    base = load_scenario(one)
    assert learn_instances.resolve(base, 9).seed == 9
    paper = learn_instances.resolve(base, "paper:4:51")
    reference = paper_instance(4, 51)
    assert paper.clusters == reference.clusters and paper.seed == reference.seed
    assert paper.objective == base.objective  # the learning scenario's fitness
    resized = learn_instances.resolve(base, "size:13:6")
    assert resized.clusters[0].nodes[0].count == 13 and resized.clusters[0].total_gpus == 104
    assert resized.seed == 6 and resized.workload == base.workload
    with pytest.raises(InputError, match="bad instance key"):
        learn_instances.resolve(base, "size:x")


def test_sizes_share_one_workload(one: Path) -> None:
    from simsched.runs.single import prepare

    base = load_scenario(one)
    tables = [prepare(learn_instances.resolve(base, f"size:{n}:6"))[1] for n in (8, 12)]
    assert tables[0].equals(tables[1])  # venus without load, >= 64 GPUs: the jobs do not depend on the fleet


def test_learn_table_selects_sizes_with_alpha_one(one: Path) -> None:
    one.write_text(ONE + '[learn]\ninstances = "sizes"\nsizes = [3, 4, 6]\n')
    config = learn_config(one)
    assert (config.train, config.validation, config.alpha) == (3, 3, 1)
    assert learn_config(one, instances="seeds", sizes=()).instances == "seeds"


@pytest.mark.parametrize("table, message", [
    ('instances = "sizes"', 'learn.sizes: is required with instances = "sizes"'),
    ('sizes = [3]', 'go with instances = "sizes"'),
    ('instances = "grid"', "learn.instances: unknown value 'grid'"),
    ('instances = "paper"\ntrain = 51\nalpha = 1', '"train" must be <= 50'),
    ('instances = "sizes"\nsizes = [3, 0]', '"sizes" must be node counts >= 1'),
    ('instances = "sizes"\nsizes = [3, 4]\ntrain = 5', '"train" must equal the number of sizes'),
])
def test_bad_learn_instance_keys(one: Path, table: str, message: str) -> None:
    one.write_text(ONE + f"[learn]\n{table}\n")
    with pytest.raises(InputError, match=message):
        learn_config(one)


def test_sizes_need_a_single_cluster(tmp_path: Path) -> None:
    path = tmp_path / "two.toml"
    path.write_text(ONE.replace('[workload]', '[[cluster]]\nname = "b"\nnodes = [{ count = 1, gpus = 8 }]\n[workload]')
                    + '[learn]\ninstances = "sizes"\nsizes = [3, 4]\n')
    with pytest.raises(InputError, match='"sizes" resizes a single cluster'):
        learn_config(path)


def test_run_objective_on_a_paper_instance_uses_the_scenario_objective(one: Path) -> None:
    graph = json.dumps(to_json(parse(BUILTIN["srsf"])))
    value = run_objective(str(one), "paper:0:3", graph, 15)
    assert value > 0


def test_learning_on_paper_instances_and_on_sizes(one: Path) -> None:
    small = dict(population=4, generations=1, seed=1, jobs=12)
    paper = learn(one, LearnConfig(instances="paper", train=2, validation=1, alpha=1, **small))
    assert paper.meta["training_seeds"] == ["paper:0:0", "paper:0:1"]
    assert paper.meta["validation"]["seeds"] == ["paper:0:50"]
    assert all(set(h["instances"]) <= {"paper:0:0", "paper:0:1"} for h in paper.meta["history"])
    sizes = learn(one, LearnConfig(instances="sizes", sizes=(3, 5), train=2, validation=2, alpha=1, **small))
    assert sizes.meta["validation"]["seeds"] == ["size:3:1001", "size:5:1001"]
    again = learn(one, LearnConfig(instances="sizes", sizes=(3, 5), train=2, validation=2, alpha=1, **small))
    assert again.best == sizes.best and again.meta["history"] == sizes.meta["history"]


def test_venus_like_learn_table_is_valid() -> None:
    config = learn_config(REPO / "scenarios" / "venus_like.toml")
    assert config.instances == "sizes" and config.alpha == 1 and len(config.sizes) == 10
