"""The Python API: ``simsched.run(scenario) -> RunResult``. The metrics of its summary are defined in
[docs/engine.md "Metrics"](../engine.md#metrics-spec-7), its tables in [docs/outputs.md](../outputs.md)
(the links are relative to the API pages of the docs site)."""

from __future__ import annotations

import json
import math
import platform
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy
import pandas as pd
import simpy

from simsched.config.catalog import build_scheduler, effective_allocation
from simsched.config.overrides import apply_overrides
from simsched.config.resolve import policy_ref as resolve_policy_ref
from simsched.config.resolve import scenario_path
from simsched.config.scenario import Scenario, load_scenario
from simsched.core import arguments, atomic, heap, interrupts, limits, outputs
from simsched.core.contract import Option, Scheduler
from simsched.core.engine import Engine, EngineConfig, FleetState, Progress
from simsched.core.errors import DecisionError, InputError, warn
from simsched.core.eventlog import EventLog
from simsched.core.fairness import QuotaBook
from simsched.core.feasibility import InfeasibleReport, infeasible_report
from simsched.core.jobstore import JobStore
from simsched.core.metrics import jobs_frame, migrations, summarize
from simsched.core.model import MILLI, Fleet
from simsched.core.readonly import ReadOnlyPolicy
from simsched.core.seeding import stream
from simsched.core.tenancy import Tenancy
from simsched.core.version import __version__
from simsched.policies.placement import PLACEMENTS
from simsched.policies.quota import QuotaScheduler
from simsched.policies.user import (
    UserPolicy,
    check_constructible,
    is_own_code,
    make_policy,
    wrap_policy,
)
from simsched.runs import display, messages
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.isolated import Limits, run_watched
from simsched.workloads import load_jobs, untyped_warning
from simsched.workloads.table import to_job_specs

#: the files a run writes into its --out folder (with plots/): no input may have one of these paths
RUN_FILES = ("jobs.csv", "events.csv", "nodes.csv", "spells.csv", "timeline.csv", "summary.json", "PARTIAL",
             "report.html", *(f"{name}.parquet" for name in outputs.RUN_TABLES))


class RunResult:
    """What one run produced: per-job table, event log, summary (metrics + provenance), the fleet's
    nodes, and the run spells and timeline derived from the event log (columns: [docs/outputs.md](../outputs.md)).

    The events table, the spells, the timeline and jobs' ``nodes``/``runs`` columns are derived on
    first use (the events from the engine's compact :class:`~simsched.core.eventlog.EventLog`), so a
    caller that needs only the summary (GP learning, compare) does not pay for them.
    """

    def __init__(self, jobs: pd.DataFrame, events: pd.DataFrame | EventLog, summary: dict | None = None,
                 nodes: pd.DataFrame | None = None, options: Mapping[str, tuple] | None = None,
                 cluster_names: tuple[str, ...] = ()) -> None:
        self._jobs = jobs
        self._log = events if isinstance(events, EventLog) else None
        self._events = None if self._log is not None else events
        self.summary = summary if summary is not None else {}
        self.nodes = nodes if nodes is not None else pd.DataFrame(columns=list(outputs.NODE_COLUMNS))
        self._options = options or {}
        self._cluster_names = cluster_names
        self._spells: pd.DataFrame | None = None
        self._spell_jobs: numpy.ndarray | None = None  # job index per spell, when built from the log
        self._timeline: pd.DataFrame | None = None
        self._jobs_filled = False

    @property
    def events(self) -> pd.DataFrame:
        """The event log (events.csv): time, event, job_id, detail."""
        if self._events is None:
            self._events = self._log.frame()
        return self._events

    @property
    def spells(self) -> pd.DataFrame:
        """One row per run spell (start .. finish or preemption) with its nodes and share."""
        if self._spells is None:
            names = self._cluster_names

            def share_of(job_id: str, cluster: str, gpu_type: str) -> int:
                for option in self._options[job_id]:
                    if names[option.cluster] == cluster and option.gpu_type == gpu_type:
                        return option.per_worker
                raise AssertionError(f"job {job_id!r} ran on {cluster}/{gpu_type}, none of its options")

            if self._log is not None and isinstance(self._options, JobOptions):
                self._spells, self._spell_jobs = outputs.spells_from_log(self._log, self.nodes,
                                                                         self._options.shares)
            else:
                self._spells = outputs.spells_frame(self.events, self.nodes, share_of)
        return self._spells

    @property
    def jobs(self) -> pd.DataFrame:
        """One row per job (jobs.csv)."""
        if not self._jobs_filled:
            self._jobs_filled = True
            if self._options:
                spells = self.spells
                if self._spell_jobs is not None:  # jobs are in job-index order
                    nodes, runs = outputs.job_spell_columns_by_index(len(self._jobs), spells, self._spell_jobs)
                else:
                    nodes, runs = outputs.job_spell_columns(self._jobs["job_id"].tolist(), spells)
                self._jobs["nodes"] = nodes
                self._jobs["runs"] = runs
        return self._jobs

    @property
    def timeline(self) -> pd.DataFrame:
        """Busy milli-GPUs, running and queued jobs after every change."""
        if self._timeline is None:
            events = self._log if self._events is None else self._events
            self._timeline = outputs.timeline_frame(events, self.spells)
        return self._timeline

    @property
    def partial(self) -> bool:
        return bool(self.summary.get("partial"))

    def __repr__(self) -> str:
        summary = self.summary
        if not summary:
            return f"<RunResult: {len(self._jobs)} jobs>"
        policy = (summary.get("scheduler") or {}).get("policy", "?")
        jct = summary.get("avg_jct")
        return (f"<RunResult {summary.get('scenario', '?')}: {policy}, seed {summary.get('seed')}, "
                f"{summary.get('jobs', len(self._jobs)):,} jobs, avg JCT "
                + ("n/a" if jct is None else f"{jct:,.0f} s") + (", PARTIAL" if self.partial else "") + ">")

    def _repr_html_(self) -> str:
        """A notebook's view: the scenario, scheduler and seed, and the metric table
        (simsched.present.notebook, through simsched.runs.display)."""
        return display.html("run", self)

    def plot(self, kind: str = "jct", **options: Any) -> Any:
        """A matplotlib Figure of this run: ``kind`` is one of ``simsched.present.notebook.RUN_PLOTS``
        ("jct", "wait", "cdf", "queue", "utilisation", "gantt", "wait_by_weight"). Needs matplotlib."""
        return display.plot("run", self, kind, **options)

    @classmethod
    def load(cls, out_dir: str | Path) -> RunResult:
        """The result a run wrote into ``out_dir`` (CSV or Parquet tables and summary.json), read
        back with the documented column types ([docs/outputs.md](../outputs.md)); ``simsched.load_run``."""
        tables = outputs.read_run_tables(out_dir)
        summary = outputs.read_json_object(Path(out_dir) / "summary.json", "a run's summary.json")
        result = RunResult(tables["jobs"], tables["events"], summary, tables["nodes"])
        result._spells = tables["spells"]
        result._timeline = tables["timeline"]
        result._jobs_filled = True  # nodes and runs were written with the jobs
        return result

    def write(self, out_dir: str | Path, format: str = "csv") -> Path:  # the files: RUN_FILES
        """Write jobs, events, nodes, spells and timeline (``.csv``, or ``.parquet`` with
        ``format="parquet"``, which needs pyarrow) and summary.json into ``out_dir`` (columns:
        [docs/outputs.md](../outputs.md)), each atomically; a table of the other format left by an earlier run
        is removed, so the folder holds one copy of each table.

        A ``PARTIAL`` marker stands in the folder while it is written and stays
        when the run was interrupted (see :mod:`simsched.core.atomic`).
        """
        outputs.require_format(format, "write(format=...)")
        out = Path(out_dir)
        other = "parquet" if format == "csv" else "csv"
        with interrupts.deferred():
            out.mkdir(parents=True, exist_ok=True)
            atomic.mark_partial(out, "writing: the files here may be from an earlier run")
            # CSV: no id or name runs as a spreadsheet formula; Parquet keeps values as they are
            jobs = outputs.safe_text_columns(self.jobs) if format == "csv" else self.jobs
            ids_changed = jobs is not self.jobs
            for name in outputs.RUN_TABLES:
                if format == "csv" and name == "events" and self._events is None and not ids_changed:
                    atomic.write_with(out / "events.csv", self._log.write_csv)  # straight from the log
                elif format == "parquet" and name == "events" and self._events is None:
                    # straight from the log, a chunk at a time: the whole events table is never built
                    atomic.write_with(out / "events.parquet", lambda tmp: outputs.write_parquet(
                        tmp, self._log.frames(outputs.PARQUET_CHUNK)))
                else:
                    frame = jobs if name == "jobs" else getattr(self, name)
                    if ids_changed and name != "jobs":
                        frame = outputs.safe_text_columns(frame)
                    outputs.write_frame(frame, out / f"{name}.{format}", format)
                (out / f"{name}.{other}").unlink(missing_ok=True)
                heap.release()  # what building and writing the table freed, before the next one
            atomic.write_text(out / "summary.json", json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
            if self.partial:
                atomic.mark_partial(out, f"interrupted run: simulated until t={self.summary['simulated_until']:g} s; "
                                    "jobs.csv has every job, unfinished ones without an end time; "
                                    "the metrics cover finished jobs only")
            else:
                atomic.clear_partial(out)
        return out


def prepare(scenario: Scenario) -> tuple[Fleet, pd.DataFrame, dict]:
    """The fleet and the job table of a scenario (after filters and field synthesis)."""
    fleet = Fleet(scenario.clusters, scenario.gpu_types)
    table, report = load_jobs(scenario.workload, fleet, scenario.seed)
    return fleet, table, report.as_dict()


@dataclass
class Simulation:
    """A scenario made ready to run: everything validated and loaded, nothing simulated yet."""

    scenario: Scenario
    engine: Engine
    skipped: dict
    started: float
    policy_label: str | None = None  # what ran, when a scheduler object replaced the scenario's policy
    warnings: tuple[str, ...] = ()  # said once per run (the CLI prints them; summary.json keeps them)
    infeasible: InfeasibleReport | None = None  # jobs no node can ever hold (also among the warnings)

    def run(self, progress: Callable[[Progress], None] | None = None) -> RunResult:
        try:
            complete = self.engine.run(progress)
        except DecisionError as exc:  # a user's policy decided something invalid: bad input (SPEC §8)
            if isinstance(self.engine.scheduler, UserPolicy):
                raise self.engine.scheduler.rejected(exc) from exc
            raise
        with interrupts.deferred():  # a second Ctrl-C must not lose what was simulated
            result = collect(self.engine, self.scenario, complete, self.skipped, time.perf_counter() - self.started,
                             policy_label=self.policy_label)
        result.summary["warnings"] = list(self.warnings) + after_run_warnings(result.summary)
        return result


def run(scenario: Scenario | str | Path, *, seed: int | None = None, jobs_limit: int | None = None,
        scheduler: Scheduler | type | str | None = None, overrides: Mapping[str, Any] | None = None,
        progress: Callable[[Progress], None] | None = None, jobs: int | None = None,
        decide_timeout: float | None = None, run_timeout: float | None = None,
        run_memory: int | str | None = None) -> RunResult:
    """Simulate ``scenario`` and return its results (a :class:`RunResult`, also named ``Result``).

    ``scenario`` is a :class:`Scenario`, a TOML path, or the name of a shipped example
    (``"philly_hetero"``; ``simsched examples`` lists them).

    ``jobs_limit`` keeps the first N jobs (``workload.jobs_limit``; ``jobs`` is its older name).

    ``scheduler`` replaces the scenario's ``[scheduler]`` policy: a name (``"sjf"``,
    ``"my_policy.py:MyPolicy"``, checked like ``scheduler.policy``), a ready object with a
    ``decide(view)`` method, or such a class (made with no arguments) -- a policy written in a
    notebook cell runs this way. Placement options such as ``heterogeneous`` still come from
    the scenario. The summary records the scheduler that ran.

    ``overrides`` sets dotted scenario keys (``{"workload.load": 0.8, "scheduler.backfill": "easy"}``),
    validated exactly like ``--set KEY=VALUE`` on the command line (a bad key or value is one
    :class:`~simsched.core.errors.InputError` line) and recorded in ``summary["overrides"]``, as are
    ``jobs_limit`` and a scheduler name.

    User code -- a ``file.py:Class`` policy, or a scheduler object or class not from simsched --
    runs in a child process (simsched.runs.isolated) under ``decide_timeout`` (seconds per call
    into it), ``run_timeout`` (seconds for the run) and ``run_memory`` (bytes, or a size such as
    ``"2G"``; default a fair share of the machine); a failure of any kind is one
    :class:`~simsched.runs.isolated.RunFailed` line. The result equals an in-process run's.

    The run's warnings (jobs no node can hold, jobs the policy left unfinished, ...; kept in
    ``summary["warnings"]``) are also issued with :func:`warnings.warn` as a
    :class:`~simsched.core.errors.SimschedWarning`, so a notebook shows them and a warnings
    filter can make them errors.
    """
    # every argument is checked here, with the CLI's one-line errors (simsched.core.arguments)
    jobs = arguments.optional_whole(jobs, "jobs", "simsched.run")
    jobs_limit = arguments.optional_whole(jobs_limit, "jobs_limit", "simsched.run")
    if jobs is not None and jobs_limit is not None and jobs != jobs_limit:
        raise InputError(f"simsched.run: jobs={jobs} and jobs_limit={jobs_limit} disagree; give one "
                         "(jobs is jobs_limit's older name)")
    limit = jobs_limit if jobs_limit is not None else jobs
    seed = arguments.optional_whole(seed, "seed", "simsched.run", minimum=0)
    check_scheduler_argument(scheduler, "simsched.run")
    if isinstance(scheduler, type) and not is_own_code(scheduler):
        check_constructible(scheduler, "simsched.run")
    if progress is not None and not callable(progress):
        raise InputError(f"simsched.run: progress must be a function of one argument, got {progress!r}")
    scenario = scenario_of(scenario, "simsched.run")
    if overrides:
        scenario = with_settings(scenario, overrides, "simsched.run(overrides=...)")
    if limit is not None:
        from dataclasses import replace

        scenario = replace(scenario, overrides={**scenario.overrides, "jobs_limit": limit})
    limits = limits_of(decide_timeout, run_timeout, run_memory, "simsched.run")
    if ISOLATION and is_user_code(scenario, scheduler):
        def target(send: Callable[[Progress], None] | None = None) -> RunResult:
            made = make_policy(scheduler) if isinstance(scheduler, type) else scheduler  # __init__: user code too
            return simulation(scenario, seed=seed, jobs=limit, scheduler=made).run(send)

        who = f"{user_code_label(scenario, scheduler)} (seed {scenario.seed if seed is None else seed})"
        result = run_watched(target, (), who=who, limits=limits, progress=progress, on_interrupt="partial", returns=RunResult,
                             file=user_code_file(scenario, scheduler))
    else:
        if isinstance(scheduler, type):
            scheduler = scheduler() if is_own_code(scheduler) else make_policy(scheduler)
            check_scheduler_argument(scheduler, "simsched.run")  # its instances, too
        result = simulation(scenario, seed=seed, jobs=limit, scheduler=scheduler).run(progress)
        heap.release()  # the engine is gone: its columns' pages go back before the outputs are built
    for text in result.summary.get("warnings", ()):  # the CLI prints them; the API warns (SimschedWarning)
        warn(text)
    return result


def check_scheduler_argument(scheduler: object, caller: str) -> None:
    """``scheduler=``: None, a policy name, an object with a ``decide(view)`` method or such a class."""
    if scheduler is None or isinstance(scheduler, str):
        if isinstance(scheduler, str) and not scheduler.strip():
            raise InputError(f"{caller}: scheduler must not be empty; give a name such as 'sjf' or 'my_policy.py:MyPolicy'")
        return
    if not callable(getattr(scheduler, "decide", None)):
        what = f"the class {scheduler.__name__}" if isinstance(scheduler, type) else \
            f"{scheduler!r} ({type(scheduler).__name__})"
        raise InputError(f"{caller}: scheduler must be a policy name ('sjf', 'my_policy.py:MyPolicy'), an object "
                         f"with a decide(view) method, or such a class; {what} has no decide method")


def limits_of(decide_timeout: Any, run_timeout: Any, run_memory: Any, caller: str) -> Limits:
    """The limits of a user policy's run, checked with the command line's ranges (one InputError
    line for a bad value; simsched.core.arguments, which the flags use too)."""
    return Limits(
        None if decide_timeout is None else arguments.seconds(decide_timeout, "decide_timeout", caller,
                                                              maximum=arguments.MAX_DECIDE_TIMEOUT_S),
        None if run_timeout is None else arguments.seconds(run_timeout, "run_timeout", caller, maximum=math.inf),
        None if run_memory is None else arguments.memory(run_memory, "run_memory", caller))


def is_user_code(scenario: Scenario, scheduler: Any) -> bool:
    """The run would call code that is not simsched's: a ``file.py:Class`` / ``module:Class`` policy, or
    a scheduler object or class from outside the package."""
    if scheduler is None:
        return ":" in str(scenario.scheduler.policy)
    if isinstance(scheduler, str):
        return ":" in scheduler
    cls = scheduler if isinstance(scheduler, type) else type(scheduler)
    return cls.__module__.split(".")[0] != "simsched"


def user_code_label(scenario: Scenario, scheduler: Any) -> str:
    if scheduler is None:
        return str(scenario.scheduler.policy)
    if isinstance(scheduler, str):
        return scheduler
    cls = scheduler if isinstance(scheduler, type) else type(scheduler)
    return f"{cls.__module__}:{cls.__qualname__}"


def user_code_file(scenario: Scenario, scheduler: Any) -> str | None:
    """The file the user's policy lives in (a failure names it), when known."""
    policy = scenario.scheduler.policy if scheduler is None else scheduler
    if isinstance(policy, str):
        where = policy.rpartition(":")[0]
        if not where.endswith(".py"):
            return None
        return where if Path(where).is_absolute() else str(Path(scenario.path).resolve().parent / where)
    cls = policy if isinstance(policy, type) else type(policy)
    module = sys.modules.get(cls.__module__)
    return getattr(module, "__file__", None)


#: the public name of a run's result in the notebook API (``simsched.Result``)
Result = RunResult


def scenario_of(scenario: Scenario | str | Path, caller: str) -> Scenario:
    """A :class:`Scenario` from itself, a TOML path, or a shipped example's name."""
    if isinstance(scenario, Scenario):
        return scenario
    if not isinstance(scenario, (str, Path)):
        raise InputError(f"{caller}: the scenario must be a Scenario, a TOML path or an example name, "
                         f"got {type(scenario).__name__}")

    return load_scenario(scenario_path(scenario))  # a file, or a shipped example's name


def with_settings(scenario: Scenario, settings: Mapping[str, Any], where: str) -> Scenario:
    """Dotted scenario keys set and validated exactly as ``--set KEY=VALUE`` does (experiment
    overrides), and recorded in ``overrides`` (summary.json)."""
    from dataclasses import replace


    if not isinstance(settings, Mapping):
        raise InputError(f"{where}: give a dict of dotted scenario keys, e.g. {{'workload.load': 0.8}}")
    for key in settings:
        if not isinstance(key, str) or "." not in key or not key.split(".", 1)[1]:
            raise InputError(f"{where}: {key!r}: give a dotted scenario key, e.g. workload.load or "
                             "scheduler.policy")
    settings = dict(settings)
    scenario = apply_overrides(scenario, settings, where)
    return replace(scenario, overrides={**scenario.overrides, **settings})


def scheduler_label(scheduler: object) -> str:
    """How a scheduler object is named in summaries: its ``name`` attribute, else its class."""
    name = getattr(scheduler, "name", None)
    if isinstance(name, str) and name:
        return name
    cls = type(scheduler)
    return f"{cls.__module__}:{cls.__qualname__}"


def simulation(scenario: Scenario | str | Path, *, seed: int | None = None,
               jobs: int | None = None, scheduler: Scheduler | str | None = None,
               whole_workload: bool = True) -> Simulation:
    """Load and validate everything a run needs (all input errors surface here). A build check on
    a cut of the workload (``whole_workload=False``, e.g. experiment's ``jobs=1`` check) skips what
    only the whole workload can tell (a tenant with a quota and no job)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    scenario = scenario.with_overrides(seed=seed, jobs=jobs)
    if isinstance(scheduler, str):
        scenario = scenario.with_scheduler_keys({"policy": resolve_policy_ref(scheduler, scenario.path)},
                                                "simsched.run(scheduler=...)")
        scheduler = None
    label = None if scheduler is None else scheduler_label(scheduler)
    if scheduler is not None:  # a user's object gets a file policy's checks (read-only views, one-line errors)
        scheduler = wrap_policy(scheduler)
    wall = time.perf_counter()
    fleet, table, skipped = prepare(scenario)
    specs = to_job_specs(table, fleet.largest_node)
    spec = scenario.scheduler
    warnings = tuple(w for w in (untyped_warning(table, spec.heterogeneous),) if w)
    # jobs may run only in their home cluster when the allocation is "home"; a scheduler
    # object given here says so with a true `restrict_to_home` attribute
    restrict = effective_allocation(spec) == "home" if scheduler is None else bool(
        getattr(scheduler, "restrict_to_home", False))
    if scheduler is None:
        scheduler = build_scheduler(spec, base_dir=scenario.path.resolve().parent,
                                    rng_for=lambda name: stream(scenario.seed, name), file=str(scenario.path),
                                    weights=scenario.objective_weights, objective=scenario.objective)
    _check_rounds(scenario, fleet, specs, spec.interval_s or getattr(scheduler, "interval_s", None))
    check_tenants(scenario, fleet, table, every_tenant=whole_workload)
    tenancy = None
    if spec.quota != "none":
        tenancy = build_tenancy(fleet, spec.quota, spec.reclaim)
        scheduler = QuotaScheduler(scheduler, spec.quota, spec.reclaim, PLACEMENTS[spec.placement]())
    elif hasattr(scheduler, "bind_quotas") and any(c.tenants or c.quota_schedule is not None for c in fleet.clusters):
        # fair-share policies weight tenants by their quotas even when nothing enforces them
        scheduler.bind_quotas(build_tenancy(fleet, "none", spec.reclaim))
    engine = Engine(fleet, specs, scheduler, EngineConfig(
        heterogeneous=spec.heterogeneous,
        restrict_to_home=restrict,
        restart_penalty_s=spec.restart_penalty_s,
        interval_s=spec.interval_s,
    ), tenancy)
    infeasible = infeasible_report(engine)
    if infeasible is not None:
        warnings += (infeasible.message(),)
    if tenancy is not None and spec.quota == "strict":
        above = above_quota_warning(engine, tenancy)
        if above:
            warnings += (above,)
    return Simulation(scenario, engine, skipped, wall, label, warnings, infeasible)


def above_quota_warning(engine: Engine, tenancy: Tenancy) -> str | None:
    """Under ``quota = "strict"``: the jobs that ask for more GPUs than their tenant may ever hold on
    every option they have. No policy can start them, so every run leaves them unfinished (and
    compare marks every run); say so before the run. None when there are none."""
    jobs = engine.jobs
    names = jobs.tenants.values
    blocked: list[int] = []
    verdict: dict[tuple[int, int], bool] = {}  # (option set, tenant code) -> never fits
    for i in range(len(jobs)):
        key = (int(jobs.option_set[i]), int(jobs.tenant[i]))
        if key not in verdict:
            options = jobs.option_sets[key[0]]
            tenant = names[key[1]]
            workers = int(jobs.workers[i])
            verdict[key] = bool(options) and all(
                (most := tenancy.most_milli(tenancy.key(tenant, o.cluster), o.cluster, o.gpu_type)) is not None
                and o.per_worker * workers > most for o in options)
        if verdict[key]:
            blocked.append(i)
    if not blocked:
        return None
    first = blocked[0]
    return (f"{len(blocked):,} job(s) ask for more GPUs than their tenant's strict quota ever allows (the first, "
            f"{jobs.job_ids[first]!r} of tenant {names[jobs.tenant[first]]!r}, {float(jobs.gpus[first]):g} GPUs): "
            "no policy can start them, so every run leaves them unfinished; raise the quota, or use "
            'quota = "borrow"')


def build_tenancy(fleet: Fleet, mode: str, reclaim: str) -> Tenancy:
    """The engine's quota ledger for ``fleet`` (simsched.core.tenancy)."""
    capacity = [c.total_gpus * MILLI for c in fleet.clusters]
    by_type = []
    for cluster in fleet.clusters:
        types: dict[str, int] = {}
        for group in cluster.nodes:
            types[group.gpu_type] = types.get(group.gpu_type, 0) + group.count * group.gpus * MILLI
        by_type.append(types)
    return Tenancy(fleet.clusters, capacity, mode, reclaim, by_type)


def check_tenants(scenario: Scenario, fleet: Fleet, table: pd.DataFrame, every_tenant: bool = True) -> None:
    """Quotas against the workload and the fleet as it runs (after --nodes-per-type): a quota
    above capacity, a tenant no job has (unless the workload was cut to its first N jobs), or a quota
    mode without quotas is bad input."""
    spec = scenario.scheduler
    limited = [c for c in fleet.clusters if c.tenants or c.quota_schedule is not None]
    if spec.quota != "none" and not limited:
        raise InputError(f'{scenario.path}: scheduler.quota = "{spec.quota}" needs tenants\' quotas: give a '
                         '[[cluster]] [[cluster.tenant]] tables (name, gpus) or a quota_file')
    present = set(table["tenant"].dropna().astype(str)) if "tenant" in table else set()
    for cluster in limited:
        names = cluster.quota_schedule.tenants if cluster.quota_schedule is not None else \
            tuple(t.name for t in cluster.tenants)
        total = sum(t.total for t in cluster.tenants)
        if total > cluster.total_gpus + 1e-9:
            raise InputError(f"{scenario.path}: cluster {cluster.name!r}: the tenants' quotas add up to {total:g} "
                             f"GPUs, above its {cluster.total_gpus} GPUs (after --nodes-per-type)")
        if cluster.quota_schedule is not None:
            most = max(sum(row) for row in cluster.quota_schedule.gpus)
            if most > cluster.total_gpus + 1e-9:
                raise InputError(f"{cluster.quota_schedule.source}: quotas add up to {most:g} GPUs on some day, above "
                                 f"the {cluster.total_gpus} GPUs of cluster {cluster.name!r} (after --nodes-per-type)")
        absent = [name for name in names if name not in present]
        # a workload cut to its first N jobs (--jobs, jobs_limit) may leave a tenant without jobs
        if absent and cluster.quota_schedule is None and every_tenant and scenario.workload.jobs_limit is None:
            shown = ", ".join(sorted(present)[:12]) + (" ..." if len(present) > 12 else "") if present else "none"
            raise InputError(f"{scenario.path}: cluster {cluster.name!r}: tenant {absent[0]!r} has a quota but no job "
                             f"of the workload belongs to it (tenants in the workload: {shown}); remove its quota "
                             "or keep jobs of it (workload.jobs_limit, vcs, tenant_mix)")


def after_run_warnings(summary: dict) -> list[str]:
    """What only the run can tell: jobs the policy left unfinished (they count, censored)."""
    if summary.get("partial") or not summary.get("unfinished"):
        return []
    left, total = summary["unfinished"], summary["jobs"] - summary.get("infeasible", 0)
    return [f"the policy left {left:,} of {total:,} feasible jobs unfinished (queued when nothing else was left "
            f"to happen, t={summary['simulated_until']:,.0f} s): their wait and JCT are censored there and count "
            "in every mean; compare ranks such a run after every run that finished all its jobs"]


def _check_rounds(scenario: Scenario, fleet: Fleet, specs, interval: float | None) -> None:
    """Periodic rounds every ``interval`` s over the time the jobs need must stay countable."""
    if not interval or not specs:
        return
    speeds = [t.speedup for t in fleet.gpu_types.values() if t.speedup > 0]
    fastest = max(speeds) / min(speeds) if speeds else 1.0  # the largest speed factor any job can get
    span = max(job.submit + job.duration / fastest for job in specs)
    limits.check_steps(f"{scenario.path}: scheduler.interval_s = {interval:g}", "periodic decision rounds",
                       span / interval, limit=1e7,
                       hint=f"the jobs need at least {span:,.0f} s of simulated time; use a larger interval_s")


def collect(engine: Engine, scenario: Scenario, complete: bool, skipped: dict, wall_s: float,
            policy_label: str | None = None) -> RunResult:
    names = engine.fleet.cluster_names
    state = engine.fleet_state
    nodes = outputs.nodes_frame(state.node_cluster, state.node_type, state.node_capacity, names)
    jobs = jobs_frame(engine.jobs, names)  # nodes/runs are filled from the spells on first use
    cluster_gpus = {c.name: float(c.total_gpus) for c in engine.fleet.clusters}
    objective = scenario.objective
    store = engine.jobs
    speeds = store.run_speeds() if hasattr(store, "run_speeds") else numpy.array([j.run_speed for j in store], float)
    summary = summarize(jobs, cluster_gpus, scenario.objective_weights, kind=objective.kind, w=objective.w,
                        quotas=QuotaBook(tuple(engine.fleet.clusters)),
                        exec_s=jobs["duration"].to_numpy(float) / speeds)
    moves = migrations(jobs)
    summary.update({
        "scenario": scenario.name,
        "scenario_file": str(scenario.path),
        "scenario_sha256": scenario.digest,
        "seed": scenario.seed,
        "objective_spec": {"kind": objective.kind, "weights": list(objective.weights), "w": objective.w,
                           "label": objective.label},
        "scheduler": {"policy": policy_label or scenario.scheduler.policy, "placement": scenario.scheduler.placement,
                      "backfill": scenario.scheduler.backfill_setting, "allocation": scenario.scheduler.allocation,
                      "heterogeneous": scenario.scheduler.heterogeneous},
        "overrides": dict(scenario.overrides),
        "partial": not complete,
        "simulated_until": float(engine.env.now),
        "decisions": engine.decisions,
        **planner_counts(engine.scheduler),
        "moves": moves,
        "moves_per_job": moves / len(jobs) if len(jobs) else 0.0,
        "skipped_rows": skipped,
        "wall_time_s": wall_s,
        "versions": {"simsched": __version__, "python": platform.python_version(),
                     "simpy": simpy.__version__, "numpy": numpy.__version__, "pandas": pd.__version__,
                     "networkx": metadata.version("networkx")},  # without importing it
    })
    return RunResult(jobs, engine.events, summary, nodes, JobOptions(engine.jobs, engine.fleet_state), names)


def planner_counts(scheduler: object) -> dict[str, int]:
    """``plans`` (allocation + planner runs) and ``ea_runs`` (allocation EA runs) of a planner
    scheduler (mct-gp, evo-gp keep them in a ``stats`` dict), through the wrappers around it (the
    quota wrapper's ``policy``; the experiment's decision timer forwards ``stats``); 0 for every
    other scheduler, a user's policy included (docs/outputs.md)."""
    for _ in range(4):  # a wrapper around a wrapper at most
        if scheduler is None or isinstance(scheduler, (UserPolicy, ReadOnlyPolicy)):  # never a user's own `stats`
            break
        stats = getattr(scheduler, "stats", None)
        if isinstance(stats, dict):
            return {key: value if isinstance(value := stats.get(key, 0), int) and value >= 0 else 0
                    for key in ("plans", "ea_runs")}
        scheduler = getattr(scheduler, "policy", None)
    return {"plans": 0, "ea_runs": 0}


class JobOptions(Mapping):
    """job id -> the job's placement options, from the engine's job store (the id index is
    built on first use, and only the option-set codes are kept, not the store)."""

    def __init__(self, store: JobStore, fleet: FleetState) -> None:
        self._ids = store.job_ids
        self._codes = store.option_set
        self._sets = store.option_sets
        self._node_cluster = fleet.node_cluster
        self._node_type = fleet.node_type
        self._index: dict[str, int] | None = None

    def shares(self, jobs: numpy.ndarray, nodes: numpy.ndarray) -> numpy.ndarray:
        """Milli-GPUs per worker of each job number in ``jobs`` on the cluster and GPU type of the
        node beside it (one look-up per distinct option set and node)."""
        pairs, inverse = numpy.unique(self._codes[jobs].astype(numpy.int64) * len(self._node_type) + nodes,
                                      return_inverse=True)
        per_pair = numpy.empty(len(pairs), numpy.int64)
        for k, pair in enumerate(pairs.tolist()):
            code, node = divmod(pair, len(self._node_type))
            cluster, gpu_type = self._node_cluster[node], self._node_type[node]
            for option in self._sets[code]:
                if option.cluster == cluster and option.gpu_type == gpu_type:
                    per_pair[k] = option.per_worker
                    break
            else:
                raise AssertionError(f"a job with options {self._sets[code]} ran on node {node}, none of them")
        return per_pair[inverse.reshape(-1)]

    def __getitem__(self, job_id: str) -> tuple:
        if self._index is None:
            self._index = {job_id: i for i, job_id in enumerate(self._ids)}
        return self._sets[self._codes[self._index[job_id]]]

    def __iter__(self):
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)

    @classmethod
    def of_columns(cls, ids: list[str], codes: numpy.ndarray, sets: list[tuple[Option, ...]],
                   node_cluster: tuple[int, ...], node_type: tuple[str, ...]) -> JobOptions:
        """The options of what :meth:`columns` gave (a run's child sends them so)."""
        options = cls.__new__(cls)
        options._ids, options._codes, options._sets = ids, codes, sets
        options._node_cluster, options._node_type = node_cluster, node_type
        options._index = None
        return options

    def columns(self) -> tuple:
        """Its fields as plain data: job ids, option-set code per job, the option sets (each a list
        of (cluster, GPU type, milli-GPUs per worker, speed)), each node's cluster and GPU type."""
        sets = [[(o.cluster, o.gpu_type, o.per_worker, o.speed) for o in options] for options in self._sets]
        ids = self._ids if type(self._ids) is list else list(self._ids)  # the event log's list: sent once
        return (ids, self._codes, sets, tuple(self._node_cluster), tuple(self._node_type))


# ---------------------------------------------------------------- a result sent by a run's child
def _result_to_plain(result: RunResult) -> dict[str, Any]:
    options = result._options
    if not isinstance(options, JobOptions) and options:
        raise messages.Unsendable("a run result whose job options are not the engine's")
    return {"jobs": result._jobs, "events": result._log if result._log is not None else result._events,
            "summary": result.summary, "nodes": result.nodes,
            "options": options.columns() if isinstance(options, JobOptions) else None,
            "cluster_names": tuple(result._cluster_names), "spells": result._spells,
            "spell_jobs": result._spell_jobs, "timeline": result._timeline, "jobs_filled": result._jobs_filled}


_RESULT_FIELDS = {"jobs": pd.DataFrame, "events": (EventLog, pd.DataFrame), "summary": dict, "nodes": pd.DataFrame,
                  "options": (tuple, type(None)), "cluster_names": tuple, "spells": (pd.DataFrame, type(None)),
                  "spell_jobs": (numpy.ndarray, type(None)), "timeline": (pd.DataFrame, type(None)),
                  "jobs_filled": bool}


def _options_from_plain(plain: tuple, nodes: int) -> JobOptions:
    refused = messages.Refused
    if not (len(plain) == 5 and type(plain[0]) is list and isinstance(plain[1], numpy.ndarray)
            and type(plain[2]) is list and type(plain[3]) is tuple and type(plain[4]) is tuple):
        raise refused("a run's job options that are not")
    ids, codes, sets, node_cluster, node_type = plain
    if not (all(type(i) is str for i in ids) and codes.ndim == 1 and len(codes) == len(ids)
            and codes.dtype.kind == "i" and (len(codes) == 0 or (codes.min() >= 0 and codes.max() < len(sets)))):
        raise refused("a run's job options whose codes do not match its option sets")
    if not (len(node_cluster) == len(node_type) >= nodes and all(type(c) is int for c in node_cluster)
            and all(type(t) is str for t in node_type)):
        raise refused("a run's job options whose nodes are not the fleet's")
    rebuilt = []
    for options in sets:
        if not (type(options) is list and all(
                type(o) is tuple and len(o) == 4 and type(o[0]) is int and type(o[1]) is str
                and type(o[2]) is int and type(o[3]) in (int, float) for o in options)):
            raise refused("a run's option set that is not one")
        rebuilt.append(tuple(Option(*o) for o in options))
    return JobOptions.of_columns(ids, codes, rebuilt, node_cluster, node_type)


def _result_from_plain(plain: Any) -> RunResult:
    """A run's result from what its child sent, every field's type checked (simsched.runs.messages)."""
    if not (type(plain) is dict and plain.keys() == _RESULT_FIELDS.keys()
            and all(isinstance(plain[k], kind) for k, kind in _RESULT_FIELDS.items())):
        raise messages.Refused("a run result that is not one")
    events = plain["events"]
    if not all(type(name) is str for name in plain["cluster_names"]) \
            or not all(type(key) is str for key in plain["summary"]):
        raise messages.Refused("a run result whose summary or cluster names are not text")
    started_on = events.buffers()[4] if isinstance(events, EventLog) else ()
    used = max(started_on) + 1 if len(started_on) else 0  # nodes the log names: the options must know them
    options = _options_from_plain(plain["options"], used) if plain["options"] is not None else None
    if isinstance(events, EventLog) and options is not None and events.job_ids is not options._ids \
            and len(events.job_ids) != len(options._ids):
        raise messages.Refused("a run result whose event log and job options list other jobs")
    result = RunResult(plain["jobs"], events, plain["summary"], plain["nodes"], options, plain["cluster_names"])
    result._spells, result._spell_jobs, result._timeline = plain["spells"], plain["spell_jobs"], plain["timeline"]
    result._jobs_filled = plain["jobs_filled"]
    return result


messages.register(RunResult, "run_result", _result_to_plain, _result_from_plain)
