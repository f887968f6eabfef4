"""The one error family of simsched.

Every problem a user can cause (bad scenario, bad trace line, bad CLI flag)
raises an :class:`InputError`; the CLI prints its message on one line and
exits with code 2. Anything else that escapes is an internal error (code 1).
"""

from __future__ import annotations


class SimschedError(Exception):
    """Base class of every error simsched raises on purpose."""


class InputError(SimschedError):
    """Bad user input: the message names the file, key or line and what is valid."""


class DecisionError(SimschedError):
    """A scheduling decision the engine refuses (over-allocation, unknown job or node)."""
