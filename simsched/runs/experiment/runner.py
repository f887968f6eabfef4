"""Run an experiment's tasks serially, on local processes or on Ray, recording each as it ends.

:func:`execute` runs one :class:`~simsched.runs.experiment.grid.RunTask` in a worker
and returns plain data; the driver (:func:`run_experiment`) appends it to the
store as soon as it arrives. The tables are computed from the store, with the
rows put back in plan order, so they are the same whatever the executor, the
worker count or the number of times the experiment was resumed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy
import pandas as pd

from simsched.core.errors import ResourceFailure, SimschedError
from simsched.core.inputs import check_outputs, note_read, scenario_inputs
from simsched.core.interrupts import deferred, exit_code, received
from simsched.core.metrics import TENANT_WAIT, flat_metrics
from simsched.core.outputs import require_format
from simsched.runs.experiment.grid import RunTask, check_runs, plan
from simsched.runs.experiment.lock import FolderLock
from simsched.runs.experiment.spec import ExperimentSpec
from simsched.runs.experiment.store import (
    FLAT_ADDED_LATER,
    ResultStore,
    in_plan_order,
    read_decisions,
    read_results,
)
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.isolated import RunFailed, run_watched
from simsched.runs.metric_check import check_metric_tenants
from simsched.runs.parallel import TaskRunner, TasksLost
from simsched.runs.shipping import Handle, Shipment, files_of, localize
from simsched.runs.single import is_user_code, simulation, user_code_file

#: summary entries that are not metrics of the run (provenance, flags)
NOT_METRICS = ("seed", "partial", "wall_time_s")
#: top-level numbers of a summary with tenants that results.csv does not keep (a count, not a metric)
LATER_TOP_LEVEL = ("ftf_rho_jobs",)


class TimedScheduler:
    """Wraps a scheduler: records (queued jobs, wall seconds) for every ``decide`` call; under
    ``decide_on = "arrival"`` only for the calls that plan (the ones between arrivals only start
    the planned jobs: docs/evo.md, "The trigger")."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.samples: list[tuple[int, float]] = []
        self._plans_only = getattr(inner, "decide_on", "event") == "arrival" and isinstance(
            getattr(inner, "stats", None), dict)

    def decide(self, view: Any) -> Any:
        queued = view.queue_length
        plans = self.inner.stats.get("plans", 0) if self._plans_only else 0
        started = time.perf_counter()
        decision = self.inner.decide(view)
        seconds = time.perf_counter() - started
        if not self._plans_only or self.inner.stats.get("plans", 0) > plans:
            self.samples.append((queued, seconds))
        return decision

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def metrics_of(summary: dict[str, Any], tenant_metrics: Sequence[str] = ()) -> dict[str, Any]:
    """Every numeric top-level §7 entry of a run summary, in the summary's order, then the
    starvation and fairness metrics (:func:`simsched.core.metrics.flat_metrics`; empty when n/a, e.g.
    the fairness ones of a run without tenants), then the ``avg_wait@<tenant>`` metrics asked for
    (empty for a tenant the run does not have)."""
    flat = flat_metrics(summary)
    metrics = {key: value for key, value in summary.items()
               if key not in NOT_METRICS and key not in flat and key not in LATER_TOP_LEVEL
               and isinstance(value, (int, float)) and not isinstance(value, bool)}
    metrics.update({key: flat[key] for key in FLAT_ADDED_LATER})
    metrics.update({key: flat.get(key) for key in tenant_metrics})
    return metrics


def execute(task: RunTask, shipped: Handle | None = None) -> dict[str, Any]:
    """Run one task (in a worker process or on a Ray node) and return its row and records.
    ``shipped``: the input files sent with the task (simsched.runs.shipping; Ray only)."""
    started = time.perf_counter()
    ready = simulation(localize(task.resolved, shipped))
    timed = None
    if "decisions" in task.record:
        timed = TimedScheduler(ready.engine.scheduler)
        ready.engine.scheduler = timed
    result = ready.run()
    wall = time.perf_counter() - started
    identity = {"run_id": task.run_id, "scenario": task.scenario, "instance": task.instance,
                "scheduler": task.scheduler, "seed": task.seed, "ea_stream": task.ea_stream,
                "scenario_hash": task.scenario_hash, "wall_s": round(wall, 3)}
    return {
        "partial": result.partial,
        "identity": identity,
        "point": dict(task.point),
        "metrics": metrics_of(result.summary, tuple(m for m in (task.metric,) if m.startswith(TENANT_WAIT))),
        "decisions": timed.samples if timed is not None else None,
        "jobs": result.jobs if "jobs" in task.record else None,
    }


def execute_guarded(task: RunTask, shipped: Handle | None = None) -> dict[str, Any]:
    """:func:`execute`; a user policy's run in a child process whose parent (this process) enforces the
    default limits (simsched.runs.isolated): its death or a hang beyond the memory is one line naming it."""
    args = (task,) if shipped is None else (task, shipped)
    if ISOLATION and is_user_code(task.resolved, None):
        who = f"{task.scheduler} (seed {task.seed})"
        outcome = run_watched(execute, args, who=who, returns=dict, file=user_code_file(task.resolved, None))
        return checked_outcome(task, outcome, who)
    return execute(*args)


#: what :func:`execute` returns, and the type of each entry (None where it may be missing)
OUTCOME = {"partial": bool, "identity": dict, "point": dict, "metrics": dict, "decisions": (list, type(None)),
           "jobs": (pd.DataFrame, type(None))}


def checked_outcome(task: RunTask, outcome: dict[str, Any], who: str) -> dict[str, Any]:
    """:func:`execute`'s result as a user policy's child sent it, checked before this process uses
    it: this task's identity and grid point, every metric a number, the decision samples pairs of
    numbers; else a :class:`~simsched.runs.isolated.RunFailed` naming the run."""
    def ok() -> bool:
        if outcome.keys() != OUTCOME.keys() or not all(isinstance(outcome[k], t) for k, t in OUTCOME.items()):
            return False
        identity = outcome["identity"]
        mine = {"run_id": task.run_id, "scenario": task.scenario, "instance": task.instance,
                "scheduler": task.scheduler, "seed": task.seed, "ea_stream": task.ea_stream,
                "scenario_hash": task.scenario_hash}
        if {k: identity.get(k) for k in mine} != mine or not isinstance(identity.get("wall_s"), float | int) \
                or identity.keys() != {*mine, "wall_s"} or outcome["point"] != dict(task.point):
            return False
        numbers = all(type(key) is str and (value is None or isinstance(value, int | float | numpy.number))
                      for key, value in outcome["metrics"].items())
        samples = outcome["decisions"] is None or all(
            type(pair) is tuple and len(pair) == 2 and all(isinstance(x, int | float) for x in pair)
            for pair in outcome["decisions"])
        return numbers and samples

    if not ok():
        raise RunFailed(f"{who}: its process sent a result that is not this run's, and its run is refused")
    return outcome


class ExperimentInterrupted(Exception):
    """Ctrl-C during an experiment: ``recorded`` runs are in the store, the rest can be resumed."""

    def __init__(self, recorded: int, total: int, folder: Path, code: int = 130) -> None:
        super().__init__(f"interrupted: {recorded} of {total} runs recorded in {folder}; "
                         "run again with --resume to finish")
        self.recorded = recorded
        self.total = total
        self.code = code  # 130 after SIGINT, 143 after SIGTERM


class RunsLost(ResourceFailure):
    """Ray gave up on some runs (the process or node running each died more often than Ray retries a
    task): the other runs are recorded, and ``--resume`` runs the lost ones again."""

    def __init__(self, lost: list[RunTask], reason: str, recorded: int, total: int, folder: Path) -> None:
        first = lost[0]
        super().__init__(
            f"{len(lost)} of {total} runs lost on Ray, the first {first.scheduler} on {first.instance} "
            f"(seed {first.seed}): the worker running it died on every one of Ray's retries ({reason}). "
            "That is the cluster's resources (memory, a node lost), not a bug in simsched. "
            f"{recorded} of {total} runs are recorded in {folder}; run again with --resume to run the rest")
        self.lost = lost
        self.recorded = recorded
        self.total = total


@dataclass
class ExperimentRun:
    """What :func:`run_experiment` produced: the plan, its rows in plan order, the decisions."""

    spec: ExperimentSpec
    tasks: list[RunTask]
    results: pd.DataFrame
    decisions: pd.DataFrame
    folder: Path
    skipped: int  # runs already finished before this call (--resume)
    ran: int
    stale: int = 0  # results rows of runs not in this plan (an earlier grid): kept on disk, left out
    retries: int = 0  # Ray tasks retried because their node or worker died (each run still counts once)


def run_experiment(spec: ExperimentSpec, out: str | Path, *, workers: int | None = None,
                   executor: str = "local", address: str | None = None, resume: bool = False,
                   progress: Callable[[int, int], None] | None = None,
                   notify: Callable[[str], None] | None = None,
                   status: Callable[[str], None] | None = None, jobs_format: str = "csv") -> ExperimentRun:
    """Run every task of ``spec`` not yet in the store under ``out`` and return all rows.

    The folder is locked for the call (:class:`~simsched.runs.experiment.lock.FolderLock`): a second
    invocation on it fails at once. ``notify`` gets each warning line (a stale lock taken over, a
    torn or rejected results row, a duplicate refused). ``status`` gets the Ray cluster's state for live
    progress ("2 nodes, 2 running, 1 retried") as runs end and about once a second between them.

    ``jobs_format`` is the file format of the per-job tables (``record = ["jobs"]``): ``csv`` or
    ``parquet`` (``--format``; needs pyarrow).

    Raises :class:`ExperimentInterrupted` on Ctrl-C after recording every run that finished.
    """
    require_format(jobs_format, "--format")
    tasks = plan(spec)
    check_runs(spec, tasks)
    check_metric_tenants(spec.metric, (task.resolved for task in tasks), f"{spec.path}: metric")
    _check_inputs_kept(spec, tasks, Path(out))
    Path(out).mkdir(parents=True, exist_ok=True)
    with FolderLock(out) as lock:  # one writer per folder: a second invocation stops here (exit 2)
        if lock.warning and notify:
            notify(lock.warning)
        return _run_locked(spec, tasks, out, workers=workers, executor=executor, address=address,
                           resume=resume, progress=progress, notify=notify, status=status,
                           jobs_format=jobs_format)


#: the files an experiment writes into its folder (with jobs/ and plots/): no input may be one of them
EXPERIMENT_FILES = ("results.csv", "plan.csv", "decisions.csv", "results.rejected.csv", ".simsched.lock",
                    "summary.csv", "instance_ranks.csv", "tests.csv", "by_priority.csv", "decision_time.csv",
                    "report.md", "report.html", "PARTIAL")


def _check_inputs_kept(spec: ExperimentSpec, tasks: list[RunTask], out: Path) -> None:
    """Refuse a folder whose outputs would replace the spec, a scenario or a trace (simsched.core.inputs)."""
    seen: set[int] = set()
    for task in tasks:
        if id(task.resolved.workload) not in seen:
            seen.add(id(task.resolved.workload))
            scenario_inputs(task.resolved)
    spec_path = getattr(spec, "path", None)
    if spec_path:
        note_read(spec_path, "experiment spec")
    check_outputs([out / name for name in EXPERIMENT_FILES], [out / "jobs", out / "plots"])


def _ship(runner: TaskRunner, tasks: list[RunTask]) -> Handle | None:
    """Put the files the tasks' scenarios name (traces, policy and priority files) in Ray's object
    store once, for workers that do not share this machine's file system (simsched.runs.shipping)."""
    files: list[Path] = []
    seen: set[tuple[int, int]] = set()
    for task in tasks:
        key = (id(task.resolved.workload), id(task.resolved.scheduler))
        if key not in seen:
            seen.add(key)
            files += files_of(task.resolved)
    return Shipment(files, runner.put).handle if files else None


def _identity_text(task: RunTask) -> tuple[str, ...]:
    """A task's identity columns as results.csv holds them (scenario .. scenario_hash)."""
    return tuple("" if v is None else str(v) for v in
                 (task.scenario, task.instance, task.scheduler, task.seed, task.ea_stream, task.scenario_hash))


def _run_locked(spec: ExperimentSpec, tasks: list[RunTask], out: str | Path, *, workers: int | None,
                executor: str, address: str | None, resume: bool,
                progress: Callable[[int, int], None] | None,
                notify: Callable[[str], None] | None,
                status: Callable[[str], None] | None = None, jobs_format: str = "csv") -> ExperimentRun:
    store = ResultStore(out, spec.sweep_keys, jobs_format)
    finished = store.open(resume, {task.run_id: _identity_text(task) for task in tasks})
    _tell(store, notify)
    store.write_plan([(t.run_id, t.scenario, t.instance, t.scheduler, t.seed, t.ea_stream, *(v for _, v in t.point))
                      for t in tasks])
    todo = [task for task in tasks if task.run_id not in finished]
    skipped = len(tasks) - len(todo)
    if executor == "local":
        workers = max(1, min(workers or os.cpu_count() or 1, max(1, len(todo))))
    else:
        workers = workers or os.cpu_count() or 1
    recorded = 0
    retries = 0
    if progress:
        progress(skipped, len(tasks))
    try:
        with TaskRunner(executor, workers, address, notify=notify) as runner:
            def tell_status() -> None:
                text = runner.cluster_status() if status else None
                if text:
                    status(text)

            shipped = _ship(runner, todo) if executor == "ray" else None
            args = [(task,) if shipped is None else (task, shipped) for task in todo]
            for _, row in runner.imap_unordered(execute_guarded, args,
                                                on_wait=tell_status if status else None):
                if row["partial"]:  # the run was interrupted (Ctrl-C reached Engine.run): never recorded
                    raise KeyboardInterrupt
                with deferred():  # a signal now waits until the run's records are complete
                    added = store.add(row["identity"], row["point"], row["metrics"], row["decisions"], row["jobs"])
                _tell(store, notify)
                recorded += added
                if received():
                    raise KeyboardInterrupt
                if progress:
                    progress(skipped + recorded, len(tasks))
                tell_status()
            retries = runner.retries
    except KeyboardInterrupt as exc:  # SIGINT or SIGTERM (simsched.core.interrupts)
        raise ExperimentInterrupted(skipped + recorded, len(tasks), Path(out), exit_code(exc)) from None
    except TasksLost as exc:  # every other run went on and is recorded; the lost ones are named
        raise RunsLost([todo[i] for i, _ in exc.lost], exc.lost[0][1], skipped + recorded, len(tasks),
                       Path(out)) from None
    results, decisions, stale = load_rows(out, tasks)
    return ExperimentRun(spec, tasks, results, decisions, Path(out), skipped, recorded, stale, retries)


def _tell(store: ResultStore, notify: Callable[[str], None] | None) -> None:
    """Hand the store's new notices to ``notify`` (the CLI prints them on stderr)."""
    while store.notices:
        message = store.notices.pop(0)
        if notify:
            notify(message)


def load_rows(out: str | Path, tasks: list[RunTask]) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """The store's rows of these tasks, in plan order, and the number of stale results rows left out
    (runs of an earlier grid, kept in the file)."""
    order = {task.run_id: i for i, task in enumerate(tasks)}
    every = read_results(out)
    results = in_plan_order(every, order).drop_duplicates("run_id", keep="first", ignore_index=True)
    decisions = in_plan_order(read_decisions(out), order)
    missing = len(set(order) - set(results["run_id"]))  # never negative, whatever the file holds
    if missing:
        raise SimschedError(f"{Path(out)}: {missing} of {len(order)} runs have no results row")
    return results, decisions, len(every) - len(results)
