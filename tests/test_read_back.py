"""Files simsched reads back are validated by content, not only parsed (issues 23 and 24): a
damaged, binary, empty or foreign file is one line naming the file and what is wrong, exit 2 (or an
InputError from the library), never an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simsched.cli.main import main
from simsched.core.errors import InputError
from simsched.evo.priority import load_priority

SCENARIO = """
name = "s"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 12
[scheduler]
policy = "fifo"
"""
GOOD = {"format": "simsched-priority", "version": 1, "infix": "d",
        "nodes": [{"id": 0, "op": "d"}], "edges": []}


# -- RL agents ----------------------------------------------------------------------------------------
@pytest.fixture
def agent_file(tmp_path: Path) -> Path:
    pytest.importorskip("gymnasium", reason="RL needs the extra 'rl' (gymnasium)")
    from simsched.rl.agent import LinearAgent
    from simsched.rl.features import FleetShape, ObsConfig

    agent = LinearAgent.initial(ObsConfig(), FleetShape(("V100",), ((0, "V100"),), 8))
    return agent.save(tmp_path / "agent.npz")


def _rewrite_agent(path: Path, theta=None, meta=None) -> None:
    with np.load(path, allow_pickle=False) as data:
        saved_theta, saved_meta = data["theta"], json.loads(str(data["meta"]))
    np.savez(path, theta=saved_theta if theta is None else theta(saved_theta),
             meta=np.array(json.dumps(saved_meta if meta is None else meta(saved_meta))))


@pytest.mark.parametrize("change, expected", [
    (dict(theta=lambda t: np.full_like(t, np.nan)), "weights are NaN or infinite"),
    (dict(meta=lambda m: [m]), "metadata is a list"),
    (dict(meta=lambda m: {**m, "shape": [1, 2, 3]}), "'config' and 'shape' must be tables"),
    (dict(meta=lambda m: {**m, "shape": {"gpu_types": 5}}), "agent settings are invalid"),
    (dict(meta=lambda m: {**m, "config": {**m["config"], "top_k": "many"}}), "agent settings are invalid"),
])
def test_a_damaged_agent_is_refused(agent_file: Path, change: dict, expected: str) -> None:
    from simsched.rl.agent import LinearAgent

    _rewrite_agent(agent_file, **change)
    with pytest.raises(InputError, match=expected):
        LinearAgent.load(agent_file)


# -- priority files ---------------------------------------------------------------------------------
@pytest.mark.parametrize("content, expected", [
    ({**GOOD, "version": 99}, "version 99"),
    ({**GOOD, "format": "something-else"}, "is not a priority function"),
    ({**GOOD, "nodes": [{"id": 0, "op": "d"}, {"id": 0, "op": "q"}]}, "two nodes have the id 0"),
    ([1, 2], "must hold a JSON object"),
])
def test_a_foreign_or_damaged_priority_file_is_refused(tmp_path: Path, content, expected: str) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps(content))
    with pytest.raises(InputError, match=expected):
        load_priority(path)


def test_a_binary_or_too_deep_priority_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    with pytest.raises(InputError, match="binary content"):
        load_priority(path)
    depth = 80  # a chain of '+' nodes: 0 = 1 + 2, 2 = 3 + 4, ...
    nodes, edges = [], []
    for level in range(depth):
        nodes += [{"id": 2 * level, "op": "+"}, {"id": 2 * level + 1, "op": "d"}]
        edges += [{"source": 2 * level, "target": 2 * level + 1, "arg": 0},
                  {"source": 2 * level, "target": 2 * level + 2, "arg": 1}]
    nodes.append({"id": 2 * depth, "op": "q"})
    path.write_text(json.dumps({"format": "simsched-priority", "version": 1, "nodes": nodes, "edges": edges}))
    with pytest.raises(InputError, match="80 levels deep"):
        load_priority(path)
    assert load_priority(_saved(tmp_path)).number_of_nodes() == 1  # a good file still loads


def _saved(tmp_path: Path) -> Path:
    path = tmp_path / "good.json"
    path.write_text(json.dumps(GOOD))
    return path


# -- learn checkpoints ------------------------------------------------------------------------------
@pytest.fixture
def learned(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(SCENARIO)
    argv = ["learn", "s.toml", "--out", "f.json", "--population", "4", "--generations", "1", "--train", "1",
            "--validation", "1", "--alpha", "1", "--quiet", "--workers", "1"]
    assert main(argv) == 0
    return tmp_path / "f.json.ckpt"


@pytest.mark.parametrize("change, expected", [
    (lambda d: {**d, "rng_state": {"bit_generator": "MT19937", "state": {"key": [1], "pos": 0}}}, "rng_state is not"),
    (lambda d: {**d, "rng_state": [1, 2, 3]}, "rng_state is not"),
    (lambda d: {**d, "population": [["+", "d"]]}, "damaged checkpoint"),
    (lambda d: {**d, "fitness": [1.0]}, "fitness must be"),
    (lambda d: {**d, "generation": -3}, "generation must be"),
    (lambda d: {**d, "generation": "1"}, "generation must be"),
    (lambda d: {**d, "config": [1]}, "'config' must be a table"),
])
def test_a_damaged_learn_checkpoint_is_one_line(learned: Path, capsys, change, expected: str) -> None:
    if not learned.is_file():
        pytest.skip("learn kept no checkpoint after finishing")
    data = json.loads(learned.read_text())
    learned.write_text(json.dumps(change(data)))
    argv = ["learn", "s.toml", "--out", "f.json", "--population", "4", "--generations", "2", "--train", "1",
            "--validation", "1", "--alpha", "1", "--quiet", "--workers", "1", "--resume"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "f.json.ckpt" in err[0], err


# -- run folders handed to plot and compare journals ------------------------------------------------
@pytest.mark.parametrize("name, content, expected", [
    ("nodes.csv", b"", "empty file"),
    ("jobs.csv", b"\x00\xff\xfe", "not a simsched jobs.csv table"),
    ("summary.json", b"\xff\xfe", "binary content"),
    ("summary.json", b"[1, 2]", "a JSON list, not an object"),
])
def test_a_damaged_run_folder_handed_to_plot_is_one_line(tmp_path: Path, capsys, name: str, content: bytes,
                                                         expected: str) -> None:
    pytest.importorskip("matplotlib", reason="plot needs the extra 'plots'")
    (tmp_path / "s.toml").write_text(SCENARIO)
    assert main([str(tmp_path / "s.toml"), "--out", str(tmp_path / "run"), "--quiet"]) == 0
    (tmp_path / "run" / name).write_bytes(content)
    assert main(["plot", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and name in err[0], err


@pytest.mark.parametrize("first", ["[1, 2]", '"text"', "\x00\x01"])
def test_a_compare_journal_that_is_not_ours_is_one_line(tmp_path: Path, capsys, first: str) -> None:
    (tmp_path / "s.toml").write_text(SCENARIO)
    out = tmp_path / "cmp"
    out.mkdir()
    (out / "compare_runs.partial.jsonl").write_text(first + "\n")
    assert main(["compare", str(tmp_path / "s.toml"), "--out", str(out), "--resume", "--quiet", "--seeds", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compare_runs.partial.jsonl" in err[0] and "internal error" not in err[0], err
