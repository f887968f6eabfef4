"""The one error family of simsched.

Every problem a user can cause (bad scenario, bad trace line, bad CLI flag)
raises an :class:`InputError`; the CLI prints its message on one line and
exits with code 2. Anything else that escapes is an internal error (code 1).
"""

from __future__ import annotations

import unicodedata
import warnings


class SimschedError(Exception):
    """Base class of every error simsched raises on purpose."""


class SimschedWarning(UserWarning):
    """A run's warning (infeasible jobs, jobs a policy left unfinished, ...) raised through
    :func:`warnings.warn` by the Python API (``simsched.run``, ``compare``, ``run_experiment``),
    so a notebook shows it and ``-W error::simsched.core.errors.SimschedWarning`` (or
    ``warnings.simplefilter("error", SimschedWarning)``) makes it an exception. The command line
    prints the same text itself and does not warn. The texts stay in the results too
    (``summary["warnings"]``)."""


def warn(message: str, stacklevel: int = 1) -> None:
    """Warn ``message`` as a :class:`SimschedWarning`, attributed to the frame ``stacklevel`` above
    the caller of this function (1: the caller's caller, the user's line for an API function)."""
    warnings.warn(message, SimschedWarning, stacklevel=stacklevel + 2)


class InputError(SimschedError):
    """Bad user input: the message names the file, key or line and what is valid. Its text shows
    invisible and bidirectional characters escaped (:func:`visible`): a tenant ``b<U+200B>`` beside
    ``b`` reads as two names."""

    def __str__(self) -> str:
        return visible(super().__str__())


#: Unicode categories shown escaped in messages: format characters (zero-width, bidirectional
#: overrides, BOM), line and paragraph separators, private use, unassigned, surrogates
_HIDDEN = frozenset({"Cf", "Zl", "Zp", "Co", "Cn", "Cs"})


def hidden(char: str) -> bool:
    """A character a terminal does not show as itself: a control (but newline and tab), a format or
    bidirectional character, a space other than the ASCII space."""
    category = unicodedata.category(char)
    return (category in _HIDDEN or (category == "Zs" and char != " ")
            or (category == "Cc" and char not in "\n\t"))


def visible(text: str, keep: str = "") -> str:
    """``text`` with every :func:`hidden` character (but those in ``keep``) written ``<U+200B>``."""
    if text.isascii() and text.isprintable():
        return text
    return "".join(f"<U+{ord(c):04X}>" if c not in keep and hidden(c) else c for c in text)


def control_characters(text: str) -> list[str]:
    """The control characters (Unicode Cc: NUL, newline, ESC ...) in ``text``, as ``U+0000``."""
    return [f"U+{ord(c):04X}" for c in text if unicodedata.category(c) == "Cc"]


class ResourceFailure(SimschedError):
    """Not a bug and not bad input: the machine or cluster ran out of something (a Ray worker or node
    that died more often than Ray retries a task). The CLI prints one line and exits with 74, as for
    an output the file system refuses (docs/outputs.md)."""


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
