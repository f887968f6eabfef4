"""What a user policy's child process may send its parent: pickles of plain data only.

The child of :mod:`simsched.runs.isolated` runs the user's code, so the messages it sends back
(results, progress, errors, printed text) are as hostile as that code. A plain ``pickle.loads``
of them would let a policy written to attack the grader run code in simsched's own process: a
pickle names any function to call on load. :func:`loads` reads them with an unpickler that
finds only the classes and functions a run's result is made of:

- Python's containers, numbers and text, and its built-in exception classes;
- numpy arrays and dtypes, pandas frames (and what a frame's pickle is rebuilt from), pyarrow's
  string arrays under them;
- simsched's own classes that hold data: dataclasses, exceptions, tuple/list/dict subclasses,
  and a run's result (``RunResult``, its ``JobOptions`` and ``EventLog``).

Every name is looked up only in a module this process has already imported, so a message
cannot make it import (and run) anything. Anything else is :class:`Refused`, which the parent
turns into a failed run naming the policy, as it does a child that dies. The child checks its
own messages the same way before sending (:func:`acceptable`), so an exception of the user's
own class travels as its text instead of failing the run.
"""

from __future__ import annotations

import builtins
import dataclasses
import io
import pickle
import sys
from typing import Any

#: exact (module, name) pairs outside simsched that a result may hold: found by recording what the
#: parent loads for every kind of run (tests/test_child_messages.py), plus the module twins of
#: numpy 1 and 2
_ACCEPTED = frozenset({
    ("builtins", name) for name in (
        "dict", "list", "tuple", "set", "frozenset", "str", "bytes", "bytearray", "int", "float",
        "complex", "bool", "slice", "range", "object")
} | {
    ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"), ("copyreg", "__newobj_ex__"),
    ("collections", "OrderedDict"), ("array", "array"), ("array", "_array_reconstructor"),
    ("datetime", "datetime"), ("datetime", "date"), ("datetime", "timedelta"), ("datetime", "timezone"),
    ("numpy", "dtype"), ("numpy", "ndarray"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.numeric", "_frombuffer"), ("numpy.core.numeric", "_frombuffer"),
    ("pandas", "DataFrame"), ("pandas", "Series"), ("pandas", "Index"), ("pandas", "RangeIndex"),
    ("pandas", "StringDtype"), ("pandas", "CategoricalDtype"), ("pandas", "Categorical"),
    ("pandas._libs.internals", "_unpickle_block"), ("pandas.core.indexes.base", "_new_Index"),
    ("pandas.core.internals.managers", "BlockManager"),
    ("pandas.core.internals.managers", "SingleBlockManager"),
    ("pandas.arrays", "ArrowStringArray"), ("pandas.arrays", "StringArray"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"),
    ("pyarrow.lib", "_restore_array"), ("pyarrow.lib", "py_buffer"), ("pyarrow.lib", "type_for_alias"),
    # simsched's data classes that are not dataclasses: a run's result, its job options, its event log
    ("simsched.runs.single", "RunResult"), ("simsched.runs.single", "JobOptions"),
    ("simsched.core.eventlog", "EventLog"),
})


class Refused(Exception):
    """A message that is not plain data (or not a message at all); its text says what it held."""


def _simsched_data_class(value: Any) -> bool:
    return isinstance(value, type) and (dataclasses.is_dataclass(value)
                                        or issubclass(value, (BaseException, tuple, list, dict)))


class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        loaded = sys.modules.get(module)  # never import: that would run the module's code
        if loaded is not None and "." not in name:
            value = getattr(loaded, name, None)
            if (module, name) in _ACCEPTED and value is not None:
                return value
            if module == "builtins" and isinstance(value, type) and issubclass(value, BaseException) \
                    and value is getattr(builtins, name):
                return value
            if module.startswith("simsched.") and _simsched_data_class(value):
                return value
        raise Refused(f"{module}.{name}")


def loads(data: bytes) -> Any:
    """The object pickled in ``data``, built from plain data only; :class:`Refused` otherwise (any
    failure of the load, a damaged message too)."""
    try:
        return _PlainData(io.BytesIO(data)).load()
    except Refused as exc:
        raise Refused(f"it holds {exc}, which is not plain data") from None
    except Exception as exc:  # noqa: BLE001 - whatever a damaged or crafted pickle raises while loading
        raise Refused(f"it could not be read ({type(exc).__name__})") from None


def receive(connection: Any) -> tuple[str, Any]:
    """The next ``(kind, payload)`` message on a child's pipe (EOFError/OSError when it closed)."""
    message = loads(connection.recv_bytes())
    if not (type(message) is tuple and len(message) == 2 and type(message[0]) is str):
        raise Refused("it is not a (kind, payload) message")
    return message


def acceptable(value: Any) -> bool:
    """Whether ``value`` would reach the parent as itself (pickles, and loads as plain data)."""
    try:
        loads(pickle.dumps(value))
    except Exception:  # noqa: BLE001 - does not pickle, or not plain data
        return False
    return True
