"""Run independent tasks on local processes or on Ray, results in task order.

Used by ``python -m simsched learn`` (GP fitness evaluation). A task is a
module-level function plus a tuple of small, picklable arguments (paths,
seeds, JSON text), never big objects. Results come back in the order of the
tasks whatever order the workers finish in, so a caller that consumes them in
that order is deterministic regardless of the executor and the worker count.

- ``local`` with ``workers = 1``: plain calls in this process (no subprocess);
- ``local`` with ``workers > 1``: a :class:`concurrent.futures.ProcessPoolExecutor`
  kept open across :meth:`TaskRunner.map` calls. Workers ignore SIGINT and
  die with their parent (``PR_SET_PDEATHSIG`` on Linux); when the parent is
  interrupted or fails, :meth:`TaskRunner.close` terminates them at once
  rather than waiting for their tasks;
- ``ray``: ``ray.init(address=...)`` when an address is given (an existing
  cluster), or Ray's ``RAY_ADDRESS`` is set; else a new local Ray instance
  with ``workers`` CPUs (never a cluster that ``ray start`` left running). Ray is the
  optional extra ``ray`` (``pip install -e '.[ray]'``).
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, as_completed, wait
from contextlib import contextmanager
from typing import Any

from simsched.core import interrupts
from simsched.core.errors import InputError, ResourceFailure
from simsched.core.extras import install_hint
from simsched.core.interrupts import worker_setup

EXECUTORS: tuple[str, ...] = ("local", "ray")
#: tasks :meth:`TaskRunner.imap_unordered` keeps in flight on Ray (at least; 4 per cluster CPU on a
#: bigger cluster): the driver's memory then depends on the cluster, not on the number of tasks
RAY_WINDOW = 256


#: seconds tasks may wait on a Ray cluster with no CPU alive (its only worker node died) before the
#: driver says so, once (issue 39: it waited silently, forever under --quiet)
NO_CPU_GRACE_S = 60.0

#: seconds the driver waits for the host of ``--address`` to accept a connection (issue 39: a wrong
#: address made Ray retry for minutes)
CONNECT_TIMEOUT_S = 10.0


def unreachable(address: str) -> str | None:
    """Why nothing can answer at a Ray ``address`` of the form ``host:port``, or None when its port
    accepts a connection within :data:`CONNECT_TIMEOUT_S` (or the address is another form:
    ``auto``, ``ray://...``, which Ray resolves itself). The host is resolved as Ray resolves it
    (``127.0.0.1`` is this node's address)."""
    if address in ("auto", "local") or "://" in address:
        return None
    host, colon, port = address.rpartition(":")
    host = host.strip("[]")
    if not colon or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return "not an address of the form HOST:PORT (or auto)"
    try:
        # optional extra, imported only here: Ray's own resolution of localhost to this node's address
        from ray._private.services import canonicalize_bootstrap_address

        canonical = canonicalize_bootstrap_address(address) or address
        host, _, port = canonical.rpartition(":")
        host = host.strip("[]")
    except Exception:  # noqa: BLE001 - another Ray version: connect to the address as given
        pass
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            return None
    except TimeoutError:
        return (f"no answer from {host}:{port} within {CONNECT_TIMEOUT_S:g} s; check the host, the port "
                "(`ray start --head` prints it) and the firewall")
    except OSError as exc:
        return (f"nothing answers at {host}:{port} ({exc.strerror or exc}); is the cluster started "
                "(`ray start --head`), and is this its address?")


@contextmanager
def _one_connect_attempt() -> Iterator[None]:
    """Let ``ray.init`` try to join a cluster once (about 35 s at worst), not 20 times: a port that
    accepts connections but is no Ray cluster made it retry for minutes. A value the user set wins."""
    name = "RAY_gcs_server_port_wait_time_s"
    if name in os.environ:
        yield
        return
    os.environ[name] = "1"
    try:
        yield
    finally:
        os.environ.pop(name, None)


@contextmanager
def _stderr_aside(kept: list[str]) -> Iterator[None]:
    """Keep what Ray's C++ core writes on stderr while it connects ("Failed to connect to GCS ...",
    once per attempt, even under ``--quiet``) out of the terminal; its lines go to ``kept``. The
    failure, if any, is reported as one line by the caller."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError, AttributeError):  # no real stderr (a test's capture): nothing to keep aside
        yield
        return
    with tempfile.TemporaryFile() as aside:
        os.dup2(aside.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            aside.seek(0)
            kept.extend(aside.read().decode(errors="replace").splitlines())


class _TokenNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.getMessage()).startswith("Token authentication is")


@contextmanager
def _without_token_notice() -> Iterator[None]:
    """A private Ray (no ``--address``) logs that token authentication is on for the cluster it
    starts: that cluster lives on this machine for this command only, so there is nothing to act on,
    and the notice broke ``--quiet``. It is dropped; every other message of Ray's stays."""
    logger = logging.getLogger("ray._private.authentication.authentication_token_setup")
    notice = _TokenNotice()
    logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


class TasksLost(ResourceFailure):
    """Ray gave up on some tasks: the worker process or node that ran each died more often than Ray
    retries a task (three retries: out of memory, a node lost, a process killed). ``lost``: (task
    index, Ray's reason on one line) in task order; ``results``: with :meth:`TaskRunner.map`, every
    task's result, None for a lost one. The other tasks ran to their end first."""

    def __init__(self, lost: list[tuple[int, str]], results: list[Any] | None = None) -> None:
        self.lost = sorted(lost)
        self.results = results
        first = self.lost[0][1]
        super().__init__(f"Ray's retries ran out for {len(lost)} task{'s' * (len(lost) != 1)}: {first}")


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


class TaskRunner:
    """``map(fn, tasks)`` over an executor; use as a context manager so workers are shut down."""

    def __init__(self, executor: str = "local", workers: int = 1, address: str | None = None,
                 notify: Callable[[str], None] | None = None) -> None:
        if executor not in EXECUTORS:
            raise InputError(f'"executor" must be one of {", ".join(EXECUTORS)}, got {executor!r}')
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise InputError(f'"workers" must be an integer >= 1, got {workers!r}')
        if address is not None and executor != "ray":
            raise InputError('"address" is only used with executor "ray"')
        self.executor = executor
        self.workers = workers
        self.address = address
        self._pool: ProcessPoolExecutor | None = None
        self._ray: Any = None
        self._ray_owned = False
        self.retries = 0  # Ray tasks retried because their node or worker died
        self.ray_messages: list[str] = []  # what the Ray cluster told the driver (not printed)
        self._restore_printer: Callable[[], None] | None = None
        self._status: tuple[float, str] | None = None  # (monotonic time, text) of the last cluster_status
        # a warning line for the user (default: stderr); the cluster without CPUs is said once
        self.notify = notify or (lambda line: print(line, file=sys.stderr, flush=True))
        self._no_cpu_since: float | None = None
        self._said_no_cpu = False

    def __enter__(self) -> TaskRunner:
        if self.executor == "ray":
            self._start_ray()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.close(cancel=exc_type is not None)

    def _start_ray(self) -> None:
        try:
            import ray
        except ImportError:
            raise InputError(f"executor 'ray' needs Ray: {install_hint('ray')}") from None
        if not ray.is_initialized():
            # An explicit address wins, then Ray's own RAY_ADDRESS; otherwise a new Ray of our own
            # ("local"), even when `ray start` left a cluster on this machine: a bare ray.init()
            # would join that one, and refuse num_cpus.
            address = self.address or os.environ.get("RAY_ADDRESS") or None
            where = f"at {address!r}" if address else "locally"
            try:
                with interrupts.kept():  # ray.init replaces the SIGTERM handler (interrupts.kept says how)
                    if address:
                        reason = unreachable(address)
                        if reason:
                            raise InputError(f"could not start or reach Ray {where}: {reason}")
                        with _one_connect_attempt(), _stderr_aside(self.ray_messages):
                            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
                    else:
                        with _without_token_notice():
                            ray.init(address="local", num_cpus=self.workers, include_dashboard=False,
                                     log_to_driver=False, logging_level=logging.WARNING)
            except InputError:
                raise
            except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; report it as one line
                raise InputError(f"could not start or reach Ray {where}: {exc}") from None
            self._ray_owned = True
            self._route_ray_messages()
        self._ray = ray

    def _route_ray_messages(self) -> None:
        """Keep the cluster's messages to the driver (a task retried after its node died, ...) out of
        the terminal: Ray prints them on stdout from a thread, which would break ``--quiet`` and
        ``--json``. They are counted (:attr:`retries`) and kept (:attr:`ray_messages`) instead.
        Ray 2.x has no switch for this, so its printer function is replaced while this runner owns
        the connection; without that function (another Ray version) the messages print as before."""
        import ray._private.worker as ray_worker

        original = getattr(ray_worker, "print_to_stdstream", None)
        if original is None:  # pragma: no cover - another Ray version
            return

        def keep(data: dict, ignore_prefix: bool = False) -> None:
            for line in data.get("lines", ()):
                self.ray_messages.append(str(line))
                if "will be retried" in str(line):
                    self.retries += 1

        ray_worker.print_to_stdstream = keep
        self._restore_printer = lambda: setattr(ray_worker, "print_to_stdstream", original)

    def close(self, cancel: bool = False) -> None:
        if self._pool is not None:
            if cancel:
                self._terminate_workers()
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            self._pool = None
        if self._ray is not None and self._ray_owned:
            # Ray's C++ core reports, on this process's stderr and even under --quiet, each task it could
            # not hand back while shutting down ("Failed to push error to driver ..."; an interrupted
            # run leaves some): kept with the cluster's other messages, not printed
            with _stderr_aside(self.ray_messages):
                self._ray.shutdown()
            if self._restore_printer:
                self._restore_printer()
                self._restore_printer = None
        self._ray = None
        self._ray_owned = False

    def _local_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:  # workers ignore SIGINT and die with this process (simsched.core.interrupts)
            self._pool = ProcessPoolExecutor(max_workers=self.workers, initializer=worker_setup,
                                             initargs=(os.getpid(),))
        return self._pool

    def _terminate_workers(self) -> None:
        """End the pool's processes now (their running tasks are abandoned)."""
        processes = dict(getattr(self._pool, "_processes", None) or {})
        for process in processes.values():
            if process.is_alive():
                process.terminate()
        for process in processes.values():
            process.join(timeout=5)
            if process.is_alive():  # pragma: no cover - a worker ignoring SIGTERM
                process.kill()
                process.join(timeout=5)

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple], on_result: Callable[[int], None] | None = None,
            *, on_task: Callable[[int], None] | None = None,
            on_each: Callable[[int, Any], None] | None = None) -> list[Any]:
        """``[fn(*task) for task in tasks]``, computed by the executor.

        ``on_result(done)`` is called as results are collected in task order;
        ``on_task(index)`` as soon as any task finishes, in finishing order (for progress);
        ``on_each(index, result)`` likewise with the result, so a caller can keep
        finished work if it is interrupted before the rest are done.
        """
        if not tasks:
            return []
        if self.executor == "ray":
            return self._map_ray(fn, tasks, on_result, on_task, on_each)
        if self.workers == 1:
            results = []
            for index, task in enumerate(tasks):
                results.append(fn(*task))
                if on_task:
                    on_task(index)
                if on_each:
                    on_each(index, results[-1])
                if on_result:
                    on_result(len(results))
            return results
        with interrupts.held():  # submit forks the workers (interrupts.held says why)
            futures = [self._local_pool().submit(fn, *task) for task in tasks]
        if on_task or on_each:
            index_of = {future: i for i, future in enumerate(futures)}
            for future in as_completed(futures):
                if on_each:
                    on_each(index_of[future], future.result())
                if on_task:
                    on_task(index_of[future])
        results = []
        for future in futures:  # in task order; the pool works ahead
            results.append(future.result())
            if on_result:
                on_result(len(results))
        return results

    def put(self, value: Any) -> Any:
        """Place ``value`` in Ray's object store once (for many tasks to share); Ray only."""
        if self._ray is None:
            self._start_ray()
        return self._ray.put(value)

    def capacity(self) -> int:
        """How many tasks run at once: ``workers`` on local processes; on Ray, the cluster's CPUs now
        (every node's, the head's included; what a learned function's ``meta.workers`` records)."""
        if self.executor != "ray":
            return self.workers
        if self._ray is None:
            self._start_ray()
        return int(self._ray.cluster_resources().get("CPU", 0))

    def cluster_status(self) -> str | None:
        """``"N nodes, R running, K retried"`` while Ray runs the tasks (nodes alive, CPUs busy, tasks
        retried so far), asked of the cluster at most once a second; None on local processes."""
        if self._ray is None:
            return None
        now = time.monotonic()
        if self._status is None or now - self._status[0] >= 1.0:
            try:
                nodes = sum(1 for node in self._ray.nodes() if node.get("Alive"))
                busy = self._ray.cluster_resources().get("CPU", 0) - self._ray.available_resources().get("CPU", 0)
            except Exception:  # noqa: BLE001 - the cluster is changing (a node dying); keep the last status
                return self._status[1] if self._status else None
            self._status = (now, f"{nodes} node{'s' * (nodes != 1)}, {max(0, round(busy))} running, "
                                 f"{self.retries} retried")
        return self._status[1]

    def imap_unordered(self, fn: Callable[..., Any], tasks: Sequence[tuple],
                       on_wait: Callable[[], None] | None = None) -> Iterator[tuple[int, Any]]:
        """``(index, fn(*tasks[index]))`` for every task, as each finishes (in task order when serial).

        For callers that record each result as soon as it exists (``simsched experiment``);
        they put results back in task order themselves. On Ray, ``on_wait()`` is called about once a
        second while no task finishes (for live progress: a lost node can stall results for seconds).
        Ray gets at most :data:`RAY_WINDOW` tasks at a time, and a task's result is released once
        yielded, so the driver's memory stays flat however many tasks there are.
        """
        if not tasks:
            return
        if self.executor == "ray":
            if self._ray is None:
                self._start_ray()
            remote = self._ray.remote(fn)
            window = max(RAY_WINDOW, 4 * int(self._ray.cluster_resources().get("CPU", 0)))
            index: dict[Any, int] = {}  # the tasks in flight; a finished one is dropped, so Ray frees it
            lost: list[tuple[int, str]] = []
            submitted = 0
            while submitted < len(tasks) or index:
                while submitted < len(tasks) and len(index) < window:
                    index[remote.remote(*tasks[submitted])] = submitted
                    submitted += 1
                ready, _ = self._ray.wait(list(index), num_returns=1, timeout=1.0)
                if not ready:
                    if on_wait:
                        on_wait()
                    self._check_capacity(len(index) + len(tasks) - submitted)
                for ref in ready:
                    position = index.pop(ref)
                    try:
                        value = self._ray.get(ref)
                    except self._lost_kinds() as exc:  # the others go on; the lost ones are named at the end
                        lost.append((position, _reason(exc)))
                        continue
                    yield position, value
            if lost:
                raise TasksLost(lost)
            return
        if self.workers == 1:
            for i, task in enumerate(tasks):
                yield i, fn(*task)
            return
        with interrupts.held():  # submit forks the workers (interrupts.held says why)
            futures = {self._local_pool().submit(fn, *task): i for i, task in enumerate(tasks)}
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in sorted(done, key=futures.__getitem__):
                yield futures[future], future.result()

    def _map_ray(self, fn: Callable[..., Any], tasks: Sequence[tuple],
                 on_result: Callable[[int], None] | None,
                 on_task: Callable[[int], None] | None = None,
                 on_each: Callable[[int, Any], None] | None = None) -> list[Any]:
        if self._ray is None:
            self._start_ray()
        ray = self._ray
        remote = ray.remote(fn)
        refs = [remote.remote(*task) for task in tasks]
        pending = list(refs)
        done = 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=min(len(pending), max(1, len(refs) // 50)), timeout=1.0)
            if not ready:
                self._check_capacity(len(pending))
                continue
            done += len(ready)
            if on_task:
                for ref in ready:
                    on_task(refs.index(ref))
            if on_result:
                on_result(done)
        results: list[Any] = []
        lost: list[tuple[int, str]] = []
        for index, ref in enumerate(refs):
            try:
                results.append(ray.get(ref))
            except self._lost_kinds() as exc:
                lost.append((index, _reason(exc)))
                results.append(None)
        if on_each:
            gone = {index for index, _ in lost}
            for index, result in enumerate(results):
                if index not in gone:
                    on_each(index, result)
        if lost:
            raise TasksLost(lost, results)
        return results

    def _check_capacity(self, waiting: int) -> None:
        """Called while no task finishes: once the cluster has had no CPU for :data:`NO_CPU_GRACE_S`
        seconds (its only worker node died; a head started with ``--num-cpus 0``), say so, once."""
        if self._said_no_cpu:
            return
        try:
            cpus = self._ray.cluster_resources().get("CPU", 0)
        except Exception:  # noqa: BLE001 - the cluster is changing; ask again at the next wait
            return
        now = time.monotonic()
        if cpus > 0:
            self._no_cpu_since = None
            return
        if self._no_cpu_since is None:
            self._no_cpu_since = now
        elif now - self._no_cpu_since >= NO_CPU_GRACE_S:
            self._said_no_cpu = True
            self.notify(f"warning: no node of the Ray cluster can run tasks (no CPU alive for "
                        f"{now - self._no_cpu_since:.0f} s); {waiting} task{'s' * (waiting != 1)} wait for a node "
                        "with CPUs to join (`ray start --address ...`); Ctrl-C stops here, and the results "
                        "kept so far stay (an experiment continues with --resume)")

    def _lost_kinds(self) -> tuple[type[BaseException], ...]:
        """Ray's errors for a task it gave up on because a process or node died (not an error the task
        raised: that one is the task's own and propagates as it is)."""
        errors = self._ray.exceptions
        names = ("WorkerCrashedError", "NodeDiedError", "ObjectLostError", "OutOfMemoryError",
                 "LocalRayletDiedError", "TaskUnschedulableError")
        return tuple(getattr(errors, name) for name in names if hasattr(errors, name))
