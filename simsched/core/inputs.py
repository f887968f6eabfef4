"""Inputs are sacred: no command writes over a file it reads.

Every loader that opens a user file (a scenario, spec, workload or cluster TOML
through :func:`simsched.config.scenario.read_toml`, a trace through the workload
readers, a policy module, a priority graph, an RL agent, a checkpoint, a
compare journal) calls :func:`note_read` with its path. Before a command writes
anything, it calls :func:`check_outputs` with the files and folders it is about
to write: an output that *is* one of those inputs, or a folder that would hold
one of them under a name the command writes, is refused with one line and
exit 2, and nothing is written. Outputs beside inputs are fine under the names
the command owns (``jobs.csv``, ``summary.json``, ``results.csv``, ...): the
refusal only happens when such a name is also an input.

Paths are compared after ``Path.resolve()`` (symlinks and ``..`` followed), so
``--out .`` next to a scenario that reads ``jobs.csv`` is caught, and so is a
symlink to the scenario. Hard links to an input are caught too (same device
and inode). The sub-folders a command fills (``jobs/``, ``plots/``) must be
real folders: one planted as a symbolic link is refused here, before any run.

The registry is per process: a command notes what it reads in the process
that checks its outputs. Commands that read more in worker processes (a
compare's traces) also name their inputs from the scenario
(:func:`scenario_inputs`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from simsched.core.atomic import subfolder
from simsched.core.errors import InputError

_READ: dict[Path, str] = {}  # resolved path -> what it is ("scenario", "trace file", ...)


def note_read(path: str | Path, what: str = "input") -> None:
    """Record that this process reads ``path`` (any file a command's outputs must not replace)."""
    try:
        resolved = Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop: the reader reports it
        return
    if _READ.get(resolved) in (None, "input", "TOML file"):  # a specific name replaces a generic one
        _READ[resolved] = what


def reads() -> dict[Path, str]:
    """Every path noted so far in this process (resolved) and what it is."""
    return dict(_READ)


def forget() -> None:
    """Clear the registry (between commands run in one process, as the tests do)."""
    _READ.clear()


def scenario_inputs(scenario: object) -> None:
    """Note the files a scenario names: its own file, its workload's trace, params file and policy."""
    path = getattr(scenario, "path", None)
    if isinstance(path, Path) and not str(path).startswith("<"):
        note_read(path, "scenario")
    workload = getattr(scenario, "workload", None)
    if workload is not None:
        base = getattr(workload, "base_dir", None) or Path(".")
        trace = getattr(workload, "path", None)
        what = "job CSV" if getattr(workload, "source", None) == "csv" else "trace file"  # as its reader says
        if trace:
            for part in (trace if isinstance(trace, (list, tuple)) else [trace]):
                note_read(Path(base) / part if not Path(part).is_absolute() else Path(part), what)
        params_file = getattr(workload, "params_file", None)
        if params_file and not str(params_file).startswith("<"):
            note_read(Path(base) / params_file if not Path(params_file).is_absolute() else Path(params_file),
                      "workload file")
    scheduler = getattr(scenario, "scheduler", None)
    policy = getattr(scheduler, "policy", None)
    base_dir = Path(path).parent if isinstance(path, Path) else Path(".")
    if isinstance(policy, str) and ".py:" in policy and path is not None:
        file = policy.rpartition(":")[0]
        note_read(base_dir / file if not Path(file).is_absolute() else Path(file), "policy file")
    options = getattr(scheduler, "options", None) or {}
    for key, suffix, what in (("priority", ".json", "priority file"), ("agent", ".npz", "agent file")):
        value = options.get(key) if isinstance(options, dict) else None  # files the scheduler will read
        if isinstance(value, str) and value.endswith(suffix):
            note_read(base_dir / value if not Path(value).is_absolute() else Path(value), what)


def _same_file(a: Path, b: Path) -> bool:
    try:
        sa, sb = os.stat(a), os.stat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_outputs(files: Iterable[str | Path] = (), folders: Iterable[str | Path] = (), *,
                  flag: str = "--out") -> None:
    """Refuse (InputError, exit 2) when an output file is an input, or an output folder holds one.

    ``files``: every file the command may write (whole paths). ``folders``: sub-folders it fills
    (``plots/``, ``jobs/``): any input inside them is refused too, and so is a sub-folder that is a
    symbolic link or no folder (:func:`simsched.core.atomic.subfolder`), before anything is computed.
    """
    folders = [Path(folder) for folder in folders]
    for folder in folders:
        subfolder(folder, create=False)
    files = [Path(file) for file in files]
    for file in files:  # a folder where a file goes: the rename at the end would fail after the work
        if file.is_dir() and not file.is_symlink():
            raise InputError(f"{flag} {file}: is a folder where simsched writes a file; move it away, or choose "
                             f"another {flag}")
    inputs = reads()
    if not inputs:
        return
    for file in files:
        target = Path(file)
        resolved = target.resolve()
        what = inputs.get(resolved)
        if what is None and target.exists():
            what = next((w for p, w in inputs.items() if _same_file(p, target)), None)
        if what is not None:
            raise InputError(f"{flag} {target}: would overwrite the {what} {resolved} that this command reads; "
                             f"choose another {flag} (outputs never replace inputs)")
    for folder in folders:
        resolved = Path(folder).resolve()
        for path, what in inputs.items():
            if path == resolved or resolved in path.parents:
                raise InputError(f"{flag} {folder}: this command writes into that folder, which holds the "
                                 f"{what} {path} that it reads; choose another {flag}")


def missing_or_irregular(path: str | Path) -> str:
    """Why ``path`` cannot be read as an input file: "not found", or "not a regular file
    (a folder, device or pipe)" for a FIFO, /dev/zero or a folder, which are never read."""
    return "not a regular file (a folder, device or pipe)" if Path(path).exists() else "not found"
