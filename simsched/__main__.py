"""``python -m simsched`` entry point; the ``simsched`` console script runs the same
:func:`simsched.cli.console.entry`."""

from simsched.cli.console import entry

entry()
