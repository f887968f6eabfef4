"""simsched.policies.linear_program: the programs passed straight to HiGHS give linprog's result, to
the bit (issue 35: maxmin-hetero's water-filling without linprog's per-call Python)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.policies.linear_program import solve


def _same(cost, a_ub, b_ub, bounds):
    fast = solve(cost, a_ub, b_ub, bounds)
    plain = solve(cost, a_ub, b_ub, bounds, reference=True)
    assert fast.status == plain.status
    if plain.x is None:
        assert fast.x is None
    else:
        assert fast.x.tobytes() == plain.x.tobytes()
        assert fast.marginals.tobytes() == plain.marginals.tobytes()
    return fast


def test_a_hand_program_and_an_infeasible_one():
    """max x + y with x + 2y <= 4, 3x + y <= 6, x, y >= 0: the vertex (8/5, 6/5), both rows binding
    (duals -2/5 and -1/5); with x >= 3 as well, infeasible (status 2)."""
    cost, a_ub, b_ub = np.array([-1.0, -1.0]), np.array([[1.0, 2.0], [3.0, 1.0]]), np.array([4.0, 6.0])
    res = _same(cost, a_ub, b_ub, [(0.0, None), (0.0, None)])
    assert res.status == 0
    np.testing.assert_allclose(res.x, [1.6, 1.2])
    np.testing.assert_allclose(res.marginals, [-0.4, -0.2])
    assert _same(cost, np.vstack((a_ub, [[-1.0, 0.0]])), np.append(b_ub, -3.0),
                 [(0.0, None), (0.0, None)]).status == 2


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 5), st.integers(1, 6), st.data())
def test_the_same_result_as_linprog(n, rows, data):
    """Random small programs with zero entries, fixed and free variables, unbounded or infeasible
    ones among them: the same status, x and duals as linprog(method="highs")."""
    value = st.sampled_from([0.0, 0.0, 1.0, -1.0, 0.5, 2.0, -3.0, 0.1, 1 / 3])
    cost = np.array(data.draw(st.lists(value, min_size=n, max_size=n)))
    a_ub = np.array(data.draw(st.lists(st.lists(value, min_size=n, max_size=n), min_size=rows, max_size=rows)))
    b_ub = np.array(data.draw(st.lists(st.sampled_from([0.0, 1.0, -1.0, 4.0, 7.5, -0.25]),
                                       min_size=rows, max_size=rows)))
    bounds = data.draw(st.lists(st.sampled_from([(0.0, None), (0.0, 0.0), (0.0, 3.0), (None, None)]),
                                min_size=n, max_size=n))
    _same(cost, a_ub, b_ub, bounds)


def test_a_binding_that_changed_shape_falls_back_to_linprog(monkeypatch):
    """scipy's HiGHS binding is private: should a later scipy change it (an attribute gone, a call's
    arguments changed), the first call falls back to linprog for good, with linprog's result."""
    import simsched.policies.linear_program as lp

    class Moved:
        def __getattr__(self, name):
            raise AttributeError(name)

    monkeypatch.setattr(lp, "_BINDING", [(Moved(), Moved(), None)])
    cost, a_ub, b_ub = np.array([-1.0, -1.0]), np.array([[1.0, 2.0], [3.0, 1.0]]), np.array([4.0, 6.0])
    res = solve(cost, a_ub, b_ub, [(0.0, None), (0.0, None)])
    assert res.status == 0 and np.allclose(res.x, [1.6, 1.2])
    assert lp._BINDING == [None]
