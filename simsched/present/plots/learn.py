"""Figures of GP learning (``learn --out FILE.json``): fitness per generation and the learned tree."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pandas as pd

from simsched.core.outputs import read_json_object
from simsched.evo.priority import CONST, FUNCTIONS, from_json, infix, root
from simsched.present.plots.style import figure


def load_learned(path: str | Path) -> dict[str, Any]:
    """The learned file's graph, infix, meta and per-generation history (a frame; empty when absent)."""
    path = Path(path)
    data = read_json_object(path, "a learned priority file")
    graph = from_json(data, str(path))
    meta = data.get("meta", {}) if isinstance(data.get("meta"), dict) else {}
    history = meta.get("history", [])
    rows = [{k: entry.get(k) for k in ("generation", "best", "median", "mean") if k in entry}
            for entry in (history if isinstance(history, list) else []) if isinstance(entry, dict)]
    return {"graph": graph, "infix": data.get("infix") or infix(graph), "meta": meta,
            "history": pd.DataFrame(rows)}


def fitness_figure(history: pd.DataFrame) -> Any:
    """Best and median fitness of the population per generation (lower is better; 1 = SRSF)."""
    fig, axes = figure()
    ax = axes[0, 0]
    if len(history):
        generation = history["generation"].to_numpy(int)
        ax.plot(generation, history["best"].to_numpy(float), marker="o", label="best", color="C2")
        middle = "median" if "median" in history and history["median"].notna().all() else "mean"
        ax.plot(generation, history[middle].to_numpy(float), marker="s", label=middle, color="C0")
        ax.legend(loc="upper right", fontsize="small")
        ax.set_xticks(generation if len(generation) <= 20 else np.linspace(generation.min(), generation.max(),
                                                                            11).round())
    ax.set_xlabel("generation (0 = initial population)")
    ax.set_ylabel("fitness (sum of objective / SRSF's)")
    ax.set_title("GP fitness per generation (lower is better)")
    ax.grid(True, alpha=0.3)
    return fig


def unfold(graph: nx.DiGraph) -> nx.DiGraph:
    """The DAG as a tree: a subtree shared by several parents is copied under each (same attributes,
    same ``arg`` edges), so the drawing has no crossing edges."""
    tree = nx.DiGraph()

    def copy(v: Any) -> int:
        node = tree.number_of_nodes()
        tree.add_node(node, **graph.nodes[v])
        for child in sorted(graph.successors(v), key=lambda c: graph.edges[v, c]["arg"]):
            tree.add_edge(node, copy(child), arg=graph.edges[v, child]["arg"])
        return node

    copy(root(graph))
    return tree


def tree_layout(tree: nx.DiGraph) -> dict[Any, tuple[float, float]]:
    """Root on top, one row per depth; leaves left to right in argument order, parents centred over
    their arguments (a tidy layout of :func:`unfold`'s tree)."""
    x: dict[Any, float] = {}
    y: dict[Any, float] = {}
    next_leaf = [0.0]

    def place(v: Any, depth: int) -> float:
        y[v] = -float(depth)
        children = sorted(tree.successors(v), key=lambda c: tree.edges[v, c]["arg"])
        if not children:
            x[v] = next_leaf[0]
            next_leaf[0] += 1.0
        else:
            x[v] = float(np.mean([place(c, depth + 1) for c in children]))
        return x[v]

    place(root(tree), 0)
    return {v: (x[v], y[v]) for v in tree.nodes}


def _label(graph: nx.DiGraph, v: Any) -> str:
    attrs = graph.nodes[v]
    if attrs["op"] == CONST:
        return f"{attrs['value']:g}"
    return {"*": "×", "%": "÷"}.get(attrs["op"], attrs["op"])


def tree_figure(graph: nx.DiGraph, infix: str) -> Any:
    """The priority function drawn from its networkx graph (shared subtrees drawn under each parent);
    the infix expression is the title."""
    graph = unfold(graph)
    positions = tree_layout(graph)
    width = min(14.0, max(5.0, 0.55 * (max(p[0] for p in positions.values()) + 2)))
    levels = 1 - min(p[1] for p in positions.values())
    fig, axes = figure(height=min(9.0, 1.0 + 0.75 * levels), width=width)
    ax = axes[0, 0]
    functions = [v for v in graph.nodes if graph.nodes[v]["op"] in FUNCTIONS]
    terminals = [v for v in graph.nodes if v not in set(functions)]
    nx.draw_networkx_edges(graph, positions, ax=ax, arrows=False, edge_color="0.5")
    nx.draw_networkx_nodes(graph, positions, nodelist=functions, ax=ax, node_color="#ffd27f", node_size=520,
                           edgecolors="0.3")
    nx.draw_networkx_nodes(graph, positions, nodelist=terminals, ax=ax, node_color="#9fd3ff", node_size=520,
                           node_shape="s", edgecolors="0.3")
    nx.draw_networkx_labels(graph, positions, labels={v: _label(graph, v) for v in graph.nodes}, ax=ax,
                            font_size=9)
    ax.set_title("\n".join(textwrap.wrap(f"f = {infix}", width=int(width * 11))), fontsize="small")
    ax.axis("off")
    ax.margins(0.08)
    return fig


def learn_figures(data: dict[str, Any]) -> dict[str, Any]:
    return {"fitness": fitness_figure(data["history"]), "tree": tree_figure(data["graph"], data["infix"])}
