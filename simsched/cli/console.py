"""The program's entry: ``python -m simsched`` and the ``simsched`` console script run :func:`entry`.

SIGINT and SIGTERM are handled from the first line, so an interrupt while the
libraries load still ends with one line and exit code 130 or 143 (SPEC §8).
This module imports nothing heavy: the CLI is imported inside :func:`entry`.

Every interrupt is raised as a *subclass* of KeyboardInterrupt, never the bare
type: CPython remembers a bare KeyboardInterrupt that ends a string ``exec``
(dataclasses and namedtuple build their methods that way while modules import)
even when it is caught, and ``python -m`` then kills itself with SIGINT at exit
(exit -2 instead of 143; seen in CI). :class:`~simsched.core.interrupts.Interrupted`
is such a subclass.
"""

import signal
import sys

from simsched.core.interrupts import Interrupted, exit_code


def _early(signum, frame):  # replaced by simsched.core.interrupts.install once the CLI is loaded
    raise Interrupted(signum)


def entry() -> None:
    """Run the command line (``sys.argv``) and exit with its code."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _early)
    try:
        # the CLI (and pandas, numpy ... behind it) loads after the signal handler is set
        from simsched.cli.main import main

        code = main()
    except KeyboardInterrupt as exc:  # while starting, or in the instant after main returned
        code = exit_code(exc)
        print(f"{'terminated' if code == 143 else 'interrupted'}: stopped while starting or ending; "
              "outputs already written are complete", file=sys.stderr)
    raise SystemExit(code)
