"""The tutorial notebook (issue 22): docs/tutorial.ipynb and its jupytext twin docs/tutorial.py hold
the same cells, the committed notebook is executed (the docs site shows its outputs), and it runs
from start to end without an error (this test executes it, so the README's test command covers it),
showing every output the committed notebook shows (issue 37: a stale notebook fails)."""

from __future__ import annotations

import base64
import re
import struct
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
HINT = "the tutorial notebook needs the test extra: pip install -e '.[test]'"


def _cells(notebook) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source.strip()) for cell in notebook.cells]


def test_the_notebook_and_its_jupytext_twin_hold_the_same_cells() -> None:
    jupytext = pytest.importorskip("jupytext", reason=HINT)
    nbformat = pytest.importorskip("nbformat", reason=HINT)
    twin = jupytext.read(DOCS / "tutorial.py")
    notebook = nbformat.read(DOCS / "tutorial.ipynb", as_version=4)
    assert _cells(notebook) == _cells(twin), "docs/tutorial.py and .ipynb differ: python tools/docs/build_tutorial.py"


def test_the_committed_notebook_is_executed() -> None:
    nbformat = pytest.importorskip("nbformat", reason=HINT)
    notebook = nbformat.read(DOCS / "tutorial.ipynb", as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    counts = [cell.execution_count for cell in code]
    assert counts == list(range(1, len(code) + 1)), "run top to bottom in one kernel: tools/docs/build_tutorial.py"
    assert not [o for cell in code for o in cell.outputs if o.output_type == "error"]
    kinds = [key for cell in code for o in cell.outputs for key in o.get("data", {})]
    assert kinds.count("image/png") >= 6 and kinds.count("text/html") >= 5


def test_the_tutorial_runs(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat", reason=HINT)
    nbclient = pytest.importorskip("nbclient", reason=HINT)
    pytest.importorskip("ipykernel", reason=HINT)
    pytest.importorskip("matplotlib", reason=HINT)
    pytest.importorskip("scipy", reason=HINT)
    notebook = nbformat.read(DOCS / "tutorial.ipynb", as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    # any error in a cell raises CellExecutionError naming the cell
    nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = {index: cell.outputs for index, cell in enumerate(notebook.cells) if cell.cell_type == "code"}
    html = [o["data"]["text/html"] for cells in outputs.values() for o in cells if "text/html" in o.get("data", {})]
    assert any("simsched run: course_philly" in page and "Avg JCT (s)" in page for page in html)  # Result
    assert any("simsched compare: fifo, sjf, hrrn" in page and " ± " in page for page in html)  # Comparison
    images = sum("image/png" in o.get("data", {}) for cells in outputs.values() for o in cells)
    assert images == 6  # each figure shown once
    # every output the same as the committed notebook's (the runs are deterministic): text, HTML, streams,
    # and each figure's kind and pixel size; a stale notebook fails here
    committed = nbformat.read(DOCS / "tutorial.ipynb", as_version=4)
    expected = [_shown(cell.outputs) for cell in committed.cells if cell.cell_type == "code"]
    got = [_shown(cells) for cells in outputs.values()]
    assert len(got) == len(expected)
    stale = [f"cell {n + 1}: committed {e!r:.300} != now {g!r:.300}"
             for n, (e, g) in enumerate(zip(expected, got)) if e != g]
    assert not stale, ("the committed tutorial's outputs are stale (results changed): "
                       "python tools/docs/build_tutorial.py\n" + "\n".join(stale))


def _png_size(data: str) -> tuple[int, int]:
    """A base64 PNG's width and height, from its IHDR chunk."""
    head = base64.b64decode(data[:64])
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", head[16:24])


def _shown(outputs) -> list[tuple[str, str, object]]:
    """What a cell shows, comparable across executions: each output's type and every representation
    (a PNG by its pixel size: its bytes depend on the font and the matplotlib build), streams with the
    kernel's temporary file names left out."""
    shown: list[tuple[str, str, object]] = []
    for output in outputs:
        if output.output_type == "stream":
            text = re.sub(r"/tmp/[^\s:]*ipykernel[^\s:]*", "<kernel>", output.text)
            shown.append(("stream", output.name, text))
        elif output.output_type == "error":
            shown.append(("error", output.ename, output.evalue))
        else:
            for kind, value in sorted(output.get("data", {}).items()):
                shown.append((output.output_type, kind, _png_size(value) if kind == "image/png" else value))
    return shown
