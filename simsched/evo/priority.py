"""Priority functions as expression DAGs (SPEC §6; the paper's GP individuals).

A priority function is a :class:`networkx.DiGraph`:

* every node has an ``op`` attribute: a function symbol from :data:`FUNCTIONS`
  (``+ - * %``), a terminal name from :data:`TERMINALS` (``d`` remaining
  duration, ``q`` queued time, ``u`` weight, ``g`` GPUs) or ``"const"`` with a
  float ``value`` attribute;
* an edge goes from a function node to one of its arguments and carries
  ``arg`` = 0 (left) or 1 (right); a function node has exactly those two edges;
* there is exactly one root (in-degree 0) and no cycle. Identical subtrees may
  be shared, so the graph is a DAG rather than a tree.

``%`` is protected division: ``x % y = x / y`` except ``x % 0 = x``. A smaller
value means the job is scheduled earlier.

Files: :func:`save_priority` writes JSON ``{"format": "simsched-priority",
"version": 1, "infix": ..., "nodes": [{"id", "op"[, "value"]}], "edges":
[{"source", "target", "arg"}], "meta": {...}}``; :func:`load_priority` reads it
(or a built-in name, or an infix expression).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np

from simsched.core.atomic import write_text
from simsched.core.errors import InputError
from simsched.core.inputs import note_read

#: binary function symbols with their precedence (higher binds tighter).
FUNCTIONS: dict[str, int] = {"+": 1, "-": 1, "*": 2, "%": 2}
#: terminal names: remaining duration, queued time, user weight, GPUs.
TERMINALS: tuple[str, ...] = ("d", "q", "u", "g")
CONST = "const"
FILE_FORMAT = "simsched-priority"
FILE_VERSION = 1  # the "version" save_priority writes; a file of another version is refused
MAX_NODES = 10_000  # a learned function has at most 2^8 - 1 nodes; more is not a priority file
MAX_DEPTH = 64  # levels of a file's DAG (learning keeps depth <= 7; hand-written ones stay shallow too)

#: shipped priority functions, as infix text. ``gp-paper`` is the paper's Eq. 17;
#: ``srsf`` is the SRSF baseline f = g * d the GP fitness is normalised by.
BUILTIN: dict[str, str] = {
    "gp-paper": "(((q + g) % q - u) % (2 * q)) * (d % (q + (d + g - u) % (q * q)))",
    "srsf": "g * d",
}


class NanPriority(InputError):
    """A priority function gave NaN for a job (for example inf - inf); it orders nothing."""


# ---------------------------------------------------------------- validation
def root(graph: nx.DiGraph) -> Any:
    """The single node with in-degree 0 (raises :class:`InputError` otherwise)."""
    roots = [v for v, deg in graph.in_degree() if deg == 0]
    if len(roots) != 1:
        raise InputError(
            f"priority graph must have exactly one root (node with no parent), found {len(roots)}"
        )
    return roots[0]


def validate(graph: nx.DiGraph, terminals: tuple[str, ...] = TERMINALS) -> None:
    """Raise :class:`InputError` naming the node when ``graph`` is not a valid priority DAG."""
    if not isinstance(graph, nx.DiGraph) or graph.number_of_nodes() == 0:
        raise InputError("priority graph must be a non-empty networkx.DiGraph")
    if not nx.is_directed_acyclic_graph(graph):
        raise InputError("priority graph has a cycle; it must be a DAG")
    root(graph)
    valid_ops = ", ".join([*FUNCTIONS, *terminals, CONST])
    for v, attrs in graph.nodes(data=True):
        op = attrs.get("op")
        out = list(graph.out_edges(v, data="arg"))
        if op in FUNCTIONS:
            args = sorted(a for _, _, a in out if a is not None)
            if len(out) != 2 or args != [0, 1]:
                raise InputError(
                    f"priority node {v!r} ({op!r}) needs exactly two argument edges with "
                    f"arg 0 and arg 1, got {[a for _, _, a in out]}"
                )
        elif op in terminals or op == CONST:
            if out:
                raise InputError(f"priority node {v!r} ({op!r}) is a leaf but has arguments")
            if op == CONST:
                value = attrs.get("value")
                if not isinstance(value, (int, float)) or not math.isfinite(value):
                    raise InputError(
                        f"priority node {v!r} is a constant without a finite 'value' (got {value!r})"
                    )
        else:
            raise InputError(f"priority node {v!r} has op {op!r}; valid: {valid_ops}")


def _arguments(graph: nx.DiGraph, v: Any) -> tuple[Any, Any]:
    left = right = None
    for _, child, arg in graph.out_edges(v, data="arg"):
        if arg == 0:
            left = child
        else:
            right = child
    return left, right


def protected_div(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Elementwise x / y, with x where y == 0 (the GP's protected division)."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    x, y = np.broadcast_arrays(x, y)
    out = x.astype(np.float64, copy=True)
    np.divide(x, y, out=out, where=y != 0)
    return out


# ---------------------------------------------------------------- evaluation
def evaluate(graph: nx.DiGraph, features: Mapping[str, np.ndarray]) -> np.ndarray:
    """f(j) for every job at once: ``features`` maps terminal names to equal-length arrays.

    Nodes are evaluated children first (reverse topological order), so a shared
    subtree is computed once (:class:`Evaluator`, built for this one call).
    """
    evaluator = Evaluator(graph, tuple(sorted(set(TERMINALS) | set(features))))
    sizes = {np.shape(v) for v in features.values()}
    if len(sizes) > 1:
        raise InputError(f"priority features must have one shape, got {sorted(sizes)}")
    for _, op, _, _ in evaluator.steps:
        if op != CONST and op not in FUNCTIONS and op not in features:
            raise InputError(
                f"priority function uses terminal {op!r} but no such feature was given "
                f"(given: {', '.join(sorted(features))})"
            )
    return evaluator(features)


class Evaluator:
    """A priority graph validated once and laid out in evaluation order, for callers that
    evaluate it at every decision: each call is the arithmetic only. The same values as
    :func:`evaluate`, bit for bit (the same operations in the same order on float64 arrays)."""

    __slots__ = ("graph", "steps", "root")

    def __init__(self, graph: nx.DiGraph, terminals: tuple[str, ...] = TERMINALS) -> None:
        validate(graph, terminals)
        self.graph = graph
        self.root = root(graph)
        self.steps: list[tuple] = []  # (node, op, const value or left child, right child)
        for v in reversed(list(nx.topological_sort(graph))):
            op = graph.nodes[v]["op"]
            if op == CONST:
                self.steps.append((v, op, float(graph.nodes[v]["value"]), None))
            elif op in FUNCTIONS:
                self.steps.append((v, op, *_arguments(graph, v)))
            else:
                self.steps.append((v, op, None, None))

    def __call__(self, features: Mapping[str, np.ndarray]) -> np.ndarray:
        """f for every job at once; ``features`` maps each terminal the graph uses to arrays of
        one shape."""
        first = next(iter(features.values()), None)
        shape = () if first is None else np.shape(first)
        values: dict = {}
        for v, op, left, right in self.steps:
            if op == CONST:
                values[v] = np.full(shape, left)
            elif op == "+":
                values[v] = values[left] + values[right]
            elif op == "-":
                values[v] = values[left] - values[right]
            elif op == "*":
                values[v] = values[left] * values[right]
            elif op == "%":  # protected_div on two float64 arrays of one shape, without its conversions
                x, y = values[left], values[right]
                out = values[v] = x.copy()
                np.divide(x, y, out=out, where=y != 0)
            else:
                values[v] = np.asarray(features[op], dtype=np.float64)
        result = values[self.root]
        if result.shape != shape:
            result = np.broadcast_to(result, shape)
        return result.astype(np.float64, copy=True)


def depth(graph: nx.DiGraph) -> int:
    """Edges on the longest root-to-leaf path (a lone terminal has depth 0)."""
    validate(graph, _terminals_of(graph))
    return int(nx.dag_longest_path_length(graph))


def _terminals_of(graph: nx.DiGraph) -> tuple[str, ...]:
    ops = {attrs.get("op") for _, attrs in graph.nodes(data=True)}
    extra = {
        op for op in ops if isinstance(op, str) and op.isidentifier() and op not in FUNCTIONS
    } - {CONST}
    return tuple(sorted(set(TERMINALS) | extra))


# ---------------------------------------------------------------- text form
def _format_const(value: float) -> str:
    text = (
        str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else repr(float(value))
    )
    return f"({text})" if value < 0 else text


def infix(graph: nx.DiGraph) -> str:
    """Readable infix text; :func:`parse` of it gives back the same function."""
    validate(graph, _terminals_of(graph))
    memo: dict[Any, tuple[str, int]] = {}
    for v in reversed(list(nx.topological_sort(graph))):
        attrs = graph.nodes[v]
        op = attrs["op"]
        if op == CONST:
            memo[v] = (_format_const(float(attrs["value"])), 3)
        elif op in FUNCTIONS:
            prec = FUNCTIONS[op]
            left, right = _arguments(graph, v)
            ltext, lprec = memo[left]
            rtext, rprec = memo[right]
            # Left-associative: the left side needs parentheses only when it binds
            # looser; the right side also when it binds equally (a - (b - c)).
            if lprec < prec:
                ltext = f"({ltext})"
            if rprec <= prec:
                rtext = f"({rtext})"
            memo[v] = (f"{ltext} {op} {rtext}", prec)
        else:
            memo[v] = (str(op), 3)
    return memo[root(graph)][0]


_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[A-Za-z_]\w*)|(?P<sym>[-+*%()]))"
)


class _Parser:
    """Recursive descent for ``expr := term (('+'|'-') term)*``,
    ``term := atom (('*'|'%') atom)*``, ``atom := number | name | '-' number | '(' expr ')'``.

    Identical subtrees are merged (hash-consing), so repeated terminals and
    sub-expressions become shared nodes of the DAG.
    """

    def __init__(self, text: str, terminals: tuple[str, ...]) -> None:
        self.text = text
        self.terminals = terminals
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                raise InputError(
                    f"priority expression {text!r}: unexpected character {text[pos:].strip()[0]!r} "
                    f"at position {pos}; valid: numbers, {', '.join(terminals)}, + - * % ( )"
                )
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0
        self.graph = nx.DiGraph()
        self.memo: dict[tuple, int] = {}

    def _peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def _fail(self, what: str) -> InputError:
        tok = self._peek()
        where = f"at position {tok[2]} ({tok[1]!r})" if tok else "at the end"
        return InputError(f"priority expression {self.text!r}: expected {what} {where}")

    def _node(self, key: tuple, **attrs: Any) -> int:
        if key not in self.memo:
            v = self.graph.number_of_nodes()
            self.graph.add_node(v, **attrs)
            self.memo[key] = v
        return self.memo[key]

    def _binary(self, op: str, left: int, right: int) -> int:
        key = (op, left, right)
        if key in self.memo:
            return self.memo[key]
        if left == right:
            # A DiGraph keeps one edge per node pair, so ``x * x`` gets a second
            # copy of the top node of ``x`` (its own arguments stay shared).
            right = self.graph.number_of_nodes()
            self.graph.add_node(right, **self.graph.nodes[left])
            for _, child, arg in list(self.graph.out_edges(left, data="arg")):
                self.graph.add_edge(right, child, arg=arg)
        v = self._node(key, op=op)
        self.graph.add_edge(v, left, arg=0)
        self.graph.add_edge(v, right, arg=1)
        return v

    def parse(self) -> nx.DiGraph:
        if not self.tokens:
            raise InputError("priority expression is empty")
        self._expr()
        if self._peek() is not None:
            raise self._fail("an operator or the end")
        return self.graph

    def _expr(self) -> int:
        v = self._term()
        while (tok := self._peek()) is not None and tok[1] in ("+", "-"):
            self.i += 1
            v = self._binary(tok[1], v, self._term())
        return v

    def _term(self) -> int:
        v = self._atom()
        while (tok := self._peek()) is not None and tok[1] in ("*", "%"):
            self.i += 1
            v = self._binary(tok[1], v, self._atom())
        return v

    def _atom(self) -> int:
        tok = self._peek()
        if tok is None:
            raise self._fail("a number, a terminal or '('")
        kind, text, _ = tok
        if kind == "num":
            self.i += 1
            value = float(text)
            return self._node((CONST, value), op=CONST, value=value)
        if kind == "name":
            if text not in self.terminals:
                raise InputError(
                    f"priority expression {self.text!r}: unknown terminal {text!r}; "
                    f"valid: {', '.join(self.terminals)}"
                )
            self.i += 1
            return self._node((text,), op=text)
        if text == "-":
            self.i += 1
            nxt = self._peek()
            if nxt is None or nxt[0] != "num":
                raise self._fail("a number after unary '-'")
            self.i += 1
            value = -float(nxt[1])
            return self._node((CONST, value), op=CONST, value=value)
        if text == "(":
            self.i += 1
            v = self._expr()
            close = self._peek()
            if close is None or close[1] != ")":
                raise self._fail("')'")
            self.i += 1
            return v
        raise self._fail("a number, a terminal or '('")


def parse(expr: str, terminals: tuple[str, ...] = TERMINALS) -> nx.DiGraph:
    """Infix text (``+ - * %``, parentheses, terminals, numbers) to a priority DAG."""
    return _Parser(expr, terminals).parse()


# ---------------------------------------------------------------- files
def to_json(graph: nx.DiGraph, **meta: Any) -> dict[str, Any]:
    """The JSON-ready dict :func:`save_priority` writes."""
    validate(graph, _terminals_of(graph))
    ids = {v: i for i, v in enumerate(nx.topological_sort(graph))}
    nodes = []
    for v, i in ids.items():
        attrs = graph.nodes[v]
        entry: dict[str, Any] = {"id": i, "op": attrs["op"]}
        if attrs["op"] == CONST:
            entry["value"] = float(attrs["value"])
        nodes.append(entry)
    edges = [
        {"source": ids[a], "target": ids[b], "arg": int(arg)}
        for a, b, arg in sorted(graph.edges(data="arg"), key=lambda e: (ids[e[0]], e[2]))
    ]
    return {
        "format": FILE_FORMAT,
        "version": FILE_VERSION,
        "infix": infix(graph),
        "depth": depth(graph),
        "nodes": nodes,
        "edges": edges,
        "meta": meta,
    }


def from_json(data: Mapping[str, Any], source: str = "<priority>") -> nx.DiGraph:
    """Build the DAG from a :func:`to_json` dict; falls back to ``infix`` when there are no nodes."""
    if not isinstance(data, Mapping):
        raise InputError(f"{source}: a priority file must hold a JSON object")
    if "format" in data and data["format"] != FILE_FORMAT:
        raise InputError(f"{source}: format {data['format']!r:.40} is not a priority function ({FILE_FORMAT!r})")
    version = data.get("version", FILE_VERSION)
    if version != FILE_VERSION:
        raise InputError(f"{source}: priority file version {version!r:.20}; this simsched reads version "
                         f"{FILE_VERSION} (a newer simsched wrote it, or it is damaged)")
    if "nodes" not in data:
        if isinstance(data.get("infix"), str):
            return parse(data["infix"])
        raise InputError(f"{source}: needs 'nodes' and 'edges' (or an 'infix' expression)")
    if not isinstance(data["nodes"], list) or len(data["nodes"]) > MAX_NODES:
        raise InputError(f"{source}: 'nodes' must be a list of at most {MAX_NODES:,} nodes")
    graph = nx.DiGraph()
    try:
        for entry in data["nodes"]:
            attrs = {"op": entry["op"]}
            if "value" in entry:
                attrs["value"] = float(entry["value"])
            if entry["id"] in graph:
                raise InputError(f"{source}: two nodes have the id {entry['id']!r}; each node needs its own id")
            graph.add_node(entry["id"], **attrs)
        for entry in data.get("edges", []):
            for end in ("source", "target"):
                if entry[end] not in graph:
                    raise InputError(f"{source}: edge {entry} names unknown node {entry[end]!r}")
            graph.add_edge(entry["source"], entry["target"], arg=int(entry["arg"]))
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source}: malformed node or edge entry ({exc!r})") from exc
    try:
        validate(graph)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from exc
    depth = nx.dag_longest_path_length(graph)
    if depth > MAX_DEPTH:
        raise InputError(f"{source}: the function is {depth} levels deep; at most {MAX_DEPTH} are read "
                         "(learned functions have depth <= 7)")
    return graph


def save_priority(graph: nx.DiGraph, path: str | Path, **meta: Any) -> Path:
    """Write ``graph`` (plus its infix text and ``meta``, e.g. how it was learned) as JSON."""
    path = Path(path)

    write_text(path, json.dumps(to_json(graph, **meta), indent=2) + "\n")  # atomic: complete or absent
    return path


def load_priority(name_or_path: str | Path) -> nx.DiGraph:
    """A built-in name (:data:`BUILTIN`), a JSON file from :func:`save_priority`, or infix text."""
    text = str(name_or_path)
    if text in BUILTIN:
        return parse(BUILTIN[text])
    path = Path(text)
    if path.suffix.lower() == ".json" or path.is_file():
        if path.exists() and not path.is_file():  # a folder, FIFO or device (/dev/zero): never read it
            raise InputError(f"{text}: not a regular file (a folder, device or pipe); give a priority .json file")
        if not path.is_file():
            raise InputError(f"priority file {text!r} not found; built-ins: {', '.join(BUILTIN)}")
        note_read(path, "priority file")
        if path.stat().st_size > 16 * 2**20:
            raise InputError(f"{text}: {path.stat().st_size:,} bytes, too large for a priority file (16 MB at most)")
        try:
            data = json.loads(path.read_bytes().decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise InputError(f"{text}: not a priority file (binary content at byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{text}: not valid JSON (line {exc.lineno}: {exc.msg})") from exc
        except RecursionError:
            raise InputError(f"{text}: JSON nested too deeply for a priority file") from None
        return from_json(data, text)
    try:
        return parse(text)
    except InputError as exc:
        raise InputError(
            f"priority {text!r} is not a built-in ({', '.join(BUILTIN)}), not a file, "
            f"and not a valid expression: {exc}"
        ) from exc
