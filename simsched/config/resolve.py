"""What the user typed -> the file it means: the one input resolver of every command and the Python API.

A scenario is given as a file path or as a shipped example's name
(``philly_hetero``, ``course/philly``; ``simsched examples`` lists them), to
``simsched NAME``, ``run``, ``validate``, ``compare``, ``learn``, ``rl train``,
``gpu-types``, an experiment spec's ``scenarios = [...]``, ``simsched.run`` and
``simsched.compare`` alike. :func:`scenario_path` decides, in this order:

1. a path that exists (relative to ``base`` when given, else to the working
   directory) is that path, as typed;
2. else a shipped example's name is that example's file;
3. else one :class:`~simsched.core.errors.InputError` line naming what was
   typed, where it was looked for, and the closest match.

A policy reference ``file.py:Class`` is resolved by :func:`policy_ref`: next to
the scenario first, then from the working directory.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from simsched.config import examples
from simsched.core.errors import InputError, did_you_mean

#: at most this many entries of a folder are compared with a mistyped file name
_NEIGHBOURS = 2000


def scenario_path(typed: str | os.PathLike, *, base: str | os.PathLike | None = None,
                  base_name: str | None = None) -> Path:
    """The scenario file ``typed`` names: an existing path as typed (joined to ``base`` when that is
    given and ``typed`` is relative), else a shipped example's file, else a one-line
    :class:`InputError`. ``base_name`` says what ``base`` is in that error ("beside the spec")."""
    text = os.fspath(typed)
    path = Path(text) if base is None else Path(base) / text
    if path.exists():  # a folder or a pipe too: the reader says why it is not a scenario file
        return path

    try:
        names = [example.name for example in examples.examples()]
    except InputError:  # installed without the examples: there is nothing else to search
        names = []
    name = text.removesuffix(".toml")
    if name in names:
        return examples.find(name)
    raise InputError(not_found(text, path, names, base_name))


def not_found(typed: str, path: Path, names: list[str], base_name: str | None = None) -> str:
    """The one line for a scenario that is neither a file nor an example: what was typed, the path
    looked for (relative to the working directory) and the shipped examples, and the closest match."""
    cwd = Path.cwd()
    shown = _relative(path, cwd)
    if path.is_absolute() and base_name is None:
        looked = f"looked for {shown}"
    elif base_name is None:
        looked = f"looked for {shown} in the working directory {cwd}"
    else:
        looked = f"looked for {shown} ({base_name})"
    if names:
        looked += f" and among the {len(names)} shipped examples"
    hint = _closest(typed, path, names)
    tail = "; `simsched examples` lists them" if names else "; this install has no shipped examples"
    return f"{typed}: file not found: {looked}{hint}{tail}"


def _relative(path: Path, cwd: Path) -> str:
    """``path`` as seen from the working directory (``./x.toml``); absolute when typed so, or when
    it is outside the working directory."""
    if path.is_absolute():
        return str(path)
    try:
        shown = os.path.relpath(path.absolute(), cwd)
    except ValueError:  # another drive (Windows)
        return str(path.absolute())
    return str(path.absolute()) if shown.startswith("..") else os.path.join(".", shown)


def _closest(typed: str, path: Path, names: list[str]) -> str:
    """`` (did you mean 'philly_hetero'?)``: the nearest example name, else the nearest file beside
    the one looked for; "" when nothing is near."""
    key = Path(typed).as_posix().removesuffix(".toml")
    if "scenarios/" in key:  # scenarios/philly_hetero.toml typed outside the checkout
        inner = key.rsplit("scenarios/", 1)[1]
        if inner in names:
            return f" (did you mean {inner!r}?)"
    prefix = os.path.dirname(typed)
    beside = _beside(typed, path, prefix) if prefix else ""  # a typo in a file of an existing folder
    return beside or did_you_mean(key, names) or ("" if prefix else _beside(typed, path, prefix))


def _beside(typed: str, path: Path, prefix: str) -> str:
    """`` (did you mean 'scenarios/philly_hetero.toml'?)``: the nearest name in the folder looked in."""
    try:
        entries = [entry.name for entry in itertools.islice(os.scandir(path.parent), _NEIGHBOURS)
                   if not entry.name.startswith(".")]
    except OSError:
        return ""
    return did_you_mean(typed, [os.path.join(prefix, entry) if prefix else entry for entry in entries])


def policy_ref(typed: str, scenario: str | os.PathLike) -> str:
    """``file.py:Class`` as the scenario's policy: kept as typed when the file is next to the
    scenario, made absolute when it is found from the working directory instead; a file in
    neither folder is an :class:`InputError` naming both. A built-in name (no ``.py:``) is
    returned as is; so is a path to something that is not a regular file (the loader says so)."""
    where, sep, cls = typed.rpartition(":")
    if not sep or not where.endswith(".py") or Path(where).is_absolute():
        return typed
    beside = Path(scenario).resolve().parent / where
    if beside.is_file() or beside.exists():
        return typed
    if Path(where).is_file():
        return f"{Path(where).resolve()}:{cls}"
    if Path(where).exists():
        return typed
    from_cwd = Path.cwd() / where
    looked = (f"next to the scenario and in the working directory ({beside})" if from_cwd == beside else
              f"next to the scenario ({beside}) and in the working directory ({from_cwd})")
    raise InputError(f"{typed}: policy file {where} not found: looked {looked}"
                     f"{_beside(where, beside, os.path.dirname(where)) or _beside(where, from_cwd, os.path.dirname(where))}")
