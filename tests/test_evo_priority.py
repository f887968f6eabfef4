"""Priority DAGs: evaluation, protected division, Eq. 17/18, text and file round-trips."""

from __future__ import annotations

import json

import networkx as nx
import numpy as np
import pytest

from simsched.core.errors import InputError
from simsched.evo.priority import (
    BUILTIN,
    depth,
    evaluate,
    infix,
    load_priority,
    parse,
    protected_div,
    save_priority,
    validate,
)


def _features(**values: float) -> dict[str, np.ndarray]:
    return {k: np.atleast_1d(np.asarray(v, dtype=float)) for k, v in values.items()}


def test_protected_division_returns_numerator_on_zero() -> None:
    out = protected_div(np.array([1.0, 2.0, -3.0, 0.0]), np.array([0.0, 4.0, 0.0, 0.0]))
    np.testing.assert_array_equal(out, [1.0, 0.5, -3.0, 0.0])
    f = evaluate(parse("d % q"), _features(d=[6, 6], q=[0, 3], u=[1, 1], g=[1, 1]))
    np.testing.assert_array_equal(f, [6.0, 2.0])


def test_eq17_hand_computed() -> None:
    g17 = load_priority("gp-paper")
    # d=10, q=2, u=1, g=4: ((6 % 2 - 1) % 4) * (10 % (2 + 13 % 4)) = 0.5 * 10 / 5.25
    f = evaluate(g17, _features(d=10, q=2, u=1, g=4))
    assert f[0] == pytest.approx(0.5 * 10 / 5.25, rel=1e-15)
    # q = 0 hits every protected division: (g - u) * d / (d + g - u) = 3 * 10 / 13
    f0 = evaluate(g17, _features(d=10, q=0, u=1, g=4))
    assert f0[0] == pytest.approx(30 / 13, rel=1e-15)


def test_eq17_at_q0_reduces_to_eq18() -> None:
    rng = np.random.default_rng(7)
    n = 1000
    d = rng.integers(1, 50_000, n).astype(float)
    g = rng.choice([1, 2, 4, 8, 16, 64, 128], n).astype(float)
    u = rng.integers(1, 4, n).astype(float)
    f17 = evaluate(load_priority("gp-paper"), {"d": d, "q": np.zeros(n), "u": u, "g": g})
    f18 = (g - u) * d / (d + g - u)
    np.testing.assert_allclose(f17, f18, rtol=1e-12)


def test_srsf_builtin_is_g_times_d() -> None:
    f = evaluate(load_priority("srsf"), _features(d=[3, 5], q=[1, 1], u=[1, 2], g=[2, 8]))
    np.testing.assert_array_equal(f, [6.0, 40.0])
    assert set(BUILTIN) >= {"gp-paper", "srsf"}


def _random_expression(rng: np.random.Generator, depth_left: int) -> str:
    if depth_left == 0 or rng.random() < 0.3:
        if rng.random() < 0.25:
            return str(rng.choice([0, 1, 2, 0.5, -3, 2.25]))
        return str(rng.choice(["d", "q", "u", "g"]))
    op = str(rng.choice(["+", "-", "*", "%"]))
    return f"({_random_expression(rng, depth_left - 1)} {op} {_random_expression(rng, depth_left - 1)})"


def test_infix_parse_round_trip_keeps_text_and_values() -> None:
    rng = np.random.default_rng(3)
    feats = {k: rng.integers(0, 5, 64).astype(float) for k in "dqug"}
    for text in [*BUILTIN.values(), *(_random_expression(rng, 5) for _ in range(200))]:
        graph = parse(text)
        back = parse(infix(graph))
        assert infix(back) == infix(graph)
        np.testing.assert_array_equal(evaluate(back, feats), evaluate(graph, feats))
        assert depth(back) == depth(graph)


def test_infix_precedence_and_associativity() -> None:
    assert infix(parse("d - (q - u)")) == "d - (q - u)"
    assert infix(parse("(d - q) - u")) == "d - q - u"
    assert infix(parse("(d + q) * g")) == "(d + q) * g"
    assert infix(parse("d % (q * u)")) == "d % (q * u)"
    assert infix(parse("d * -2.5")) == "d * (-2.5)"


def test_parse_shares_identical_subtrees() -> None:
    graph = parse("(d + q) * (d + q) + (d + q)")
    validate(graph)
    plus = [v for v, op in graph.nodes(data="op") if op == "+"]
    # (d + q) once, its copy for the right side of the square, and the outer +.
    assert len(plus) == 3
    assert sum(1 for _, op in graph.nodes(data="op") if op == "d") == 1
    f = evaluate(graph, _features(d=2, q=3, u=0, g=0))
    assert f[0] == 30.0


def test_hand_built_dag_with_shared_subtree() -> None:
    graph = nx.DiGraph()
    graph.add_node("root", op="*")
    graph.add_node("sum", op="+")
    graph.add_node("minus", op="-")
    graph.add_node("d", op="d")
    graph.add_node("g", op="g")
    graph.add_node("two", op="const", value=2.0)
    graph.add_edge("root", "sum", arg=0)
    graph.add_edge("root", "minus", arg=1)
    graph.add_edge("sum", "d", arg=0)
    graph.add_edge("sum", "g", arg=1)
    graph.add_edge("minus", "sum", arg=0)  # shared subtree
    graph.add_edge("minus", "two", arg=1)
    assert infix(graph) == "(d + g) * (d + g - 2)"
    assert depth(graph) == 3
    f = evaluate(graph, _features(d=[1, 3], q=[0, 0], u=[0, 0], g=[2, 1]))
    np.testing.assert_array_equal(f, [3.0, 8.0])


def _bad(kind: str) -> nx.DiGraph:
    graph = nx.DiGraph()
    if kind == "cycle":
        graph.add_node(0, op="+")
        graph.add_node(1, op="+")
        graph.add_edge(0, 1, arg=0)
        graph.add_edge(1, 0, arg=0)
    elif kind == "two roots":
        graph.add_node(0, op="d")
        graph.add_node(1, op="q")
    elif kind == "one argument":
        graph.add_node(0, op="+")
        graph.add_node(1, op="d")
        graph.add_edge(0, 1, arg=0)
    elif kind == "bad op":
        graph.add_node(0, op="sqrt")
    elif kind == "const without value":
        graph.add_node(0, op="const")
    elif kind == "leaf with children":
        graph.add_node(0, op="d")
        graph.add_node(1, op="q")
        graph.add_edge(0, 1, arg=0)
    return graph


@pytest.mark.parametrize(
    "kind",
    ["cycle", "two roots", "one argument", "bad op", "const without value", "leaf with children"],
)
def test_malformed_graphs_raise_input_error(kind: str) -> None:
    with pytest.raises(InputError):
        validate(_bad(kind))


@pytest.mark.parametrize("text", ["", "d +", "(d + q", "d q", "x * d", "d / q", "d + )"])
def test_bad_expressions_raise_input_error(text: str) -> None:
    with pytest.raises(InputError):
        parse(text)


def test_missing_feature_is_an_input_error() -> None:
    with pytest.raises(InputError, match="terminal 'u'"):
        evaluate(parse("u * d"), {"d": np.ones(2)})


def test_save_and_load_round_trip(tmp_path) -> None:
    graph = load_priority("gp-paper")
    path = save_priority(graph, tmp_path / "learned.json", method="test", generations=3)
    data = json.loads(path.read_text())
    assert data["format"] == "simsched-priority"
    assert data["infix"] == infix(graph)
    assert data["meta"] == {"method": "test", "generations": 3}
    loaded = load_priority(path)
    assert infix(loaded) == infix(graph)
    feats = {k: np.arange(1.0, 6.0) for k in "dqug"}
    np.testing.assert_array_equal(evaluate(loaded, feats), evaluate(graph, feats))


def test_load_priority_accepts_infix_only_files_and_expressions(tmp_path) -> None:
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"infix": "g * d + q"}))
    assert infix(load_priority(path)) == "g * d + q"
    assert infix(load_priority("u * q")) == "u * q"


def test_load_priority_errors(tmp_path) -> None:
    with pytest.raises(InputError, match="not found"):
        load_priority(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        load_priority(bad)
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({"nodes": [{"id": 0, "op": "+"}], "edges": []}))
    with pytest.raises(InputError, match="broken.json"):
        load_priority(broken)
    with pytest.raises(InputError, match="built-in"):
        load_priority("no-such-priority")
