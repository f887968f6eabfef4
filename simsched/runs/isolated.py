"""Runs of user code in a child process, under limits its parent enforces (SPEC §3, §8).

A user's policy (``file.py:Class``, or an object given to the Python API) is
code simsched cannot trust to return: a ``while True`` inside ``except
Exception``, a handler that ignores SIGALRM, ``os._exit``, a segfault in C,
a memory hog. So every run of one -- under ``run``, ``compare``,
``experiment`` and ``simsched.run`` -- happens in a child process (forked:
it inherits the loaded simsched, so a run starts in milliseconds, and a
notebook's policy object needs no pickling). Its parent watches it:

- *per call* (``decide_timeout_s``): the child marks every call into the
  user's code on a shared board (:mod:`simsched.core.watch`); a call that
  stays entered longer than the limit is stopped by killing the child;
- *per run* (``run_timeout_s``): measured on the parent's clock from the
  child's start;
- *memory* (``memory_bytes``): ``RLIMIT_AS`` in the child, set before any
  user code runs, counted above what the child inherited. Beyond it an
  allocation fails: a ``MemoryError`` (a named failure) or, in C code, the
  child's death (a named failure too).

Nothing the user's code does can lift these: they are enforced by another
process (the parent) and by the kernel. Whatever ends the child -- a signal,
``os._exit``, a segfault, a timeout -- is a :class:`RunFailed` (bad input,
exit 2; a failed row under ``compare --keep-going``) naming the policy, the
seed and the signal or exit code. The run's own results come back over a pipe
and equal an in-process run's (tests/test_isolation.py).

A child may be *kept* (``run_watched(..., keep=key)``, what ``compare`` does
with each student's policy, from its load check on): its next run with the
same key is sent to it over a pipe instead of forking again, one run after
another, each under its own limits and each failure its own. A run that
fails, or leaves a thread of its own running, ends its child; the next run
starts in a fresh one. One child is kept at a time (a run with another key
ends it), until :func:`close_kept`. While it lives, each page this process or
the child writes is copied once (fork's copy-on-write); a fork costs that
again for every page the child touches, and more (tools/bench/isolation.py),
so the child is kept through this process's own work in between.

SIGINT and SIGTERM: the child ignores SIGINT (a Ctrl-C reaches the whole
process group); when the parent is interrupted it sends the child SIGTERM,
which stops the simulation at the next event with a partial result, as an
in-process run does; the parent waits :data:`INTERRUPT_GRACE_S` for it.

Where ``fork`` does not exist (Windows), runs stay in-process with the old
in-process guards; the limits are then not enforced (docs/assignment.md).
"""

from __future__ import annotations

import ctypes
import faulthandler
import gc
import io
import multiprocessing
import os
import re
import resource
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from simsched.core import interrupts, watch
from simsched.core.errors import InputError, SimschedError
from simsched.runs import messages

#: fork exists here: user code runs in a child process
AVAILABLE = "fork" in multiprocessing.get_all_start_methods()
#: seconds the parent waits for an interrupted child's partial result
INTERRUPT_GRACE_S = 10.0
#: how often the parent looks at the board (seconds)
TICK_S = 0.05
#: no run gets less memory than this by default
MIN_DEFAULT_MEMORY = 1 << 30


class RunFailed(InputError):
    """A watched run ended badly: a timeout, a signal, an exit code, memory. Bad input (exit 2)."""


@dataclass(frozen=True, slots=True)
class Limits:
    """What the parent enforces on a watched run; None = no limit (memory: :func:`default_memory`)."""

    decide_timeout_s: float | None = None
    run_timeout_s: float | None = None
    memory_bytes: int | None = None


def physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 << 30


def default_memory(workers: int = 1) -> int:
    """A fair share of the machine: half its memory over the runs at once, at least 1 GiB."""
    return max(MIN_DEFAULT_MEMORY, physical_memory() // (2 * max(1, workers)))


def _virtual_size() -> int:
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):  # pragma: no cover - not Linux
        return 0


class OwnInterrupt(SimschedError):
    """A KeyboardInterrupt raised in a run's child: there it is the policy's own doing (the child
    ignores Ctrl-C, which reaches this process), sent as this so the parent can tell."""


messages.register_error(OwnInterrupt)


def _portable(exc: BaseException) -> BaseException:
    """``exc`` as it can cross the pipe: itself when simsched.runs.messages rebuilds it (an Exception
    of Python's or simsched's own classes, plain arguments), else a SimschedError of its text; the
    child's traceback goes along as a note (``--debug`` shows it)."""
    text = "".join(traceback.format_exception(exc))
    if isinstance(exc, KeyboardInterrupt):
        sent = OwnInterrupt("KeyboardInterrupt")
    elif messages.acceptable(exc):  # what the parent reads (simsched.runs.messages): plain data only
        sent = exc
    else:  # the user's own exception class, or one that does not pickle: its text
        kind = InputError if isinstance(exc, InputError) else SimschedError
        # SystemExit, KeyboardInterrupt ...: never re-raised as such in the parent, which they would end
        sent = kind(str(exc) if isinstance(exc, Exception) else f"{type(exc).__name__}({exc})")
    sent.__cause__ = None
    sent.__context__ = None
    sent.__traceback__ = None
    try:
        sent.add_note("in the run's child process:\n" + text.rstrip())
    except Exception:  # noqa: BLE001 - an exception without notes: the traceback is only for --debug
        pass
    return sent


class _Forward(io.TextIOBase):
    """The child's sys.stdout / sys.stderr: text goes to the parent, which writes it to its own
    stream of that name (so a policy's prints land where an in-process run's would)."""

    def __init__(self, conn: Any, name: str, lock: threading.Lock) -> None:
        self.conn, self.name, self.lock = conn, name, lock

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = messages.dumps((self.name, str(text)))
        with self.lock:  # a policy's own threads may print too: one message at a time on the pipe
            self.conn.send_bytes(data)
        return len(text)


def _setup(conn: Any, board: Any, memory: int | None, stacks: Any) -> threading.Lock:
    """The child's set-up, before any user code: its limits, its streams, the board. SIGUSR1 writes
    its stack to ``stacks`` (faulthandler, in C: a stuck loop cannot hold it back), so the parent can
    name the line a call was stopped at. The returned lock serialises messages on ``conn``."""
    faulthandler.register(signal.SIGUSR1, file=stacks, all_threads=False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides about Ctrl-C
    lock = threading.Lock()  # the parent's streams (a live display's proxy ...) are not touched here
    try:  # set-up too: a SIGTERM from the parent during it is a (quiet) interrupted run, not a traceback
        interrupts.install_in_child()  # SIGTERM from the parent: stop at the next event, partial result
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: die with the parent, whatever kills it
        except (OSError, AttributeError):  # pragma: no cover - not Linux
            pass
        sys.stdout, sys.stderr = _Forward(conn, "stdout", lock), _Forward(conn, "stderr", lock)
        if memory is not None:
            limit = _virtual_size() + memory
            try:
                resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            except (ValueError, OSError):  # pragma: no cover - a hard limit below it already
                pass
        watch.attach(board)
    except BaseException as exc:  # noqa: BLE001 - everything goes to the parent
        _send_last(conn, lock, ("error", _portable(exc)))
    return lock


def _child(conn: Any, board: Any, memory: int | None, stacks: Any, target: Callable[..., Any], args: tuple,
           send_progress: bool) -> None:
    """A child for one run: its result (or exception) goes back over ``conn``, then it ends."""
    lock = _setup(conn, board, memory, stacks)

    def send(message: tuple) -> None:  # one message at a time on the pipe, the policy's threads' prints too
        data = messages.dumps(message)
        with lock:
            conn.send_bytes(data)

    if send_progress:
        args = (*args, lambda snapshot: send(("progress", snapshot)))
    try:
        message = ("ok", target(*args))
    except BaseException as exc:  # noqa: BLE001 - everything goes to the parent
        message = ("error", _portable(exc))
    _send_last(conn, lock, message)


def _serve(conn: Any, board: Any, memory: int | None, stacks: Any, tasks: Any) -> None:
    """A kept child: ``target(*args)`` for every ``(target, args)`` that comes over ``tasks``, one
    after another, each result back over ``conn`` as ``("ok", ...)``; it ends at the end of ``tasks``. A run
    that raised, or left a thread of its own running, is its last (``"error"`` / ``"done"``): the
    next run starts in a fresh child. Timers a run set are cancelled before the next one."""
    lock = _setup(conn, board, memory, stacks)
    threads = threading.active_count()
    while True:
        try:
            target, args = tasks.recv()
        except BaseException:  # noqa: BLE001 - the parent closed it (or is gone): the end
            os._exit(0)
        try:
            message = ("ok", target(*args))
        except BaseException as exc:  # noqa: BLE001 - everything goes to the parent
            message = ("error", _portable(exc))
        for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
            signal.setitimer(timer, 0)
        if message[0] == "error" or threading.active_count() > threads:
            _send_last(conn, lock, message if message[0] == "error" else ("done", message[1]))
        try:
            data = messages.dumps(message)
            with lock:
                conn.send_bytes(data)
        except BaseException:  # noqa: BLE001 - a result that is not plain data: said as the last message
            _send_last(conn, lock, message)


def _send_last(conn: Any, lock: threading.Lock, message: tuple) -> None:
    """The child's last message, then its end (no atexit handlers of the parent's)."""
    try:
        data = messages.dumps(message)
        with lock:
            conn.send_bytes(data)
    except Exception as exc:  # noqa: BLE001 - a result that is not plain data (simsched.runs.messages)
        try:
            data = messages.dumps(("error", _portable(SimschedError(f"the run's result could not be sent back: {exc}"))))
            with lock:
                conn.send_bytes(data)
        except Exception:  # noqa: BLE001 - the pipe is gone: the parent reads the exit code
            pass
    except BaseException:  # noqa: BLE001 - a second signal while sending: the parent reads the exit code
        pass
    try:
        conn.close()
    finally:
        os._exit(0)


def _signal_name(number: int) -> str:
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    what = {"SIGSEGV": "segmentation fault", "SIGABRT": "abort", "SIGKILL": "killed; perhaps out of memory",
            "SIGBUS": "bus error", "SIGFPE": "arithmetic error", "SIGILL": "illegal instruction"}.get(name)
    return f"signal {name}" + (f" ({what})" if what else "")


def _where(board: Any) -> str:
    decisions = int(board[watch.DECISIONS])
    if not decisions:
        return "before its first decision"
    return f"at decision {decisions:,}, t={board[watch.SIM_NOW]:,.0f} s of simulated time"


def _stopped_at(child: Any, stacks: Any, file: str | None) -> str:
    """Ask the stuck child for its stack (SIGUSR1) and return ``file:line`` of the innermost frame in
    ``file`` (the policy), else ``file`` (``""`` without one)."""
    if file is None or not child.is_alive():
        return file or ""
    try:
        os.kill(child.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 0.5
        text = ""
        while time.monotonic() < deadline:
            time.sleep(0.02)
            stacks.seek(0)
            text = stacks.read().decode("utf-8", "replace")
            if "File " in text:
                break
    except OSError:
        return file
    wanted = os.path.realpath(file)
    for name, line in re.findall(r'File "(.*)", line (\d+)', text):  # innermost frame first
        if os.path.realpath(name) == wanted:
            return f"{file}:{line}"
    return file


def _reserve_before_fork() -> None:
    """pyarrow's allocator (mimalloc) reserves about 1 GB of address space at its first allocation
    (pandas' string columns use it). Made here, before the fork, that reservation is part of what the
    child inherits, not of its ``--run-memory``; else a child whose run is the process's first use of
    it fails its first allocation under a small limit."""
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:
        arrow.allocate_buffer(1)


class _Child:
    """A started child process and the parent's ends of its channels."""

    def __init__(self, body: Callable[..., None], body_args: tuple, memory: int | None, serve: bool) -> None:
        _reserve_before_fork()
        context = multiprocessing.get_context("fork")
        self.board = context.RawArray(ctypes.c_double, watch.SLOTS)
        self.receiver, sender = context.Pipe(duplex=False)
        self.stacks = tempfile.TemporaryFile()
        self.tasks = None
        channels = [sender]
        if serve:
            inbox, self.tasks = context.Pipe(duplex=False)
            body_args = (*body_args, inbox)
            channels.append(inbox)
        self.process = context.Process(target=body, args=(sender, self.board, memory, self.stacks, *body_args),
                                       daemon=True)
        try:  # the start too: an interrupt raised as the fork ends still kills the child
            with warnings.catch_warnings():  # Python 3.12+ warns of fork with threads: the child resets what it uses
                warnings.simplefilter("ignore", DeprecationWarning)
                with interrupts.held():  # a signal during the fork is raised after it, here
                    # the child's collector then leaves the inherited objects' pages unwritten (no
                    # copies). A process that froze its objects before (the command line does, after
                    # its imports: it runs one command) keeps them frozen: the same objects are then
                    # left out of its own collections too, and its next fork finds them so; gc cannot
                    # thaw only what one call froze. Any other process (the Python API in a notebook)
                    # gets its objects back into its collections after the fork.
                    thaw = gc.get_freeze_count() == 0
                    gc.freeze()
                    try:
                        self.process.start()
                    finally:
                        if thaw:
                            gc.unfreeze()
        except BaseException:
            self.close()
            raise
        finally:
            for channel in channels:
                channel.close()

    def forget(self) -> None:
        """Close this process's copies of the channels (in a child forked meanwhile), the process left alone."""
        for channel in (self.receiver, self.tasks, self.stacks):
            if channel is not None:
                channel.close()

    def close(self, wait: float = 5.0) -> None:
        """Kill the child (if alive), wait up to ``wait`` s for its end, close the channels."""
        if self.process.pid is not None and self.process.exitcode is None:
            self.process.kill()
            self.process.join(wait)
        self.forget()


def _stopped_early(result: Any) -> bool:
    """Whether a run's result says it was interrupted (a partial RunResult, an experiment row)."""
    if isinstance(result, dict):
        return result.get("partial") is True
    return getattr(type(result), "partial", None) is not None and getattr(result, "partial", False) is True


def _watch(child: _Child, limits: Limits, who: str, file: str | None,
           progress: Callable[[Any], None] | None, returns: type | tuple[type, ...] = object) -> tuple[str, Any]:
    """Read the child's messages and hold its run to ``limits`` until the run ends: ``("ok", result)``
    or ``("done", result)`` (a kept child that ends after it; a result not of type ``returns`` is a
    failure); the run's exception re-raised; a :class:`RunFailed` for a run stopped here or a child
    that died."""
    board, receiver, process = child.board, child.receiver, child.process
    prefix = f"{file}: " if file else ""
    started = time.monotonic()
    while True:
        ready = wait([receiver, process.sentinel], timeout=TICK_S)
        if receiver in ready:
            try:
                kind, payload = messages.receive(receiver)
            except (EOFError, OSError):
                break  # it died: its exit code says how
            except messages.Refused as exc:  # garbled by the child's own threads, or crafted: not read
                child.close()
                raise RunFailed(f"{prefix}{who}: its process sent a message simsched does not accept ({exc}) "
                                f"and was stopped ({_where(board)})") from None
            if kind == "progress":
                if progress is not None:
                    progress(payload)
            elif kind in ("stdout", "stderr"):
                getattr(sys, kind).write(payload)
            elif kind == "error":
                if isinstance(payload, OwnInterrupt):
                    if interrupts.received() is not None:
                        raise KeyboardInterrupt  # this process was interrupted too: the user's
                    # the child ignores Ctrl-C: an interrupt there is the policy's own (a raise, a signal to itself)
                    child.close()
                    raise RunFailed(f"{prefix}{who}: its process stopped with {payload}, and simsched was not "
                                    f"interrupted; a policy must return a Decision ({_where(board)})")
                raise payload
            else:
                if _stopped_early(payload) and interrupts.received() is None:
                    child.close()
                    raise RunFailed(f"{prefix}{who}: its run stopped early (an interrupt raised or signalled in "
                                    f"its own process), and simsched was not interrupted; a policy must return a "
                                    f"Decision ({_where(board)})")
                wrong = None
                if not isinstance(payload, returns):
                    wanted = returns if isinstance(returns, tuple) else (returns,)
                    wrong = f"a {type(payload).__name__}, not a {' or '.join(t.__name__ for t in wanted)}"
                elif hasattr(returns, "received_problem"):
                    wrong = returns.received_problem(payload)  # e.g. a RunResult made with nothing set
                if wrong is not None:
                    child.close()
                    raise RunFailed(f"{prefix}{who}: its process sent a result simsched does not accept ({wrong}) "
                                    f"and was stopped ({_where(board)})")
                return kind, payload
            # no `continue`: a child that prints or reports without end is still held to its limits
        elif process.sentinel in ready and not receiver.poll(0):
            break
        now = time.monotonic()
        if limits.run_timeout_s is not None and now - started > limits.run_timeout_s:
            child.close()
            raise RunFailed(f"{prefix}{who}: the run took longer than --run-timeout {limits.run_timeout_s:g} s and was "
                            f"stopped ({_where(board)})")
        # a call still in progress (entered, not left) that started longer ago than the limit; the
        # start is the child's, so calls back to back are each timed (never two ticks of one count)
        if (limits.decide_timeout_s is not None and board[watch.LEFT] < board[watch.ENTERED]
                and now - board[watch.STARTED] > limits.decide_timeout_s):
            phase = watch.PHASES.get(int(board[watch.PHASE]), "the policy's code")
            line = _stopped_at(process, child.stacks, file)
            child.close()
            raise RunFailed(f"{line + ': ' if line else ''}{who}: {phase} ran longer than --decide-timeout {limits.decide_timeout_s:g} s and "
                            f"was stopped ({_where(board)})")
    process.join(1)  # it is ending (its pipe closed): its own exit code, not our kill's
    child.close()
    code = process.exitcode
    if code is not None and code < 0:
        how = f"was ended by {_signal_name(-code)}"
    else:
        how = f"ended with exit code {code} (os._exit or a crash); a policy must return a Decision"
    raise RunFailed(f"{prefix}{who}: the run's process {how} ({_where(board)})")


def run_watched(target: Callable[..., Any], args: tuple, *, who: str, limits: Limits = Limits(),
                progress: Callable[[Any], None] | None = None, on_interrupt: str = "raise",
                file: str | None = None, keep: Any = None, returns: type | tuple[type, ...] = object) -> Any:
    """``target(*args)`` in a child process under ``limits``; its return value, or its exception
    re-raised here. ``who`` starts every failure's message (the policy file and the seed); ``file``
    (the policy file) lets a stopped call name its line. ``returns``: the type(s) of the run's result;
    a child that sends anything else (it runs the user's code: it may send anything simsched.runs.messages
    rebuilds) is a failed run.

    ``progress``: the child calls ``target(*args, send)``, and every object it sends is passed to
    ``progress`` here. ``on_interrupt``: when this process is interrupted, ``"raise"`` kills the
    child and re-raises; ``"partial"`` lets the child stop at its next event and returns its
    (partial) result, as an in-process run does.

    ``returns``: the type of ``target``'s return value; anything else the child sends as its result is
    a :class:`RunFailed` (the child runs user code, so its messages may be crafted: simsched.runs.messages).
    A child's interrupt (``KeyboardInterrupt``, a partial result) while this process was not interrupted
    is the policy's own doing, and a :class:`RunFailed` too.

    ``keep`` (a key, e.g. the policy; ``target`` and ``args`` must then pickle, no ``progress``):
    the child is kept after a run that went well, and the next run with the same key and memory
    limit is sent to it instead of forking another; a run with another key ends it, as does
    :func:`close_kept` (call it when the key's runs are over). Each run is still held to ``limits`` on its own and fails
    on its own; a failed run ends its child.
    """
    if not AVAILABLE:  # pragma: no cover - Windows: in-process, unguarded (documented)
        return target(*args) if progress is None else target(*args, progress)
    memory = limits.memory_bytes if limits.memory_bytes is not None else default_memory()
    if keep is not None and progress is None and on_interrupt == "raise":
        return _run_kept((keep, memory), target, args, who, limits, file, returns)
    child = _Child(_child, (target, args, progress is not None), memory, serve=False)
    try:
        kind, payload = _watch(child, limits, who, file, progress, returns)
        child.process.join()
        return payload
    except KeyboardInterrupt:
        if on_interrupt == "partial" and child.process.is_alive():
            os.kill(child.process.pid, signal.SIGTERM)
            with interrupts.deferred():
                deadline = time.monotonic() + INTERRUPT_GRACE_S
                while child.receiver.poll(max(0.0, deadline - time.monotonic())):
                    try:
                        kind, payload = messages.receive(child.receiver)
                    except (EOFError, OSError, messages.Refused):
                        break
                    if kind == "ok" and isinstance(payload, returns):
                        child.process.join(1)
                        return payload
                    if kind == "error":
                        break
        raise
    finally:
        child.close()


#: the kept child (:func:`run_watched` with ``keep``) of this process, by its key: at most one, since
#: every live child shares this process's pages (each copied once when either side writes it)
_kept: dict[Any, _Child] = {}


def _run_kept(key: tuple[Any, int], target: Callable[..., Any], args: tuple, who: str, limits: Limits,
              file: str | None, returns: type | tuple[type, ...]) -> Any:
    child = _kept.pop(key, None)
    close_kept()  # another policy's
    if child is not None and not child.process.is_alive():  # it ended between runs: start afresh
        child.close()
        child = None
    for attempt in (1, 2):
        if child is None:
            child = _Child(_serve, (), key[1], serve=True)
        try:
            for slot in range(watch.SLOTS):  # this run's count of calls and decisions
                child.board[slot] = 0.0
            child.tasks.send((target, args))
            break
        except OSError:  # it ended just now (a broken pipe): once more, in a fresh child
            child.close()
            child = None
            if attempt == 2:
                raise
    try:
        kind, payload = _watch(child, limits, who, file, None, returns)
    except BaseException:
        child.close()
        raise
    if kind == "done":
        child.close()
    else:
        _kept[key] = child
    return payload


def _forget_kept() -> None:
    """In any process forked from this one (a run's child, a pool's worker): the kept children are
    not its own; their channels are closed in it (another student's child is out of a child's reach)."""
    for child in _kept.values():
        child.forget()
    _kept.clear()


if AVAILABLE:
    os.register_at_fork(after_in_child=_forget_kept)


def kept_policy() -> Any:
    """The key (``keep=``) of this process's kept child, None without one."""
    return next(iter(_kept))[0] if _kept else None


def close_kept() -> None:
    """End this process's kept child (SIGKILL: it is idle between runs, or its run was abandoned). It is
    reaped by multiprocessing later: nobody waits for its memory to be freed."""
    while _kept:
        _kept.popitem()[1].close(wait=0)
