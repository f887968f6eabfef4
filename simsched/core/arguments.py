"""Arguments of the Python API, checked at the boundary with the command line's one-line errors.

``simsched.run``, ``simsched.compare``, ``simsched.run_experiment`` and the ``load_*`` functions take
the values that the CLI's flags take (``--seed``, ``--seeds``, ``--jobs``, ``--workers``,
``--decide-timeout``, a path). Each is checked here before any work, so a wrong one is an
:class:`~simsched.core.errors.InputError` naming the call and the argument, never numpy's or the
operating system's traceback, and the API refuses exactly what the CLI refuses (``seeds=0``,
``workers=-1``) instead of running something else.

Whole numbers may be any integer type, numpy's included (notebook values come from pandas), never
``bool`` (``True`` is not a seed) nor a float (``1.5``, or ``1.0`` that hides a computation), nor
text (``"3"``: the CLI reads text, the API takes numbers).
"""

from __future__ import annotations

import math
import numbers
import re
from pathlib import Path
from typing import Any

from simsched.core.errors import InputError

#: the longest --decide-timeout accepted (s): a week per decide() call is "no limit"; far larger
#: values overflow the operating system's timer (setitimer)
MAX_DECIDE_TIMEOUT_S = 7 * 86_400.0
#: the shortest --decide-timeout / --run-timeout accepted (s): the operating system's timers (setitimer)
#: count whole microseconds, and a value that rounds to 0 there means "no timer"
MIN_TIMEOUT_S = 1e-6
#: --run-memory's range (bytes): a simulation needs room to start; 1024T is beyond any machine
MIN_MEMORY = 64 << 20
MAX_MEMORY = 1 << 50
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*")


def whole(value: Any, name: str, caller: str, *, minimum: int = 1) -> int:
    """``value`` as an ``int`` >= ``minimum`` (any integer type, numpy's included; no bool)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{caller}: {name} must be an integer >= {minimum}, got {value!r} "
                         f"({type(value).__name__})")
    number = int(value)
    if number < minimum:
        raise InputError(f"{caller}: {name} must be an integer >= {minimum}, got {number}")
    return number


def optional_whole(value: Any, name: str, caller: str, *, minimum: int = 1) -> int | None:
    return None if value is None else whole(value, name, caller, minimum=minimum)


def timeout_range(maximum: float) -> str:
    """What a timeout may be, for the one-line errors of the flags and the API alike."""
    top = f" to {maximum:g}" + (" (a week)" if maximum == MAX_DECIDE_TIMEOUT_S else "") if math.isfinite(maximum) \
        else " or more"
    return (f"a number of seconds from {MIN_TIMEOUT_S:g} (the timers count microseconds){top}; "
            "leave it off for no limit")


def timeout_ok(value: Any, maximum: float) -> bool:
    """``value`` is a number of seconds (no bool, no text) in [MIN_TIMEOUT_S, ``maximum``], finite."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    number = float(value)
    return math.isfinite(number) and MIN_TIMEOUT_S <= number <= maximum


def seconds(value: Any, name: str, caller: str, *, maximum: float) -> float:
    """A timeout (``decide_timeout``, ``run_timeout``): a finite number of seconds from
    :data:`MIN_TIMEOUT_S` to ``maximum`` (numpy's numbers too; no bool, no text). The command line's
    ``--decide-timeout`` and ``--run-timeout`` take the same range (simsched.cli.args)."""
    if not timeout_ok(value, maximum):
        raise InputError(f"{caller}: {name} must be {timeout_range(maximum)}, got {value!r}")
    return float(value)


def parse_memory(text: str) -> int:
    """``512M``, ``2G``, ``1.5G``, ``800000000`` -> bytes (binary units); ValueError with the reason."""
    match = _SIZE.fullmatch(str(text))
    if not match:
        raise ValueError(f"must be a size such as 512M, 2G or 1.5G (bytes without a unit), got {text!r}")
    return _memory_in_range(float(match.group(1)) * 1024 ** " KMGT".index(match.group(2).upper() or " "), text)


def _memory_in_range(value: float, shown: Any) -> int:
    if not value >= MIN_MEMORY:
        raise ValueError(f"must be at least 64M (a simulation needs room to start), got {shown!r}")
    if value > MAX_MEMORY:
        raise ValueError(f"must be at most 1024T, got {shown!r}")
    return int(value)


def memory(value: Any, name: str, caller: str) -> int:
    """``run_memory``: bytes (any integer type) or a size such as ``"2G"``, from 64M to 1024T, as
    ``--run-memory`` takes (:func:`parse_memory`); one InputError line otherwise."""
    try:
        if isinstance(value, str):
            return parse_memory(value)
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ValueError(f"must be a number of bytes or a size such as '2G', got {value!r}")
        return _memory_in_range(int(value), value)
    except ValueError as exc:
        raise InputError(f"{caller}: {name} {exc}") from None


def flag(value: Any, name: str, caller: str) -> bool:
    """A true/false switch: ``bool`` (numpy's too), nothing else (``"no"`` would be true)."""
    if not isinstance(value, (bool, numbers.Integral)) or (not isinstance(value, bool) and value not in (0, 1)):
        raise InputError(f"{caller}: {name} must be True or False, got {value!r}")
    return bool(value)


def path(value: Any, name: str, caller: str) -> Path:
    """A file or folder name: ``str`` or ``os.PathLike``, no control characters (a NUL ends the
    name at the operating system's boundary)."""
    if isinstance(value, bytes) or not isinstance(value, (str, Path)) and not hasattr(value, "__fspath__"):
        raise InputError(f"{caller}: {name} must be a path (str or pathlib.Path), got {type(value).__name__}")
    text = str(Path(value))
    if not text or any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InputError(f"{caller}: {name} must be a path without control characters, got {text!r}")
    return Path(value)
