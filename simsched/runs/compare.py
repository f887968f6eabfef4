"""``python -m simsched compare``: several schedulers over several seeds and instances, on the metrics of
[docs/engine.md "Metrics"](../engine.md#metrics-spec-7) (results: [docs/comparison.md](../comparison.md)).

A *case* is one (instance, seed). The instances are the scenario file itself
plus every file listed in its ``[compare] instances``; each instance runs with
seeds ``seed .. seed+N-1`` of its own ``seed``. Every scheduler runs on every
case with the instance's placement, backfill, allocation, heterogeneity,
``interval_s`` and ``restart_penalty_s``; only ``policy`` changes. A
scheduler gets the instance's other ``[scheduler]`` options only when it is
the instance's own policy, and ``[compare.options."NAME"]`` otherwise.

Optional table in the scenario::

    [compare]
    schedulers = ["fifo", "sjf", "my_policy.py:MyPolicy"]   # default for --schedulers
    seeds = 3                                               # default for --seeds
    instances = ["other_instance.toml"]                     # relative to this file
    rank_by = "avg_jct"                                     # metric for the ranks
    [compare.options.las]
    las_thresholds = [600.0, 6000.0]

Runs go to local processes (:class:`simsched.runs.parallel.TaskRunner`); each task carries only
the scenario path and overrides, and results are put back in task order, so
a parallel run equals a serial one. With one worker, each user policy's runs go after the built-ins', back to back
in one kept child process, the one its load check ran in (:func:`run_order`, simsched.runs.isolated); a
pool's worker keeps one child for a policy's runs on it. :func:`run_compare` returns data frames;
their rendering (compare.md, the console's tables) is the report layer,
:mod:`simsched.present.compare_tables`, reached through :mod:`simsched.runs.display`.

Interruptions ([docs/engine.md "Reliability guarantees"](../engine.md#reliability-guarantees-spec-8)): an interrupted simulation never becomes a row (its
task raises instead). With an output folder, every finished run is appended
to ``compare_runs.partial.jsonl`` as it finishes; an interrupt leaves
``compare_runs.csv`` with the finished runs, no ranked tables, and a
``PARTIAL`` marker; ``--resume`` reuses the journal's runs (if the scenario
files and settings are unchanged) and runs only the rest, to the same result
as an uninterrupted comparison.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy
import pandas as pd

from simsched.config import keys as scenario_keys
from simsched.config.catalog import build_scheduler, policy_file_without_class, policy_names
from simsched.config.keys import DeclaredParams
from simsched.config.overrides import apply_overrides
from simsched.config.resolve import policy_ref as resolve_policy_ref
from simsched.config.resolve import scenario_path as resolve_scenario
from simsched.config.scenario import Scenario, load_scenario, read_toml
from simsched.core import atomic, interrupts
from simsched.core.errors import InputError, ResourceFailure, SimschedError, did_you_mean, visible
from simsched.core.interrupts import Interrupted, worker_setup
from simsched.core.metrics import (
    FAIRNESS_METRICS,
    STARVATION_METRICS,
    SUMMARY_METRICS,
    TENANT_WAIT,
    flat_metrics,
    higher_is_better,
    metric_name,
)
from simsched.core.outputs import write_frame
from simsched.core.params import check_name
from simsched.core.seeding import stream
from simsched.policies import check_user_backfill
from simsched.runs import display, ranking
from simsched.runs.experiment.spec import MAX_RUNS
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.isolated import (
    Limits,
    RunFailed,
    close_kept,
    default_memory,
    kept_policy,
    run_watched,
)
from simsched.runs.metric_check import check_metric_tenants
from simsched.runs.parallel import TaskRunner, TasksLost
from simsched.runs.shipping import Shipment, files_of, localize
from simsched.runs.single import simulation

#: every §7 summary metric the comparison reports: key, label, higher is better
METRICS: tuple[tuple[str, str, bool], ...] = tuple((key, label, higher) for key, label, higher, _ in SUMMARY_METRICS)
METRIC_KEYS = tuple(key for key, _, _ in METRICS)
#: who waits and fairness between tenants: the second table (rows only for what the runs have)
EXTRA_METRICS: tuple[tuple[str, str, bool], ...] = tuple(
    (key, label, higher) for key, label, higher, _ in STARVATION_METRICS + FAIRNESS_METRICS)
#: a run with more tenants than this (e.g. PAI's users as tenants) shows no per-tenant rows
MAX_TENANT_ROWS = 30
DEFAULT_SCHEDULERS = scenario_keys.DEFAULT_SCHEDULERS
#: seconds a user policy may take to load when compare checks it before the runs
CHECK_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class CompareSpec:
    """What to compare, after CLI flags and the ``[compare]`` table are merged and checked."""

    scenario: Path
    instances: tuple[Path, ...]
    schedulers: tuple[str, ...]
    seeds: int
    rank_by: str = "avg_jct"
    jobs: int | None = None
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    nodes_per_type: int | None = None  # --nodes-per-type (alias --gpus-limit), as for a single run
    scheduler_keys: dict[str, Any] = field(default_factory=dict)  # --placement etc.: every scheduler, last
    settings: dict[str, Any] = field(default_factory=dict)  # --set dotted keys: every instance and scheduler
    #: the scenario's name and, per instance that reads a trace, whether deadlines and weights are
    #: synthesised: what the tables' title says, taken when the files were read (a file edited
    #: during the comparison cannot change them)
    name: str = ""
    trace_synthesis: tuple[tuple[bool, bool], ...] = ()
    #: each instance as first read, by :func:`compare_spec` (what :func:`plan` runs; empty: read then)
    scenarios: tuple[Scenario, ...] = ()


@dataclass(frozen=True, slots=True)
class RunTask:
    """One simulation: everything a worker process needs, as plain picklable data."""

    instance: Path
    instance_name: str
    seed: int
    scheduler: str
    options: dict[str, Any]  # [scheduler] keys to replace (policy first), see _options_for
    jobs: int | None
    keep_jobs: bool = False  # return the run's per-job table too (compare --keep-jobs)
    nodes_per_type: int | None = None
    settings: tuple[tuple[str, Any], ...] = ()  # --set dotted keys, applied last
    #: the scenario prepared on the driver, read once per instance (on Ray with its files: simsched.runs.shipping)
    resolved: Any = None
    #: the instance's hash when the driver read it (scenario file and workload files): a run on other bytes is refused
    scenario_hash: str = ""
    #: the tenant's mean wait the ranks use (``avg_wait@<tenant>``): in the row however many tenants the run has
    rank_metric: str = ""


@dataclass
class CompareResult:
    """Per-run metrics, the mean/std table and the ranks."""

    spec: CompareSpec
    runs: pd.DataFrame  # one row per (instance, seed, scheduler): metrics + rank
    table: pd.DataFrame  # one row per (metric, scheduler): mean, std, n, best
    ranks: pd.DataFrame  # rows: schedulers; columns: each case's rank (NaN: its run failed), then mean_rank
    jobs: list[pd.DataFrame] | None = None  # per run, in ``runs`` order (compare --keep-jobs)
    warnings: list[str] = field(default_factory=list)  # the runs' warnings, each once (printed before the tables)
    failed: list[dict[str, Any]] = field(default_factory=list)  # --keep-going: runs whose policy failed
    #: per scheduler: cases completed, failed, mean rank over the completed ones, place (simsched.runs.ranking)
    standing: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def labels(self) -> dict[str, str]:
        """Scheduler -> its short label in the tables and failure lines (:func:`short_labels`)."""
        return short_labels(self.spec.schedulers, self.spec.scenario)

    def write(self, out_dir: str | Path, format: str = "csv") -> list[Path]:
        """compare.csv (mean/std per metric and scheduler), compare_runs.csv, compare.md (atomically);
        with per-job tables (``--keep-jobs``) jobs/NNN.csv, or jobs/NNN.parquet for ``format="parquet"``."""
        out = Path(out_dir)
        paths = [out / "compare.csv", out / "compare_runs.csv", out / "compare.md"]
        with interrupts.deferred():
            out.mkdir(parents=True, exist_ok=True)
            atomic.mark_partial(out, "writing: the files here may be from an earlier comparison")
            atomic.write_with(paths[0], lambda tmp: self.table.to_csv(tmp, index=False))
            atomic.write_with(paths[1], lambda tmp: self.runs.to_csv(tmp, index=False))
            if self.failed:  # --keep-going: the runs whose policy failed, with the error's one line
                paths.append(out / "compare_failed.csv")
                atomic.write_with(paths[-1], lambda tmp: pd.DataFrame(self.failed).to_csv(tmp, index=False))
            else:
                (out / "compare_failed.csv").unlink(missing_ok=True)
            atomic.write_text(paths[2], display.render("compare", "markdown", self))  # simsched.present.compare_tables
            clear_earlier(out, jobs=self.jobs is None)  # one comparison per folder: nothing of an earlier one stays
            if self.jobs is not None:
                paths.append(self._write_jobs(out / "jobs", format))
            atomic.clear_partial(out)
            journal_path(out).unlink(missing_ok=True)
        return paths

    def _write_jobs(self, folder: Path, format: str = "csv") -> Path:
        """jobs/NNN.csv (or .parquet) per run (jobs.csv columns) and jobs/index.csv naming each file's
        instance, seed and scheduler (file names are run numbers: scheduler names may hold characters
        paths cannot). An earlier comparison's tables that this one does not replace are removed."""
        atomic.subfolder(folder)  # never through a jobs/ link planted in the folder
        width = len(str(len(self.jobs)))
        files = []
        for number, table in enumerate(self.jobs):
            name = f"{number:0{width}d}.{format}"
            write_frame(table, folder / name, format)
            files.append(name)
        index = self.runs[["instance", "seed", "scheduler"]].assign(file=files)
        atomic.write_with(folder / "index.csv", lambda tmp: index.to_csv(tmp, index=False))
        for stale in _job_tables(folder):
            if stale.name not in files:
                stale.unlink(missing_ok=True)
        return folder / "index.csv"


class CompareInterrupted(Interrupted):
    """A comparison stopped by SIGINT/SIGTERM; ``rows`` are the runs that finished (task order)."""

    def __init__(self, signum: int, rows: list[dict[str, Any]], total: int) -> None:
        super().__init__(signum)
        self.rows = rows
        self.total = total


class WorkerDied(InputError):
    """A worker process died under a run (a policy that called ``os._exit``, crashed the
    interpreter, or was killed): the run is named, the finished runs are kept (``rows``)."""

    def __init__(self, message: str, rows: list[dict[str, Any]], total: int) -> None:
        super().__init__(message)
        self.rows = rows
        self.total = total


JOURNAL = "compare_runs.partial.jsonl"
#: the files a compare writes into its --out folder (with jobs/ and plots/)
COMPARE_FILES = ("compare.csv", "compare_runs.csv", "compare.md", "compare_failed.csv", JOURNAL, "PARTIAL",
                 "report.html")


#: the figures a compare folder's plots/ may hold (simsched.present.plots.compare.compare_figures), by stem
COMPARE_FIGURES = ("metrics", "jct_cdf", "ranks")
#: their file formats (simsched.present.plots.report.FORMATS)
FIGURE_FORMATS = ("png", "svg")


def _job_tables(folder: Path) -> list[Path]:
    """The per-job tables a comparison wrote into ``folder`` (``jobs/``): NNN.csv or NNN.parquet."""
    return [path for path in folder.iterdir()
            if path.suffix in (".csv", ".parquet") and path.stem.isdigit() and path.stem.isascii()]


def clear_earlier(out_dir: str | Path, *, jobs: bool = True) -> None:
    """Remove what an earlier comparison left in ``out_dir`` that this one's files do not replace:
    its figures and report.html (redrawn by --plots/--report or ``simsched plot``) and, when
    ``jobs``, its per-job tables (jobs/index.csv first, so that no reader pairs them with this
    comparison's runs). Only the names a comparison writes are removed (docs/comparison.md); a
    jobs/ or plots/ that is a link is refused, never followed (atomic.subfolder)."""
    out = Path(out_dir)
    (out / "report.html").unlink(missing_ok=True)
    plots = atomic.subfolder(out / "plots", create=False)
    if plots.is_dir():
        for stem in COMPARE_FIGURES:
            for fmt in FIGURE_FORMATS:
                (plots / f"{stem}.{fmt}").unlink(missing_ok=True)
    folder = atomic.subfolder(out / "jobs", create=False)
    if jobs and folder.is_dir():
        (folder / "index.csv").unlink(missing_ok=True)
        for stale in _job_tables(folder):
            stale.unlink(missing_ok=True)
        try:
            folder.rmdir()  # when nothing else is in it
        except OSError:
            pass


def journal_path(out_dir: str | Path) -> Path:
    return Path(out_dir) / JOURNAL


def _fingerprint(spec: CompareSpec) -> str:
    """What the runs depend on: scenario files' bytes and every setting but ``rank_by``."""
    data = {"instances": [[str(p.resolve()), hashlib.sha256(p.read_bytes()).hexdigest()] for p in spec.instances],
            "schedulers": list(spec.schedulers), "seeds": spec.seeds, "jobs": spec.jobs, "options": spec.options}
    if spec.nodes_per_type is not None or spec.scheduler_keys:  # absent before these flags: old journals resume
        data.update(nodes_per_type=spec.nodes_per_type, scheduler_keys=spec.scheduler_keys)
    if spec.settings:
        data.update(settings=spec.settings)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _task_key(task: RunTask) -> list:
    return [task.instance_name, task.seed, task.scheduler]


class _Journal:
    """Finished runs, one JSON line each, appended as they finish (thread-safe: pool callbacks)."""

    def __init__(self, path: Path, spec: CompareSpec, tasks: list[RunTask], resume: bool) -> None:
        self.path = path
        self.tasks = tasks
        self.lock = threading.Lock()
        self.rows: dict[int, dict[str, Any]] = {}
        fingerprint = _fingerprint(spec)
        if resume and path.is_file():
            self._read(fingerprint)
        elif resume:
            raise InputError(f"compare --resume: no journal {path} to resume from (run without --resume)")
        lines = [json.dumps({"format": "simsched-compare-journal", "fingerprint": fingerprint})]
        lines += [json.dumps({"index": i, "task": _task_key(tasks[i]), "row": row}) for i, row in self.rows.items()]
        atomic.write_text(path, "\n".join(lines) + "\n")

    def _read(self, fingerprint: str) -> None:
        if not self.path.is_file():
            raise InputError(f"{self.path}: not a regular file; delete it to start over")
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
            header = json.loads(lines[0]) if lines else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(f"{self.path}: not a readable compare journal ({exc}); delete it to start over") from None
        if not isinstance(header, dict) or header.get("format") != "simsched-compare-journal":
            raise InputError(f"{self.path}: not a compare journal; delete it to start over")
        if header.get("fingerprint") != fingerprint:
            raise InputError(f"{self.path}: made by a comparison with other scenario files or settings; "
                             "use the same ones, or delete it to start over")
        for number, line in enumerate(lines[1:], start=2):
            try:
                entry = json.loads(line)
                index = entry["index"]
                if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(self.tasks):
                    raise ValueError("index out of range")
                if entry["task"] != _task_key(self.tasks[index]):
                    raise ValueError("task does not match")
                row = entry["row"]
                if not isinstance(row, dict) or not all(
                        row.get(key) is None or (isinstance(row[key], (int, float)) and not isinstance(row[key], bool))
                        for key in METRIC_KEYS):  # NaN is a metric over no jobs, as the run itself reports it
                    raise ValueError("metrics must be numbers or empty")
                self.rows[index] = dict(row)
            except (ValueError, KeyError, IndexError, TypeError):
                if number == len(lines):  # a last line cut off by a hard kill: that run is simply redone
                    continue
                raise InputError(f"{self.path}:{number}: damaged journal line; delete the file to start over") from None

    def add(self, index: int, row: dict[str, Any]) -> None:
        with self.lock:
            self.rows[index] = row
            # in place, so never through a link planted after the journal was made (open_own)
            fd = atomic.open_own(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with open(fd, "a", encoding="utf-8", closefd=True) as fh:
                fh.write(json.dumps({"index": index, "task": _task_key(self.tasks[index]), "row": row}) + "\n")
                fh.flush()


def compare_spec(scenario_path: str | Path, *, schedulers: Sequence[str] | None = None,
                 seeds: int | None = None, jobs: int | None = None, rank_by: str | None = None,
                 nodes_per_type: int | None = None, scheduler_keys: dict[str, Any] | None = None,
                 settings: dict[str, Any] | None = None, check_policies: bool = True) -> CompareSpec:
    """Merge flags with the scenario's ``[compare]`` table; check names and files up front.
    A user policy is loaded for the check in a child process (its import is user code); the last
    policy's child is kept (simsched.runs.isolated) and :func:`run_compare` runs that policy's runs in
    it (a caller that does not run them may end it with ``close_kept``; it ends with this process).
    ``check_policies=False`` (``--keep-going``) leaves it to the runs, where a failure is a failed row.
    ``scenario_path``: a TOML file or a shipped example's name (:mod:`simsched.config.resolve`)."""
    path = resolve_scenario(scenario_path)
    load_scenario(path)  # the scenario itself must be valid (before its [compare] table is read)
    table = DeclaredParams(read_toml(path).get("compare", {}), "compare", path)  # keys: simsched.config.keys
    own_schedulers = table.get_list("schedulers", str, list(DEFAULT_SCHEDULERS))
    own_seeds = table.get("seeds", int, 1, min_value=1)
    base = path.resolve().parent
    instances = [path] + [Path(p) if Path(p).is_absolute() else base / p
                          for p in table.get_list("instances", str, [])]
    own_rank_by = metric_name(table.get("rank_by", str, "avg_jct"), f"{path}: compare.rank_by")
    options = table.sub("options").rest()
    for name, value in options.items():
        # a label names a column of every table and a file under jobs/ and plots/: printable text only
        check_name(name, lambda message: table.error("options", f"label {message}"))
        if not isinstance(value, dict):
            raise table.error(f"options.{name}", f"must be a table of [scheduler] options, got {value!r}")
    for name in own_schedulers:
        check_name(name, lambda message: table.error("schedulers", message))
    table.finish()
    scenarios = [load_scenario(instance) for instance in instances]  # read once: plan() runs these
    workloads = [scenario.workload for scenario in scenarios]
    for key, value in (scheduler_keys or {}).items():  # a bad flag value names the flag
        scenarios[0].with_scheduler_keys({key: value}, f"--{key}")
    decided = {"policy"} | {key for table_ in options.values() for key in table_}  # what each label sets
    for key in settings or {}:
        section, _, rest = key.partition(".")
        if section == "scheduler" and rest in decided:
            raise InputError(f"--set {key}: is decided by each compared scheduler (it would run one setting under "
                             "every label, and the table would show one scheduler's numbers under several "
                             f"names); use --{rest} where it exists, or [compare.options.LABEL] tables"
                             if rest != "policy" else
                             f"--set {key}: the compared schedulers decide the policy (it would run one policy "
                             "under every label); give them with --schedulers")
    # a bad --set key or value fails before any run
    settled = [_with_settings(scenario, dict(settings or {})) for scenario in scenarios]
    chosen = tuple(schedulers) if schedulers else tuple(own_schedulers)
    for name in chosen:  # --schedulers, or simsched.compare(schedulers=...)
        check_name(name, lambda message: InputError(f"{path}: compare: scheduler {message}"))
    if not chosen:
        raise InputError(f"{path}: compare: no schedulers to compare")
    if len(set(chosen)) != len(chosen):
        raise InputError(f"{path}: compare: a scheduler is listed twice: {', '.join(chosen)}")
    for key, value in (scheduler_keys or {}).items():  # --backfill/--no-backfill, --placement, --heterogeneous
        setters = [name for name in chosen if key in options.get(name, {})]
        if setters:
            flag = f"--{'no-' if value is False else ''}{key}" + ("" if isinstance(value, bool) else f" {value}")
            shown = str(value).lower() if isinstance(value, bool) else repr(value)
            raise InputError(f"{path}: compare: {flag} would run every scheduler with {key} = {shown}, but "
                             f"[compare.options.{setters[0]}] sets {key} (the table would show one setting under "
                             f"its label); drop the flag, or set {key} in the label's table")
    runs = len(instances) * (seeds or own_seeds) * len(chosen)
    if runs > MAX_RUNS:  # the experiment's limit: the plan alone would take hours and the memory with it
        raise InputError(f"{path}: compare: {runs:,} runs ({len(instances)} instance(s) x {seeds or own_seeds:,} seeds x "
                         f"{len(chosen)} schedulers) is more than {MAX_RUNS:,}; compare fewer seeds")
    resolved = tuple(resolve_policy_ref(name, path) for name in chosen)
    _check_names(resolved, path, options)
    # the experiment's grammar (simsched.core.metrics.metric_name); '' is a bad name, not 'the default'
    where = f"{path}: compare.rank_by" if rank_by is None else f"{path}: compare: --rank-by"
    rank_by = own_rank_by if rank_by is None else metric_name(rank_by, where)
    check_metric_tenants(rank_by, settled, where)
    spec = CompareSpec(path, tuple(instances), resolved, seeds or own_seeds, rank_by, jobs, options, nodes_per_type,
                       dict(scheduler_keys or {}), dict(settings or {}), scenarios[0].name,
                       tuple((w.synthesize_deadline, w.synthesize_weight) for w in workloads if w.source != "synthetic"),
                       tuple(scenarios))
    _check_builds(spec, check_policies)
    return spec


def _check_names(names: Sequence[str], path: Path, options: dict[str, dict[str, Any]]) -> None:
    valid = policy_names()
    for name in names:
        if policy_file_without_class(name) and "policy" not in options.get(name, {}):
            raise InputError(f"{path}: compare: {policy_file_without_class(name)}")
        if ":" not in name and name not in valid and "policy" not in options.get(name, {}):
            raise InputError(f"{path}: compare: unknown scheduler {name!r}{did_you_mean(name, valid)}; "
                             f"valid: {', '.join(valid)}, "
                             "'my_policy.py:MyPolicy', or a label with a [compare.options.LABEL] table "
                             "that sets policy")


def _check_builds(spec: CompareSpec, check_policies: bool = True) -> None:
    """Build every scheduler once on every instance so a bad option or policy file fails before any
    run; a user policy in a watched child process (60 s), or not at all without ``check_policies``."""
    for i, instance in enumerate(spec.instances):
        scenario = spec.scenarios[i] if spec.scenarios else load_scenario(instance)
        for name in spec.schedulers:
            variant = _with_scheduler(scenario, name, _options_for(spec, scenario, name))
            args = (variant.scheduler, instance.resolve().parent, variant.seed, _source(spec.scenario, name))
            if not (ISOLATION and user_policy(variant.scheduler.policy)):
                _build(*args)
                continue
            check_user_backfill(variant.scheduler, _source(spec.scenario, name))  # a setting: no user code needed
            if check_policies:  # one child per policy for all instances; the last one's is kept for its runs
                run_watched(_build, args, who=f"{name} (loading it)", file=policy_file(variant.scheduler.policy, instance),
                            limits=Limits(CHECK_TIMEOUT_S, CHECK_TIMEOUT_S), keep=variant.scheduler.policy,
                            returns=type(None))


def _build(scheduler: Any, base_dir: Path, seed: int, file: str) -> None:
    """Build a scheduler once, to check it (its options, a policy file's import and ``__init__``)."""
    build_scheduler(scheduler, base_dir=base_dir, rng_for=lambda n: stream(seed, n), file=file)


def _source(path: Path, name: str) -> str:
    return f"{path} [compare.options.{name}]"


def _options_for(spec: CompareSpec, scenario: Scenario, name: str) -> dict[str, Any]:
    """The ``[scheduler]`` keys scheduler ``name`` runs with: ``policy`` (the name itself
    unless its options table sets one), then its ``[compare.options.NAME]`` keys, which may
    be any ``[scheduler]`` key (placement, backfill, allocation, heterogeneous, ...). The
    instance's common keys always apply; its policy options only when the policy is its own."""
    table = dict(spec.options.get(name, {}))
    policy = table.pop("policy", name)
    if isinstance(policy, str):
        policy = resolve_policy_ref(policy, spec.scenario)
    return {"policy": policy, **table, **spec.scheduler_keys}


def _with_settings(scenario: Scenario, settings: dict[str, Any]) -> Scenario:
    """``--set`` keys on one instance (validated like an experiment's overrides)."""
    if not settings:
        return scenario
    from dataclasses import replace


    scenario = apply_overrides(scenario, settings, "--set")
    return replace(scenario, overrides={**scenario.overrides, **settings})


def _with_scheduler(scenario: Scenario, name: str, changes: dict[str, Any]) -> Scenario:
    return scenario.with_scheduler_keys(changes, _source(scenario.path, name))


def plan(spec: CompareSpec, keep_jobs: bool = False) -> list[RunTask]:
    """Every run, in the fixed order results are reported in: instance, seed, scheduler.

    Each instance is read once, by :func:`compare_spec` (or here, for a spec made without it): its
    parsed scenario goes with every task (the runs never read the scenario file again, so a file
    edited meanwhile changes nothing), with the hash of the scenario as read and of its workload
    files now; a run whose workload files hash otherwise is
    refused (:func:`run_task`, :func:`check_hashes`)."""
    tasks = []
    for i, instance in enumerate(spec.instances):
        scenario = spec.scenarios[i] if spec.scenarios else load_scenario(instance)
        digest = input_hash(scenario)
        label = scenario.name if len(spec.instances) == 1 else f"{scenario.name}({instance.name})"
        ready: dict[str, Any] = {}
        for seed in range(scenario.seed, scenario.seed + spec.seeds):
            for name in spec.schedulers:
                task = RunTask(instance, label, seed, name, _options_for(spec, scenario, name), spec.jobs,
                               keep_jobs, spec.nodes_per_type, tuple(spec.settings.items()), scenario_hash=digest,
                               rank_metric=spec.rank_by if spec.rank_by.startswith(TENANT_WAIT) else "")
                if name not in ready:
                    try:
                        ready[name] = _prepared_from(scenario, task)
                    except SimschedError:  # its run reports it (a failed row under --keep-going)
                        ready[name] = None
                tasks.append(replace(task, resolved=ready[name]))
    return tasks


def run_order(tasks: Sequence[RunTask], todo: list[int]) -> list[int]:
    """The order runs start in this process (``workers=1``): the built-ins' runs, then each user
    policy's runs back to back (the policies in their first run's order, but the one whose child
    :func:`compare_spec`'s check kept goes first), each group in task order. A user policy's runs
    then share one kept child (simsched.runs.isolated), forked once (for the check already). The
    built-ins go first so that an interrupted comparison has kept what it could. (A pool keeps the
    task order: a policy's seeds side by side on two workers would race each other on any file the
    policy writes.) Results are put back in task order."""
    kept = kept_policy()
    first: dict[str, int] = {} if kept is None else {kept: 0}

    def group(index: int) -> int:
        policy = _task_policy(tasks[index])
        return 1 + first.setdefault(policy, len(first)) if ISOLATION and user_policy(policy) else 0

    return sorted(todo, key=group)


def workload_files(scenario: Scenario) -> list[Path]:
    """The files a scenario's workload reads (trace, job CSV, workload parameters), not its policy's."""
    bare = replace(scenario, scheduler=replace(scenario.scheduler, policy="fifo", options={}))
    return files_of(bare)


def input_hash(scenario: Scenario) -> str:
    """The scenario file's hash as it was read (``Scenario.digest``) and its workload files' bytes now,
    in the order the scenario names them. Contents only, not paths: a Ray worker reads the same
    files from its shipped mirror (simsched.runs.shipping) under other paths."""
    digest = hashlib.sha256(scenario.digest.encode())
    for path in workload_files(scenario):
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise InputError(f"{path}: cannot read it ({exc.strerror})") from None
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:16]


def check_hashes(tasks: Sequence[RunTask], rows: dict[int, dict[str, Any]]) -> None:
    """Refuse a row computed on other inputs than its instance's (a workload file edited meanwhile):
    the row becomes a failed run naming the instance."""
    for index, row in rows.items():
        got = row.pop("_scenario_hash", None)
        task = tasks[index]
        if got is not None and task.scenario_hash and got != task.scenario_hash and "_failed" not in row:
            message = (f"{task.instance}: its workload files changed after the comparison read them (hash "
                       f"{task.scenario_hash}, this run's {got}); the run is refused")
            row.clear()  # in place: the executor's copy of the row is the journal's too
            row.update({"instance": task.instance_name, "seed": task.seed, "scheduler": task.scheduler,
                        "_failed": message})


def checked_row(task: RunTask, row: dict[str, Any], who: str) -> dict[str, Any]:
    """A row a user policy's child sent (:func:`run_task`'s), checked before this process uses it: its
    run's identity, every metric a number, text keys, plain values; else a :class:`RunFailed`."""
    def bad(what: str) -> RunFailed:
        return RunFailed(f"{who}: its process sent a row that is not a run's ({what}), and its run is refused")

    if (row.get("instance"), row.get("seed"), row.get("scheduler")) != (task.instance_name, task.seed, task.scheduler):
        raise bad("another run's identity")
    for key, value in row.items():
        if type(key) is not str:
            raise bad(f"a key {key!r} that is not text")
        if key == "_warnings":
            ok = type(value) is list and all(type(text) is str for text in value)
        elif key == "_jobs":
            ok = type(value) is pd.DataFrame
        elif key in ("instance", "scheduler", "_scenario_hash"):
            ok = type(value) is str
        else:
            ok = value is None or isinstance(value, int | float | numpy.number) and not isinstance(value, bool) \
                or key == "seed"
        if not ok:
            raise bad(f"{key} = a {type(value).__name__}")
    missing = [key for key in METRIC_KEYS if key not in row]
    if missing:
        raise bad(f"no {missing[0]}")
    return row


class DecideTimeout(InputError):
    """A built-in's decide() call ran longer than ``--decide-timeout`` seconds (in-process, SIGALRM)."""


def user_policy(policy: Any) -> bool:
    """A policy reference to user code (``file.py:Class``, ``package.module:Class``)."""
    return isinstance(policy, str) and ":" in policy


def policy_file(policy: str, scenario: Path) -> str | None:
    """The file of a ``file.py:Class`` policy (relative names: next to the scenario), else None."""
    where = policy.rpartition(":")[0]
    if not where.endswith(".py"):
        return None
    return where if Path(where).is_absolute() else str(Path(scenario).resolve().parent / where)


def short_labels(names: Sequence[str], scenario: Path) -> dict[str, str]:
    """How each scheduler is shown in the tables and failure lines: a file policy
    ``some/dir/alice.py:Policy`` as ``alice:Policy`` (the file's stem), with as many of its folders as
    it takes to tell it from another one (``a/policy:Policy``, ``b/policy:Policy``); any other name as
    it is. compare.csv keeps the name as given and the file's full path (``policy_file``)."""
    labels = {name: name for name in names}
    files: dict[str, tuple[tuple[str, ...], str]] = {}
    for name in names:
        path = policy_file(name, scenario) if user_policy(name) else None
        if path is not None:
            files[name] = (Path(os.path.normpath(path)).with_suffix("").parts, name.rpartition(":")[2])
    depth = dict.fromkeys(files, 1)
    while True:
        for name, (parts, cls) in files.items():
            labels[name] = "/".join(parts[-depth[name]:]).lstrip("/") + ":" + cls
        seen: dict[str, list[str]] = {}
        for name in names:
            seen.setdefault(labels[name], []).append(name)
        clashing = [name for group in seen.values() if len(group) > 1 for name in group if name in files]
        grown = [name for name in clashing if depth[name] < len(files[name][0])]
        if not grown:
            for name in clashing:  # the same file twice under other spellings: show what was given
                labels[name] = name
            # a label's bidirectional or invisible character escaped, as in every message (U+202E would
            # turn the rest of a table's row around)
            return {name: visible(label) for name, label in labels.items()}
        for name in grown:
            depth[name] += 1


def policy_files(names: Sequence[str], scenario: Path) -> dict[str, str]:
    """Each scheduler's policy file, as a full path ('' for a built-in or a module policy)."""
    return {name: (policy_file(name, scenario) or "") if user_policy(name) else "" for name in names}


def _task_policy(task: RunTask) -> Any:
    return task.resolved.scheduler.policy if task.resolved is not None else task.options.get("policy")


def run_task_guarded(task: RunTask, keep_going: bool = False, decide_timeout: float | None = None,
                     shipped: Any = None, limits: Limits | None = None, reuse: bool = False) -> dict[str, Any]:
    """:func:`run_task` with the grading guards. A user policy's run happens in a child process
    under ``limits`` that this process enforces (simsched.runs.isolated; ``decide_timeout`` when no
    ``limits`` are given); a built-in's runs here, a decide() longer than ``decide_timeout`` seconds
    stopped by SIGALRM. With ``keep_going`` a run that fails comes back as
    ``{..., "_failed": one line}`` instead of stopping the comparison. ``reuse``: the policy's child
    is kept for its next run in this process (``run_watched(keep=...)``; the caller ends it with
    ``close_kept``)."""
    try:
        policy = _task_policy(task)
        if ISOLATION and user_policy(policy):
            limits = limits if limits is not None else Limits(decide_timeout_s=decide_timeout)
            file = policy_file(policy, task.instance)
            who = f"{task.scheduler} (seed {task.seed})"
            try:
                row = run_watched(run_task, (task, None, shipped), who=who, limits=limits, file=file,
                                  keep=policy if reuse else None, returns=dict)
                return checked_row(task, row, who)
            except RunFailed as exc:
                if keep_going:
                    raise
                return {"_stop": str(exc)}  # the driver stops the comparison and keeps the finished runs
        # a kept child lives on through built-ins' runs here: each page either process writes is copied
        # once, which costs less than a fork for the policy's next run (tools/bench/isolation.py)
        return run_task(task, decide_timeout, shipped)
    except SimschedError as exc:
        if not keep_going:
            raise
        return {"instance": task.instance_name, "seed": task.seed, "scheduler": task.scheduler,
                "_failed": " ".join(str(exc).split())}


class _TimedDecide:
    """Wraps a scheduler: each decide() gets ``seconds`` of wall time (a SIGALRM timer; main thread of
    the process that runs it, as compare's workers and a serial compare are). A user policy's wrapper
    turns the DecideTimeout into a one-line PolicyError naming the line it was stopped at."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.inner = inner
        self.seconds = seconds

    def decide(self, view: Any) -> Any:
        import signal

        previous = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        try:
            return self.inner.decide(view)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _alarm(signum, frame) -> None:
    raise DecideTimeout("decide() ran past --decide-timeout")


def prepared(task: RunTask) -> Any:
    """The task's scenario: loaded by path, its scheduler and the overrides applied."""
    return _prepared_from(load_scenario(task.instance), task)


def _prepared_from(scenario: Scenario, task: RunTask) -> Any:
    scenario = _with_scheduler(scenario, task.scheduler, task.options)
    if task.nodes_per_type is not None:
        scenario = scenario.with_overrides(nodes_per_type=task.nodes_per_type)
    return _with_settings(scenario, dict(task.settings))


def run_task(task: RunTask, decide_timeout: float | None = None, shipped: Any = None) -> dict[str, Any]:
    """Run one task (in a worker process): take the scenario the driver prepared (with the files
    ``shipped`` along on Ray; loaded by path for a task made without one), override, simulate."""
    scenario = prepared(task) if task.resolved is None else localize(task.resolved, shipped)
    before = input_hash(scenario) if task.scenario_hash else None
    ready = simulation(scenario, seed=task.seed, jobs=task.jobs)
    if decide_timeout is not None:
        ready.engine.scheduler = _TimedDecide(ready.engine.scheduler, decide_timeout)
    result = ready.run()
    if result.partial:  # interrupted (in this process): never a row of the table
        raise Interrupted(interrupts.received() or 2)
    summary = result.summary
    row = {"instance": task.instance_name, "seed": task.seed, "scheduler": task.scheduler}
    if before is not None:  # the inputs before and after the run: either differing from the driver's refuses it
        after = input_hash(scenario)
        row["_scenario_hash"] = before if before != task.scenario_hash else after
    row.update({key: math.nan if summary[key] is None else summary[key] for key in METRIC_KEYS})
    flat = flat_metrics(summary)
    if len(summary.get("tenants") or ()) > MAX_TENANT_ROWS:  # e.g. PAI's users: no table holds them all
        flat = {key: value for key, value in flat.items() if not key.startswith(TENANT_WAIT) or key == task.rank_metric}
    row.update({key: math.nan if value is None else value for key, value in flat.items()})
    # what the run said before it started (unfinished jobs are marked in the tables instead)
    row["_warnings"] = list(ready.warnings)
    if task.keep_jobs:
        row["_jobs"] = result.jobs
    return row


@dataclass(frozen=True, slots=True)
class CompareProgress:
    """A snapshot for progress displays: runs finished, which are running, a time-left estimate."""

    done: int
    total: int
    running: tuple[str, ...]  # "scheduler seed N" of the runs started and not finished
    elapsed_s: float

    @property
    def left_s(self) -> float | None:
        """Elapsed time per finished run x runs left (workers included, since elapsed is wall time);
        None until a run has finished."""
        if self.done == 0:
            return None
        return self.elapsed_s / self.done * (self.total - self.done)


def run_compare(spec: CompareSpec, *, workers: int | None = None, executor: str = "local",
                address: str | None = None,
                progress: Callable[[CompareProgress], None] | None = None, keep_jobs: bool = False,
                out: str | Path | None = None, resume: bool = False, keep_going: bool = False,
                decide_timeout: float | None = None, run_timeout: float | None = None,
                run_memory: int | None = None) -> CompareResult:
    """Run every task (in ``workers`` local processes, 1 = in this process, or on Ray) and tabulate.

    ``keep_going``: a run whose policy fails (raises, returns a bad decision, or runs one decide()
    longer than ``decide_timeout`` seconds) becomes a failed row (``CompareResult.failed``) and the
    rest are ranked; without it the first failure stops the comparison.

    A user policy's every run happens in a child process (whatever ``workers`` says) under limits
    the parent enforces: ``decide_timeout`` per call into the policy, ``run_timeout`` seconds per
    run, ``run_memory`` bytes (default: a fair share of this machine, simsched.runs.isolated).

    Results come back in task order whatever the executor, so they equal a serial run.
    ``keep_jobs`` keeps every run's per-job table (``CompareResult.jobs``).
    With ``out``, finished runs are journalled there as they finish; ``resume``
    reuses them. An interrupt raises :class:`CompareInterrupted` with the finished rows.
    """
    import time

    if resume and keep_jobs:
        raise InputError("compare: --resume cannot be combined with --keep-jobs (the journal keeps metrics, "
                         "not per-job tables); resume without --keep-jobs, or start over")
    tasks = plan(spec, keep_jobs)
    journal = _Journal(journal_path(out), spec, tasks, resume) if out is not None else None
    done = dict(journal.rows) if journal else {}
    todo = [i for i in range(len(tasks)) if i not in done]
    workers = max(1, min(workers or os.cpu_count() or 1, max(len(todo), 1)))
    if executor == "local" and workers == 1:
        todo = run_order(tasks, todo)
    else:
        close_kept()  # the check's child: the runs happen in the pool's workers (each keeps its own)
    shown = short_labels(spec.schedulers, spec.scenario)
    limits = Limits(decide_timeout, run_timeout, run_memory if run_memory is not None else default_memory(workers))
    started = time.perf_counter()
    finished: dict[int, dict[str, Any]] = {}
    completed: set[int] = set(done)

    def running() -> tuple[str, ...]:
        # the executors start tasks in order, at most `workers` at a time
        waiting = [tasks[i] for i in todo if i not in completed][:workers]
        return tuple(f"{shown[t.scheduler]} seed {t.seed}" for t in waiting)

    def on_task(position: int) -> None:
        completed.add(todo[position])
        progress(CompareProgress(len(completed), len(tasks), running(), time.perf_counter() - started))

    def keep(position: int, row: dict[str, Any]) -> None:
        if "_stop" in row:  # a user policy's child died or was stopped (no --keep-going): reported at the end
            stops.append((todo[position], row["_stop"]))
            return
        check_hashes(tasks, {todo[position]: row})
        finished[todo[position]] = row
        if journal is not None and "_failed" not in row:  # a failed run is tried again on --resume
            journal.add(todo[position], {k: v for k, v in row.items() if k != "_jobs"})

    stops: list[tuple[int, str]] = []
    if progress is not None:
        progress(CompareProgress(len(completed), len(tasks), running(), 0.0))
    try:
        try:
            with TaskRunner(executor, workers, address) as runner:
                sent, shipped = _for_ray(runner, [tasks[i] for i in todo]) if executor == "ray" \
                    else ([tasks[i] for i in todo], None)
                reuse = executor == "local"  # a Ray worker outlives the comparison: no child kept there
                results = runner.map(run_task_guarded, [(task, keep_going, decide_timeout, shipped, limits, reuse)
                                                        for task in sent],
                                     on_task=on_task if progress else None, on_each=keep)
        except BrokenProcessPool:
            results = _after_a_worker_died(tasks, todo, finished, keep, done, keep_going, decide_timeout, limits)
        except TasksLost as exc:  # Ray gave up on some runs; every other run finished and is kept
            results = _after_runs_lost(exc, tasks, todo, finished, keep, done, keep_going)
    except KeyboardInterrupt as exc:
        rows = {**done, **finished}
        kept = [{k: v for k, v in rows[i].items() if k != "_jobs"} for i in sorted(rows)]
        raise CompareInterrupted(getattr(exc, "signum", None) or interrupts.received() or 2,
                                 kept, len(tasks)) from None
    finally:
        close_kept()  # the students' kept children (workers=1; a pool's workers end theirs as they end)
    if stops:  # the other runs are finished and kept (--resume runs the stopped one again)
        rows = {**done, **finished}
        kept = [{k: v for k, v in rows[i].items() if k != "_jobs"} for i in sorted(rows)]
        raise WorkerDied(f"compare: {min(stops)[1]}", kept, len(tasks))
    merged = {**done, **dict(zip(todo, results))}
    check_hashes(tasks, merged)
    rows = [merged[i] for i in range(len(tasks))]
    failed = [{"instance": row["instance"], "seed": row["seed"], "scheduler": row["scheduler"],
               "error": row["_failed"]} for row in rows if "_failed" in row]
    ran = [task for task, row in zip(tasks, rows) if "_failed" not in row]
    rows = [row for row in rows if "_failed" not in row]
    if failed:  # its scheduler stays in the tables, placed after those that completed every case
        if keep_jobs:
            keep_jobs = all("_jobs" in row for row in rows)
        if not rows:
            raise InputError(f"compare: every run failed; the first: {failed[0]['scheduler']} "
                             f"(seed {failed[0]['seed']}): {failed[0]['error']}")
    jobs = [row.pop("_jobs") for row in rows] if keep_jobs else None
    said = [row.pop("_warnings", []) for row in rows]
    result = tabulate(spec, pd.DataFrame(rows), failed)
    result.jobs = jobs
    result.warnings = run_warnings(ran, said, shown)
    result.failed = failed
    return result


def _for_ray(runner: TaskRunner, tasks: list[RunTask]) -> tuple[list[RunTask], Any]:
    """Tasks that carry their prepared scenario, and the files those scenarios name put in Ray's
    object store once, so a worker needs neither the scenario files nor the traces
    (simsched.runs.shipping). A task whose scenario fails to prepare goes as it is: its worker reports
    the error, as a local run would (a failed row under --keep-going)."""
    ready: dict[tuple, Any] = {}
    sent: list[RunTask] = []
    files: list[Path] = []
    for task in tasks:
        key = (task.instance, task.scheduler, repr(task.options), task.nodes_per_type, task.settings)
        if key not in ready:
            try:
                ready[key] = task.resolved if task.resolved is not None else prepared(task)
                files += files_of(ready[key])
            except SimschedError:
                ready[key] = None
        sent.append(replace(task, resolved=ready[key]))
    return sent, (Shipment(files, runner.put).handle if files else None)


def _after_a_worker_died(tasks: list[RunTask], todo: list[int], finished: dict[int, dict[str, Any]],
                         keep: Callable[[int, dict[str, Any]], None], done: dict[int, dict[str, Any]],
                         keep_going: bool = False, decide_timeout: float | None = None,
                         limits: Limits | None = None) -> list:
    """A worker process died and took the pool with it. Which run killed it is not known (several
    ran at once), so the runs not yet finished are run again one at a time, each in a fresh
    one-process pool: a pool that breaks now names its run exactly. Runs that finish are kept as
    usual; the first run under which a worker dies raises :class:`WorkerDied` naming it."""
    for position, index in enumerate(todo):
        if index in finished:
            continue
        with ProcessPoolExecutor(max_workers=1, initializer=worker_setup, initargs=(os.getpid(),)) as pool:
            future = pool.submit(run_task_guarded, tasks[index], keep_going, decide_timeout, None, limits)
            try:
                row = future.result()
            except BrokenProcessPool:
                task = tasks[index]
                message = (f"the worker process running {task.scheduler} on {task.instance} (seed {task.seed}) "
                           "died without a word (the policy ended its process, e.g. os._exit, or crashed the "
                           "interpreter)")
                if keep_going:  # a failed row, like any other failure of the policy
                    keep(position, {"instance": task.instance_name, "seed": task.seed, "scheduler": task.scheduler,
                                    "_failed": message})
                    continue
                rows = {**done, **finished}
                kept = [{k: v for k, v in rows[i].items() if k != "_jobs"} for i in sorted(rows)]
                raise WorkerDied(f"compare: the worker process running {task.scheduler} on {task.instance} "
                                 f"(seed {task.seed}) died without a word (the policy ended its process, e.g. "
                                 "os._exit, or crashed the interpreter); a policy must return a Decision",
                                 kept, len(tasks)) from None
        keep(position, row)
    return [finished[index] for index in todo]


class RunsLost(ResourceFailure):
    """Ray gave up on runs of a comparison (without ``--keep-going``): the finished runs are kept
    (``rows``, written as for :class:`WorkerDied`), ``--resume`` runs the rest."""

    def __init__(self, message: str, rows: list[dict[str, Any]], total: int) -> None:
        super().__init__(message)
        self.rows = rows
        self.total = total


def _after_runs_lost(exc: TasksLost, tasks: list[RunTask], todo: list[int], finished: dict[int, dict[str, Any]],
                     keep: Callable[[int, dict[str, Any]], None], done: dict[int, dict[str, Any]],
                     keep_going: bool) -> list:
    """Ray's retries ran out for some runs (their worker or node died each time). With ``keep_going``
    each becomes a failed row and the rest are ranked; without, :class:`RunsLost` names the first and
    keeps the finished runs."""
    position, reason = exc.lost[0]
    task = tasks[todo[position]]
    what = (f"the worker running {task.scheduler} on {task.instance} (seed {task.seed}) died on every one of "
            f"Ray's retries ({reason}); that is the cluster's resources (memory, a node lost), not a bug in simsched")
    if not keep_going:
        rows = {**done, **finished}
        kept = [{k: v for k, v in rows[i].items() if k != "_jobs"} for i in sorted(rows)]
        more = f" and {len(exc.lost) - 1} other run(s)" if len(exc.lost) > 1 else ""
        raise RunsLost(f"compare: {what}{more}", kept, len(tasks)) from None
    for position, reason in exc.lost:
        lost = tasks[todo[position]]
        keep(position, {"instance": lost.instance_name, "seed": lost.seed, "scheduler": lost.scheduler,
                        "_failed": f"lost on Ray: its worker died on every retry ({reason})"})
    return [finished[index] for index in todo]


def run_warnings(tasks: Sequence[RunTask], said: Sequence[Sequence[str]],
                 shown: dict[str, str] | None = None) -> list[str]:
    """The runs' warnings, each text once, prefixed with the runs that gave it when not all did
    (schedulers by their ``shown`` labels)."""
    by_text: dict[str, list[RunTask]] = {}
    for task, texts in zip(tasks, said):
        for text in texts:
            by_text.setdefault(text, []).append(task)
    out = []
    for text, where in by_text.items():
        if len(where) == len(tasks):
            out.append(text)
        else:
            names = list(dict.fromkeys((shown or {}).get(t.scheduler, t.scheduler) for t in where))
            seeds = sorted({t.seed for t in where})
            out.append(f"{', '.join(names)} (seed {', '.join(map(str, seeds))}): {text}")
    return out


def warnings_of(result: CompareResult) -> list[str]:
    """Everything to say before the tables: the runs' warnings and the schedulers that left jobs unfinished."""
    said = list(result.warnings)
    rank_by = result.spec.rank_by
    if not pd.to_numeric(result.runs.get(rank_by, pd.Series(dtype=float)), errors="coerce").notna().any():
        # a metric without tenants to have it is refused up front (metric_check); a mean over no jobs remains,
        # or a tenant whose jobs all lie past --jobs
        said.append(f"no run has a value of {rank_by} (a mean over no jobs, or its tenant's jobs are not among "
                    "the jobs run): every run ties on it; choose another --rank-by")
    marked = unfinished_runs(result)
    if marked:
        totals = result.runs.groupby("scheduler", sort=False).size().to_dict()
        said += [f"{result.labels[name]} left feasible jobs unfinished in {n} of {totals[name]} run(s): it is ranked after every "
                 "run that finished all its feasible jobs and marked † in the tables" for name, n in marked.items()]
    return said


def write_partial(out_dir: str | Path, exc: CompareInterrupted | WorkerDied | RunsLost, command: str) -> Path:
    """Keep the finished runs of an interrupted or failed comparison: compare_runs.csv and a PARTIAL marker."""
    out = Path(out_dir)
    with interrupts.deferred():
        out.mkdir(parents=True, exist_ok=True)
        why = "interrupted" if isinstance(exc, CompareInterrupted) else "failed"
        atomic.mark_partial(out, f"{why} comparison: {len(exc.rows)} of {exc.total} runs finished; "
                            f"compare_runs.csv lists them and nothing is ranked; continue with: {command} --resume")
        for stale in ("compare.csv", "compare.md"):  # an earlier comparison's tables would mislead
            (out / stale).unlink(missing_ok=True)
        columns = ["instance", "seed", "scheduler", *METRIC_KEYS]
        columns += list(dict.fromkeys(k for row in exc.rows for k in row if k not in columns and not k.startswith("_")))
        atomic.write_with(out / "compare_runs.csv",
                          lambda tmp: pd.DataFrame(exc.rows, columns=columns).to_csv(tmp, index=False))
        clear_earlier(out)  # an earlier comparison's per-job tables and figures would mislead too
    return out


def tabulate(spec: CompareSpec, runs: pd.DataFrame, failed: Sequence[dict[str, Any]] = ()) -> CompareResult:
    """Mean +- sample std (0 for one case) per metric and scheduler; ranks per case on ``rank_by``,
    runs that left jobs unfinished after every run that finished all its feasible jobs
    (:mod:`simsched.runs.ranking`).

    ``failed``: the runs whose policy failed (``--keep-going``). Their schedulers are placed after
    every scheduler that completed all cases, then by cases completed (``standing``, ranking.standing);
    their means are over the cases they completed (``n``). The best mean of a metric is picked among
    the schedulers that completed every case with every job finished, when there are any, and never
    from a mean over fewer cases than the others."""
    order = list(spec.schedulers)
    runs = runs.copy()
    runs["case"] = runs["instance"] + "#" + runs["seed"].astype(str)
    metrics = list(METRICS) + extra_metrics(runs)
    if spec.rank_by not in runs.columns:  # a tenant metric on runs without tenants: no values, every run ties
        runs[spec.rank_by] = math.nan
    runs["rank"] = ranking.case_ranks(runs, ["case"], spec.rank_by, higher_is_better(spec.rank_by))
    cases = _cases(runs, failed)
    completed = runs.groupby("scheduler", sort=False).size().reindex(order, fill_value=0).astype(int)
    marked = ranking.incomplete_counts(runs)
    full = [name for name in order if completed[name] == len(cases)]
    eligible = [name for name in full if name not in marked] or full
    records = []
    grouped = runs.groupby("scheduler", sort=False)
    shown, files = short_labels(order, spec.scenario), policy_files(order, spec.scenario)
    for key, label, better in metrics:
        means = grouped[key].mean().reindex(order)
        stds = grouped[key].std(ddof=1).reindex(order).fillna(0.0)
        counts = grouped[key].count().reindex(order, fill_value=0).astype(int)
        most = int(counts.max())
        pool = [name for name in eligible if counts[name] == most]  # no best from fewer cases
        candidates = means[pool].dropna()
        best_value = (candidates.max() if better else candidates.min()) if len(candidates) else math.nan
        for name in order:
            records.append({"metric": key, "label": label, "scheduler": name, "mean": float(means[name]),
                            "std": float(stds[name]), "n": int(counts[name]),
                            "best": name in pool and bool(math.isclose(means[name], best_value, rel_tol=1e-12,
                                                                      abs_tol=1e-12)),
                            "higher_is_better": better, "unfinished_runs": marked.get(name, 0),
                            "failed_runs": len(cases) - int(completed[name]),
                            "shown_as": shown[name], "policy_file": files[name]})
    table = pd.DataFrame(records)
    ranks = runs.pivot(index="scheduler", columns="case", values="rank").reindex(index=order, columns=cases)
    ranks.index.name, ranks.columns.name = "scheduler", "case"
    ranks["mean_rank"] = ranks[cases].mean(axis=1)  # over the cases it completed (NaN for none)
    standing = pd.DataFrame({"completed": completed, "failed": len(cases) - completed,
                             "mean_rank": ranks["mean_rank"]})
    standing["place"] = ranking.standing(completed, len(cases), ranks["mean_rank"])
    runs = runs.drop(columns="case")
    return CompareResult(spec, runs, table, ranks, standing=standing)


def _cases(runs: pd.DataFrame, failed: Sequence[dict[str, Any]]) -> list[str]:
    """Every case ("instance#seed"), the failed runs' too, in plan order (instance, then seed)."""
    pairs = list(zip(runs["instance"], runs["seed"])) + [(f["instance"], f["seed"]) for f in failed]
    instances = {name: i for i, name in enumerate(dict.fromkeys(name for name, _ in pairs))}
    ordered = sorted(dict.fromkeys((name, int(seed)) for name, seed in pairs), key=lambda p: (instances[p[0]], p[1]))
    return [f"{name}#{seed}" for name, seed in ordered]


def extra_metrics(runs: pd.DataFrame) -> list[tuple[str, str, bool]]:
    """The second table's metrics the runs have: the starvation ones; the fairness ones and each
    tenant's mean wait (``avg_wait@<tenant>``) when a run has tenants."""
    def has(key: str) -> bool:
        return key in runs.columns and bool(pd.to_numeric(runs[key], errors="coerce").notna().any())

    chosen = [(key, label, higher) for key, label, higher, _ in STARVATION_METRICS if key in runs.columns]
    chosen += [(key, label, higher) for key, label, higher, _ in FAIRNESS_METRICS if has(key)]
    chosen += [(key, f"Avg wait, tenant {visible(key[len(TENANT_WAIT):])} (s)", False)
               for key in runs.columns if key.startswith(TENANT_WAIT) and has(key)]
    return chosen


def unfinished_runs(result: CompareResult) -> dict[str, int]:
    """Scheduler -> how many of its runs left feasible jobs unfinished (marked † in the tables)."""
    return ranking.incomplete_counts(result.runs)
