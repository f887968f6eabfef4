"""Rebuild docs/tutorial.ipynb from its jupytext twin docs/tutorial.py and execute it (outputs kept).

    python tools/docs/build_tutorial.py        # after editing docs/tutorial.py

Needs the ``test`` extra (jupytext, nbclient, nbformat, ipykernel). The notebook runs in a
temporary folder, so anything it writes stays out of the checkout. tests/test_tutorial.py
checks that the two files hold the same cells and that the notebook runs.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def build(source: Path = DOCS / "tutorial.py", target: Path = DOCS / "tutorial.ipynb") -> float:
    """Convert ``source`` to ``target``, execute it, write it with its outputs; the seconds it ran."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient

    notebook = jupytext.read(source)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        NotebookClient(notebook, timeout=300, kernel_name="python3",
                       resources={"metadata": {"path": folder}}).execute()
    seconds = time.perf_counter() - started
    nbformat.write(notebook, target)
    return seconds


if __name__ == "__main__":
    took = build()
    print(f"wrote {DOCS / 'tutorial.ipynb'} (executed in {took:.1f} s)", file=sys.stderr)
