"""A priority graph compiled into one numba loop over queued jobs (the ``gp`` ordering's deep queues).

The ``gp`` ordering (:class:`simsched.evo.scheduler.GpOrdering`) needs, at
every decision, f(j) of every queued job of a bucket and the first minimum in
(submit, index) order. With numpy that is one pass over the whole bucket per
node of the graph, each allocating a temporary array (about 25 passes for
``gp-paper``). Here the graph becomes the source of one function that computes
f row by row in plain local variables, one per graph node (a shared subtree is
computed once, as :func:`simsched.evo.priority.evaluate` does), compiled once
per graph and process by numba:

* the same IEEE operations on the same operands as the numpy path: ``+ - *``
  and protected division ``x / y if y != 0 else x`` (what ``np.divide(...,
  where=y != 0)`` on a copy of x gives, also for NaN and infinite operands and
  for ``-0.0``); the terminal q is ``wait_so_far + (now - queued_since)``, as
  in ``GpOrdering.vector``. numba compiles without ``fastmath`` (no
  reassociation, no fused multiply-add), and ``error_model="numpy"`` only
  drops the division-by-zero check that the guard makes dead;
* a second loop finds the first minimum (what ``ndarray.argmin`` returns) or
  reports a NaN key (-1), with no temporary arrays.

``tests/test_gp_kernel.py`` checks bit-for-bit equality with
:func:`~simsched.evo.priority.evaluate` on random expressions and rows,
including NaN, infinities, zeros and signed zeros.

Compiling takes about half a second per graph and process (the generated
function has no source file, so numba cannot cache it on disk); the ordering
therefore compiles only once its queue has proved deep (``GpOrdering.compile_after``
rows evaluated by numpy).
"""

from __future__ import annotations

from collections.abc import Callable

import networkx as nx

from simsched.evo.priority import CONST, FUNCTIONS, _arguments, root, validate

#: the terminals' expressions in the generated loop (row j); arguments named as in :func:`kernel_source`
_TERMINAL_EXPR = {"d": "d[j]", "q": "w[j] + (now - qs[j])", "u": "u[j]", "g": "g[j]"}

#: compiled at once (not at the first call) for contiguous float64 columns
_SIGNATURE = "int64(float64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64, int64, float64[::1])"

_COMPILED: dict[str, Callable] = {}


def kernel_source(graph: nx.DiGraph) -> str:
    """Python source of ``keys(d, w, qs, u, g, now, n, out) -> int`` for ``graph``.

    ``d`` remaining work, ``w`` wait so far, ``qs`` queued since, ``u`` weight,
    ``g`` GPUs: arrays of at least ``n`` rows. Fills ``out[:n]`` with f and
    returns the index of the first minimum, or -1 when a key is NaN.
    """
    validate(graph)
    names: dict = {}
    lines: list[str] = []
    for k, v in enumerate(reversed(list(nx.topological_sort(graph)))):
        attrs = graph.nodes[v]
        op = attrs["op"]
        if op == CONST:
            expr = repr(float(attrs["value"]))
            if expr in ("inf", "-inf", "nan"):  # validate() refuses non-finite constants
                raise ValueError(f"priority constant {expr} is not finite")
        elif op in FUNCTIONS:
            left, right = _arguments(graph, v)
            x, y = names[left], names[right]
            expr = f"{x} / {y} if {y} != 0 else {x}" if op == "%" else f"{x} {op} {y}"
        else:
            expr = _TERMINAL_EXPR[op]
        names[v] = f"v{k}"
        lines.append(f"        v{k} = {expr}")
    body = "\n".join(lines)
    return (
        "def keys(d, w, qs, u, g, now, n, out):\n"
        "    for j in range(n):\n"
        f"{body}\n"
        f"        out[j] = {names[root(graph)]}\n"
        "    if n == 0:\n"
        "        return -1\n"
        "    best = 0\n"
        "    low = out[0]\n"
        "    for j in range(n):\n"
        "        v = out[j]\n"
        "        if v != v:\n"
        "            return -1\n"
        "        if v < low:\n"
        "            best = j\n"
        "            low = v\n"
        "    return best\n"
    )


def compiled_keys(graph: nx.DiGraph) -> Callable[..., int]:
    """The compiled ``keys`` function of :func:`kernel_source`, once per distinct graph and process."""
    return compiled_source(kernel_source(graph))


def compiled_source(source: str, compile_now: bool = True) -> Callable[..., int] | None:
    """The compiled function of a :func:`kernel_source` text; None when it is not compiled yet in
    this process and ``compile_now`` is False."""
    fn = _COMPILED.get(source)
    if fn is None and compile_now:
        from numba import njit

        namespace: dict = {}
        exec(compile(source, "<simsched gp kernel>", "exec"), namespace)  # noqa: S102 (our own generated code)
        fn = _COMPILED[source] = njit(_SIGNATURE, error_model="numpy", nogil=True)(namespace["keys"])
    return fn
