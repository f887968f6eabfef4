"""Small linear programs straight to HiGHS: ``scipy.optimize.linprog(method="highs")``'s result
without its per-call Python (issue 35).

maxmin-hetero solves thousands of programs of a few dozen variables; ``linprog`` spent about 2/3
of each call outside the solver (input cleaning, a sparse matrix, checking every option's type
against a freshly built options manager). :func:`solve` passes HiGHS the very model and options
``linprog`` passes it (scipy's bundled HiGHS, the same dual simplex, presolve on), so the solver
runs the same iterations and returns the same floats, and it checks the result as linprog does
(``_check_result``: a solution outside the bounds or rows by more than sqrt(1e-9) x 10 is
status 4).
``solve(..., reference=True)`` calls ``linprog`` itself: the plain path, which the tests hold equal
to the fast one. Should scipy's private HiGHS binding move, :func:`solve` falls back to ``linprog``.

The solver is scipy (an optional dependency, ``pip install simsched[test]``), imported on first use.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_TOL = np.sqrt(1e-9) * 10  # linprog's check of a result: its default tol (1e-9), as _check_result widens it


@dataclass(frozen=True, slots=True)
class Solution:
    """What maxmin-hetero reads of a program's result: linprog's status (0 optimal, 2 infeasible,
    4 numerical trouble...), its message, x (None unless solved) and the duals of the
    inequality rows (linprog's ``ineqlin.marginals``)."""

    status: int
    message: str
    x: np.ndarray | None
    marginals: np.ndarray | None


_BINDING: list = []  # [(core module, options, status message, result check)] once loaded, [None] if absent


def _binding():
    """scipy's HiGHS core, linprog's options for method="highs" and its helpers; None when absent."""
    if not _BINDING:
        try:  # optional heavy dependency (scipy's private HiGHS binding): imported on first use
            from scipy.optimize._highspy import _core
            from scipy.optimize._linprog_highs import _highs_to_scipy_status_message
        except ImportError:
            _BINDING.append(None)
        else:
            # linprog's options (scipy.optimize._linprog_highs) that are not None; "sense" is skipped
            options = _core.HighsOptions()
            options.presolve = "on"
            options.highs_debug_level = _core.HighsDebugLevel.kHighsDebugLevelNone
            options.log_to_console = False
            options.output_flag = False
            options.simplex_strategy = _core.simplex_constants.SimplexStrategy.kSimplexStrategyDual
            highs = _core._Highs()  # one solver for every program: passModel clears what the last left
            highs.passOptions(options)
            _BINDING.append((_core, highs, _highs_to_scipy_status_message))
    return _BINDING[0]


def _highs_inf(values: np.ndarray, inf: float) -> np.ndarray:
    """A copy with ±inf as HiGHS's infinity (scipy's _replace_inf)."""
    values = values.copy()
    infinite = np.isinf(values)
    values[infinite] = np.sign(values[infinite]) * inf
    return values


def solve(cost: np.ndarray, a_ub: np.ndarray, b_ub: np.ndarray, bounds: list[tuple[float, float | None]],
          reference: bool = False) -> Solution:
    """Minimise ``cost`` @ x subject to ``a_ub`` x <= ``b_ub`` (dense) and ``bounds`` (lower, upper
    or None per variable): the result of ``linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds,
    method="highs")``; ``reference`` calls linprog."""
    binding = None if reference else _binding()
    if binding is not None:
        try:
            return _solve_direct(binding, cost, a_ub, b_ub, bounds)
        except (AttributeError, TypeError):  # scipy's private binding changed shape: linprog from now on
            _BINDING[0] = None
    from scipy.optimize import linprog  # optional heavy dependency

    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    return Solution(int(res.status), res.message, None if res.x is None else np.asarray(res.x),
                    res.ineqlin.marginals)


def _solve_direct(binding, cost, a_ub, b_ub, bounds) -> Solution:
    """:func:`solve` through scipy's HiGHS binding itself."""
    core, highs, status_message = binding
    cost = np.array(cost, dtype=float)
    a_ub = np.asarray(a_ub, dtype=float)
    rhs = np.array(b_ub, dtype=float)
    n_rows, n_cols = a_ub.shape
    bound = np.array(bounds, dtype=float)  # None -> nan -> inf, as linprog's _clean_bounds
    bound[np.isnan(bound[:, 1]), 1] = np.inf
    bound[np.isnan(bound[:, 0]), 0] = -np.inf
    inf = core.kHighsInf
    lb, ub = _highs_inf(bound[:, 0], inf), _highs_inf(bound[:, 1], inf)
    rhs_highs = _highs_inf(rhs, inf)
    # the compressed-column matrix scipy's csc_array makes of the dense one: non-zeros column by
    # column, rows ascending
    cols, rows = np.nonzero(a_ub.T)
    lp = core.HighsLp()
    lp.num_col_ = n_cols
    lp.num_row_ = n_rows
    lp.a_matrix_.num_col_ = n_cols
    lp.a_matrix_.num_row_ = n_rows
    lp.a_matrix_.format_ = core.MatrixFormat.kColwise
    lp.col_cost_ = cost
    lp.col_lower_ = lb
    lp.col_upper_ = ub
    lp.row_lower_ = np.full(n_rows, -inf)
    lp.row_upper_ = rhs_highs
    lp.a_matrix_.start_ = np.concatenate(([0], np.cumsum(np.count_nonzero(a_ub, axis=0)))).astype(np.int32)
    lp.a_matrix_.index_ = rows.astype(np.int32)
    lp.a_matrix_.value_ = a_ub.T[cols, rows]
    highs.passModel(lp)
    highs.run()
    model_status = highs.getModelStatus()
    if model_status != core.HighsModelStatus.kOptimal:
        info = highs.getInfo()
        message = (f"model_status is {highs.modelStatusToString(model_status)}; primal_status is "
                   f"{highs.solutionStatusToString(info.primal_solution_status)}")
        status, message = status_message(model_status, message)
        return Solution(status, message, None, None)  # (linprog's check keeps a status without x)
    solution = highs.getSolution()
    x = np.array(solution.col_value)
    slack = rhs_highs - solution.row_value
    status, message = status_message(model_status, highs.modelStatusToString(model_status))
    # linprog's check of an optimal result (scipy.optimize._linprog_util._check_result, without
    # equality rows or integers): within the bounds and rows by about 3.2e-4, no nan, or status 4
    if (np.isnan(x).any() or np.isnan(highs.getInfo().objective_function_value) or np.isnan(slack).any()
            or not np.all((x >= bound[:, 0] - _TOL) & (x <= bound[:, 1] + _TOL)) or (slack < -_TOL).any()):
        status, message = 4, "The solution does not satisfy the constraints within the required tolerance."
    return Solution(status, message, x, np.array(solution.row_dual))
