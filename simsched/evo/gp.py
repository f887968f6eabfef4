"""Genetic-programming operators over priority functions (SPEC §6, the paper's Algorithm 3).

An individual is a tree in prefix order: a tuple of tokens, where a token is a
function symbol (``+ - * %``, arity 2), a terminal name (``d q u g`` and any
extra terminal given to the :class:`PrimitiveSet`) or a float constant (only
when the primitive set lists constants; off by default). Tuples are hashable,
cheap to copy and slice, so the operators stay small; :func:`to_graph` and
:func:`from_graph` convert to and from the networkx DAGs of
:mod:`simsched.evo.priority`, which is what the rest of simsched reads.

Depth counts edges, as :func:`simsched.evo.priority.depth` does: a lone
terminal has depth 0. Every operator draws from the ``numpy.random.Generator``
it is given, in a fixed order, so a seeded run is reproducible.

Choices (Koza 1992 and DEAP defaults, written down in docs/learning.md):

- ramped half-and-half: individual i gets the ramp depth
  ``init_min + (i // 2) % (init_max - init_min + 1)``; even i are *full* trees
  of exactly that depth, odd i *grow* trees with depth in [init_min, that
  depth]; duplicates are redrawn a few times;
- grow picks a leaf with probability leaves / (leaves + functions) once the
  minimum depth is reached;
- crossover and mutation points are function nodes with probability
  ``internal_bias`` = 0.9 (Koza), else leaves; a crossover child deeper than
  the limit is redrawn, and after a few tries replaced by its parent;
- mutation replaces a random subtree by a grow tree no deeper than
  ``mutation_depth`` and no deeper than the depth limit allows there.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from simsched.core.errors import InputError
from simsched.evo.priority import CONST, FUNCTIONS, TERMINALS, parse, root, validate

Token = str | float
Individual = tuple[Token, ...]

#: tries before a crossover gives up on a too-deep child, and before init accepts a duplicate.
RETRIES = 5
INIT_RETRIES = 20


@dataclass(frozen=True, slots=True)
class PrimitiveSet:
    """The function and terminal sets (the paper: + - * % over d, q, u, g)."""

    functions: tuple[str, ...] = tuple(FUNCTIONS)
    terminals: tuple[str, ...] = TERMINALS
    constants: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if not self.functions:
            raise InputError('PrimitiveSet: "functions" must name at least one of + - * %')
        for op in self.functions:
            if op not in FUNCTIONS:
                raise InputError(f'PrimitiveSet: "functions": unknown {op!r}; valid: {", ".join(FUNCTIONS)}')
        if not self.terminals:
            raise InputError('PrimitiveSet: "terminals" must not be empty')
        for name in self.terminals:
            if not isinstance(name, str) or not name.isidentifier() or name == CONST:
                raise InputError(f'PrimitiveSet: "terminals": {name!r} is not a valid terminal name')
        for value in self.constants:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(f'PrimitiveSet: "constants": {value!r} is not a finite number')
        if len(set(self.functions)) != len(self.functions) or len(set(self.terminals)) != len(self.terminals):
            raise InputError("PrimitiveSet: functions and terminals must not repeat")

    @property
    def leaves(self) -> tuple[Token, ...]:
        return (*self.terminals, *(float(c) for c in self.constants))


def is_function(token: Token) -> bool:
    return isinstance(token, str) and token in FUNCTIONS


# ---------------------------------------------------------------- tree shape
def subtree_end(individual: Individual, start: int) -> int:
    """One past the last token of the subtree that starts at ``start``."""
    need = 1
    i = start
    while need:
        need += (2 if is_function(individual[i]) else 0) - 1
        i += 1
    return i


def node_depths(individual: Individual) -> list[int]:
    """Depth of every token (the root is at 0)."""
    depths: list[int] = []
    pending = [0]
    for token in individual:
        d = pending.pop()
        depths.append(d)
        if is_function(token):
            pending.extend((d + 1, d + 1))
    return depths


def tree_depth(individual: Individual) -> int:
    """Edges on the longest root-to-leaf path."""
    return max(node_depths(individual))


def check(individual: Individual, primitives: PrimitiveSet | None = None) -> None:
    """Raise :class:`InputError` unless ``individual`` is one complete prefix tree over ``primitives``."""
    primitives = primitives or PrimitiveSet()
    allowed = set(primitives.functions) | set(primitives.terminals)
    need = 1
    for i, token in enumerate(individual):
        if need == 0:
            raise InputError(f"individual has tokens after a complete tree at position {i}")
        if isinstance(token, float):
            if not math.isfinite(token):
                raise InputError(f"individual has a non-finite constant at position {i}")
        elif token not in allowed:
            raise InputError(f"individual has unknown token {token!r} at position {i}")
        need += (2 if is_function(token) else 0) - 1
    if need != 0:
        raise InputError(f"individual is incomplete: {need} argument(s) missing")


# ---------------------------------------------------------------- initialisation
def generate(rng: np.random.Generator, primitives: PrimitiveSet, min_depth: int, max_depth: int,
             method: str) -> Individual:
    """One random tree whose depth is drawn in [min_depth, max_depth].

    ``full``: every leaf sits at exactly the drawn depth. ``grow``: every leaf
    sits between min_depth and the drawn depth.
    """
    if method not in ("full", "grow"):
        raise InputError(f'generate: "method" must be full or grow, got {method!r}')
    if not 0 <= min_depth <= max_depth:
        raise InputError(f'generate: need 0 <= "min_depth" <= "max_depth", got {min_depth}, {max_depth}')
    height = int(rng.integers(min_depth, max_depth + 1))
    leaves = primitives.leaves
    functions = primitives.functions
    leaf_share = len(leaves) / (len(leaves) + len(functions))
    out: list[Token] = []
    pending = [0]
    while pending:
        d = pending.pop()
        if d == height or (method == "grow" and d >= min_depth and rng.random() < leaf_share):
            out.append(leaves[int(rng.integers(len(leaves)))])
        else:
            out.append(functions[int(rng.integers(len(functions)))])
            pending.extend((d + 1, d + 1))
    return tuple(out)


def ramped_half_and_half(rng: np.random.Generator, primitives: PrimitiveSet, size: int,
                         init_min: int = 2, init_max: int = 6) -> list[Individual]:
    """``size`` trees: depths ramp over [init_min, init_max], alternately full and grow."""
    if size < 1:
        raise InputError(f'ramped_half_and_half: "size" must be >= 1, got {size}')
    if not 0 <= init_min <= init_max:
        raise InputError(f'ramped_half_and_half: need 0 <= "init_min" <= "init_max", got {init_min}, {init_max}')
    span = init_max - init_min + 1
    population: list[Individual] = []
    seen: set[Individual] = set()
    for i in range(size):
        d = init_min + (i // 2) % span
        method = "full" if i % 2 == 0 else "grow"
        low = d if method == "full" else init_min
        for _ in range(INIT_RETRIES):
            individual = generate(rng, primitives, low, d, method)
            if individual not in seen:
                break
        seen.add(individual)
        population.append(individual)
    return population


# ---------------------------------------------------------------- variation
def _pick_point(rng: np.random.Generator, individual: Individual, internal_bias: float) -> int:
    functions = [i for i, t in enumerate(individual) if is_function(t)]
    if functions and rng.random() < internal_bias:
        return functions[int(rng.integers(len(functions)))]
    leaves = [i for i, t in enumerate(individual) if not is_function(t)]
    return leaves[int(rng.integers(len(leaves)))]


def _replace(individual: Individual, start: int, subtree: Individual) -> Individual:
    return individual[:start] + subtree + individual[subtree_end(individual, start):]


def crossover(rng: np.random.Generator, first: Individual, second: Individual, max_depth: int = 7,
              internal_bias: float = 0.9) -> tuple[Individual, Individual]:
    """Subtree crossover: swap a random subtree of each parent; children stay within ``max_depth``."""
    child1, child2 = first, second
    ok1 = ok2 = False
    for _ in range(RETRIES):
        a = _pick_point(rng, first, internal_bias)
        b = _pick_point(rng, second, internal_bias)
        piece1 = first[a:subtree_end(first, a)]
        piece2 = second[b:subtree_end(second, b)]
        child1 = _replace(first, a, piece2)
        child2 = _replace(second, b, piece1)
        ok1 = tree_depth(child1) <= max_depth
        ok2 = tree_depth(child2) <= max_depth
        if ok1 and ok2:
            break
    return (child1 if ok1 else first), (child2 if ok2 else second)


def mutate(rng: np.random.Generator, individual: Individual, primitives: PrimitiveSet, max_depth: int = 7,
           mutation_depth: int = 4, internal_bias: float = 0.9) -> Individual:
    """Subtree mutation: a random subtree becomes a new grow tree; the result stays within ``max_depth``."""
    point = _pick_point(rng, individual, internal_bias)
    room = max_depth - node_depths(individual)[point]
    if room < 0:
        raise InputError(f"mutate: individual is deeper than max_depth {max_depth}")
    subtree = generate(rng, primitives, 0, min(mutation_depth, room), "grow")
    return _replace(individual, point, subtree)


def tournament(rng: np.random.Generator, fitness: np.ndarray, k: int) -> int:
    """Index of the fittest (smallest) of ``k`` individuals drawn with replacement; ties: first drawn."""
    drawn = rng.integers(len(fitness), size=k)
    return int(drawn[int(np.argmin(np.asarray(fitness)[drawn]))])


def select_best(fitness: Sequence[float], n: int) -> list[int]:
    """Indices of the ``n`` smallest fitness values; ties keep the earlier index (stable)."""
    order = np.argsort(np.asarray(fitness, dtype=np.float64), kind="stable")
    return [int(i) for i in order[:n]]


# ---------------------------------------------------------------- conversion
def to_infix(individual: Individual) -> str:
    """Infix text that :func:`simsched.evo.priority.parse` reads back into the same function."""
    stack: list[tuple[str, int]] = []
    for token in reversed(individual):
        if is_function(token):
            prec = FUNCTIONS[token]  # type: ignore[index]
            left_text, left_prec = stack.pop()
            right_text, right_prec = stack.pop()
            if left_prec < prec:
                left_text = f"({left_text})"
            if right_prec <= prec:
                right_text = f"({right_text})"
            stack.append((f"{left_text} {token} {right_text}", prec))
        elif isinstance(token, float):
            text = str(int(token)) if token.is_integer() and abs(token) < 1e15 else repr(token)
            stack.append((f"({text})" if token < 0 else text, 3))
        else:
            stack.append((str(token), 3))
    if len(stack) != 1:
        raise InputError("to_infix: not one complete prefix tree")
    return stack[0][0]


def to_graph(individual: Individual, primitives: PrimitiveSet | None = None) -> nx.DiGraph:
    """The priority DAG (identical subtrees shared), in :mod:`simsched.evo.priority`'s format."""
    primitives = primitives or PrimitiveSet()
    check(individual, primitives)
    terminals = tuple(dict.fromkeys((*TERMINALS, *primitives.terminals)))
    return parse(to_infix(individual), terminals)


def from_graph(graph: nx.DiGraph) -> Individual:
    """The prefix tree of a priority DAG (shared subtrees are copied out)."""
    extra = tuple(sorted({a.get("op") for _, a in graph.nodes(data=True)}
                         - set(FUNCTIONS) - set(TERMINALS) - {CONST} - {None}, key=str))
    validate(graph, (*TERMINALS, *extra))
    out: list[Token] = []
    pending: list[Any] = [root(graph)]
    while pending:
        v = pending.pop()
        attrs = graph.nodes[v]
        op = attrs["op"]
        if op == CONST:
            out.append(float(attrs["value"]))
        elif op in FUNCTIONS:
            out.append(op)
            args = {arg: child for _, child, arg in graph.out_edges(v, data="arg")}
            pending.extend((args[1], args[0]))  # the left argument is popped first
        else:
            out.append(op)
    return tuple(out)


def simplified(individual: Individual) -> str | None:
    """A sympy-simplified form, reading % as plain division (so only where no denominator is 0).

    A denominator that is identically zero is protected exactly (``x % (d - d)`` is ``x``).

    ``None`` when sympy is not installed (it is the optional extra ``sympy``).
    """
    try:
        import sympy
    except ImportError:
        return None
    stack: list[Any] = []
    for token in reversed(individual):
        if is_function(token):
            left, right = stack.pop(), stack.pop()
            if token == "+":
                stack.append(left + right)
            elif token == "-":
                stack.append(left - right)
            elif token == "*":
                stack.append(left * right)
            else:  # a denominator that is identically 0 (like d - d) gives the numerator, as % does
                stack.append(left if sympy.simplify(right) == 0 else left / right)
        elif isinstance(token, float):
            stack.append(sympy.nsimplify(token))
        else:
            stack.append(sympy.Symbol(str(token)))
    try:
        return str(sympy.simplify(stack[0]))
    except (TypeError, ValueError, ZeroDivisionError):  # pragma: no cover - sympy corner cases
        return None
