"""GP operators (simsched.evo.gp): initialisation depths, variation keeps valid depth-limited graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core.errors import InputError
from simsched.evo import gp
from simsched.evo.priority import depth, evaluate, load_priority, protected_div, validate

PRIMS = gp.PrimitiveSet()


def leaf_depths(individual: gp.Individual) -> list[int]:
    return [d for d, t in zip(gp.node_depths(individual), individual) if not gp.is_function(t)]


def direct(individual: gp.Individual, features: dict[str, np.ndarray]) -> np.ndarray:
    """Plain prefix evaluation, independent of the graph code."""
    stack: list[np.ndarray] = []
    for token in reversed(individual):
        if gp.is_function(token):
            x, y = stack.pop(), stack.pop()
            if token == "+":
                stack.append(x + y)
            elif token == "-":
                stack.append(x - y)
            elif token == "*":
                stack.append(x * y)
            else:
                stack.append(np.where(y == 0, x, x / np.where(y == 0, 1, y)))
        elif isinstance(token, float):
            stack.append(np.full_like(features["d"], token))
        else:
            stack.append(features[token])
    return stack[0]


@pytest.mark.parametrize("low,high", [(0, 0), (1, 3), (2, 6), (7, 7)])
def test_full_trees_have_every_leaf_at_the_drawn_depth(low: int, high: int) -> None:
    rng = np.random.default_rng(1)
    for _ in range(50):
        tree = gp.generate(rng, PRIMS, low, high, "full")
        leaves = set(leaf_depths(tree))
        assert len(leaves) == 1 and low <= leaves.pop() <= high
        assert len(tree) == 2 ** (gp.tree_depth(tree) + 1) - 1


@pytest.mark.parametrize("low,high", [(0, 2), (1, 4), (2, 6)])
def test_grow_trees_have_leaves_between_min_and_max(low: int, high: int) -> None:
    rng = np.random.default_rng(2)
    shapes = set()
    for _ in range(100):
        tree = gp.generate(rng, PRIMS, low, high, "grow")
        assert all(low <= d <= high for d in leaf_depths(tree))
        shapes.add(len(tree))
    assert len(shapes) >= 4  # grow really varies the shape


def test_ramped_half_and_half_alternates_full_and_grow_over_the_ramp() -> None:
    rng = np.random.default_rng(3)
    population = gp.ramped_half_and_half(rng, PRIMS, 40, 2, 6)
    assert len(population) == 40 and len(set(population)) == 40
    for i, tree in enumerate(population):
        ramp = 2 + (i // 2) % 5
        if i % 2 == 0:
            assert set(leaf_depths(tree)) == {ramp}
        else:
            assert 2 <= gp.tree_depth(tree) <= ramp and min(leaf_depths(tree)) >= 2


def test_initialisation_is_reproducible() -> None:
    first = gp.ramped_half_and_half(np.random.default_rng(7), PRIMS, 30)
    second = gp.ramped_half_and_half(np.random.default_rng(7), PRIMS, 30)
    assert first == second


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_depth=st.integers(2, 7))
def test_crossover_and_mutation_keep_valid_graphs_within_the_depth_limit(seed: int, max_depth: int) -> None:
    rng = np.random.default_rng(seed)
    population = gp.ramped_half_and_half(rng, PRIMS, 10, 1, max_depth)
    for _ in range(20):
        a, b = (population[int(i)] for i in rng.integers(len(population), size=2))
        c1, c2 = gp.crossover(rng, a, b, max_depth)
        m = gp.mutate(rng, c1, PRIMS, max_depth)
        for child in (c1, c2, m):
            gp.check(child, PRIMS)
            assert gp.tree_depth(child) <= max_depth
            graph = gp.to_graph(child)
            validate(graph)
            assert depth(graph) == gp.tree_depth(child)
        population[:3] = [c1, c2, m]


def test_crossover_keeps_the_material_of_both_parents() -> None:
    rng = np.random.default_rng(4)
    a, b = ("+", "d", "q"), ("*", "u", "g")
    for _ in range(20):
        c1, c2 = gp.crossover(rng, a, b, 7)
        assert sorted(map(str, c1 + c2)) == sorted(map(str, a + b))


def test_crossover_returns_a_parent_when_every_child_is_too_deep() -> None:
    rng = np.random.default_rng(5)
    deep = gp.generate(rng, PRIMS, 3, 3, "full")
    c1, c2 = gp.crossover(rng, deep, deep, max_depth=3, internal_bias=0.0)  # leaf points: still depth 3
    assert gp.tree_depth(c1) <= 3 and gp.tree_depth(c2) <= 3
    c1, c2 = gp.crossover(np.random.default_rng(0), ("+", "d", ("q")), deep, max_depth=1)
    assert gp.tree_depth(c1) <= 1 and gp.tree_depth(c2) <= 3


def test_graph_round_trip_and_evaluation_agree_with_prefix() -> None:
    rng = np.random.default_rng(6)
    features = {name: rng.integers(0, 4, size=50).astype(float) for name in "dqug"}
    for tree in gp.ramped_half_and_half(rng, PRIMS, 30, 1, 5):
        graph = gp.to_graph(tree)
        assert gp.from_graph(graph) == tree
        np.testing.assert_array_equal(evaluate(graph, features), direct(tree, features))


def test_paper_eq17_converts_both_ways() -> None:
    graph = load_priority("gp-paper")
    tree = gp.from_graph(graph)
    assert 2.0 in tree and gp.tree_depth(tree) == depth(graph)
    back = gp.to_graph(tree)
    features = {"d": np.array([5.0, 3.0]), "q": np.array([0.0, 2.0]), "u": np.array([1.0, 3.0]),
                "g": np.array([4.0, 1.0])}
    np.testing.assert_allclose(evaluate(back, features), evaluate(graph, features))
    assert nx.is_directed_acyclic_graph(back)


def test_protected_division() -> None:
    np.testing.assert_array_equal(protected_div(np.array([3.0, 6.0]), np.array([0.0, 2.0])), [3.0, 3.0])
    graph = gp.to_graph(("%", "d", "-", "q", "q"))  # d % (q - q) == d
    out = evaluate(graph, {"d": np.array([7.0, -2.0]), "q": np.array([1.0, 5.0]),
                           "u": np.zeros(2), "g": np.zeros(2)})
    np.testing.assert_array_equal(out, [7.0, -2.0])


def test_constants_are_an_opt_in_terminal() -> None:
    rng = np.random.default_rng(8)
    assert not any(isinstance(t, float) for tree in gp.ramped_half_and_half(rng, PRIMS, 20) for t in tree)
    prims = gp.PrimitiveSet(constants=(1.0, 2.0))
    trees = gp.ramped_half_and_half(rng, prims, 20)
    assert any(isinstance(t, float) for tree in trees for t in tree)
    for tree in trees:
        validate(gp.to_graph(tree, prims))


def test_tournament_and_selection() -> None:
    fitness = np.array([3.0, 1.0, 2.0, 1.0, np.inf])
    assert gp.select_best(fitness, 3) == [1, 3, 2]  # stable ties
    rng = np.random.default_rng(0)
    wins = [gp.tournament(rng, fitness, 5) for _ in range(200)]
    assert 4 not in wins and set(wins) <= {0, 1, 2, 3}
    assert gp.tournament(np.random.default_rng(0), fitness, 1) in range(5)


def test_bad_primitive_sets_and_trees_are_rejected() -> None:
    with pytest.raises(InputError, match="functions"):
        gp.PrimitiveSet(functions=("/",))
    with pytest.raises(InputError, match="terminals"):
        gp.PrimitiveSet(terminals=())
    with pytest.raises(InputError, match="incomplete"):
        gp.check(("+", "d"))
    with pytest.raises(InputError, match="unknown token"):
        gp.check(("+", "d", "x"))


def test_simplified_reads_percent_as_division() -> None:
    pytest.importorskip("sympy", reason="sympy is the optional extra 'sympy'")
    assert gp.simplified(("%", "*", "g", "d", "g")) == "d"
