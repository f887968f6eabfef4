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

import os
import posixpath
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from simsched.config.keys import FILE_KINDS, file_keys
from simsched.core.errors import InputError, did_you_mean

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

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


#: the example ``simsched new`` starts from when ``--from`` is not given
DEFAULT = "philly_hetero"


@dataclass(frozen=True, slots=True)
class Copy:
    """A file (or folder) an example names, to be copied beside the starter."""

    source: Path  # the example's file
    target: str  # where it goes, relative to the starter's folder (POSIX, no "..")
    text: str | None  # a TOML file's text with its own file-valued keys rewritten, or None: copied as it is


@dataclass(frozen=True, slots=True)
class Starter:
    text: str  # the starter scenario
    copies: tuple[Copy, ...]  # every file it names, to copy beside it (missing ones too: a trace to download)


def file_values(table: dict[str, Any], section: str = "") -> Iterator[tuple[str, str, str, Any]]:
    """``(section, key, kind, value)`` for every key of ``table`` (a scenario's, or a cluster or workload
    file's, read as ``section``) that names files (:func:`simsched.config.keys.file_keys`). Tables of
    ``[compare.options.LABEL]`` are read as ``[scheduler]``."""
    marked = file_keys()
    for name, value in table.items():
        kind = marked.get((section, name))
        if kind:
            yield section, name, kind, value
            continue
        inner = "scheduler" if section == "compare.options" else f"{section}.{name}".lstrip(".")
        for item in (value if isinstance(value, list) else [value]):
            if isinstance(item, dict):
                yield from file_values(item, inner)


def named_files(kind: str, value: Any) -> list[tuple[str, str]]:
    """The files a value of ``kind`` names, as ``(file, suffix)``: the value is ``file + suffix``."""
    if kind == "path" and isinstance(value, str):
        return [(value, "")]
    if kind == "paths" and isinstance(value, list):
        return [(v, "") for v in value if isinstance(v, str)]
    if kind == "module" and isinstance(value, str) and ".py:" in value:
        file, _, cls = value.rpartition(":")
        return [(file, ":" + cls)]
    if kind == "json" and isinstance(value, str) and value.endswith(".json"):
        return [(value, "")]
    if kind not in FILE_KINDS:
        raise RuntimeError(f"simsched new does not know the file kind {kind!r} (simsched/config/keys.py)")
    return []


#: how a named file is read, by the key naming it: a TOML table to follow (its own file-valued keys
#: are rewritten too), and as which section; other files are copied as they are
_NESTED = {("cluster", "file"): "", ("workload", "file"): "workload", ("compare", "instances"): ""}


def _plan(path: Path, home: Path, base: Path) -> Starter:
    """The starter for the example ``path``: its text and the files to copy. A file under the
    example's folder ``home`` keeps its path relative to it; another file under ``base`` (the
    examples' root) goes to its path relative to ``base`` (``workloads/philly_like.toml``). A file
    outside both is left as the example names it."""
    path, home, base = path.resolve(), home.resolve(), base.resolve()

    def place(file: Path) -> PurePosixPath | None:
        for anchor in (home, base):
            if file.is_relative_to(anchor):
                return PurePosixPath(file.relative_to(anchor).as_posix())
        return None

    copies: dict[str, Copy] = {}

    def rewrite(text: str, holder: Path, section: str) -> str:
        where = place(holder)
        assert where is not None
        table = tomllib.loads(text)
        if section == "workload" and isinstance(table.get("workload"), dict):
            section = ""
        changes: dict[tuple[str, str], str] = {}
        expected = []
        for table_section, name, kind, value in file_values(table, section):
            for file, suffix in named_files(kind, value):
                target = Path(file) if Path(file).is_absolute() else holder.parent / file
                target = Path(os.path.normpath(target))
                spot = place(target)
                if spot is None:  # not the examples' own file: left as it is written
                    expected.append((name, file + suffix))
                    continue
                new = posixpath.relpath(spot.as_posix(), where.parent.as_posix())
                changes[(name, file + suffix)] = new + suffix
                expected.append((name, new + suffix))
                key = spot.as_posix()
                if key in copies:
                    if copies[key].source != target:
                        raise RuntimeError(f"simsched new: {target} and {copies[key].source} would both go to {key}")
                    continue
                nested = _NESTED.get((table_section, name))
                copies[key] = Copy(target, key, None)  # placeholder first: files may name each other
                if nested is not None and target.is_file():
                    try:
                        copies[key] = Copy(target, key, rewrite(target.read_text(encoding="utf-8"), target, nested))
                    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
                        pass  # not a TOML file: copied as it is (the validator says what is wrong with it)
        out = _rewrite(text, changes)
        got = [(name, value) for _, name, kind, raw in file_values(tomllib.loads(out), section)
               for value in _values(kind, raw)]
        if sorted(got) != sorted(expected):
            raise RuntimeError(f"simsched new: could not rewrite the file names in {holder} (got {got}, "
                               f"expected {expected})")
        return out

    text = rewrite(path.read_text(encoding="utf-8"), path, "")
    return Starter(text, tuple(copies.values()))


def _values(kind: str, value: Any) -> list[str]:
    return [file + suffix for file, suffix in named_files(kind, value)]


def _rewrite(text: str, changes: dict[tuple[str, str], str]) -> str:
    """Each ``name = "old"`` (or ``name = [..., "old", ...]``) of ``changes`` to its new value, in one pass
    (so a new value that is another key's old one is not rewritten twice); the rest of the text as it is."""
    if not changes:
        return text
    names = sorted({name for name, _ in changes}, key=len, reverse=True)
    pattern = r"(?:^|(?<=[\s{,]))(" + "|".join(map(re.escape, names)) + r""")\s*=\s*(\[[^\]]*\]|"[^"\n]*"|'[^'\n]*')"""
    string = re.compile(r"""(["'])([^"'\n]*)\1""")

    def value(match: re.Match) -> str:
        name = match.group(1)
        head = match.group(0)[:match.start(2) - match.start(0)]
        return head + string.sub(lambda s: s.group(1) + changes.get((name, s.group(2)), s.group(2)) + s.group(1),
                                 match.group(2))

    return re.sub(pattern, value, text, flags=re.M)


def starter(source: str | None) -> Starter:
    """A commented starter scenario from example ``source`` (default philly_hetero), and the files it
    names (cluster and workload files, traces, agents, priorities, policy modules, compared
    instances), to copy beside it so that it runs where it is written, in any environment."""
    name = source or DEFAULT
    path = find(name)
    plan = _plan(path, path.parent, root())
    header = (f"# A starter scenario, written by `simsched new` from the example {name!r}.\n"
              "# Edit it, check it with `simsched validate FILE`, run it with `simsched FILE`.\n"
              "# Every key is described in docs/scenarios.md; the files it names were copied beside it.\n\n")
    return Starter(header + plan.text, plan.copies)
