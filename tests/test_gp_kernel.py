"""The compiled priority kernel (simsched/evo/gp_kernel.py) against the numpy reference, bit for bit."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.evo.gp_kernel import compiled_keys, kernel_source
from simsched.evo.priority import BUILTIN, Evaluator, evaluate, parse, protected_div, root
from simsched.evo.scheduler import GpOrdering

#: floats that make protected division and overflow interesting
EDGES = (0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-308, 5e-324, 1e308, -1e308, np.inf, -np.inf, np.nan)
COLUMNS = ("remaining_work", "wait_so_far", "queued_since", "weight", "gpus")


def reference(graph, columns: dict[str, np.ndarray], now: float) -> np.ndarray:
    """What the numpy path orders by: :func:`evaluate` of the terminals ``GpOrdering.vector`` forms."""
    with np.errstate(all="ignore"):
        q = columns["wait_so_far"] + (now - columns["queued_since"])
        return evaluate(graph, {"d": columns["remaining_work"], "q": q, "u": columns["weight"],
                                "g": columns["gpus"]})


def run_kernel(graph, columns: dict[str, np.ndarray], now: float) -> tuple[np.ndarray, int]:
    n = len(columns["gpus"])
    out = np.full(n + 3, 7.0)  # longer than n: the kernel writes only out[:n]
    first = compiled_keys(graph)(*(columns[c] for c in COLUMNS), now, n, out)
    assert (out[n:] == 7.0).all()
    return out[:n], first


def same_bits(keys: np.ndarray, want: np.ndarray) -> bool:
    """Bit for bit (so -0.0 differs from 0.0), except that any NaN equals any NaN: which NaN's
    sign and payload an operation with two NaN operands returns depends on the instruction
    order the compiler picks (numpy's SIMD loops against LLVM's), and an ordering only asks
    whether a key is NaN."""
    nan = np.isnan(want)
    return bool((np.isnan(keys) == nan).all()) and keys[~nan].tobytes() == want[~nan].tobytes()


def expected_first(keys: np.ndarray) -> int:
    return -1 if np.isnan(keys).any() else int(keys.argmin())


def test_hand_computed_protected_division_edges():
    """d % q with q = w + (now - qs): x / 0 and x / -0 give x; x / nan is nan; inf / inf is nan."""
    graph = parse("d % q")
    d = np.array([6.0, 6.0, -2.0, 6.0, np.inf, 1.0, 0.0])
    w = np.array([3.0, 0.0, 0.0, np.nan, 0.0, 0.0, 0.0])
    now = 10.0
    qs = np.array([10.0, 10.0, 10.0, 0.0, -np.inf, 10.0 + 1e-15, 10.0])
    ones = np.ones(7)
    keys, first = run_kernel(graph, dict(zip(COLUMNS, (d, w, qs, ones, ones))), now)
    # q = [3, 0, 0, nan, inf, 0 (10 - 10.000000000000002 = -1.8e-15), 0]
    want = np.array([2.0, 6.0, -2.0, np.nan, np.nan, 1.0 / (10.0 - (10.0 + 1e-15)), 0.0])
    np.testing.assert_array_equal(keys, want)  # NaN where want is NaN
    assert first == -1  # a NaN key has no order
    keys, first = run_kernel(graph, {c: v[[0, 1, 2, 5, 6]] for c, v in zip(COLUMNS, (d, w, qs, ones, ones))}, now)
    assert first == 3  # 1 / -1.8e-15 = -5.6e14 is the smallest
    keys, first = run_kernel(parse("g - g"), {c: np.array([1.0, -0.0, 2.0]) for c in COLUMNS}, now)
    assert first == 0  # 0.0, 0.0, 0.0: the first of equal minimums


def test_first_minimum_is_the_first_of_ties_and_minus_zero_ties_zero():
    graph = parse("u * g")
    u = np.array([2.0, 0.0, -0.0, 0.0, 1.0])
    columns = {c: np.ones(5) for c in COLUMNS} | {"weight": u}
    _, first = run_kernel(graph, columns, 0.0)
    assert first == 1
    columns["weight"] = np.array([np.inf, np.inf, np.inf])
    columns = {c: (v[:3] if c != "weight" else v) for c, v in columns.items()}
    _, first = run_kernel(graph, columns, 0.0)
    assert first == 0  # all +inf: the first row, as argmin
    _, first = run_kernel(graph, {c: np.empty(0) for c in COLUMNS}, 0.0)
    assert first == -1


def expressions() -> st.SearchStrategy[str]:
    leaf = st.one_of(st.sampled_from(["d", "q", "u", "g"]),
                     st.sampled_from(["0", "2", "0.5", "(-3)", "1e308", "(-0.0)", "7.25"]))
    return st.recursive(leaf, lambda inner: st.builds(
        lambda op, a, b: f"({a} {op} {b})", st.sampled_from(["+", "-", "*", "%"]), inner, inner),
        max_leaves=24)


def row_values() -> st.SearchStrategy[float]:
    return st.one_of(st.sampled_from(EDGES), st.floats(allow_nan=True, allow_infinity=True),
                     st.integers(-5, 5).map(float))


def plain_evaluate(graph, features: dict[str, np.ndarray]):
    """f by plain recursion from the root, one node at a time, with priority.protected_div."""
    def value(v):
        attrs = graph.nodes[v]
        op = attrs["op"]
        if op == "const":
            return np.full(len(features["d"]), float(attrs["value"]))
        if op not in ("+", "-", "*", "%"):
            return np.asarray(features[op], dtype=np.float64)
        args = dict((arg, child) for _, child, arg in graph.out_edges(v, data="arg"))
        x, y = value(args[0]), value(args[1])
        return {"+": np.add, "-": np.subtract, "*": np.multiply, "%": protected_div}[op](x, y)
    return value(root(graph))


@settings(max_examples=60, deadline=None)
@given(expressions(), st.data())
def test_evaluator_equals_plain_evaluation_bit_for_bit(text, data):
    """Evaluator (the graph validated once and laid out, as evaluate, the planner scheduler and the
    gp ordering use it) gives the values of a plain recursive evaluation, bit for bit, NaN where it
    gives NaN."""
    graph = parse(text)
    evaluator = Evaluator(graph)
    n = data.draw(st.integers(1, 12))
    features = {t: np.array(data.draw(st.lists(row_values(), min_size=n, max_size=n))) for t in "dqug"}
    with np.errstate(all="ignore"):
        want = plain_evaluate(graph, features)
        got = evaluator(features)
        via_evaluate = evaluate(graph, features)
    assert got.dtype == np.float64 and got.shape == want.shape
    assert same_bits(got, want) and same_bits(via_evaluate, want)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions(), st.data())
def test_kernel_equals_numpy_evaluate_bit_for_bit(text, data):
    graph = parse(text)
    for _ in range(3):  # one compile per expression, several row sets
        n = data.draw(st.integers(1, 12))
        columns = {c: np.array(data.draw(st.lists(row_values(), min_size=n, max_size=n))) for c in COLUMNS}
        now = data.draw(row_values())
        want = reference(graph, columns, now)
        keys, first = run_kernel(graph, columns, now)
        assert same_bits(keys, want), (text, columns, now)
        assert first == expected_first(want)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(sorted(BUILTIN)), st.integers(0, 2**32 - 1), st.integers(1, 3000))
def test_ordering_vector_min_equals_numpy_on_realistic_rows(name, seed, n):
    """GpOrdering.vector_min with and without the kernel: same keys, same first minimum."""
    rng = np.random.default_rng(seed)
    columns = {"remaining_work": rng.choice([0.0, 1.0, 60.0, 3600.0], n) * rng.random(n),
               "wait_so_far": rng.choice([0.0, 5.0], n), "queued_since": rng.integers(0, 10**6, n).astype(float),
               "weight": rng.integers(1, 4, n).astype(float), "gpus": rng.choice([0.5, 1.0, 8.0], n)}
    now = 1e6 + 0.125
    compiled = GpOrdering(parse(BUILTIN[name]), compiled_from=0, compile_after=0)
    plain = GpOrdering(parse(BUILTIN[name]), compiled_from=n + 1)
    out_c, out_p = np.empty(n), np.empty(n)
    assert compiled.vector_min(columns, n, now, out_c) == plain.vector_min(columns, n, now, out_p)
    assert out_c.tobytes() == out_p.tobytes() == reference(compiled.graph, columns, now).tobytes()


def test_shared_subtrees_are_computed_once_in_the_source():
    source = kernel_source(parse("(d + q) * (d + q)"))
    assert source.count("+ (now - qs[j])") == 1  # q once
    assert source.count("w[j]") == 1


def test_the_ordering_compiles_only_once_its_queue_proved_deep():
    """numpy until ``compile_after`` rows were evaluated, the kernel after; the same keys either way."""
    graph = parse("d * q % (u + g) - q")  # a graph no other test compiles
    ordering = GpOrdering(graph, compiled_from=4, compile_after=10)
    rng = np.random.default_rng(5)
    columns = {c: rng.random(6) for c in COLUMNS}
    firsts = []
    for step in range(5):
        out = np.empty(6)
        firsts.append(ordering.vector_min(columns, 6, 1.0, out))
        assert out.tobytes() == reference(graph, columns, 1.0).tobytes()
        assert (ordering._kernel is not None) == (step >= 2)  # 6 + 6 rows by numpy reach 10
    assert len(set(firsts)) == 1
    assert GpOrdering(graph, compiled_from=4)._kernel is None
    again = GpOrdering(graph, compiled_from=4)  # compiled in this process already: used at once
    again.vector_min(columns, 6, 1.0, np.empty(6))
    assert again._kernel is not None
