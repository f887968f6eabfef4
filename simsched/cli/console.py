"""The program's entry: ``python -m simsched`` and the ``simsched`` console script run :func:`entry`.

SIGINT and SIGTERM are handled from the first line, so an interrupt while the
libraries load still ends with one line and exit code 130 or 143 (SPEC §8).
This module imports nothing heavy: the CLI is imported inside :func:`entry`.
"""

import signal
import sys


def _early(signum, frame):  # replaced by simsched.core.interrupts once the CLI is loaded
    raise KeyboardInterrupt(signum)


def entry() -> None:
    """Run the command line (``sys.argv``) and exit with its code."""
    signal.signal(signal.SIGTERM, _early)
    try:
        # the CLI (and pandas, numpy ... behind it) loads after the signal handler is set
        from simsched.cli.main import main

        code = main()
    except KeyboardInterrupt as exc:  # while starting, or in the instant after main returned
        code = 143 if exc.args and exc.args[0] == signal.SIGTERM else 130
        print(f"{'terminated' if code == 143 else 'interrupted'}: stopped while starting or ending; "
              "outputs already written are complete", file=sys.stderr)
    raise SystemExit(code)
