"""``python -m simsched`` entry point; the ``simsched`` console script runs the same
:func:`simsched.console.entry`."""

from simsched.console import entry

entry()
