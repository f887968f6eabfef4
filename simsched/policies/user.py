"""A user's policy (``my_policy.py:MyPolicy``): loading it, and a guard around every call (SPEC §8).

A policy file is user input. Whatever goes wrong in it -- it fails to
import, its ``__init__`` or ``decide`` raises (``RecursionError`` and
``sys.exit`` included), ``decide`` returns something other than a
:class:`Decision`, a node id is not an integer, ``interval_s`` is not a
positive number, or the engine refuses the decision -- becomes one
:class:`PolicyError` line naming the policy's ``file:line`` and what was
wrong (exit code 2). The original exception is chained as ``__cause__`` so
``--debug`` can show its traceback.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import math
import numbers
import sys
import traceback
from pathlib import Path
from typing import Any

from simsched.core import watch
from simsched.core.contract import Decision, Scheduler, Start
from simsched.core.errors import InputError
from simsched.core.inputs import missing_or_irregular, note_read
from simsched.core.readonly import ReadOnlyPolicy

INTERFACE_HINT = "see docs/assignment.md for the interface"


class PolicyError(InputError):
    """A user policy failed or decided something invalid; the message starts with its file:line."""


def _where(exc: BaseException, path: Path | None) -> int | None:
    """The line of the innermost traceback frame inside the policy file."""
    if path is None:
        return None
    target = str(path.resolve())
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        try:
            if str(Path(frame.filename).resolve()) == target:
                line = frame.lineno
        except (OSError, ValueError):  # pragma: no cover - odd frame names such as "<string>"
            continue
    if line is None and isinstance(exc, SyntaxError) and exc.lineno:
        line = exc.lineno
    return line


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"called sys.exit({exc.code!r}); a policy must return a Decision, not end the program"
    if isinstance(exc, RecursionError):
        return "raised RecursionError: infinite recursion (maximum recursion depth exceeded)"
    if isinstance(exc, MemoryError) and watch.attached():
        return "raised MemoryError: it used more memory than the run may have (--run-memory)"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"raised {type(exc).__name__}: {text}" if text else f"raised {type(exc).__name__}"


_MISSING = object()


class UserPolicy:
    """Wraps a user's scheduler object: same interface, every failure reported as a :class:`PolicyError`."""

    def __init__(self, policy: Any, name: str, path: Path | None) -> None:
        self.policy = policy
        self.name = name
        self.path = path
        self.interval_s = self._interval(self._attribute("interval_s", None))
        self.restrict_to_home = bool(self._attribute("restrict_to_home", False))
        self._read_only = ReadOnlyPolicy(policy)  # decides on read-only views: writes raise, naming the attribute

    # -- locations -------------------------------------------------------------
    def _decide_line(self) -> int | None:
        try:
            return inspect.getsourcelines(type(self.policy).decide)[1]
        except (TypeError, OSError, AttributeError):
            return None

    def where(self, line: int | None = None) -> str:
        file = str(self.path) if self.path is not None else self.name
        line = line if line is not None else self._decide_line()
        return f"{file}:{line}" if line is not None else file

    def error(self, message: str, line: int | None = None) -> PolicyError:
        return PolicyError(f"{self.where(line)}: {message}")

    def raised(self, exc: BaseException, during: str) -> PolicyError:
        return self.error(f"{self.name}.{during} {_describe(exc)}", _where(exc, self.path))

    def rejected(self, exc: Exception) -> PolicyError:
        """The engine refused a decision (over-allocation, unknown job or node ...)."""
        return self.error(f"{self.name}.decide made an invalid decision: {exc}")

    def _attribute(self, name: str, default: Any) -> Any:
        """``getattr(policy, name, default)``; a property that raises is the user's error, one line."""
        watch.enter(watch.METHOD)
        try:
            return getattr(self.policy, name, default)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise self.raised(exc, name) from exc
        finally:
            watch.leave()

    # -- checks ----------------------------------------------------------------
    def _interval(self, value: Any) -> float | None:
        if value is None:
            return None
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and value > 0
        if not ok:
            line = None
            try:
                lines, start = inspect.getsourcelines(type(self.policy))
                line = next((start + i for i, text in enumerate(lines) if "interval_s" in text), start)
            except (TypeError, OSError):
                pass
            raise self.error(f"{self.name}.interval_s must be a finite number of seconds > 0 "
                             f"(or None for no periodic rounds), got {value!r}", line)
        return float(value)

    def _check(self, decision: Any) -> Decision:
        if not isinstance(decision, Decision):
            raise self.error(f"{self.name}.decide returned {type(decision).__name__} {decision!r:.60}; it must "
                             "return a Decision, e.g. Decision(starts=(Start(job.job_id, (node,)),)); "
                             + INTERFACE_HINT)
        if not isinstance(decision.starts, (tuple, list)) or not isinstance(decision.preempts, (tuple, list)):
            raise self.error(f"{self.name}.decide: Decision.starts and Decision.preempts must be tuples, got "
                             f"{type(decision.starts).__name__} and {type(decision.preempts).__name__}")
        for start in decision.starts:
            if not isinstance(start, Start):
                raise self.error(f"{self.name}.decide: Decision.starts holds {start!r:.60}; every item must be "
                                 "Start(job_id, nodes)")
            if type(start.job_id) is not str:  # noqa: E721 - a str subclass may change what equality and hashing mean
                raise self.error(f"{self.name}.decide: Start.job_id must be the job's job_id string (a plain "
                                 f"str, e.g. job.job_id), got {_kind(start.job_id)}")
            if not isinstance(start.nodes, (tuple, list)) or not start.nodes:
                raise self.error(f"{self.name}.decide: Start({start.job_id!r}).nodes must be a non-empty tuple "
                                 f"of node indices (one per worker), got {start.nodes!r:.60}")
            for node in start.nodes:
                if not isinstance(node, numbers.Integral) or isinstance(node, bool):
                    raise self.error(f"{self.name}.decide: Start({start.job_id!r}) node ids must be integers "
                                     f"(indices into view.free), got {node!r:.60}")
        for job_id in decision.preempts:
            if type(job_id) is not str:  # noqa: E721 - as Start.job_id
                raise self.error(f"{self.name}.decide: Decision.preempts must hold job_id strings (plain str, "
                                 f"e.g. job.job_id), got {_kind(job_id)}")
        # plain str and int copies: a subclass's own __hash__, __eq__ or __index__ never reaches the engine
        return Decision(starts=tuple(Start(str.__str__(start.job_id), tuple(int(node) for node in start.nodes))
                                     for start in decision.starts),
                        preempts=tuple(str.__str__(job_id) for job_id in decision.preempts))

    # -- the interface -----------------------------------------------------------
    def decide(self, view) -> Decision:
        watch.enter(watch.DECIDE, view.now)  # the parent of a watched run times this call
        try:
            decision = self._read_only.decide(view)
        except BaseException as exc:  # the user's code: anything it raises is bad input ...
            if isinstance(exc, KeyboardInterrupt):  # ... but Ctrl-C and SIGTERM stay interrupts
                raise
            raise self.raised(exc, "decide") from exc
        finally:
            watch.leave()
        try:
            return self._check(decision)
        except PolicyError:
            raise
        except BaseException as exc:  # a returned object whose own methods raise (__hash__, __int__ ...)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise self.error(f"{self.name}.decide returned an object whose own methods raise: "
                             f"{_describe(exc).removeprefix('raised ')}") from exc

    def __getattr__(self, name: str) -> Any:
        # other optional attributes (e.g. bind) come from the user's object
        if name == "policy":
            raise AttributeError(name)
        value = self._attribute(name, _MISSING)
        if value is _MISSING:
            raise AttributeError(name)
        if not callable(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:  # bind(fleet), quiet_until(view): the user's code too
            watch.enter(watch.METHOD)
            try:
                return value(*args, **kwargs)
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                raise self.raised(exc, name) from exc
            finally:
                watch.leave()

        return call


def _policy_path(ref: str, base_dir: Path) -> Path:
    where = ref.rpartition(":")[0]
    return Path(where) if Path(where).is_absolute() else base_dir / where


def load_user_policy(ref: str, base_dir: Path, options: dict[str, Any], file: str) -> Scheduler:
    """Load ``path/to/file.py:ClassName`` (relative to the scenario) or ``package.module:ClassName``."""
    where, _, name = ref.rpartition(":")
    if not where or not name:
        raise InputError(f"{file}: scheduler.policy: {ref!r} must look like 'my_policy.py:MyPolicy'")
    path: Path | None = None
    if where.endswith(".py"):
        path = _policy_path(ref, base_dir)
        if not path.is_file():
            raise InputError(f"{file}: scheduler.policy: policy file {path} {missing_or_irregular(path)}"
                             + ("" if Path(where).is_absolute() or path.exists() else
                                " (a policy in a scenario file is looked for next to the scenario)"))
        note_read(path, "policy file")
        module_name = f"simsched_user_{path.stem}_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        watch.enter(watch.IMPORT)
        try:
            module_spec.loader.exec_module(module)
        except BaseException as exc:  # the user's code: report it as bad input, one line (not Ctrl-C)
            if isinstance(exc, KeyboardInterrupt):
                raise
            line = _where(exc, path)
            raise PolicyError(f"{path}{'' if line is None else f':{line}'}: importing the policy failed: "
                              f"{_describe(exc).removeprefix('raised ')}") from exc
        finally:
            watch.leave()
    else:
        if not all(part.isidentifier() for part in where.split(".")):
            raise InputError(f"{file}: scheduler.policy: {ref!r}: {where!r} is not a module name; give "
                             "'path/to/file.py:Class' or 'package.module:Class'")
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise InputError(f"{file}: scheduler.policy: cannot import module {where!r}: {exc}") from None
        except BaseException as exc:  # the module's own code failed while importing
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise PolicyError(f"{where}: importing the policy failed: {_describe(exc).removeprefix('raised ')}") from exc
        source = getattr(module, "__file__", None)
        path = Path(source) if source else None
    cls = getattr(module, name, None)
    if cls is None:
        found = [n for n, v in vars(module).items() if inspect.isclass(v) and hasattr(v, "decide")]
        raise InputError(f"{file}: scheduler.policy: {where} has no {name!r}; "
                         f"classes with decide(): {', '.join(found) or 'none'}")
    watch.enter(watch.INIT)
    try:
        scheduler = cls(**options) if inspect.isclass(cls) else cls
    except TypeError as exc:
        if _where(exc, path) is None:  # the call itself: wrong options for __init__
            raise InputError(f"{file}: scheduler: {name}({', '.join(options)}) failed: {exc}") from None
        raise _raised_in_init(exc, name, path) from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _raised_in_init(exc, name, path) from exc
    finally:
        watch.leave()
    if not callable(getattr(scheduler, "decide", None)):
        raise InputError(f"{file}: scheduler.policy: {name} has no decide(view) method; {INTERFACE_HINT}")
    return UserPolicy(scheduler, name, path)


# -- a policy given to the Python API as an object or a class (a notebook cell's) -------------------
def class_file(cls: type) -> Path | None:
    """The file a class was defined in (a script, a module), None for a notebook cell's class."""
    source = getattr(sys.modules.get(cls.__module__), "__file__", None)
    return Path(source) if source else None


def is_own_code(policy: Any) -> bool:
    """simsched's own scheduler (trusted: the GP, EVO-GP and RL policies the learners pass in)."""
    cls = policy if isinstance(policy, type) else type(policy)
    return cls.__module__.split(".")[0] == "simsched"


def check_constructible(cls: type, caller: str) -> None:
    """A policy class given to the API is made with no arguments: one that needs some is one line
    saying to pass an object instead (before any run; the class itself is not called here)."""
    try:
        inspect.signature(cls).bind()
    except TypeError as exc:
        raise InputError(f"{caller}: scheduler: the class {cls.__qualname__} cannot be made without arguments "
                         f"({exc}); pass an object made with them, e.g. scheduler={cls.__qualname__}(...)") from None
    except ValueError:  # no signature to read (a class implemented in C): its call says it
        pass


def make_policy(cls: type) -> Any:
    """``cls()`` for a policy class given to the API: its ``__init__`` is user code, so what it raises
    is one :class:`PolicyError` line naming the class (and its file:line when it has a file), as a
    file policy's ``__init__`` is (:func:`load_user_policy`)."""
    path = class_file(cls)
    watch.enter(watch.INIT)
    try:
        return cls()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise _raised_in_init(exc, cls.__qualname__, path) from exc
    finally:
        watch.leave()


def wrap_policy(policy: Any) -> Any:
    """A scheduler object given to the API, behind the checks a file policy gets (:class:`UserPolicy`:
    ``decide`` must return a :class:`Decision` of plain ``str`` job ids, and what it raises is one line);
    simsched's own schedulers and an already wrapped one are returned as they are."""
    if isinstance(policy, (UserPolicy, ReadOnlyPolicy)) or is_own_code(policy):
        return policy
    return UserPolicy(policy, type(policy).__qualname__, class_file(type(policy)))


def _raised_in_init(exc: BaseException, name: str, path: Path | None) -> PolicyError:
    line = _where(exc, path)
    where = f"{path}:{line}" if path is not None and line is not None else str(path or name)
    return PolicyError(f"{where}: {name}.__init__ {_describe(exc)}")


def check_interface(policy: UserPolicy) -> list[str]:
    """Check a loaded policy's methods against the interface without calling them (``validate
    --policy``): ``decide`` takes the view as its one argument, and the optional ``bind(fleet)`` and
    ``quiet_until(view)`` are methods of one argument too. Raises a :class:`PolicyError` naming
    ``file:line``; returns what the policy defines, for the report."""
    found = ["decide(view)"]
    for method in ("decide", "bind", "quiet_until"):
        function = getattr(policy.policy, method, None)
        if function is None:
            continue
        if not callable(function):
            raise policy.error(f"{policy.name}.{method} must be a method, got {type(function).__name__}")
        try:
            inspect.signature(function).bind(object())
        except TypeError:
            line = None
            try:
                line = inspect.getsourcelines(function)[1]
            except (TypeError, OSError):
                pass
            raise policy.error(f"{policy.name}.{method}{inspect.signature(function)} must take one argument "
                               f"({'the fleet' if method == 'bind' else 'the view'}); {INTERFACE_HINT}",
                               line) from None
        except ValueError:  # no signature (a builtin): nothing to check
            pass
        if method != "decide":
            found.append(f"{method}({'fleet' if method == 'bind' else 'view'})")
    if policy.interval_s is not None:
        found.append(f"interval_s = {policy.interval_s:g}")
    return found


def _kind(value: Any) -> str:
    """``'j1' (a MyId, a subclass of str)`` or ``5 (int)``: what a policy gave where a plain str belongs;
    the value is shown through str's own repr, never the subclass's."""
    cls = type(value)
    if isinstance(value, str):
        return f"{str.__repr__(value)[:60]} (a {cls.__name__}, a subclass of str)"
    try:
        shown = repr(value)[:60]
    except Exception:  # noqa: BLE001 - the user's __repr__
        shown = "<unprintable>"
    return f"{shown} ({cls.__name__})"
