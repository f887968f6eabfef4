"""Input files that travel with Ray tasks, for workers that do not share the driver's file system.

An experiment's task carries its resolved scenario (simsched.runs.experiment.grid.RunTask),
so a generated workload needs nothing on a worker but the package. Files the scenario
still names are read by the worker when the run starts: a trace or job CSV
(``workload.path`` and file-valued reader options), a policy file
(``policy = "file.py:Class"``), and files named by scheduler options (an EVO-GP
``priority`` JSON, an RL ``agent``). :func:`files_of` lists them on the driver.

The driver puts their bytes in Ray's object store once (:class:`Shipment`); each
task gets a small handle to them. In a worker process, :func:`localize` checks
once whether every file is readable at its driver path with the same content
(a shared file system, or the same checkout at the same place). If so, the task
runs as it came. If not, the files are written under a private folder that
mirrors the driver's absolute paths (``<tmp>/simsched-inputs-<uid>/<digest>/``),
and the scenario's anchors (its own path, the workload's base folder and trace,
absolute file options) are moved into it, so every relative name resolves
there as it did on the driver. A run's results do not depend on where its files
sit, so the rows equal a serial run's.
"""

from __future__ import annotations

import hashlib
import math
import os
import shutil
import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from simsched.core import atomic
from simsched.core.errors import InputError

#: a folder named by a scenario (a trace folder) is shipped whole, up to this many files
_MAX_FILES_IN_FOLDER = 10_000


def _candidates(value: Any) -> Iterable[str]:
    if isinstance(value, (str, Path)):
        yield str(value)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _candidates(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _candidates(item)


def _existing(name: str, base: Path, folders: bool = False) -> list[Path]:
    """The regular files ``name`` (relative to ``base``) stands for: itself, or with ``folders`` (a
    trace folder) the folder's files."""
    if not name or "\n" in name or len(name) > 4096:
        return []
    path = Path(name) if Path(name).is_absolute() else base / name
    try:
        if path.is_file():
            return [path.resolve()]
        if folders and path.is_dir():
            found = [p.resolve() for p in sorted(path.rglob("*")) if p.is_file()]
            if len(found) > _MAX_FILES_IN_FOLDER:
                raise InputError(f"{path}: a folder of {len(found)} files is too many to ship to Ray workers "
                                 f"(at most {_MAX_FILES_IN_FOLDER}); put it on a file system the workers share")
            return found
    except OSError:
        return []
    return []


def files_of(scenario: Any) -> list[Path]:
    """Every regular file a resolved scenario names and a worker would read (resolved paths)."""
    found: list[Path] = []
    path = getattr(scenario, "path", None)
    scenario_dir = Path(path).resolve().parent if isinstance(path, Path) and not str(path).startswith("<") \
        else Path.cwd()
    workload = scenario.workload
    base = Path(workload.base_dir) if workload.base_dir else scenario_dir
    for name in _candidates(workload.path):
        found += _existing(name, base, folders=True)
    for name in _candidates(workload.params):
        found += _existing(name, base)
    policy = scenario.scheduler.policy
    if isinstance(policy, str) and ".py:" in policy:
        found += _existing(policy.rpartition(":")[0], scenario_dir)
    for name in _candidates(scenario.scheduler.options):
        found += _existing(name, scenario_dir)
    return list(dict.fromkeys(found))


class Shipment:
    """The bytes of a set of files, put in the object store once; :attr:`handle` goes with each task."""

    def __init__(self, files: Iterable[Path], put: Any) -> None:
        contents: dict[str, bytes] = {}
        digest = hashlib.sha256()
        for path in sorted(set(files)):
            try:
                data = path.read_bytes()
            except OSError as exc:
                raise InputError(f"{path}: cannot read it to ship to the Ray workers ({exc.strerror})") from None
            contents[str(path)] = data
            digest.update(str(path).encode() + b"\0" + hashlib.sha256(data).digest())
        self.files = len(contents)
        self.bytes = sum(len(data) for data in contents.values())
        self.digest = digest.hexdigest()[:16]
        # a list around the reference: Ray resolves a top-level argument, not one inside a list, so a
        # task fetches the files only the first time its worker process needs them (see localize);
        # the driver's working folder goes along: a relative name in the scenario resolves against it
        self.handle: Handle | None = (self.digest, [put(contents)], os.getcwd()) if contents else None


#: (digest, [object reference to {driver path: bytes}], the driver's working folder)
Handle = tuple[str, list[Any], str]


#: digest -> the mirror folder (None: the driver's paths are readable as they are), per worker process
_LOCAL: dict[str, Path | None] = {}

#: a mirror folder unused for this long is removed when a worker on its machine writes another one
#: (issue 39: they were never cleaned); a worker process that uses a mirror marks it used (its
#: modification time) at most every :data:`MIRROR_MARK_S` seconds, so a mirror in use is never old
MIRROR_TTL_S = 24 * 3600.0
MIRROR_MARK_S = 600.0
_MARKED: dict[Path, float] = {}  # mirror -> when this process last marked it used (monotonic)


def _mark_used(root: Path) -> None:
    now = time.monotonic()
    if now - _MARKED.get(root, -math.inf) >= MIRROR_MARK_S:
        _MARKED[root] = now
        try:
            os.utime(root)
        except OSError:  # removed by hand meanwhile: the task reports the missing file
            pass


def prune_mirrors(mine: Path, keep: str, ttl_s: float = MIRROR_TTL_S) -> list[str]:
    """Remove the mirror folders under ``mine`` (this user's, mode 0700) not used for ``ttl_s``
    seconds, but ``keep``; their names."""
    removed = []
    now = time.time()
    try:
        children = list(mine.iterdir())
    except OSError:
        return removed
    for child in children:
        try:
            old = (child.name != keep and not child.is_symlink() and child.is_dir()
                   and now - child.stat().st_mtime > ttl_s)
        except OSError:
            continue
        if old:
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child.name)
    return removed


def _same(path: Path, data: bytes) -> bool:
    try:
        return path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data
    except OSError:
        return False


def _mirror(digest: str, contents: dict[str, bytes]) -> Path:
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    mine = Path(tempfile.gettempdir()) / f"simsched-inputs-{uid}"
    mine.mkdir(mode=0o700, exist_ok=True)
    if hasattr(os, "getuid"):
        if mine.is_symlink() or mine.stat().st_uid != os.getuid():
            raise InputError(f"{mine}: not a folder of this user's; remove it (simsched mirrors shipped "
                             "inputs there)")
        if mine.stat().st_mode & 0o077:  # made by hand or by an old umask: others could plant links in it
            os.chmod(mine, 0o700)
    prune_mirrors(mine, digest)
    root = mine / digest
    for name, data in contents.items():
        target = root / Path(name).relative_to(Path(name).anchor)
        if _same(target, data):
            continue
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        with atomic.replacing(target) as partial:  # a fresh name: another worker may write it at once
            partial.write_bytes(data)
    return root


def _root(handle: Handle) -> Path | None:
    """The mirror folder of a shipment in this worker process (written on first use), or None when the
    driver's paths are readable here as they are."""
    digest, holder, _ = handle
    if digest not in _LOCAL:
        import ray

        contents: dict[str, bytes] = ray.get(holder[0])
        visible = all(_same(Path(name), data) for name, data in contents.items())
        _LOCAL[digest] = None if visible else _mirror(digest, contents)
    root = _LOCAL[digest]
    if root is not None:
        _mark_used(root)
    return root


def localize(scenario: Any, handle: Handle | None) -> Any:
    """The scenario as this worker can run it (see the module docstring)."""
    if handle is None:
        return scenario
    root = _root(handle)
    return scenario if root is None else rebase(scenario, root, Path(handle[2]))


def localize_file(path: str, handle: Handle | None) -> str:
    """Where this worker reads the driver's file ``path`` (``learn`` ships its scenario file so): the
    path itself when it is readable here with the driver's bytes, else its copy in the mirror. A
    scenario loaded from the mirror finds its relative names there; :func:`into_mirror` moves its
    absolute ones."""
    if handle is None:
        return path
    root = _root(handle)
    return path if root is None else str(_under(Path(path), root, Path(handle[2])))


def into_mirror(scenario: Any) -> Any:
    """``scenario``, loaded from a file in a mirror of this process, with the absolute file names it
    holds that lie outside that mirror moved into it (the names relative to the scenario's folder
    resolve in the mirror already); any other scenario as it is."""
    path = getattr(scenario, "path", None)
    if not isinstance(path, Path):
        return scenario
    root = next((r for r in _LOCAL.values() if r is not None and path.is_relative_to(r)), None)
    if root is None:
        return scenario

    def outside(value: Any) -> Any:
        if isinstance(value, (str, Path)) and os.path.isabs(value) and Path(value).is_relative_to(root):
            return value
        if isinstance(value, (list, tuple, dict)):
            kind = type(value)
            items = value.items() if isinstance(value, dict) else enumerate(value)
            moved = {k: outside(v) for k, v in items}
            return moved if kind is dict else kind(moved.values())
        return _moved(value, root)

    workload = replace(scenario.workload, path=outside(scenario.workload.path),
                       params=outside(scenario.workload.params))
    scheduler = scenario.scheduler
    policy = scheduler.policy
    if isinstance(policy, str) and ".py:" in policy:
        file, _, cls = policy.rpartition(":")
        policy = f"{outside(file)}:{cls}"
    scheduler = replace(scheduler, policy=policy, options=outside(scheduler.options))
    return replace(scenario, workload=workload, scheduler=scheduler)


def _under(path: Path, root: Path, cwd: Path) -> Path:
    """Where the driver's ``path`` (relative: to the driver's ``cwd``) sits in the mirror ``root``."""
    path = path if path.is_absolute() else cwd / path
    return root / Path(os.path.normpath(path)).relative_to(path.anchor)


def _moved(value: Any, root: Path) -> Any:
    if isinstance(value, Path) and value.is_absolute():
        return root / value.relative_to(value.anchor)
    if isinstance(value, str) and os.path.isabs(value):
        return str(root / Path(value).relative_to(Path(value).anchor))
    if isinstance(value, list):
        return [_moved(v, root) for v in value]
    if isinstance(value, tuple):
        return tuple(_moved(v, root) for v in value)
    if isinstance(value, dict):
        return {k: _moved(v, root) for k, v in value.items()}
    return value


def rebase(scenario: Any, root: Path, cwd: Path) -> Any:
    """``scenario`` with its anchors moved under ``root`` (relative names follow them): its own path
    and the workload's base folder (relative ones: to the driver's ``cwd``), absolute file names."""
    path = scenario.path
    if isinstance(path, Path) and not str(path).startswith("<"):
        path = _under(path, root, cwd)
    workload = scenario.workload
    base = workload.base_dir
    workload = replace(workload,
                       path=_under(workload.path, root, cwd) if isinstance(workload.path, Path) and
                       workload.path.is_absolute() else _moved(workload.path, root),
                       params=_moved(workload.params, root),
                       base_dir=_under(Path(base), root, cwd) if base else base)
    scheduler = scenario.scheduler
    policy = scheduler.policy
    if isinstance(policy, str) and ".py:" in policy:
        file, _, cls = policy.rpartition(":")
        policy = f"{_moved(file, root)}:{cls}"
    scheduler = replace(scheduler, policy=policy, options=_moved(scheduler.options, root))
    return replace(scenario, path=path, workload=workload, scheduler=scheduler)
