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


#: classes a result's pickle names only as the argument of a reconstructor (``__newobj__``, numpy's
#: ``_reconstruct``, pandas' ``_new_Index``), never calls: a direct call such as
#: ``DataFrame(None, range(10**5), range(2000))`` makes 1.6 GB out of a few bytes
_NEVER_CALLED = frozenset({("numpy", "ndarray"), ("pandas", "DataFrame"), ("pandas", "Series"),
                           ("pandas", "Index"), ("pandas", "Categorical")})
#: builtins whose integer argument is a size (``bytearray(2**31)``): given only bytes or a list
_SIZED = (bytes, bytearray)
#: the most elements a ``range`` argument, or numpy's ``_reconstruct`` shape, may describe: a call
#: in a message builds at most this many items from it (a real result's pickle holds no such
#: argument; its arrays travel as bytes, whose size is the message's own)
MAX_ELEMENTS = 1_000_000
#: the longest text an error sent back may hold (its message and notes, the child's traceback included)
MAX_ERROR_TEXT = 1_000_000
#: the kinds of message a child sends (``ok``/``done``: the run's result, checked by the caller's
#: ``returns``; ``progress``: whatever the caller's progress function takes)
KINDS = ("ok", "done", "error", "progress", "stdout", "stderr")


def _check_call(func: Any, args: Any, kwargs: Any, new: bool = False) -> None:
    """Refuse a call the message asks for whose output would be far larger than the message: a
    class a real result never calls, a size given to bytes/bytearray, a long range or a large shape.
    ``new``: ``cls.__new__(cls, *args)`` (pickle's NEWOBJ), which a real result uses for every class."""
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        raise Refused("a call with arguments that are not a tuple")
    key = (getattr(func, "__module__", ""), getattr(func, "__name__", ""))
    if key in _NEVER_CALLED and not new:
        raise Refused(f"a call of {key[0]}.{key[1]}")
    import copyreg  # noqa: PLC0415 - stdlib, loaded already by pickle
    sized = func in _SIZED or (func is copyreg._reconstructor and len(args) > 1 and args[1] in _SIZED)
    for value in (*args, *kwargs.values()):
        if sized and isinstance(value, int):
            raise Refused(f"a size {value!r} for {getattr(func, '__name__', func)}")
        if isinstance(value, range) and len(value) > MAX_ELEMENTS:
            raise Refused(f"a range of {len(value):,} items")
        if key[1] == "_reconstruct" and isinstance(value, tuple) and all(type(v) is int for v in value):
            count = 1  # numpy's empty array of this shape, filled later from the message's bytes
            for v in value:
                count *= max(v, 0)
            if count > MAX_ELEMENTS:
                raise Refused(f"a shape {value!r} of {count:,} items")


class _PlainData(pickle._Unpickler):  # the Python unpickler: its calls can be checked (_check_call)
    dispatch = dict(pickle._Unpickler.dispatch)

    def load_reduce(self) -> None:
        args = self.stack.pop()
        _check_call(self.stack[-1], args, {})
        self.stack[-1] = self.stack[-1](*args)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        _check_call(cls, args, {}, new=True)
        self.append(cls.__new__(cls, *args))

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        _check_call(cls, args, kwargs, new=True)
        self.append(cls.__new__(cls, *args, **kwargs))

    def _instantiate(self, klass: Any, args: Any) -> None:
        _check_call(klass, tuple(args), {})
        super()._instantiate(klass, args)

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

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
    kind, payload = message
    if kind not in KINDS:
        raise Refused(f"its kind {kind[:40]!r} is not one of {', '.join(KINDS)}")
    if kind in ("stdout", "stderr") and type(payload) is not str:
        raise Refused(f"its {kind} text is a {type(payload).__name__}, not text")
    if kind == "error":
        _check_error(payload)
    return message


def _check_error(error: Any) -> None:
    """An error sent back is an exception holding short plain values only: its text is printed,
    and a crafted one (a list shared 2**60 times, a gigabyte of text) would hang or flood the parent."""
    if not isinstance(error, BaseException):
        raise Refused(f"its error is a {type(error).__name__}, not an exception")
    values = [*error.args, *getattr(error, "__dict__", {}).values()]
    flat: list[Any] = []
    for value in values:
        flat.extend(value if type(value) in (list, tuple) else (value,))
    if not all(value is None or type(value) in (str, int, float, bool) for value in flat):
        raise Refused(f"its error ({type(error).__name__}) holds more than text and numbers")
    if sum(len(value) for value in flat if type(value) is str) > MAX_ERROR_TEXT:
        raise Refused(f"its error ({type(error).__name__}) holds more than {MAX_ERROR_TEXT:,} characters of text")


def acceptable(value: Any) -> bool:
    """Whether ``value`` would reach the parent as itself (pickles, and loads as plain data)."""
    try:
        loads(pickle.dumps(value))
    except Exception:  # noqa: BLE001 - does not pickle, or not plain data
        return False
    return True
