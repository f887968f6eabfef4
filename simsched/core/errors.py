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


def did_you_mean(value: object, valid: object) -> str:
    """``" (did you mean 'fifo'?)"`` when ``value`` is a near miss of one of ``valid`` (difflib), else ""."""
    import difflib

    if not isinstance(value, str):
        return ""
    names = [str(v) for v in valid]
    close = difflib.get_close_matches(value, names, n=1, cutoff=0.75) or \
        difflib.get_close_matches(value.lower(), [n.lower() for n in names], n=1, cutoff=0.75)
    if not close:
        return ""
    match = next((n for n in names if n == close[0] or n.lower() == close[0]), close[0])
    return f" (did you mean {match!r}?)" if match != value else ""
