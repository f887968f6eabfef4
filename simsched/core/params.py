"""Typed, validated access to one TOML table (STYLE rule 5), shared by scenario parsing,
readers, generators, policies, compare and learning.

:class:`Params` checks type, range and choices, names the offending key path
(``workload.vcs``) and file in one-line errors, and reports keys nobody read
(:meth:`Params.finish`), so a typo never passes silently. It sits below
``simsched.config.scenario`` and ``simsched.workloads`` (it imports only the errors).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from simsched.core import limits
from simsched.core.errors import InputError, control_characters, did_you_mean

_MISSING = object()


class Params:
    """Typed access to one TOML table, with errors that name file and key path."""

    def __init__(self, table: Mapping[str, Any], prefix: str, file: str | Path = "<scenario>",
                 base_dir: Path | None = None) -> None:
        self._table = dict(table)
        self._prefix = prefix
        self._file = str(file)
        self._base_dir = base_dir
        self._used: set[str] = set()

    @property
    def file(self) -> str:
        return self._file

    @property
    def base_dir(self) -> Path:
        """Where the table's relative paths resolve: the folder given, else the file's."""
        return self._base_dir if self._base_dir is not None else Path(self._file).parent

    def key(self, name: str) -> str:
        return f"{self._prefix}.{name}" if self._prefix else name

    def error(self, name: str, message: str) -> InputError:
        return InputError(f"{self._file}: {self.key(name)}: {message}")

    def has(self, name: str) -> bool:
        return name in self._table

    def get(
        self,
        name: str,
        kind: type | tuple[type, ...],
        default: Any = _MISSING,
        *,
        choices: Sequence[Any] | None = None,
        min_value: float | None = None,
        max_value: float | None = None,
        exclusive_min: bool = False,
    ) -> Any:
        """Read ``name``; check its type, range and choices; ints pass where floats are asked."""
        self._used.add(name)
        if name not in self._table:
            if default is _MISSING:
                raise self.error(name, "is required")
            return default
        value = self._table[name]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if float in kinds and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if isinstance(value, bool) and bool not in kinds:
            ok = False
        else:
            ok = isinstance(value, kinds)
        if not ok:
            names = " or ".join(_type_name(k) for k in kinds)
            raise self.error(name, f"must be {names}, got {value!r}")
        if name == "name" and isinstance(value, str):
            check_name(value, lambda message: self.error(name, message))
        if isinstance(value, float) and not math.isfinite(value):  # nan/inf pass every range check
            raise self.error(name, f"must be a finite number, got {value!r}")
        if choices is not None and value not in choices:
            raise self.error(name, f"unknown value {value!r}{did_you_mean(value, choices)}; "
                                   f"valid: {', '.join(map(str, choices))}")
        if min_value is not None and isinstance(value, (int, float)):
            if value < min_value or (exclusive_min and value == min_value):
                relation = ">" if exclusive_min else ">="
                raise self.error(name, f"must be {relation} {min_value}, got {value!r}")
            if exclusive_min and min_value == 0 and value < limits.MIN_POSITIVE:
                # 5e-324 is > 0, but dividing by it (or by its product with anything) overflows or hits 0
                raise self.error(name, f"must be >= {limits.MIN_POSITIVE:g} (a smaller positive value only "
                                       f"produces divisions by zero or infinities), got {value!r}")
        if max_value is not None and isinstance(value, (int, float)) and value > max_value:
            raise self.error(name, f"must be <= {max_value}, got {value!r}")
        return value

    def get_path(self, name: str, base: Path, default: Any = _MISSING) -> Path | Any:
        """A file path relative to ``base`` (the scenario's folder)."""
        raw = self.get(name, str, default)
        if raw is default and default is not _MISSING:
            return default
        return (base / raw) if not Path(raw).is_absolute() else Path(raw)

    def get_list(self, name: str, item: type, default: Any = _MISSING) -> list | Any:
        value = self.get(name, list, default)
        if value is default and default is not _MISSING:
            return default
        for v in value:
            if not isinstance(v, item) or isinstance(v, bool):
                raise self.error(name, f"every item must be {_type_name(item)}, got {v!r}")
            if isinstance(v, float) and not math.isfinite(v):
                raise self.error(name, f"every item must be a finite number, got {v!r}")
        return list(value)

    def sub(self, name: str) -> Params:
        """A nested table as its own :class:`Params`."""
        value = self.get(name, dict, {})
        return Params(value, self.key(name), self._file, self._base_dir)

    def rest(self, exclude: tuple[str, ...] = ()) -> dict[str, Any]:
        """The keys not in ``exclude`` (marked as read): options handed on to a reader,
        generator or policy, which validates them with its own :class:`Params`."""
        out = {k: v for k, v in self._table.items() if k not in exclude}
        self._used.update(out)
        return out

    def allow(self, *names: str) -> None:
        """Keys read elsewhere (by the layer that handed these options on): listed as valid."""
        self._used.update(names)

    def finish(self) -> None:
        """Raise on keys nobody read: a typo must not pass silently."""
        unknown = sorted(set(self._table) - self._used)
        if unknown:
            valid = ", ".join(sorted(self._used))
            raise self.error(unknown[0], f"unknown key; valid keys here: {valid}")


def _type_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_type_name(k) for k in kind)
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false",
            list: "a list", dict: "a table"}.get(kind, kind.__name__)


def check_name(text: str, error: Callable[[str], Exception]) -> str:
    """A name (every key called ``name``, a tenant in ``tenant_mix`` or a quota table's header) holds
    no control character: a NUL or a newline in a scenario's name ends up in labels and file names
    ("embedded null byte"). ``error(message)`` makes the exception to raise."""
    bad = control_characters(text)
    if bad:
        raise error(f"{text!r} holds control characters ({', '.join(dict.fromkeys(bad))}); "
                    "a name is printable text")
    return text
