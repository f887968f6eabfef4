"""Learning a priority function by GP (SPEC §6, the paper's Algorithm 3): ``python -m simsched learn``.

Instances are the scenario under other seeds: training seeds
``first_seed .. first_seed + train - 1``, validation seeds the next
``validation`` ones (defaults 1000..1049 and 1050..1059, so they do not
overlap the seeds 1, 2, ... that ``run`` and ``compare`` use).

Algorithm 3, as run here:

1. I = ramped half-and-half population of n; evaluate it on a random subset
   D_0 of alpha training instances (selection needs a fitness to start from).
2. Each generation: draw D_sub (alpha instances without replacement);
   while |O| < n: two k-tournaments on I's current fitness, subtree crossover,
   and with probability r subtree mutation of both children; evaluate I u O on
   D_sub; keep the best n (stable: ties keep parents first, then order).
3. Evaluate the final I on the validation instances; the best one wins.

fitness(c) = sum over the instances of objective(c, i) / objective(SRSF, i),
where objective is the run's scalarised §7 objective with MCT allocation and
SRSF is the built-in ``g * d``. Objectives are memoised per (expression,
instance) within a generation, so duplicates and surviving parents cost
nothing when an instance repeats.

All draws come from one Generator, ``stream(seed, "gp")``, consumed in the
main process in a fixed order; evaluation draws nothing, so serial, process
pool and Ray runs give identical results. A checkpoint (population, fitness,
``bit_generator.state``, history, generation) is written atomically after
every generation next to the output, so ``--resume`` continues to the same
result as an uninterrupted run and Ctrl-C leaves a usable checkpoint. A
resume may raise ``generations`` (the other settings must match): generation
g draws the same numbers whatever the final count.
"""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simsched.config import keys as scenario_keys
from simsched.config.scenario import load_scenario, read_toml
from simsched.core import interrupts, limits
from simsched.core.atomic import write_text
from simsched.core.errors import InputError, SimschedError
from simsched.core.inputs import note_read, reads
from simsched.core.seeding import stream
from simsched.evo import gp
from simsched.evo.priority import (
    BUILTIN,
    TERMINALS,
    NanPriority,
    from_json,
    parse,
    save_priority,
    to_json,
)
from simsched.evo.scheduler import make_planner_scheduler
from simsched.learning import fastsim
from simsched.learning import gp_instances as learn_instances
from simsched.learning.eta import LearnEta
from simsched.runs import single as api
from simsched.runs.parallel import TaskRunner
from simsched.runs.shipping import Handle, Shipment, files_of, into_mirror, localize_file

CHECKPOINT_FORMAT = "simsched-gp-checkpoint"
#: the keys a ``[learn]`` table may hold (flags override them).
#: the [learn] keys, declared (type, default, range, meaning) in simsched.config.keys
LEARN_KEYS = scenario_keys.names("learn")


#: training instances per generation (the paper's alpha), unless train is smaller
DEFAULT_ALPHA = 3


@dataclass(frozen=True, slots=True)
class LearnConfig:
    """How to learn: the paper's settings by default (SPEC §6)."""

    population: int = 512
    generations: int = 100
    alpha: int = DEFAULT_ALPHA
    train: int = 50
    validation: int = 10
    first_seed: int = 1000
    tournament: int = 7
    max_depth: int = 7
    init_min: int = 2
    init_max: int = 6
    mutation_rate: float = 0.1
    mutation_depth: int = 4
    internal_bias: float = 0.9
    terminals: tuple[str, ...] = TERMINALS
    constants: tuple[float, ...] = ()
    jobs: int | None = None
    seed: int = 0
    instances: str = "seeds"  # where instances come from (simsched.learning.gp_instances)
    instance_seed: int = 0  # "paper": the instance-set seed
    sizes: tuple[int, ...] = ()  # "sizes": node counts of the single cluster

    def __post_init__(self) -> None:
        def need(name: str, ok: bool, what: str) -> None:
            if not ok:
                raise InputError(f'learn: "{name}" {what}, got {getattr(self, name)!r}')

        for name in ("population", "generations", "alpha", "train", "validation", "tournament"):
            need(name, _is_int(getattr(self, name)) and getattr(self, name) >= (0 if name == "generations" else 1),
                 "must be an integer >= " + ("0" if name == "generations" else "1"))
        for name in ("first_seed", "seed", "init_min", "init_max", "max_depth", "mutation_depth"):
            need(name, _is_int(getattr(self, name)) and getattr(self, name) >= 0, "must be an integer >= 0")
        need("alpha", self.alpha <= self.train, f"must be <= train ({self.train})")
        need("init_max", self.init_min <= self.init_max <= self.max_depth,
             f"must be between init_min ({self.init_min}) and max_depth ({self.max_depth})")
        need("mutation_depth", self.mutation_depth >= 0, "must be >= 0")
        need("mutation_rate", _is_number(self.mutation_rate) and 0 <= self.mutation_rate <= 1,
             "must be a number in [0, 1]")
        need("internal_bias", _is_number(self.internal_bias) and 0 <= self.internal_bias <= 1,
             "must be a number in [0, 1]")
        need("jobs", self.jobs is None or (_is_int(self.jobs) and self.jobs >= 1), "must be an integer >= 1")
        need("terminals", bool(self.terminals) and all(t in TERMINALS for t in self.terminals)
             and len(set(self.terminals)) == len(self.terminals),
             f"must be distinct names from {', '.join(TERMINALS)}")
        need("constants", all(_is_number(c) and math.isfinite(c) for c in self.constants), "must be finite numbers")
        need("instances", self.instances in learn_instances.SOURCES,
             f"must be one of {', '.join(learn_instances.SOURCES)}")
        need("instance_seed", _is_int(self.instance_seed) and self.instance_seed >= 0, "must be an integer >= 0")
        need("sizes", all(_is_int(n) and n >= 1 for n in self.sizes), "must be node counts >= 1")
        need("sizes", bool(self.sizes) == (self.instances == "sizes"), 'go with instances = "sizes" (only)')
        if self.instances == "sizes":
            need("train", self.train == len(self.sizes), f"must equal the number of sizes ({len(self.sizes)})")
            need("validation", self.validation == len(self.sizes),
                 f"must equal the number of sizes ({len(self.sizes)})")
        if self.instances == "paper":
            need("train", self.train <= 50, "must be <= 50 (the paper's training set)")
            need("validation", self.validation <= 10, "must be <= 10 (the paper's validation set)")

    @property
    def primitives(self) -> gp.PrimitiveSet:
        return gp.PrimitiveSet(terminals=tuple(self.terminals), constants=tuple(float(c) for c in self.constants))

    def _keys(self) -> tuple[list, list]:
        return learn_instances.keys(self.instances, first_seed=self.first_seed, train=self.train,
                                    validation=self.validation, instance_seed=self.instance_seed,
                                    sizes=tuple(self.sizes))

    @property
    def training_seeds(self) -> list[learn_instances.InstanceKey]:
        """Training instance keys: seeds of the scenario (default), or paper/size instance keys."""
        return self._keys()[0]

    @property
    def validation_seeds(self) -> list[learn_instances.InstanceKey]:
        return self._keys()[1]

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["terminals"] = list(self.terminals)
        data["constants"] = [float(c) for c in self.constants]
        data["sizes"] = list(self.sizes)
        return data


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def learn_config(scenario_path: str | Path, **flags: Any) -> LearnConfig:
    """The scenario's ``[learn]`` table (validated) with non-None ``flags`` on top."""
    path = Path(scenario_path)
    scenario = load_scenario(path)
    table = scenario_keys.DeclaredParams(read_toml(path).get("learn", {}), "learn", path)
    values: dict[str, Any] = {"seed": scenario.seed}
    ints = [k for k in LEARN_KEYS if k not in ("mutation_rate", "internal_bias", "terminals", "constants",
                                               "instances", "sizes")]
    for key in ints:
        if table.has(key):
            values[key] = table.get(key, int, min_value=1 if key in ("population", "alpha", "train", "validation",
                                                                     "tournament", "jobs") else 0)
    for key in ("mutation_rate", "internal_bias"):
        if table.has(key):
            values[key] = table.get(key, float, min_value=0, max_value=1)
    if table.has("terminals"):
        terminals = table.get_list("terminals", str)
        for name in terminals:
            if name not in TERMINALS:
                raise table.error("terminals", f"unknown terminal {name!r}; valid: {', '.join(TERMINALS)}")
        values["terminals"] = tuple(terminals)
    if table.has("constants"):
        constants = table.get("constants", list)
        if not all(_is_number(c) and math.isfinite(c) for c in constants):
            raise table.error("constants", f"every item must be a finite number, got {constants!r}")
        values["constants"] = tuple(float(c) for c in constants)
    if table.has("instances"):
        values["instances"] = table.get("instances", str, choices=learn_instances.SOURCES)
    if table.has("sizes"):
        values["sizes"] = tuple(table.get_list("sizes", int))
    table.finish()
    values.update({k: v for k, v in flags.items() if v is not None})
    if values.get("instances") == "sizes":  # one training and one validation instance per size, alpha 1
        if not values.get("sizes"):
            raise table.error("sizes", 'is required with instances = "sizes": node counts of the single cluster, '
                              "e.g. sizes = [80, 100, 120]")
        values.setdefault("train", len(values.get("sizes", ())))
        values.setdefault("validation", len(values.get("sizes", ())))
        values.setdefault("alpha", 1)
    if "alpha" not in values and "train" in values:  # a small taste (--train 2): every instance each generation
        values["alpha"] = min(DEFAULT_ALPHA, values["train"])
    learn_instances.check_scenario(values.get("instances", "seeds"), scenario)
    unknown = set(values) - set(LEARN_KEYS)
    if unknown:
        raise InputError(f"learn: unknown option(s) {', '.join(sorted(unknown))}; valid: {', '.join(LEARN_KEYS)}")
    try:
        config = LearnConfig(**values)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    where = f"{path}: learn population = {config.population}"
    limits.check_memory(where, "GP individuals (parents and offspring)", 2 * config.population,
                        limits.BYTES_PER_INDIVIDUAL)
    limits.check_steps(f"{where}, generations = {config.generations}", "simulation runs",
                       _expected_evaluations(config), limit=limits.MAX_RUNS,
                       hint="use a smaller population, fewer generations or fewer instances")
    return config


# ---------------------------------------------------------------- one evaluation (runs in workers)
@functools.lru_cache(maxsize=8)
def _scenario(path: str) -> Any:
    return into_mirror(load_scenario(path))  # (a scenario shipped to a Ray worker: its absolute names too)


def shipped_objective(objective_fn: ObjectiveFn, shipped: Handle, scenario_path: str,
                      seed: learn_instances.InstanceKey, graph_json: str, jobs: int | None) -> float:
    """``objective_fn`` on a Ray worker that may not see the driver's files: the scenario file and the
    files it names travel with the tasks (simsched.runs.shipping) and are read from this worker's
    mirror of them when the driver's paths are not readable here."""
    return objective_fn(localize_file(scenario_path, shipped), seed, graph_json, jobs)


def ship_inputs(runner: TaskRunner, scenario_path: Path, scenario: Any) -> Handle | None:
    """Put the files a learn's workers read in Ray's object store once: the scenario file, the TOML
    files and quota tables it includes (as loading it noted them, simsched.core.inputs) and the
    files it names (a trace, a policy file)."""
    files = [scenario_path.resolve(), *files_of(scenario)]
    files += [path for path, what in reads().items() if what in ("TOML file", "quota table") and path.is_file()]
    return Shipment(files, runner.put).handle


@functools.lru_cache(maxsize=64)
def _compiled_instance(path: str, seed: learn_instances.InstanceKey, jobs: int | None) -> Any:
    """The instance's arrays for the compiled run, built once per worker (None: use the engine)."""
    return fastsim.prepare(learn_instances.resolve(_scenario(path), seed), jobs=jobs)


def run_objective(scenario_path: str, seed: learn_instances.InstanceKey, graph_json: str, jobs: int | None) -> float:
    """The §7 scalarised objective of one run: the instance ``seed`` names (the scenario at that seed,
    or a paper/size instance key, see :mod:`simsched.learning.gp_instances`) with MCT + this priority.

    Runs the compiled replay of the engine (:mod:`simsched.learning.fastsim`, equal to
    :func:`run_objective_engine` exactly, tested) when it models the scenario,
    else the engine. A priority that gives NaN scores +inf.
    """
    instance = _compiled_instance(scenario_path, seed, jobs)
    if instance is None:
        return run_objective_engine(scenario_path, seed, graph_json, jobs)
    graph = from_json(json.loads(graph_json), "<gp individual>")
    try:
        return fastsim.objective(instance, graph)
    except NanPriority:
        return math.inf


def run_objective_engine(scenario_path: str, seed: learn_instances.InstanceKey, graph_json: str,
                         jobs: int | None) -> float:
    """:func:`run_objective` through the SimPy engine (the reference; ``--fitness-engine simpy``)."""
    scenario = _scenario(scenario_path)
    graph = from_json(json.loads(graph_json), "<gp individual>")
    scheduler = make_planner_scheduler(graph, allocation="mct", weights=scenario.objective_weights,
                                       kind=scenario.objective.kind, w=scenario.objective.w,
                                       decide_on=scenario.scheduler.decide_on)
    try:
        result = api.run(learn_instances.resolve(scenario, seed), jobs=jobs, scheduler=scheduler)
    except NanPriority:
        return math.inf
    if result.partial:  # pragma: no cover - only on an interrupted run
        raise KeyboardInterrupt
    objective = result.summary["objective"]
    # None: no feasible job in this instance (summary means over zero jobs are n/a); nothing to score
    return 0.0 if objective is None else float(objective)


ObjectiveFn = Callable[[str, int, str, "int | None"], float]
#: ``--fitness-engine`` choices: the function that scores one (candidate, instance); equal results
FITNESS_ENGINES: dict[str, ObjectiveFn] = {"compiled": run_objective, "simpy": run_objective_engine}


# ---------------------------------------------------------------- progress and state
@dataclass(frozen=True, slots=True)
class LearnProgress:
    """What the CLI shows: the phase, generation, evaluation counts, fitness so far, time.

    ``best``/``mean`` are the population's fitness after the last finished
    generation (on that generation's instances); ``generation_done`` is
    reported once per finished generation (0 = the initial population).
    """

    phase: str  # "init" | "generation" | "generation_done" | "validation" | "done"
    generation: int
    generations: int
    evaluated: int
    to_evaluate: int
    best: float
    mean: float
    elapsed_s: float
    eta_s: float | None  # None until a generation after the session's first has finished


@dataclass
class LearnResult:
    """The winner (validation best), its graph, and everything the output file records."""

    best: gp.Individual
    graph: Any
    meta: dict[str, Any]
    path: Path | None = None


@dataclass
class _State:
    generation: int
    population: list[gp.Individual]
    fitness: np.ndarray
    rng: np.random.Generator
    history: list[dict[str, Any]] = field(default_factory=list)
    init_seeds: list[int] = field(default_factory=list)  # instances of the initial evaluation


def checkpoint_path(out: str | Path) -> Path:
    out = Path(out)
    return out.with_name(out.name + ".ckpt")


def _write_checkpoint(path: Path, config: LearnConfig, digest: str, state: _State) -> None:
    data = {
        "format": CHECKPOINT_FORMAT, "version": 1, "config": config.as_dict(), "scenario_sha256": digest,
        "generation": state.generation, "population": [list(ind) for ind in state.population],
        "fitness": [float(f) for f in state.fitness], "rng_state": state.rng.bit_generator.state,
        "history": state.history, "init_seeds": state.init_seeds,
    }

    with interrupts.deferred():  # atomic, and not cut short: the previous checkpoint or this one
        write_text(path, json.dumps(data) + "\n")


def _read_checkpoint(path: Path, config: LearnConfig, digest: str) -> _State:
    note_read(path, "checkpoint")
    if not path.is_file():
        raise InputError(f"{path}: not a regular file; delete it or choose another --out")
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a readable checkpoint (binary content at byte {exc.start}); "
                         "delete it to start over") from None
    except (OSError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{path}: not a readable checkpoint ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        raise InputError(f"{path}: not a simsched GP checkpoint")
    saved = data.get("config", {})
    if not isinstance(saved, dict):
        raise InputError(f"{path}: damaged checkpoint: 'config' must be a table; delete it to start over")
    # generations may grow: generation g draws the same numbers whatever the final count is
    # a key the checkpoint lacks (written before the key existed) had its default value
    defaults = LearnConfig().as_dict()
    changed = sorted(k for k, v in config.as_dict().items()
                     if k != "generations" and saved.get(k, defaults[k]) != v)
    if changed:
        raise InputError(f"{path}: made with other settings ({', '.join(f'{k}={saved.get(k)!r}' for k in changed)}); "
                         "use the same options or delete the checkpoint")
    if data.get("scenario_sha256") != digest:
        raise InputError(f"{path}: made from a different version of the scenario file; delete it to start over")
    try:
        return _checkpoint_state(data, config)
    except InputError as exc:
        raise InputError(f"{path}: damaged checkpoint: {exc}; delete it to start over") from None
    except Exception as exc:  # noqa: BLE001 - foreign content that parses: any failure to use it is bad input
        raise InputError(f"{path}: damaged checkpoint ({type(exc).__name__}: {exc}); delete it to start over") from None


def _checkpoint_state(data: dict, config: LearnConfig) -> _State:
    """The state a checkpoint holds, each field checked: the RNG state must be a PCG64 state (the
    generator learning uses), the population valid individuals, one finite fitness per individual."""
    state = data.get("rng_state")
    expected = np.random.default_rng().bit_generator.state
    if not isinstance(state, dict) or state.get("bit_generator") != expected["bit_generator"] \
            or not isinstance(state.get("state"), dict) or set(state["state"]) != set(expected["state"]):
        raise InputError(f"rng_state is not a {expected['bit_generator']} state")
    rng = np.random.default_rng()
    rng.bit_generator.state = state
    generation = data.get("generation")
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < -1:
        raise InputError(f"generation must be an integer >= -1 (-1: the initial population), got {generation!r:.40}")
    raw = data.get("population")
    if not isinstance(raw, list) or not raw or not all(isinstance(ind, list) for ind in raw):
        raise InputError("population must be a non-empty list of individuals")
    population = [tuple(float(t) if isinstance(t, (int, float)) else t for t in ind) for ind in raw]
    for ind in population:
        gp.check(ind, config.primitives)
    fitness = np.asarray(data.get("fitness"), dtype=np.float64)
    if fitness.shape not in ((len(population),), (0,)) or np.isnan(fitness).any():  # (0,): not yet evaluated
        raise InputError(f"fitness must be {len(population)} numbers (no NaN)")
    history = data.get("history")
    if not isinstance(history, list):
        raise InputError("history must be a list")
    seeds = data.get("init_seeds", [])
    if not isinstance(seeds, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in seeds):
        raise InputError("init_seeds must be a list of integers")
    return _State(generation, population, fitness, rng, list(history), [int(x) for x in seeds])


# ---------------------------------------------------------------- fitness
class _Fitness:
    """Objectives through the runner, memoised per (expression, seed); fitness = sum of ratios to SRSF."""

    def __init__(self, runner: TaskRunner, scenario_path: Path, config: LearnConfig, objective_fn: ObjectiveFn,
                 on_result: Callable[[int, int], None], shipped: Handle | None = None) -> None:
        self.runner = runner
        self.shipped = shipped  # on Ray: the input files sent with every task
        self.scenario_path = str(scenario_path.resolve())
        self.config = config
        self.objective_fn = objective_fn
        self.on_result = on_result
        self.srsf = gp.from_graph(parse(BUILTIN["srsf"]))
        self.srsf_key = gp.to_infix(self.srsf)
        self.memo: dict[tuple[str, int], float] = {}
        self.runs = 0  # runs made so far (not memoised)

    def keep_only(self, seeds: Sequence[int]) -> None:
        """Forget objectives of other instances (SRSF's are kept: they are the normaliser)."""
        wanted = set(seeds)
        self.memo = {k: v for k, v in self.memo.items() if k[1] in wanted or k[0] == self.srsf_key}

    def pending(self, population: Sequence[gp.Individual], seeds: Sequence[int]) -> int:
        keys = {gp.to_infix(ind) for ind in population} | {self.srsf_key}
        return sum((k, s) not in self.memo for s in seeds for k in keys)

    def objectives(self, population: Sequence[gp.Individual], seeds: Sequence[int]) -> np.ndarray:
        """objective[i, s] for every individual and seed (runs what is not memoised, in a fixed order)."""
        keys = [gp.to_infix(ind) for ind in population]
        unique = dict.fromkeys([self.srsf_key, *keys])
        by_key = {self.srsf_key: self.srsf, **dict(zip(keys, population))}
        wanted = [(k, s) for s in seeds for k in unique if (k, s) not in self.memo]
        tasks = [(self.scenario_path, s, json.dumps(to_json(gp.to_graph(by_key[k], self.config.primitives))),
                  self.config.jobs) for k, s in wanted]
        total = len(tasks)
        fn: Callable[..., float] = self.objective_fn
        if self.shipped is not None:
            fn, tasks = shipped_objective, [(self.objective_fn, self.shipped, *task) for task in tasks]
        results = self.runner.map(fn, tasks, lambda done: self.on_result(done, total))
        self.memo.update(zip(wanted, (float(r) for r in results)))
        self.runs += total
        return np.array([[self.memo[k, s] for s in seeds] for k in keys], dtype=np.float64).reshape(len(keys),
                                                                                                   len(seeds))

    def srsf_objectives(self, seeds: Sequence[int]) -> np.ndarray:
        return self.objectives([self.srsf], seeds)[0]

    def fitness(self, population: Sequence[gp.Individual], seeds: Sequence[int]) -> np.ndarray:
        values = self.objectives(population, seeds)
        return ratios(values, self.srsf_objectives(seeds)).sum(axis=1)


def ratios(objectives: np.ndarray, srsf: np.ndarray) -> np.ndarray:
    """objective / SRSF objective; a non-finite objective counts as +inf (never selected)."""
    objectives = np.asarray(objectives, dtype=np.float64)
    srsf = np.asarray(srsf, dtype=np.float64)
    if not np.all(np.isfinite(srsf)) or np.any(srsf < 0):
        raise SimschedError(f"learn: SRSF objective is not a finite number >= 0 on an instance: {srsf.tolist()}")
    safe = np.where(srsf > 0, srsf, 1.0)
    # SRSF objective 0 (a perfect instance): 1 when the candidate is perfect too, else +inf.
    out = np.where(srsf > 0, objectives / safe, np.where(objectives == 0, 1.0, np.inf))
    return np.where(np.isfinite(objectives), out, np.inf)


# ---------------------------------------------------------------- Algorithm 3
def learn(scenario_path: str | Path, config: LearnConfig, *, out: str | Path | None = None,
          workers: int = 1, executor: str = "local", address: str | None = None, resume: bool = False,
          progress: Callable[[LearnProgress], None] | None = None,
          objective_fn: ObjectiveFn = run_objective,
          clock_fn: Callable[[], float] = time.perf_counter) -> LearnResult:
    """Run GP on ``scenario_path``'s instances; write ``out`` (and ``out``.ckpt every generation).

    ``objective_fn(scenario_path, seed, graph_json, jobs)`` must be a module-level
    function (it is sent to worker processes); the default runs the engine. ``clock_fn``: the
    seconds the time left is estimated from (:class:`~simsched.learning.eta.LearnEta`; a fake in tests).
    """
    scenario_path = Path(scenario_path)
    scenario = load_scenario(scenario_path)
    started = time.perf_counter()
    ckpt = checkpoint_path(out) if out is not None else None
    primitives = config.primitives
    total_evals = _expected_evaluations(config)
    # "done" counts evaluation slots (the upper bound in _expected_evaluations); the time left comes
    # from the generations after the session's first (simsched.learning.eta: the first pays the
    # warm-up and has no memo hits)
    clock = {"done": 0, "phase": "init", "generation": 0, "best": math.nan, "mean": math.nan}
    generation_slots = 2 * config.population * config.alpha
    timer = LearnEta(clock_fn)

    def report(done: int = 0, total: int = 0) -> None:
        if progress is None:
            return
        elapsed = time.perf_counter() - started
        slots = max(total_evals - config.population * config.validation - clock["done"], 0)
        phase = clock["phase"]
        current = {"init": config.population * config.alpha, "generation": generation_slots}.get(phase, 0)
        eta = 0.0 if phase == "done" else timer.remaining(slots, current, config.population * config.validation,
                                                          done, total)
        progress(LearnProgress(clock["phase"], clock["generation"], config.generations, done, total,
                               clock["best"], clock["mean"], elapsed, eta))

    with TaskRunner(executor, workers, address) as runner:
        shipped = ship_inputs(runner, scenario_path, scenario) if executor == "ray" else None
        workers = runner.capacity()  # on Ray: the cluster's CPUs, not this machine's
        fitness = _Fitness(runner, scenario_path, config, objective_fn, report, shipped)
        state = None
        if resume and ckpt is not None and ckpt.exists():  # a FIFO or device is refused, not skipped
            state = _read_checkpoint(ckpt, config, scenario.digest)
            if state.generation > config.generations:
                raise InputError(f"{ckpt}: already at generation {state.generation}, beyond --generations "
                                 f"{config.generations}")
            clock["done"] = _expected_evaluations(config, state.generation) if state.generation >= 0 else 0
        if state is None:
            rng = stream(config.seed, "gp")
            population = gp.ramped_half_and_half(rng, primitives, config.population, config.init_min,
                                                 config.init_max)
            seeds = _subset(rng, config)
            # generation -1: the initial population, drawn but not yet evaluated (checkpointed at once,
            # so an interrupt during its long first evaluation still leaves something to resume)
            state = _State(-1, population, np.empty(0), rng, init_seeds=seeds)
            if ckpt is not None:
                _write_checkpoint(ckpt, config, scenario.digest, state)
        if state.generation == -1:
            seeds = state.init_seeds
            report()
            timer.begin(fitness.runs)
            values = fitness.fitness(state.population, seeds)
            timer.end(config.population * config.alpha, fitness.runs)
            state.generation, state.fitness = 0, values
            state.history.append(_entry(0, seeds, state.population, values))
            _account(clock, config.population * config.alpha)
            if ckpt is not None:
                _write_checkpoint(ckpt, config, scenario.digest, state)
            clock.update(phase="generation_done", best=float(np.min(state.fitness)), mean=_finite_mean(state.fitness))
            report()
        clock.update(best=float(np.min(state.fitness)), mean=_finite_mean(state.fitness))
        while state.generation < config.generations:
            rng = state.rng
            clock.update(phase="generation", generation=state.generation + 1)
            seeds = _subset(rng, config)
            fitness.keep_only(seeds)
            offspring = _offspring(rng, state.population, state.fitness, config)
            merged = state.population + offspring
            report()
            timer.begin(fitness.runs)
            values = fitness.fitness(merged, seeds)
            timer.end(generation_slots, fitness.runs)
            keep = gp.select_best(values, config.population)
            state.population = [merged[i] for i in keep]
            state.fitness = values[keep]
            state.generation += 1
            state.history.append(_entry(state.generation, seeds, state.population, state.fitness))
            _account(clock, 2 * config.population * config.alpha)
            clock.update(phase="generation_done", best=float(np.min(state.fitness)), mean=_finite_mean(state.fitness))
            if ckpt is not None:
                _write_checkpoint(ckpt, config, scenario.digest, state)
            report()
        clock.update(phase="validation", generation=config.generations)
        valid = config.validation_seeds
        fitness.keep_only(valid)
        report()
        objectives = fitness.objectives(state.population, valid)
        srsf = fitness.srsf_objectives(valid)
        scores = ratios(objectives, srsf).mean(axis=1)
        winner = gp.select_best(scores, 1)[0]
    best = state.population[winner]
    graph = gp.to_graph(best, primitives)
    meta = {
        "learned_by": "python -m simsched learn (GP, Algorithm 3)",
        "scenario": scenario.name, "scenario_file": str(scenario_path), "scenario_sha256": scenario.digest,
        "objective_weights": list(scenario.objective_weights), "objective": scenario.objective.label,
        "allocation": "mct",
        "fitness": "sum over the generation's training instances of objective(candidate) / objective(srsf)",
        "config": config.as_dict(),
        "training_seeds": config.training_seeds,
        "prefix": list(best),
        "simplified": gp.simplified(best),
        "simplified_note": "sympy form reading % as plain division (differs where a denominator is 0)",
        "history": state.history,
        "validation": {
            "seeds": valid,
            "winner": {"infix": gp.to_infix(best), "objectives": objectives[winner].tolist(),
                       "mean_objective": float(objectives[winner].mean()), "mean_ratio_to_srsf": float(scores[winner])},
            "srsf": {"infix": BUILTIN["srsf"], "objectives": srsf.tolist(), "mean_objective": float(srsf.mean()),
                     "mean_ratio_to_srsf": 1.0},
            "population_mean_ratio": _finite_mean(scores),
        },
        "wall_time_s": time.perf_counter() - started,
        "executor": executor, "workers": workers,
    }
    clock.update(phase="done")
    report()
    path = save_priority(graph, out, **meta) if out is not None else None
    return LearnResult(best, graph, meta, path)


def _subset(rng: np.random.Generator, config: LearnConfig) -> list[learn_instances.InstanceKey]:
    drawn = rng.choice(config.train, size=config.alpha, replace=False)
    training = config.training_seeds
    return [training[int(i)] for i in drawn]


def _offspring(rng: np.random.Generator, population: list[gp.Individual], fitness: np.ndarray,
               config: LearnConfig) -> list[gp.Individual]:
    primitives = config.primitives
    out: list[gp.Individual] = []
    while len(out) < config.population:
        first = population[gp.tournament(rng, fitness, config.tournament)]
        second = population[gp.tournament(rng, fitness, config.tournament)]
        child1, child2 = gp.crossover(rng, first, second, config.max_depth, config.internal_bias)
        if rng.random() < config.mutation_rate:
            child1 = gp.mutate(rng, child1, primitives, config.max_depth, config.mutation_depth,
                               config.internal_bias)
            child2 = gp.mutate(rng, child2, primitives, config.max_depth, config.mutation_depth,
                               config.internal_bias)
        out.extend((child1, child2))
    return out[:config.population]


def _entry(generation: int, seeds: list[int], population: list[gp.Individual], values: np.ndarray) -> dict:
    best = int(np.argmin(values))
    finite = np.asarray(values)[np.isfinite(values)]
    return {"generation": generation, "instances": seeds, "best": float(values[best]),
            "mean": _finite_mean(values), "median": float(np.median(finite)) if finite.size else math.inf,
            "best_infix": gp.to_infix(population[best])}


def _finite_mean(values: np.ndarray) -> float:
    finite = np.asarray(values)[np.isfinite(values)]
    return float(finite.mean()) if finite.size else math.inf


def _expected_evaluations(config: LearnConfig, generations_done: int | None = None) -> int:
    """Upper bound on runs (memo hits make it smaller): init, generations, validation."""
    if generations_done is None:
        return (config.population * config.alpha + 2 * config.population * config.alpha * config.generations
                + config.population * config.validation)
    return config.population * config.alpha + 2 * config.population * config.alpha * generations_done


def _account(clock: dict, runs: int) -> None:
    clock["done"] += runs
