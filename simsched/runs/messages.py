"""What a user policy's child process may send its parent: plain data, rebuilt and checked here.

The child of :mod:`simsched.runs.isolated` runs the user's code, so the messages it sends back
(results, progress, errors, printed text) are as hostile as that code. A plain ``pickle.loads``
of them would let a policy written to attack the grader run code in simsched's own process (a
pickle names any function to call on load), and even a short list of callable classes lets a
pickle call them with arguments of its choosing (``list(range(10**10))``, ``bytearray(10**11)``).

So a message is a pickle of *plain data only*: ``None``, ``bool``, ``int``, ``float``, ``str``,
``bytes``, ``bytearray`` in ``list``, ``tuple`` and ``dict`` -- what pickle's own opcodes build,
with no class or function named in it. :func:`loads` refuses every name a pickle asks for.
Everything else a message carries is *encoded* as plain data by the child (:func:`encode`) and
*rebuilt* by the parent (:func:`decode`), field by field, each field's type, size and range
checked first. The explicit allowlist of what can be rebuilt:

- numpy arrays and scalars of the dtypes in :data:`DTYPES` (numbers and bools: never ``object``),
  from their bytes, the length checked against the shape;
- pandas frames with a range index and columns of those dtypes, of ``str`` or of ``object``
  holding plain values;
- the engine's :class:`~simsched.core.eventlog.EventLog` (its columns, every index checked to be
  in range) and :class:`~simsched.core.engine.Progress` (eight numbers);
- exceptions of the classes in :data:`EXCEPTIONS` (Python's built-in ones and simsched's own),
  from their plain arguments and notes;
- a record type an upper module registers with :func:`register` (a run's
  :class:`~simsched.runs.single.RunResult`), rebuilt by its own checking function.

A message is at most :data:`MAX_MESSAGE_BYTES` long (read so: a longer one is never allocated)
and nested at most :data:`MAX_DEPTH` deep. Anything else is :class:`Refused`, which the parent
turns into a failed run naming the policy, as it does a child that dies. The child encodes its
messages itself (:func:`dumps`), so an exception of the user's own class is sent as its text
(:func:`acceptable`) and an oversized result fails in the child with a clear message.
"""

from __future__ import annotations

import builtins
import io
import math
import pickle
import sys
from array import array
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from simsched.core.engine import Progress
from simsched.core.errors import DecisionError, InputError, ResourceFailure, SimschedError
from simsched.core.eventlog import KINDS, EventLog
from simsched.policies.user import PolicyError

#: the largest message a child may send (bytes): generous for the largest legitimate result --
#: ``simsched.run`` of a million-job run sends its per-job table and event log: 263 MB measured
#: (December 2026), 300 to 400 bytes a job (tools/bench/isolation.py prints it) -- and a bound on
#: what one child's message makes the parent allocate: up to about 8 times its size (pickle's
#: one-byte opcodes -- None, True, False, an empty tuple -- each add an 8-byte slot to a list)
MAX_MESSAGE_BYTES = 1 << 30
#: the most text an error sent back may hold (its arguments and notes, the child's traceback included):
#: it is printed
MAX_ERROR_TEXT = 1_000_000
#: deepest nesting of containers in a message (a run's result is a few levels deep)
MAX_DEPTH = 32
#: the numpy dtypes an array or scalar may have (native byte order, as the child has it)
DTYPES = {np.dtype(name).str: np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")}
#: most dimensions of an array
MAX_DIMENSIONS = 4
#: the exception classes a child's error may be rebuilt as: Python's built-in ones (by name in
#: ``builtins``) and simsched's; any other travels as a SimschedError of its text. Only ``Exception``
#: subclasses: the parent re-raises the error, and a SystemExit or KeyboardInterrupt would end it
EXCEPTIONS: dict[str, type[Exception]] = {
    **{f"builtins.{name}": value for name, value in vars(builtins).items()
       if isinstance(value, type) and issubclass(value, Exception)},
    **{f"simsched.{cls.__name__}": cls for cls in (SimschedError, InputError, ResourceFailure, DecisionError,
                                                   PolicyError)},
}
#: a tagged value: a tuple whose first item is this string (no plain tuple of a result starts so)
TAG = "\x00simsched"
#: the largest magnitude of an int (larger ones cannot be printed, and no result holds one)
MAX_INT = 1 << 64
#: message kinds and the types their payload may have (None: any value :func:`decode` rebuilds);
#: a progress message is a snapshot or the run's warnings (a tuple of text)
KINDS_OF_MESSAGE: dict[str, tuple[type, ...] | None] = {
    "ok": None, "done": None, "error": (Exception,), "progress": (Progress, tuple), "stdout": (str,), "stderr": (str,)}

_LEAVES = (type(None), bool, int, float, str, bytes)
_ARROW_TEXT = ("string", "large_string")
_PROGRESS_FIELDS = ("now", "horizon", "finished", "total", "queued", "running", "events", "wall_s")


class Refused(Exception):
    """A message that is not plain data (or not a message at all); its text says what it held."""


class Unsendable(SimschedError):
    """The child's value cannot be sent as plain data (its type is not in the allowlist)."""


#: record types registered by upper modules: type -> (tag, encoder to plain data, checking decoder)
_RECORDS: dict[type, tuple[str, Callable[[Any], Any], Callable[[Any], Any]]] = {}
_DECODERS: dict[str, Callable[[Any], Any]] = {}


def register(cls: type, tag: str, to_plain: Callable[[Any], Any], from_plain: Callable[[Any], Any]) -> None:
    """Let a child send instances of ``cls``: ``to_plain(obj)`` gives plain data (anything
    :func:`encode` takes), ``from_plain(decoded)`` rebuilds the object from it in the parent,
    checking every field (raise :class:`Refused`)."""
    _RECORDS[cls] = (tag, to_plain, from_plain)
    _DECODERS[tag] = from_plain


def register_error(cls: type[Exception]) -> None:
    """Let an exception class of an upper module travel as itself (with plain arguments)."""
    EXCEPTIONS[f"simsched.{cls.__qualname__}"] = cls


# ------------------------------------------------------------------ the child's side
def encode(value: Any, depth: int = 0) -> Any:
    """``value`` as plain data (:class:`Unsendable` for a type outside the allowlist)."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    if depth > MAX_DEPTH:
        raise Unsendable(f"the value is nested deeper than {MAX_DEPTH} levels")
    if kind is list:
        return [encode(item, depth + 1) for item in value]
    if kind is tuple:
        return tuple(encode(item, depth + 1) for item in value)
    if kind is dict:
        return {encode(key, depth + 1): encode(item, depth + 1) for key, item in value.items()}
    if kind is np.ndarray:
        return _encode_array(value)
    if isinstance(value, np.generic) and value.dtype.str in DTYPES:
        return (TAG, "scalar", value.dtype.str, value.tobytes())
    if kind is pd.DataFrame:
        return _encode_frame(value)
    if kind is EventLog:
        return _encode_log(value)
    if kind is Progress:
        return (TAG, "progress", tuple(encode(getattr(value, name)) for name in _PROGRESS_FIELDS))
    if kind in _RECORDS:
        tag, to_plain, _ = _RECORDS[kind]
        return (TAG, tag, encode(to_plain(value), depth + 1))
    if isinstance(value, BaseException):
        return _encode_error(value)
    raise Unsendable(f"a {kind.__module__}.{kind.__qualname__} is not plain data simsched can send")


def _encode_array(value: np.ndarray) -> tuple:
    if value.dtype.str not in DTYPES or value.ndim > MAX_DIMENSIONS:
        raise Unsendable(f"an array of dtype {value.dtype} ({value.ndim} dimensions) is not plain data")
    contiguous = np.ascontiguousarray(value)
    return (TAG, "array", value.dtype.str, tuple(value.shape), pickle.PickleBuffer(contiguous))


def _column(series: pd.Series) -> tuple:
    dtype = series.dtype
    if isinstance(dtype, np.dtype) and dtype.str in DTYPES:
        return ("numpy", _encode_array(series.to_numpy()))
    if str(dtype) == "str":
        arrow = sys.modules.get("pyarrow")  # loaded: pandas keeps its text columns in Arrow
        if arrow is not None and type(series.array).__name__ == "ArrowStringArray":
            column = arrow.array(series.array)
            if isinstance(column, arrow.ChunkedArray):
                column = column.combine_chunks()
            if column.offset == 0 and str(column.type) in _ARROW_TEXT:
                validity, offsets, data = column.buffers()
                return ("arrow", (str(column.type), len(column), column.null_count,
                                  None if validity is None else validity.to_pybytes(), offsets.to_pybytes(),
                                  data.to_pybytes() if data is not None else b""))
        return ("str", series.tolist())
    if dtype == np.dtype(object):
        values = series.tolist()
        if all(type(item) in _LEAVES for item in values):
            return ("object", values)
    raise Unsendable(f"a frame's column {series.name!r} of dtype {dtype} is not plain data")


def _encode_frame(frame: pd.DataFrame) -> tuple:
    index = frame.index
    if type(index) is not pd.RangeIndex or not frame.columns.is_unique \
            or not all(type(name) is str for name in frame.columns):
        raise Unsendable("a frame without a range index and unique text column names is not plain data")
    columns = tuple((name, *_column(frame[name])) for name in frame.columns)
    return (TAG, "frame", (index.start, index.stop, index.step), columns)


def _encode_log(log: EventLog) -> tuple:
    ids = log.job_ids
    if type(ids) is not list:
        ids = list(ids)
    return (TAG, "eventlog", ids, *(column.tobytes() for column in log.buffers()), dict(log.reasons))


def _encode_error(exc: BaseException) -> tuple:
    name = f"{type(exc).__module__}.{type(exc).__qualname__}"
    key = name if type(exc).__module__ == "builtins" else f"simsched.{type(exc).__qualname__}"
    if EXCEPTIONS.get(key) is not type(exc):
        raise Unsendable(f"an exception of class {name} is not one simsched rebuilds")
    if not all(type(arg) in _LEAVES for arg in exc.args):
        raise Unsendable(f"the exception's arguments {exc.args!r} are not plain data")
    notes = getattr(exc, "__notes__", [])
    return (TAG, "error", key, tuple(exc.args), [str(note) for note in notes])


def dumps(message: tuple[str, Any]) -> bytes:
    """The bytes of ``(kind, payload)`` as the parent reads them (:class:`Unsendable` when they
    cannot be sent: a type outside the allowlist, more than :data:`MAX_MESSAGE_BYTES`)."""
    data = pickle.dumps(encode(message), protocol=5)
    if len(data) > MAX_MESSAGE_BYTES:
        raise Unsendable(f"the run's result is {len(data):,} bytes, more than the {MAX_MESSAGE_BYTES:,} a "
                         "run's process may send back")
    return data


def acceptable(value: Any) -> bool:
    """Whether ``value`` would reach the parent as itself (encodes as plain data, and rebuilds)."""
    try:
        data = pickle.dumps(encode(value), protocol=5)
        decode(loads(data), budget=_Budget(len(data)))
    except (Unsendable, Refused):
        return False
    return True


# ------------------------------------------------------------------ the parent's side
class _PlainData(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise Refused(f"{module}.{name}")  # plain data names no class or function


def loads(data: bytes) -> Any:
    """The plain data pickled in ``data``; :class:`Refused` for a pickle that names any class or
    function, or any other failure of the load (a damaged message too)."""
    try:
        return _PlainData(io.BytesIO(data)).load()
    except Refused as exc:
        raise Refused(f"it holds {exc}, which is not plain data") from None
    except Exception as exc:  # noqa: BLE001 - whatever a damaged or crafted pickle raises while loading
        raise Refused(f"it could not be read ({type(exc).__name__})") from None


class _Budget:
    """How many more values :func:`decode` may visit. Each value a pickle holds costs at least one
    byte of it unless the pickle refers to one object many times (its memo): a list of two
    references to a list of two references ... is a few hundred bytes and 2**60 values to visit."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self) -> None:
        self.left -= 1
        if self.left < 0:
            raise Refused("it refers to the same values over and over (more values than its bytes)")


def decode(value: Any, depth: int = 0, budget: _Budget | None = None) -> Any:
    """The object ``value`` (plain data from :func:`loads`) encodes, every field checked
    (:class:`Refused` otherwise). ``budget``: the most values to visit (:func:`receive` gives the
    message's length in bytes); none by default."""
    if budget is not None:
        budget.spend()
    kind = type(value)
    if kind in _LEAVES:
        if kind is int and not -MAX_INT < value < MAX_INT:
            raise Refused(f"it holds an int of {value.bit_length()} bits")
        return value
    if depth > MAX_DEPTH:
        raise Refused(f"it is nested deeper than {MAX_DEPTH} levels")
    if kind is list:
        return [decode(item, depth + 1, budget) for item in value]
    if kind is dict:
        return {decode(key, depth + 1, budget): decode(item, depth + 1, budget) for key, item in value.items()}
    if kind is tuple:
        if len(value) >= 2 and type(value[0]) is str and value[0] == TAG:
            return _decode_tagged(value, depth, budget)
        return tuple(decode(item, depth + 1, budget) for item in value)
    raise Refused(f"it holds a {kind.__name__} outside an array")


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise Refused(what)


def _leaf(value: Any) -> bool:
    """A plain value (an int of at most 64 bits) where a field holds one without :func:`decode`."""
    return type(value) in _LEAVES and (type(value) is not int or -MAX_INT < value < MAX_INT)


def _decode_tagged(value: tuple, depth: int, budget: _Budget | None) -> Any:
    tag = value[1]
    if tag == "array":
        return _decode_array(value)
    if tag == "scalar":
        _check(len(value) == 4 and value[2] in DTYPES and type(value[3]) is bytes
               and len(value[3]) == DTYPES[value[2]].itemsize, "a numpy scalar that is not one")
        return np.frombuffer(value[3], DTYPES[value[2]])[0]
    if tag == "frame":
        return _decode_frame(value)
    if tag == "eventlog":
        return _decode_log(value)
    if tag == "progress":
        _check(len(value) == 3 and type(value[2]) is tuple and len(value[2]) == len(_PROGRESS_FIELDS)
               and all(type(x) in (int, float) and _leaf(x) for x in value[2]), "a progress snapshot that is not one")
        return Progress(*value[2])
    if tag == "error":
        return _decode_error(value)
    if type(tag) is str and tag in _DECODERS:
        _check(len(value) == 3, f"a {tag} that is not one")
        return _DECODERS[tag](decode(value[2], depth + 1, budget))
    raise Refused(f"it holds an unknown kind of value ({str(tag)[:40]!r})")


def _decode_array(value: tuple) -> np.ndarray:
    _check(len(value) == 5 and type(value[2]) is str and value[2] in DTYPES and type(value[3]) is tuple
           and len(value[3]) <= MAX_DIMENSIONS and all(type(n) is int and n >= 0 for n in value[3])
           and type(value[4]) in (bytes, bytearray), "an array that is not one")
    dtype, shape, data = DTYPES[value[2]], value[3], value[4]
    _check(math.prod(shape) * dtype.itemsize == len(data), "an array whose bytes do not match its shape")
    array_ = np.frombuffer(data, dtype)
    return array_.reshape(shape) if len(shape) != 1 else array_


def _decode_frame(value: tuple) -> pd.DataFrame:
    _check(len(value) == 4 and type(value[2]) is tuple and len(value[2]) == 3
           and all(type(n) is int and _leaf(n) for n in value[2]) and value[2][2] != 0 and type(value[3]) is tuple,
           "a frame that is not one")
    index = pd.RangeIndex(*value[2])
    columns: dict[str, Any] = {}
    for column in value[3]:
        _check(type(column) is tuple and len(column) == 3 and type(column[0]) is str and column[0] not in columns,
               "a frame column that is not one")
        name, kind, values = column
        if kind == "numpy":
            _check(type(values) is tuple and len(values) == 5 and values[:2] == (TAG, "array"),
                   f"a frame column {name!r} that is not an array")
            data = _decode_array(values)
            _check(data.ndim == 1, f"a frame column {name!r} that is not one-dimensional")
        elif kind == "arrow":
            data = _decode_arrow_text(name, values)
        elif kind in ("str", "object"):
            _check(type(values) is list and all(_leaf(item) for item in values),
                   f"a frame column {name!r} that is not plain values")
            if kind == "str":
                data = pd.array(values, dtype="str")
            else:
                data = np.empty(len(values), dtype=object)
                data[:] = values
        else:
            raise Refused(f"a frame column {name!r} of an unknown kind")
        _check(len(data) == len(index), f"a frame column {name!r} of another length than the index")
        columns[name] = data
    if not columns:  # no column to bound its length: a frame of nothing (not a lazy range of 10**12 rows)
        _check(len(index) == 0, "a frame of rows without columns")
        return pd.DataFrame(index=index)
    return pd.DataFrame(columns, index=index)


def _decode_arrow_text(name: str, values: Any) -> Any:
    """A text column from its Arrow buffers: lengths and offsets checked by Arrow (``validate(full=True)``:
    every offset in range and in order, the text valid UTF-8) before pandas sees it."""
    import pyarrow  # an optional dependency: the child sent Arrow buffers, so it has it (and so do we)

    _check(type(values) is tuple and len(values) == 6 and values[0] in _ARROW_TEXT and type(values[1]) is int
           and type(values[2]) is int and 0 <= values[2] <= values[1]
           and (values[3] is None or type(values[3]) is bytes) and type(values[4]) is bytes and type(values[5]) is bytes,
           f"a frame column {name!r} that is not Arrow text")
    kind, length, nulls, validity, offsets, data = values
    try:
        column = pyarrow.Array.from_buffers(
            pyarrow.large_string() if kind == "large_string" else pyarrow.string(), length,
            [None if validity is None else pyarrow.py_buffer(validity), pyarrow.py_buffer(offsets),
             pyarrow.py_buffer(data)], null_count=nulls)
        column.validate(full=True)
    except (pyarrow.ArrowException, ValueError) as exc:
        raise Refused(f"a frame column {name!r} whose Arrow buffers do not hold its text ({exc})") from None
    return pd.array(column, dtype="str")


def _decode_log(value: tuple) -> EventLog:
    _check(len(value) == 9 and type(value[2]) is list and all(type(x) is str for x in value[2])
           and all(type(x) is bytes for x in value[3:8]) and type(value[8]) is dict,
           "an event log that is not one")
    ids = value[2]
    buffers = []
    for typecode, data in zip(EventLog.TYPECODES, value[3:8]):
        column = array(typecode)
        _check(len(data) % column.itemsize == 0, "an event log column of a broken length")
        column.frombytes(data)
        buffers.append(column)
    time, kind, job, node_at, nodes = buffers
    n = len(time)
    _check(len(kind) == len(job) == len(node_at) == n, "an event log whose columns differ in length")
    kinds = np.frombuffer(kind, np.int8) if n else np.zeros(0, np.int8)
    jobs = np.frombuffer(job, np.int64) if n else np.zeros(0, np.int64)
    starts = np.frombuffer(node_at, np.int64) if n else np.zeros(0, np.int64)
    nodes_ = np.frombuffer(nodes, np.int64) if len(nodes) else np.zeros(0, np.int64)
    _check(bool(((kinds & ~EventLog.INT_TIME) < len(KINDS)).all() and (kinds >= 0).all()),
           "an event log with an unknown kind of event")
    _check(bool(((jobs >= 0) & (jobs < len(ids))).all()), "an event log naming a job it does not list")
    _check(bool((np.diff(starts) >= 0).all() and (starts >= 0).all() and (starts <= len(nodes)).all()),
           "an event log whose node ranges are out of order")
    _check(bool((nodes_ >= 0).all()), "an event log with a negative node")
    reasons = value[8]
    _check(all(type(i) is int and 0 <= i < n and type(text) is str for i, text in reasons.items()),
           "an event log with a reason for an event it does not hold")
    return EventLog.from_buffers(ids, buffers, reasons)


def _decode_error(value: tuple) -> BaseException:
    _check(len(value) == 5 and type(value[2]) is str and type(value[3]) is tuple
           and all(_leaf(arg) for arg in value[3]) and len(value[3]) <= 8 and type(value[4]) is list
           and all(type(note) is str for note in value[4]), "an error that is not one")
    key, args, notes = value[2], value[3], value[4]
    _check(sum(len(text) for text in (*args, *notes) if type(text) in (str, bytes)) <= MAX_ERROR_TEXT,
           f"an error holding more than {MAX_ERROR_TEXT:,} characters of text")
    _check(key in EXCEPTIONS, f"an error of class {key[:80]!r}, which simsched does not rebuild")
    try:
        exc = EXCEPTIONS[key](*args)
    except Exception:  # noqa: BLE001 - arguments this class does not take (a crafted message)
        raise Refused(f"an error of class {key} with arguments it does not take") from None
    for note in notes:
        exc.add_note(note)
    return exc


def receive(connection: Any, limit: int = MAX_MESSAGE_BYTES) -> tuple[str, Any]:
    """The next ``(kind, payload)`` message on a child's pipe (EOFError/OSError when it closed);
    :class:`Refused` for one longer than ``limit`` bytes (never read into memory), not plain data,
    or of an unknown kind."""
    try:
        data = connection.recv_bytes(limit)
    except OSError as exc:
        if str(exc) == "bad message length":  # multiprocessing's word for a message over the limit
            raise Refused(f"it is longer than the {limit:,} bytes a run's process may send") from None
        raise
    try:
        message = decode(loads(data), budget=_Budget(len(data)))
    except Refused:
        raise
    except Exception as exc:  # noqa: BLE001 - a field a checker let through and its constructor refused
        raise Refused(f"its fields could not be rebuilt ({type(exc).__name__})") from None
    if not (type(message) is tuple and len(message) == 2 and type(message[0]) is str
            and message[0] in KINDS_OF_MESSAGE):
        raise Refused("it is not a (kind, payload) message")
    kind, payload = message
    wanted = KINDS_OF_MESSAGE[kind]
    if wanted is not None and not (isinstance(payload, wanted) and (
            type(payload) is not tuple or all(type(text) is str for text in payload))):
        raise Refused(f"its {kind} message does not hold a {' or '.join(w.__name__ for w in wanted)}")
    return message
