"""The program's entry: ``python -m simsched`` and the ``simsched`` console script run :func:`entry`.

SIGINT and SIGTERM are handled from the first line, so an interrupt while the
libraries load still ends with one line and exit code 130 or 143 (SPEC §8).
This module imports nothing heavy: the CLI is imported inside :func:`entry`.

Every interrupt is raised as a *subclass* of KeyboardInterrupt, never the bare
type: CPython remembers a bare KeyboardInterrupt that ends a string ``exec``
(dataclasses and namedtuple build their methods that way while modules import)
even when it is caught, and ``python -m`` then kills itself with SIGINT at exit
(exit -2 instead of 143; seen in CI). :class:`~simsched.core.interrupts.Interrupted`
is such a subclass. The signal is also recorded (:func:`~simsched.core.interrupts.early`):
an exception raised inside a weakref callback of the import system is printed as "Exception
ignored" and dropped (seen in CI), so :func:`~simsched.core.interrupts.install` raises it again
once the CLI is loaded, and a watchdog ends the process 30 s after the signal in any case.
"""

import gc
import signal
import sys

from simsched.core import interrupts
from simsched.core.interrupts import exit_code


def _early(signum, frame):  # replaced by simsched.core.interrupts.install once the CLI is loaded
    interrupts.early(signum)  # records the signal too: its exception may land where Python swallows it


def entry() -> None:
    """Run the command line (``sys.argv``) and exit with its code."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _early)
    try:
        try:
            # the CLI (and pandas, numpy ... behind it) loads after the signal handler is set
            from simsched.cli.main import main
        except Exception:
            # the signal's exception, raised while a C extension loads, can come out as that
            # module's ImportError ("numpy._core.multiarray failed to import", seen in CI): a
            # recorded signal says the start was interrupted, not broken
            if interrupts.received() is None:
                raise
            raise interrupts.Interrupted(interrupts.received()) from None

        # The libraries' objects (pandas, numpy, SimPy, simsched ...) live as long as this process,
        # which runs one command: left out of every garbage collection from here on, a short
        # command costs about 12% less CPU, and a forked child (a student's policy, a pool's
        # worker) copies fewer pages (docs/engine.md, "Cost of the watched child").
        gc.freeze()
        code = main()
    except KeyboardInterrupt as exc:  # while starting, or in the instant after main returned
        code = exit_code(exc)
        print(f"{'terminated' if code == 143 else 'interrupted'}: stopped while starting or ending; "
              "outputs already written are complete", file=sys.stderr)
    raise SystemExit(code)
