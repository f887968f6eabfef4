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
from pathlib import Path
from typing import Any

from simsched.core.errors import InputError

#: the longest --decide-timeout accepted (s): a week per decide() call is "no limit"; far larger
#: values overflow the operating system's timer (setitimer)
MAX_DECIDE_TIMEOUT_S = 7 * 86_400.0


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


def seconds(value: Any, name: str, caller: str, *, maximum: float) -> float:
    """A finite number of seconds > 0 and <= ``maximum`` (no bool, no text)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{caller}: {name} must be a number of seconds > 0, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and 0 < number <= maximum):
        raise InputError(f"{caller}: {name} must be a number of seconds > 0 and <= {maximum:g}, got {value!r}")
    return number


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
