"""The shipped example scenarios, by name, from a checkout or from an installed wheel.

The checkout's ``scenarios/`` and ``workloads/`` folders are the only source. A
wheel carries a copy of them as package data under ``simsched/examples/``, made
by the build (``setup.py``'s ``build_py``), so ``simsched philly_hetero`` runs
from any directory after ``pip install simsched``. In a checkout (or an editable
install) the checkout's own folders are used, so there is nothing to drift.

An example's name is its path under ``scenarios/`` without ``.toml``
(``philly_hetero``, ``course/philly``). Cluster files (``scenarios/clusters/``)
are parts of examples, not examples. Examples whose workload is a real trace
need that trace downloaded first; ``simsched examples`` says which.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simsched.core.errors import InputError, did_you_mean

PACKAGE = Path(__file__).resolve().parents[1]  # the simsched package (this file is simsched/config/)


def root() -> Path:
    """The folder holding ``scenarios/`` and ``workloads/``: the installed copy, else the checkout."""
    installed = PACKAGE / "examples"
    if (installed / "scenarios").is_dir():
        return installed
    checkout = PACKAGE.parent
    if (checkout / "scenarios").is_dir():
        return checkout
    raise InputError("no example scenarios found: this simsched was installed without them; "
                     "reinstall it from a wheel or a checkout")


@dataclass(frozen=True, slots=True)
class Example:
    name: str
    path: Path
    summary: str  # the file's first comment line
    needs_trace: bool  # its workload reads a trace file the user must download


def examples() -> list[Example]:
    """Every shipped example scenario, sorted by name."""
    base = root() / "scenarios"
    found = []
    for path in sorted(base.rglob("*.toml")):
        relative = path.relative_to(base)
        if relative.parts[0] == "clusters":
            continue
        text = path.read_text(encoding="utf-8")
        comment = next((line.lstrip("# ").strip() for line in text.splitlines() if line.startswith("#")), "")
        needs_trace = bool(re.search(r'^\s*source\s*=\s*"(philly|pai|helios|itp|openb)"', text, re.M)) or \
            "trace" in path.stem
        found.append(Example(relative.with_suffix("").as_posix(), path, comment, needs_trace))
    return found


def find(name: str) -> Path:
    """The scenario file of example ``name`` (an :class:`InputError` with the names when unknown)."""
    by_name = {example.name: example.path for example in examples()}
    if name.removesuffix(".toml") in by_name:
        return by_name[name.removesuffix(".toml")]
    raise InputError(f"no example named {name!r}{did_you_mean(name, list(by_name))}; "
                     f"examples: {', '.join(by_name)} (simsched examples lists them)")


def is_example(name: str) -> bool:
    try:
        return name.removesuffix(".toml") in {example.name for example in examples()}
    except InputError:
        return False


def starter(source: str | None) -> str:
    """A commented starter scenario: example ``source`` (default philly_hetero) with every relative
    file it names made absolute, so the copy runs from wherever it is written."""
    path = find(source or "philly_hetero")
    text = path.read_text(encoding="utf-8")

    def absolute(match: re.Match) -> str:
        key, value = match.group(1), match.group(2)
        if Path(value).is_absolute():
            return match.group(0)
        return f'{key} = "{(path.parent / value).resolve().as_posix()}"'

    body = re.sub(r'^(\s*(?:file|path))\s*=\s*"([^"]+)"', absolute, text, flags=re.M)
    header = (f"# A starter scenario, written by `simsched new` from the example {source or 'philly_hetero'!r}.\n"
              "# Edit it, check it with `simsched validate FILE`, run it with `simsched FILE`.\n"
              "# Every key is described in docs/scenarios.md; the files it names are the installed example's.\n\n")
    return header + body
