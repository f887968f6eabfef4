"""Command line (SPEC §8): ``python -m simsched SCENARIO.toml [flags]`` and subcommands.

Exit codes (SPEC §8): 0 ok, 2 bad input (one line naming the file, key, line
or flag and what is valid; a user policy's failures name its file:line),
1 internal error, 130 interrupted (SIGINT), 143 terminated (SIGTERM). An
interrupt keeps what was finished: outputs are written atomically and are
complete or marked partial. ``--debug`` (any position, every subcommand)
shows the traceback behind an error. :func:`main` is the one guard every
subcommand runs under.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

from simsched.cli.args import command as _command
from simsched.cli.commands import SUBCOMMANDS
from simsched.cli.run import run_command
from simsched.config.examples import is_example
from simsched.core import heap, interrupts
from simsched.core.atomic import RESOURCE_ERRNOS, RESOURCE_EXIT
from simsched.core.errors import InputError, ResourceFailure, SimschedError, did_you_mean
from simsched.core.extras import install_hint
from simsched.core.inputs import forget as forget_inputs


def _subcommand(name: str):
    module, _, function = SUBCOMMANDS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
    """Run a command; every failure ends as one line on stderr and an exit code."""
    as_program = argv is None  # python -m simsched: a signal also arms the exit watchdog
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        forget_inputs()  # each command notes its own inputs (simsched.core.inputs)
        interrupts.install(watchdog=as_program)
        if as_program and (not argv or argv[0] == "run" or argv[0] not in SUBCOMMANDS):
            # one scenario's run in a process of its own: a freed large array goes back to the OS
            # at once, so a phase's peak RSS is what it holds, not that plus what earlier ones freed
            heap.map_large_blocks()
        if argv and argv[0] in SUBCOMMANDS:
            return _subcommand(argv[0])(argv[1:])
        if argv and not argv[0].startswith("-") and not Path(argv[0]).exists():
            hint = did_you_mean(argv[0], SUBCOMMANDS)
            if hint and not is_example(argv[0]):  # `simsched comapre ...`: a near miss of a subcommand
                raise InputError(f"{_command()}: unknown subcommand {argv[0]!r}{hint}; "
                                 f"subcommands: {', '.join(SUBCOMMANDS)}")
        return run_command(argv)  # a scenario file or a shipped example's name (simsched.config.resolve)
    except InputError as exc:
        return _fail(exc, f"error: {_one_line(exc)}", 2, debug)
    except ResourceFailure as exc:  # a Ray worker or node died too often: the cluster's, not a bug
        return _fail(exc, f"error: {_one_line(exc)}", RESOURCE_EXIT, debug)
    except SimschedError as exc:
        return _fail(exc, f"error: {_one_line(exc)}", 1, debug)
    except KeyboardInterrupt as exc:
        code = interrupts.exit_code(exc)
        return _fail(exc, f"{'terminated' if code == 143 else 'interrupted'}: stopped before any output "
                     "was written", code, debug)
    except BrokenPipeError:  # `... --json | head -c 100`: the reader has gone; end quietly, as `cat` does
        return closed_pipe()
    except OSError as exc:
        if exc.errno not in RESOURCE_ERRNOS:
            return _fail(exc, f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                         "(a bug in simsched; --debug shows the traceback)", 1, debug)
        return _fail(exc, resource_line(exc), RESOURCE_EXIT, debug)
    except ModuleNotFoundError as exc:  # run from a checkout without installing: not a bug, say what to do
        return _fail(exc, f"error: the package {exc.name!r} is not installed; install simsched with its "
                     f"dependencies first, into the python that runs it: python -m {install_hint()}  "
                     "(optional extras: docs in README.md)", 1, debug)
    except RecursionError as exc:  # deep input that slipped past validation: still one line
        return _fail(exc, "error: input nested too deeply (RecursionError); --debug shows where", 2, debug)
    except MemoryError as exc:
        return _fail(exc, "error: out of memory; use a smaller workload or fleet (--debug shows where)", 2, debug)
    except Exception as exc:  # noqa: BLE001 - the last guard: a bug, reported on one line
        return _fail(exc, f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                     "(a bug in simsched; --debug shows the traceback)", 1, debug)


#: the exit code of a program whose output pipe was closed (128 + SIGPIPE, what a shell reports for `cat`)
PIPE_EXIT = 141


def closed_pipe() -> int:
    """Point stdout at /dev/null (Python's final flush would raise again) and return :data:`PIPE_EXIT`."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (a test's capture): nothing to do
        pass
    return PIPE_EXIT


def resource_line(exc: OSError) -> str:
    """One line for an output that the disk, quota, mount or rights refuse (exit RESOURCE_EXIT)."""
    import errno
    import os

    where = exc.filename or "an output file"
    what = {errno.ENOSPC: "free some space or choose another --out",
            errno.EDQUOT: "free some of your quota or choose another --out",
            errno.EFBIG: "the file system refuses a file this large; choose another --out",
            errno.EROFS: "the file system is read-only; choose another --out"}.get(
        exc.errno, "you may not write there; check its permissions or choose another --out")
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    return (f"error: cannot write {where}: {exc.strerror or os.strerror(exc.errno)} ({name}); {what}. "
            "Everything written before this stays as it was (an experiment continues with --resume).")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _fail(exc: BaseException, line: str, code: int, debug: bool) -> int:
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    print(line, file=sys.stderr)
    return code


