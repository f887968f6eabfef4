"""Where numba keeps compiled kernels: beside the package, in the user's cache, or a temporary folder.

numba's ``cache=True`` writes to ``__pycache__`` beside the module, else to the
user-wide cache under HOME; when neither is writable (a read-only install
run by a user without a home) it raises "cannot cache function". Before any
kernel is defined, :func:`ensure_writable_cache` points ``NUMBA_CACHE_DIR`` at a
per-user temporary folder in that case (this user's own, writable by no one
else, or a fresh one), so the kernels still compile (and are cached for the
session) instead of failing. A ``NUMBA_CACHE_DIR`` set by the
user is always kept.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def _own(folder: Path) -> bool:
    """``folder`` is this user's own folder that no one else may write into: numba loads the kernels
    cached there (pickles), so a folder planted in the shared temporary folder by someone else, or a
    link to one, is not used."""
    if not hasattr(os, "getuid"):
        return True
    try:
        info = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def ensure_writable_cache() -> str | None:
    """Set a fallback cache folder when numba could not cache; returns the folder chosen, if any."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return None
    here = Path(__file__).resolve().parent
    if _writable(here / "__pycache__"):
        return None
    try:
        home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "numba"
    except RuntimeError:  # no HOME and no password entry
        home = None
    if home is not None and _writable(home):
        return None
    fallback = Path(tempfile.gettempdir()) / f"simsched-numba-{os.getuid() if hasattr(os, 'getuid') else 'user'}"
    try:
        fallback.mkdir(mode=0o700, exist_ok=True)
    except OSError:  # not possible here: a fresh folder below
        pass
    if not _own(fallback) or not _writable(fallback):
        fallback = Path(tempfile.mkdtemp(prefix="simsched-numba-"))
    os.environ["NUMBA_CACHE_DIR"] = str(fallback)
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba already imported: its config read the environment already
        config.CACHE_DIR = str(fallback)
    return str(fallback)
