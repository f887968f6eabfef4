"""Outputs that are either complete or clearly marked partial (SPEC §8).

Every output file is written under a temporary name in the same folder and
renamed into place (``os.replace`` is atomic on POSIX and Windows), so a
reader never sees half a file. A folder of outputs carries a ``PARTIAL``
marker while it is being written and whenever what it holds is incomplete
(an interrupted run or comparison); the marker says why and how to continue.

The ``check_*`` helpers validate an output location before any work starts,
so a bad ``--out`` costs nothing.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from simsched.core.errors import InputError

MARKER = "PARTIAL"


#: errno values that mean "the output cannot be written here" (the disk, quota, mount or rights),
#: not a bug: the CLI reports them on one line with exit code RESOURCE_EXIT (docs/outputs.md)
RESOURCE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG})
RESOURCE_EXIT = 74  # EX_IOERR of sysexits.h


def current_umask() -> int:
    """The process umask, read without changing it where /proc allows (no race with threads)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def named(exc: OSError, path: str | Path) -> OSError:
    """``exc`` with ``path`` as its file name when it has none (``os.write`` errors name no file)."""
    if exc.filename is None and exc.errno is not None:
        return type(exc)(exc.errno, exc.strerror, str(path))
    return exc


def open_own(path: str | Path, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags | O_NOFOLLOW)`` for a file simsched writes in place inside a folder that
    others may write into (a shared results folder, an unpacked archive): the store lock, the
    experiment store's appends, the compare journal.

    A symbolic link there (``.simsched.lock -> ../thesis.tex``), a hard link (a second name of a
    file elsewhere: ``ln ../thesis.tex .simsched.lock``) or anything but a regular file (a FIFO, a
    device) is refused with :class:`InputError`, before a byte is written: writing through it would
    truncate or append to a file outside the folder. The checks are made on the open descriptor
    (``fstat``), so the file checked is the file written; ``O_TRUNC`` is applied only after them.
    A regular file with one name is only the name in this folder, whoever owns it (a colleague's
    lock in a shared store is used, not refused). Files replaced whole go through
    :func:`replacing` instead (a fresh ``mkstemp`` name, then a rename, which replaces a link
    itself, never its target, and leaves a hard link's other names as they were)."""
    path = Path(path)
    nofollow = getattr(os, "O_NOFOLLOW", 0)
    nonblock = getattr(os, "O_NONBLOCK", 0)  # a planted FIFO must not block the open
    truncate = flags & os.O_TRUNC  # after the checks: a refused file must be left as it was
    try:
        fd = os.open(path, (flags & ~os.O_TRUNC) | nofollow | nonblock | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK) and path.is_symlink():  # EMLINK: the BSDs' answer
            raise InputError(f"{path}: is a symbolic link; simsched writes only regular files here "
                             "(remove the link)") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader, a socket, a folder
            raise InputError(f"{path}: is not a regular file; simsched writes only regular files here "
                             "(remove it)") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{path}: is not a regular file; simsched writes only regular files here "
                             "(remove it)")
        if info.st_nlink > 1:
            raise InputError(f"{path}: has {info.st_nlink} hard links (the same file under other names); "
                             "simsched writes in place only to a file with one name, so that no other is changed "
                             "(give it its own copy with cp and mv, or remove it)")
        if truncate:
            os.ftruncate(fd, 0)
        if nonblock:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def subfolder(path: str | Path, *, create: bool = True) -> Path:
    """``path``, a sub-folder that simsched fills inside an output folder (``jobs/``, ``plots/``, a
    learned file's ``FILE_plots/``): a real folder, made when missing (``create``).

    A symbolic link there (``jobs -> ../thesis``) or anything but a folder is refused with
    :class:`InputError`: every file written into it would land outside the output folder, and an
    existing one there (``index.csv``) would be replaced. The output folder itself may be a link
    (the user named it); only what simsched makes inside it is checked. Every sub-folder is made
    through here, and the commands check theirs before any run (:func:`simsched.core.inputs.check_outputs`),
    so a planted link costs nothing computed."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return path
        try:
            os.mkdir(path)
        except FileExistsError:  # made meanwhile: checked below like any other
            pass
        info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise InputError(f"{path}: is a symbolic link; simsched writes its files only into a real folder here, "
                         "never through a link (remove the link)")
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{path}: is not a folder; simsched writes its files into a folder of this name "
                         "(move it away)")
    return path


@contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it onto ``path``, else delete it.

    The file ends with the mode ``open()`` would give it (0666 less the umask), not mkstemp's
    0600: a colleague who can read the folder can read the results, as with any other file the
    user writes there (docs/outputs.md)."""
    path = Path(path)
    if path.is_dir() and not path.is_symlink():  # the rename would fail only after the writing
        raise InputError(f"{path}: is a folder where simsched writes a file; move it away")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~current_umask())
        os.replace(tmp_path, path)
    except OSError as exc:
        tmp_path.unlink(missing_ok=True)
        if exc.filename is None:
            raise named(exc, path) from exc
        raise
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_with(path: str | Path, writer: Callable[[Path], object]) -> Path:
    """``writer(tmp_path)`` writes the file (e.g. ``df.to_csv``); it then replaces ``path`` atomically."""
    with replacing(path) as tmp:
        writer(tmp)
    return Path(path)


def mark_partial(folder: str | Path, reason: str) -> Path:
    """Mark ``folder`` as holding incomplete outputs, saying why (one line, then details)."""
    return write_text(Path(folder) / MARKER, reason.rstrip("\n") + "\n")


def clear_partial(folder: str | Path) -> None:
    (Path(folder) / MARKER).unlink(missing_ok=True)


def is_partial(folder: str | Path) -> bool:
    return (Path(folder) / MARKER).is_file()


def check_out_dir(path: str | Path, flag: str = "--out", create: bool = True) -> Path:
    """An output folder that exists or can be created, and is writable; else :class:`InputError`.
    ``create=False`` (the commands' checks before they read their inputs): a folder that does not
    exist yet is not made; its nearest existing parent must be a writable folder, so that bad input
    found afterwards leaves nothing behind (the folder is made when the outputs are written)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{flag} {path}: exists and is not a folder; give a folder for the outputs")
    if not create and not path.exists():
        parent = path.absolute().parent
        while not parent.exists() and parent != parent.parent:
            parent = parent.parent
        if not parent.is_dir():
            raise InputError(f"{flag} {path}: cannot create the folder ({parent} is not a folder)")
        _probe(parent, flag, f"{flag} {path}")
        return path
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot create the folder ({exc.strerror or exc})") from None
    _probe(path, flag, f"{flag} {path}")
    return path


def check_out_file(path: str | Path, flag: str = "--out") -> Path:
    """An output file whose folder exists and is writable and that is not itself a folder."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{flag} {path}: is a folder; give a file name such as {path / 'learned.json'}")
    if path.exists() and not path.is_file():
        raise InputError(f"{flag} {path}: is not a regular file; give a file name in a writable folder")
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"{flag} {path}: folder {parent} does not exist")
    _probe(parent, flag, f"{flag} {path}")
    return path


def _probe(folder: Path, flag: str, what: str) -> None:
    """Create and delete a temporary file: permission bits alone miss read-only mounts and ACLs."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".simsched-probe.", dir=folder)
    except OSError as exc:
        raise InputError(f"{what}: folder {folder} is not writable ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(tmp)
