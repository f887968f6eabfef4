"""SIGINT and SIGTERM as one exception, and sections that finish before it is raised (SPEC §8).

The CLI installs :func:`install` once. From then on both signals raise
:class:`Interrupted` (a ``KeyboardInterrupt``, so every ``except
KeyboardInterrupt`` that keeps partial results handles SIGTERM too) and
:func:`exit_code` says 130 or 143. Inside :func:`deferred` (results being
collected or written) a signal is only recorded: the section runs to its
end, so a second Ctrl-C cannot truncate a file half-way, and the caller
asks :func:`received` afterwards to exit with the right code.

Only the main thread of the main process installs handlers; worker processes
of :mod:`simsched.runs.parallel` ignore SIGINT and end with their parent instead.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: exit codes of SPEC §8
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived; ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        # args must rebuild the exception: SimPy re-raises type(exc)(*exc.args)
        super().__init__(int(signum))
        self.signum = int(signum)

    def __str__(self) -> str:
        return signal.Signals(self.signum).name


_state = {"received": None, "deferring": 0, "watchdog": False, "held": None, "early": None}


#: Seconds a signalled process may take to wind down (write partial results, end workers)
#: before it is ended anyway: a signal landing inside the start-up of a worker pool can leave
#: the main thread waiting on a lock that nothing will release (seen once in CI).
GRACE_S = 30.0


def _force_exit(signum: int) -> None:
    line = (f"{'terminated' if signum == signal.SIGTERM else 'interrupted'}: did not stop within {GRACE_S:g} s "
            f"of {signal.Signals(signum).name}; "
            "ended now (unfinished outputs stay marked PARTIAL)\n")
    os.write(2, line.encode())
    os._exit(EXIT_CODES.get(signum, 130))


def _arm(signum: int) -> None:
    """Start the watchdog at the first signal (only for the program: ``_state["watchdog"]``)."""
    if _state["received"] is None and _state["watchdog"]:
        watchdog = threading.Timer(GRACE_S, _force_exit, args=(signum,))
        watchdog.daemon = True
        watchdog.start()


def _handler(signum: int, frame) -> None:  # noqa: ARG001 - the signal module's signature
    _arm(signum)
    _state["received"] = signum
    if _state["deferring"]:
        _state["held"] = signum  # see held()
        return
    raise Interrupted(signum)


def early(signum: int) -> None:
    """The program's handler while the CLI is still importing (simsched.cli.console): record the
    signal, arm the watchdog, raise :class:`Interrupted`.

    The exception can land where Python swallows it (a weakref callback of the import system
    prints "Exception ignored" and goes on; seen in CI), so the signal is also recorded:
    :func:`install` raises it again once the CLI is loaded, and the watchdog ends the process in
    any case.
    """
    _state["watchdog"] = True
    _arm(signum)
    _state["received"] = signum
    _state["early"] = signum
    raise Interrupted(signum)


def install(watchdog: bool = False) -> None:
    """Route SIGINT and SIGTERM to :class:`Interrupted` (main thread only; a no-op elsewhere).

    With ``watchdog`` (the ``python -m simsched`` process, not an in-process call), the
    process also ends :data:`GRACE_S` seconds after the first signal whatever it is doing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    early_signal = _state["early"]  # a start-up signal whose exception Python swallowed
    _state.update(received=early_signal, deferring=0, watchdog=watchdog, held=None, early=None)
    for signum in EXIT_CODES:
        signal.signal(signum, _handler)
    if early_signal is not None:
        raise Interrupted(early_signal)


def install_in_child() -> None:
    """:func:`install` in a process forked from one that had installed it (no watchdog).

    The fork happens inside :func:`held`, so a signal that reached the child before this
    line was only recorded; it is raised here instead of being forgotten.
    """
    pending = _state["held"]
    install()
    if pending is not None:
        _state["received"] = pending
        raise Interrupted(pending)


def received() -> int | None:
    """The last signal received since :func:`install`, or None."""
    return _state["received"]


def exit_code(exc: BaseException | None = None) -> int:
    """130 for SIGINT (and a plain KeyboardInterrupt), 143 for SIGTERM."""
    signum = getattr(exc, "signum", None) or _state["received"] or signal.SIGINT
    return EXIT_CODES.get(signum, 130)


@contextmanager
def deferred() -> Iterator[None]:
    """Let the block finish despite SIGINT/SIGTERM; the signal stays visible in :func:`received`."""
    _state["deferring"] += 1
    try:
        yield
    finally:
        _state["deferring"] -= 1


@contextmanager
def held() -> Iterator[None]:
    """Hold SIGINT/SIGTERM back for the block: a signal sent meanwhile raises
    :class:`Interrupted` as the block ends instead of inside it.

    For the submits that fork worker pools: Python runs at-fork hooks (logging's lock
    release) in which an exception raised by the handler is printed and swallowed, so the
    interrupt was lost and only the watchdog ended the process (seen in CI).
    """
    outer = _state["held"]
    _state["held"] = None
    _state["deferring"] += 1
    try:
        yield
    finally:
        _state["deferring"] -= 1
        signum, _state["held"] = _state["held"], outer
    if signum is not None and not _state["deferring"]:
        raise Interrupted(signum)
    if signum is not None:  # nested in another deferring block: pass it outwards
        _state["held"] = signum


@contextmanager
def kept() -> Iterator[None]:
    """Keep this process's SIGINT/SIGTERM handlers across a block that replaces them.

    ``ray.init`` sets a SIGTERM handler that calls ``sys.exit(15)``, and its C++ core installs a
    failure-signal handler that prints a stack dump and kills the process: a driver ended by
    Slurm's or ``timeout``'s SIGTERM would exit 15 with a dump instead of 143 with its one line
    (SPEC §8). The handlers in place before the block are set again when it ends (which also
    replaces the C++ one); a SIGTERM that reached the library's handler inside the block is raised
    as :class:`Interrupted`. Main thread only, like :func:`install`.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {signum: signal.getsignal(signum) for signum in EXIT_CODES}
    try:
        yield
    except SystemExit as exc:
        if exc.code != signal.SIGTERM or saved[signal.SIGTERM] is not _handler:
            raise
        _state["received"] = signal.SIGTERM
        raise Interrupted(signal.SIGTERM) from None
    finally:
        for signum, handler in saved.items():
            if handler is not None:  # None: set outside Python; nothing to put back
                signal.signal(signum, handler)


def worker_setup(parent_pid: int | None = None) -> None:
    """Initializer of worker processes: ignore SIGINT (the parent decides) and die with the parent.

    On Linux ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` makes the kernel end the
    worker when its parent dies for any reason, SIGKILL included; elsewhere
    the parent terminates its workers when it is interrupted.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG = 1
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    if parent_pid is not None and os.getppid() != parent_pid:  # the parent died before prctl
        os._exit(143)
