"""Inputs are sacred: an output path must never replace a file the command reads.

Each command collects the paths it reads (the scenario and every path a scenario
names: trace, workload, cluster tables, priority files, ...) and calls
:func:`refuse_overwrite` before anything is written. Rules: docs/outputs.md.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from pathlib import Path

from simsched.errors import InputError


def scenario_inputs(scenario) -> list[Path]:
    """Every file path a loaded scenario names (found by walking its fields), the scenario file first."""
    found: list[Path] = []
    seen: set[int] = set()

    def walk(value, depth: int) -> None:
        if depth > 8 or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, Path):
            found.append(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            for field in dataclasses.fields(value):
                walk(getattr(value, field.name, None), depth + 1)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, depth + 1)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, depth + 1)

    walk(scenario, 0)
    return [p for p in found if p.is_file()]


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def refuse_overwrite(prog: str, flag: str, out: str | Path, inputs: Iterable[str | Path],
                     written: Iterable[str] = ()) -> None:
    """Raise :class:`InputError` when ``out`` (a file, or a folder receiving the file names
    ``written``) would replace one of ``inputs``."""
    out = Path(out)
    names = list(written)
    targets = [out] + [out / name for name in names]
    for source in inputs:
        source = Path(source)
        if not source.exists():
            continue
        for target in targets:
            if _same(source, target):
                what = "is" if target == out else f"would write {target.name} over"
                raise InputError(f"{prog}: {flag} {out} {what} the input file {source}; "
                                 "choose another output path (inputs are never overwritten)")


def scenario_file_inputs(path: str | Path) -> list[Path]:
    """The scenario file and every file it names; just the file when it does not load
    (the command reports that error itself, in its usual words)."""
    from simsched.errors import SimschedError
    from simsched.scenario import load_scenario

    try:
        return [Path(path)] + scenario_inputs(load_scenario(path))
    except SimschedError:
        return [Path(path)]
