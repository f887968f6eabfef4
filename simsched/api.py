"""The Python API: ``simsched.run(scenario) -> RunResult`` (SPEC §7)."""

from __future__ import annotations

import json
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

import numpy
import pandas as pd
import simpy

import simsched
from simsched.engine import Engine, EngineConfig, Progress
from simsched.metrics import jobs_frame, summarize
from simsched.model import Fleet
from simsched.policies import Scheduler, build_scheduler, effective_allocation
from simsched.scenario import Scenario, load_scenario
from simsched.seeding import stream
from simsched.workloads import load_jobs
from simsched.workloads.table import to_job_specs


@dataclass
class RunResult:
    """What one run produced: per-job table, event log, summary (metrics + provenance)."""

    jobs: pd.DataFrame
    events: pd.DataFrame
    summary: dict = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        return bool(self.summary.get("partial"))

    def write(self, out_dir: str | Path) -> Path:
        """Write jobs.csv, events.csv and summary.json into ``out_dir``."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        self.jobs.to_csv(out / "jobs.csv", index=False)
        self.events.to_csv(out / "events.csv", index=False)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True) + "\n")
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

    def run(self, progress: Callable[[Progress], None] | None = None) -> RunResult:
        complete = self.engine.run(progress)
        return collect(self.engine, self.scenario, complete, self.skipped, time.perf_counter() - self.started)


def run(scenario: Scenario | str | Path, *, seed: int | None = None, jobs: int | None = None,
        progress: Callable[[Progress], None] | None = None, scheduler: Scheduler | None = None) -> RunResult:
    """Simulate ``scenario`` (a :class:`Scenario` or a TOML path) and return its results.

    ``scheduler`` replaces the scenario's ``[scheduler]`` policy with a ready object
    (GP learning runs candidate priority functions this way); placement options
    such as ``heterogeneous`` still come from the scenario.
    """
    return simulation(scenario, seed=seed, jobs=jobs, scheduler=scheduler).run(progress)


def simulation(scenario: Scenario | str | Path, *, seed: int | None = None,
               jobs: int | None = None, scheduler: Scheduler | None = None) -> Simulation:
    """Load and validate everything a run needs (all input errors surface here)."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    scenario = scenario.with_overrides(seed=seed, jobs=jobs)
    wall = time.perf_counter()
    fleet, table, skipped = prepare(scenario)
    specs = to_job_specs(table, fleet.largest_node)
    spec = scenario.scheduler
    # jobs may run only in their home cluster when the allocation is "home"; a scheduler
    # object given here says so with a true `restrict_to_home` attribute
    restrict = effective_allocation(spec) == "home" if scheduler is None else bool(
        getattr(scheduler, "restrict_to_home", False))
    if scheduler is None:
        scheduler = build_scheduler(spec, base_dir=scenario.path.resolve().parent,
                                    rng_for=lambda name: stream(scenario.seed, name), file=str(scenario.path),
                                    weights=scenario.objective_weights)
    engine = Engine(fleet, specs, scheduler, EngineConfig(
        heterogeneous=spec.heterogeneous,
        restrict_to_home=restrict,
        restart_penalty_s=spec.restart_penalty_s,
        interval_s=spec.interval_s,
    ))
    return Simulation(scenario, engine, skipped, wall)


def collect(engine: Engine, scenario: Scenario, complete: bool, skipped: dict, wall_s: float) -> RunResult:
    names = engine.fleet.cluster_names
    jobs = jobs_frame(engine.jobs, names)
    events = pd.DataFrame(engine.events, columns=["time", "event", "job_id", "detail"])
    cluster_gpus = {c.name: float(c.total_gpus) for c in engine.fleet.clusters}
    summary = summarize(jobs, cluster_gpus, scenario.objective_weights)
    summary.update({
        "scenario": scenario.name,
        "scenario_file": str(scenario.path),
        "scenario_sha256": scenario.digest,
        "seed": scenario.seed,
        "scheduler": {"policy": scenario.scheduler.policy, "placement": scenario.scheduler.placement,
                      "backfill": scenario.scheduler.backfill, "allocation": scenario.scheduler.allocation,
                      "heterogeneous": scenario.scheduler.heterogeneous},
        "partial": not complete,
        "simulated_until": float(engine.env.now),
        "decisions": engine.decisions,
        "skipped_rows": skipped,
        "wall_time_s": wall_s,
        "versions": {"simsched": simsched.__version__, "python": platform.python_version(),
                     "simpy": simpy.__version__, "numpy": numpy.__version__, "pandas": pd.__version__,
                     "networkx": metadata.version("networkx")},  # without importing it
    })
    return RunResult(jobs, events, summary)
