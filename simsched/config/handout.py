"""The assignment's handout: the files ``simsched assignment DIR`` writes, from a checkout or a wheel.

The checkout's ``docs/examples/`` is the only source (the scenario ``compare_mine.toml``, the policy
template ``my_policy.py``, tasks 1 and 2's scenarios and CSVs, and the handout's ``README.md`` with the
exact commands). A wheel carries a copy of it as package data under ``simsched/examples/assignment/``,
made by the build (``setup.py``'s ``build_py``), so a student with a plain ``pip install simsched`` gets
the same files.
"""

from __future__ import annotations

from pathlib import Path

from simsched.config.examples import PACKAGE
from simsched.core.errors import InputError

#: every file of the handout, in the order the README lists them
FILES = ("README.md", "compare_mine.toml", "my_policy.py", "task1.toml", "task1.csv", "task2.toml", "task2.csv")


def folder() -> Path:
    """The folder holding the handout's files: the installed copy, else the checkout's docs/examples/."""
    for candidate in (PACKAGE / "examples" / "assignment", PACKAGE.parent / "docs" / "examples"):
        if all((candidate / name).is_file() for name in FILES):
            return candidate
    raise InputError("the assignment's files were not found: this simsched was installed without them; "
                     "reinstall it from a wheel or a checkout")


def files() -> list[Path]:
    """The handout's files, in :data:`FILES` order."""
    base = folder()
    return [base / name for name in FILES]
