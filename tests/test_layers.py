"""The package's structure (issue 33, docs/engine.md "Layout"): no import cycle among simsched's
modules, every top-level package in the layers contract, nothing inside importing the facade, and
at most 25 function-level imports of simsched modules, each saying why it is deferred."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

grimp = pytest.importorskip("grimp", reason="grimp comes with import-linter (the test extra)")
import networkx as nx  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "simsched"
MAX_DEFERRED = 25


def _graph() -> nx.DiGraph:
    """Every import between simsched's modules, function-level ones included (grimp reads them all)."""
    imports = grimp.build_graph("simsched", include_external_packages=False)
    graph = nx.DiGraph()
    for module in imports.modules:
        graph.add_node(module)
        for target in imports.find_modules_directly_imported_by(module):
            graph.add_edge(module, target)
    return graph


def test_no_import_cycle():
    cycles = [sorted(component) for component in nx.strongly_connected_components(_graph())
              if len(component) > 1]
    assert cycles == []


def test_the_cycle_finder_finds_a_cycle():
    """The check above is not vacuous: the same finder reports a planted two-module cycle."""
    graph = _graph()
    graph.add_edge("simsched.core.model", "simsched.config.scenario")  # config.scenario imports core.model
    cycles = [c for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert cycles and {"simsched.core.model", "simsched.config.scenario"} <= cycles[0]


def test_nothing_inside_imports_the_facade():
    """``simsched/__init__.py`` sits on top of every layer; a module importing it would close a cycle
    through the facade's lazy names (the graph does not see PEP 562 look-ups)."""
    graph = _graph()
    assert sorted(m for m in graph.predecessors("simsched") if m != "simsched.__main__") == []


def _contract_layers() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["type"] == "layers")["layers"]
    return [name.strip() for layer in layers for name in layer.replace(":", "|").split("|")]


def test_layers_contract_names_every_top_level_package():
    top = {f"simsched.{p.stem}" for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    top |= {f"simsched.{p.name}" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    assert sorted(top) == sorted(_contract_layers())


def _deferred_imports() -> list[tuple[str, int, str, bool]]:
    """(file, line, statement, has a reason) for every import of a simsched module inside a function."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.ImportFrom) and (inner.module or "").startswith("simsched") or \
                        isinstance(inner, ast.Import) and any(a.name.startswith("simsched") for a in inner.names):
                    line = lines[inner.lineno - 1]
                    before = lines[inner.lineno - 2].strip() if inner.lineno > 1 else ""
                    reason = "#" in line or before.startswith("#")
                    found.append((str(path.relative_to(ROOT)), inner.lineno, line.strip(), reason))
    return sorted(set(found))


def test_few_deferred_imports_each_with_its_reason():
    deferred = _deferred_imports()
    assert [d for d in deferred if not d[3]] == [], "a function-level import needs a comment saying why"
    assert len(deferred) <= MAX_DEFERRED, "\n".join(f"{f}:{n}: {s}" for f, n, s, _ in deferred)
