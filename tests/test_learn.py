"""GP learning (Algorithm 3): deterministic, resumable, executor-independent; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simsched.cli.main import main
from simsched.core.errors import InputError
from simsched.evo import gp
from simsched.evo.priority import load_priority, validate
from simsched.learning import gp as learn_mod
from simsched.learning.gp import (
    LearnConfig,
    checkpoint_path,
    learn,
    learn_config,
    ratios,
    run_objective,
)

TINY = """name = "tiny"
seed = 3
[[cluster]]
name = "a"
nodes = [{ count = 1, gpus = 8, gpu_type = "V100" }]
[[cluster]]
name = "b"
nodes = [{ count = 2, gpus = 8, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "paper"
jobs_per_node = 4
[scheduler]
policy = "fifo"
"""
SMALL = dict(population=8, generations=2, alpha=2, train=4, validation=2, seed=5)


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.toml"
    path.write_text(TINY)
    return path


def outcome(result) -> tuple:
    """Everything that must match between two runs (not wall time or executor)."""
    meta = result.meta
    return (result.best, meta["history"], meta["validation"])


def test_learning_is_deterministic_and_writes_a_valid_priority_file(scenario: Path, tmp_path: Path) -> None:
    config = LearnConfig(**SMALL)
    first = learn(scenario, config, out=tmp_path / "a.json")
    second = learn(scenario, config, out=tmp_path / "b.json")
    assert outcome(first) == outcome(second)
    assert [h["generation"] for h in first.meta["history"]] == [0, 1, 2]
    graph = load_priority(tmp_path / "a.json")
    validate(graph)
    assert gp.from_graph(graph) == first.best
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["meta"]["config"]["population"] == 8
    assert data["meta"]["validation"]["seeds"] == [1004, 1005]
    assert checkpoint_path(tmp_path / "a.json").is_file()
    history = first.meta["history"]
    assert all(entry["best"] <= entry["mean"] for entry in history)
    assert len({entry["mean"] for entry in history}) > 1  # the instances tell candidates apart


def test_another_seed_gives_another_search(scenario: Path) -> None:
    a = learn(scenario, LearnConfig(**SMALL))
    b = learn(scenario, LearnConfig(**{**SMALL, "seed": 6}))
    assert [h["instances"] for h in a.meta["history"]] != [h["instances"] for h in b.meta["history"]]


def test_resume_after_more_generations_equals_an_uninterrupted_run(scenario: Path, tmp_path: Path) -> None:
    straight = learn(scenario, LearnConfig(**{**SMALL, "generations": 3}), out=tmp_path / "straight.json")
    out = tmp_path / "stepped.json"
    learn(scenario, LearnConfig(**{**SMALL, "generations": 1}), out=out)
    resumed = learn(scenario, LearnConfig(**{**SMALL, "generations": 3}), out=out, resume=True)
    assert outcome(resumed) == outcome(straight)


_CALLS = {"left": 0}


def interrupting_objective(scenario_path: str, seed: int, graph_json: str, jobs: int | None) -> float:
    """The real objective, until the budget runs out: then a Ctrl-C."""
    if _CALLS["left"] <= 0:
        raise KeyboardInterrupt
    _CALLS["left"] -= 1
    return run_objective(scenario_path, seed, graph_json, jobs)


def test_ctrl_c_leaves_a_checkpoint_that_resumes_to_the_same_result(scenario: Path, tmp_path: Path) -> None:
    config = LearnConfig(**{**SMALL, "generations": 3})
    straight = learn(scenario, config)
    out = tmp_path / "cut.json"
    _CALLS["left"] = 30  # past generation 0, inside a later generation
    with pytest.raises(KeyboardInterrupt):
        learn(scenario, config, out=out, objective_fn=interrupting_objective)
    saved = json.loads(checkpoint_path(out).read_text())
    assert 0 <= saved["generation"] < 3 and not out.exists()
    resumed = learn(scenario, config, out=out, resume=True)
    assert outcome(resumed) == outcome(straight)


def test_resume_refuses_a_checkpoint_made_with_other_settings(scenario: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.json"
    learn(scenario, LearnConfig(**{**SMALL, "generations": 0}), out=out)
    with pytest.raises(InputError, match="other settings.*population"):
        learn(scenario, LearnConfig(**{**SMALL, "population": 6}), out=out, resume=True)


def test_two_worker_processes_give_the_serial_result(scenario: Path) -> None:
    config = LearnConfig(**SMALL)
    serial = learn(scenario, config, workers=1)
    parallel = learn(scenario, config, workers=2)
    assert outcome(parallel) == outcome(serial)


def test_ray_gives_the_serial_result(scenario: Path) -> None:
    ray = pytest.importorskip("ray", reason="Ray is the optional extra 'ray' (pip install -e '.[ray]')")
    config = LearnConfig(**{**SMALL, "population": 6, "generations": 1})
    serial = learn(scenario, config, workers=1)
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as exc:  # noqa: BLE001 - any failure to start means: no Ray here
        pytest.skip(f"a local Ray instance could not start: {exc}")
    try:
        on_ray = learn(scenario, config, workers=2, executor="ray")
    finally:
        ray.shutdown()
    assert outcome(on_ray) == outcome(serial)


def test_ratios_to_srsf() -> None:
    out = ratios(np.array([[2.0, 0.0], [np.nan, 3.0]]), np.array([4.0, 0.0]))
    assert out.tolist() == [[0.5, 1.0], [np.inf, np.inf]]


def test_config_validation_names_the_option() -> None:
    with pytest.raises(InputError, match='"alpha" must be <= train'):
        LearnConfig(alpha=5, train=3)
    with pytest.raises(InputError, match='"mutation_rate"'):
        LearnConfig(mutation_rate=1.5)
    with pytest.raises(InputError, match='"init_max"'):
        LearnConfig(max_depth=3)


def test_learn_table_gives_defaults_and_flags_override(scenario: Path) -> None:
    scenario.write_text(TINY + "[learn]\npopulation = 6\ngenerations = 1\nconstants = [1, 2]\n")
    config = learn_config(scenario, generations=4)
    assert (config.population, config.generations, config.constants, config.seed) == (6, 4, (1.0, 2.0), 3)
    scenario.write_text(TINY + "[learn]\npopulaton = 6\n")
    with pytest.raises(InputError, match="learn.populaton"):
        learn_config(scenario)


def test_cli_learn_writes_the_file(scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "learned.json"
    code = main(["learn", str(scenario), "--out", str(out), "--population", "6", "--generations", "1",
                 "--alpha", "1", "--train", "2", "--validation", "1", "--workers", "1"])
    assert code == 0
    err = capsys.readouterr().err
    assert "learned:" in err and "validation (1 instances)" in err and f"wrote {out}" in err
    validate(load_priority(out))


@pytest.mark.parametrize("argv,message", [
    (["--population", "0"], "--population: must be >= 1"),
    (["--executor", "spark"], "invalid choice"),
    (["--address", "x:1"], "--address needs --executor ray"),
    (["--alpha", "9", "--train", "3"], '"alpha" must be <= train'),
])
def test_cli_learn_bad_input_is_one_line_and_exit_2(scenario: Path, tmp_path: Path, capsys, argv, message) -> None:
    code = main(["learn", str(scenario), "--out", str(tmp_path / "o.json"), *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


def test_cli_learn_needs_out(scenario: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["learn", str(scenario)]) == 2
    assert "--out" in capsys.readouterr().err


def test_checkpoint_path_is_beside_the_output() -> None:
    assert learn_mod.checkpoint_path("dir/f.json") == Path("dir/f.json.ckpt")
