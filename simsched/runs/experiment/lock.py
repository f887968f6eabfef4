"""One writer per result folder: a lock file that names its holder.

Two invocations on one ``--out`` folder would both append rows for the same
runs (every run twice) and then disagree about what is missing. The first
invocation takes ``<folder>/.simsched.lock``; a second one fails at once with
the holder's pid, host and start time (exit 2).

The lock is an advisory ``fcntl.flock`` on the file, held for the life of the
open descriptor: the kernel releases it when the holder exits, however it
exits, so a lock can never outlive its process on this host. The file's text
(``pid host since``) is only the message. When the lock is free but the file
still names another pid that is dead on this host (the holder was killed
before it could tidy up), the lock is taken over and a warning says so.
The lock file is opened with ``O_NOFOLLOW`` and must be a regular file with one
name: anyone who can write into a shared results folder could otherwise plant
``.simsched.lock -> ../thesis.tex`` (or the hard link ``ln ../thesis.tex
.simsched.lock``) and have the next ``--resume`` empty it (atomic.open_own).
On a shared file system ``flock`` is as good as that file system's locking
(NFSv4 and Lustre pass it to the server); docs/scale-out.md says to keep one
``--out`` per driver.
"""

from __future__ import annotations

import fcntl
import os
import socket
import time
from pathlib import Path

from simsched.core.atomic import open_own
from simsched.core.errors import InputError

LOCK = ".simsched.lock"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def _holder(text: str) -> tuple[int, str, str] | None:
    """(pid, host, since) from the lock file's text; None when it is not ours or empty."""
    parts = text.split(maxsplit=2)
    if len(parts) != 3 or not parts[0].isdigit():
        return None
    return int(parts[0]), parts[1], parts[2].strip()


class FolderLock:
    """``with FolderLock(folder, flag="--out") as lock:`` holds the folder; ``lock.warning`` is the
    stale-lock notice to print (or None)."""

    def __init__(self, folder: str | Path, flag: str = "--out", *, output: str | Path | None = None) -> None:
        """``output``: lock one output file (``learn --out FILE``) rather than the whole folder: the lock
        is then ``.FILE.lock`` beside it, and the messages name the file."""
        self.path = Path(folder) / (LOCK if output is None else f".{Path(output).name}.lock")
        self.what = Path(folder) if output is None else Path(folder) / Path(output).name
        self.flag = flag
        self.fd: int | None = None
        self.warning: str | None = None

    def acquire(self) -> FolderLock:
        try:
            # O_NOFOLLOW and a regular file only: a planted ``.simsched.lock -> ../thesis.tex`` is
            # refused (exit 2) and its target left as it was (open_own)
            fd = open_own(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot create the lock file ({exc.strerror or exc})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            # the holder writes its name just after it takes the lock: give it a moment to appear
            holder = None
            for _ in range(40):
                holder = _holder(os.pread(fd, 512, 0).decode("utf-8", "replace"))
                if holder:
                    break
                time.sleep(0.025)
            os.close(fd)
            who = (f"pid {holder[0]} on {holder[1]} since {holder[2]}" if holder
                   else "another simsched process")
            raise InputError(f"{self.what} is in use by {who}; wait, or choose another {self.flag}") from None
        previous = _holder(os.pread(fd, 512, 0).decode("utf-8", "replace"))
        host = socket.gethostname()
        if previous and previous[0] != os.getpid() and previous[1] == host and not _alive(previous[0]):
            self.warning = (f"warning: {self.path}: took over the lock of pid {previous[0]} (since {previous[2]}), "
                            "which is no longer running; its finished runs are kept")
        since = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {host} {since}\n".encode(), 0)
        self.fd = fd
        return self

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.ftruncate(self.fd, 0)  # a clean exit leaves no holder's name behind
        except OSError:
            pass
        os.close(self.fd)  # closing the descriptor releases the flock
        self.fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
