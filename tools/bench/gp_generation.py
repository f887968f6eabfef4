"""Wall time of one GP generation (Algorithm 3) at the paper's population, measured, not extrapolated.

    python tools/bench/gp_generation.py [SCENARIO] [--population 512] [--alpha 3] [--workers 2]
        [--seed 1] [--engine-sample 4] [--json]

What is timed, and why the figure is stable:

* **Fixed individuals.** ``learn`` runs with ``--seed`` (default 1): the
  initial population, the instances and the offspring are the same in every
  invocation, so two invocations time the same work.
* **Warm-up excluded, and stated.** The pool start-up, numba's cache load in
  each worker and the initial population's evaluation (generation 0) happen
  before the timed phase and are reported as ``warmup_s``. The timed phase is
  generation 1: variation, evaluation of parents and offspring on alpha new
  instances (building those instances in the workers included), selection.
* **Measured vs extrapolated.** ``generation_s`` is measured at the given
  population. ``paper_full_h`` (initial population + 100 generations +
  validation on 10 instances) is extrapolated from it and labelled so.
* ``runs`` is the number of simulations really made, the SRSF normaliser on
  the generation's instances included; ``memo_hits`` = 2 n alpha + alpha -
  runs (duplicate expressions, and SRSF on an instance seen before, cost none).
* The engine baseline, in the same invocation: ``--engine-sample`` of the
  generation's (candidate, instance) pairs are scored by both the compiled
  path and the SimPy engine in this process; the ratio of the per-run times
  and whether the objectives agree are reported.

Record ``uptime`` with the figures: the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from simsched.evo import gp
from simsched.evo.priority import to_json
from simsched.learning.gp import (
    LearnConfig,
    LearnProgress,
    learn,
    run_objective,
    run_objective_engine,
)

REPO = Path(__file__).resolve().parents[2]


def one_generation(scenario: Path, population: int, alpha: int, workers: int, seed: int) -> dict:
    marks: dict[str, float] = {}
    runs = {"generation": 0}

    def progress(p: LearnProgress) -> None:
        marks.setdefault(p.phase, time.perf_counter())
        if p.phase == "generation":
            runs["generation"] = max(runs["generation"], p.to_evaluate)

    config = LearnConfig(population=population, generations=1, alpha=alpha, validation=1, seed=seed)
    started = time.perf_counter()
    result = learn(scenario, config, workers=workers, progress=progress)
    seconds = marks["validation"] - marks["generation"]
    made = runs["generation"]
    history = result.meta["history"]
    generation_runs = 2 * population * alpha
    full = LearnConfig()
    # init = n alpha runs (half a generation's 2 n alpha), validation = n x 10 runs
    per_slot = seconds / generation_runs
    full_slots = full.population * full.alpha * (1 + 2 * full.generations) + full.population * full.validation
    return {
        "workers": workers, "population": population, "alpha": alpha, "seed": seed,
        "warmup_s": marks["generation"] - started, "generation_s": seconds, "measured": True,
        "runs": made, "memo_hits": generation_runs + alpha - made, "s_per_run": seconds / made if made else 0.0,
        "generation_512_s": seconds if population == 512 else per_slot * 2 * 512 * alpha,
        "generation_512_measured": population == 512,
        "paper_full_h": per_slot * full_slots / 3600,
        "paper_full_extrapolated": True,
        "instances": history[-1]["instances"], "best_after": history[-1]["best"],
    }


def engine_ratio(scenario: Path, population: int, alpha: int, seed: int, sample: int) -> dict:
    """Compiled vs engine per-run time on the first ``sample`` candidates of the same generation."""
    config = LearnConfig(population=population, alpha=alpha, seed=seed)
    from simsched.core.seeding import stream

    rng = stream(config.seed, "gp")
    individuals = gp.ramped_half_and_half(rng, config.primitives, population, config.init_min, config.init_max)
    seeds = [config.first_seed + int(i) for i in rng.choice(config.train, size=alpha, replace=False)]
    tasks = [(str(scenario.resolve()), seeds[k % alpha],
              json.dumps(to_json(gp.to_graph(individuals[k], config.primitives))), None) for k in range(sample)]
    for task in tasks:  # warm-up: numba load, instance build, engine imports
        run_objective(*task)
    run_objective_engine(*tasks[0])
    t0 = time.perf_counter()
    fast = [run_objective(*task) for task in tasks]
    fast_s = (time.perf_counter() - t0) / sample
    t0 = time.perf_counter()
    slow = [run_objective_engine(*task) for task in tasks]
    engine_s = (time.perf_counter() - t0) / sample
    return {"sample": sample, "compiled_s_per_run": fast_s, "engine_s_per_run": engine_s,
            "speedup": engine_s / fast_s if fast_s > 0 else float("inf"), "objectives_equal": fast == slow}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default=str(REPO / "scenarios" / "paper_multicluster.toml"))
    p.add_argument("--population", type=int, default=512)
    p.add_argument("--alpha", type=int, default=3)
    p.add_argument("--workers", type=int, nargs="+", default=[2])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--engine-sample", type=int, default=4, help="runs scored by both paths (0: skip)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    scenario = Path(args.scenario)
    rows = [one_generation(scenario, args.population, args.alpha, w, args.seed) for w in args.workers]
    report = {"scenario": str(scenario), "load_average": os.getloadavg(), "cpus": os.cpu_count(),
              "generations": rows}
    if args.engine_sample:
        report["engine"] = engine_ratio(scenario, args.population, args.alpha, args.seed, args.engine_sample)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    load = ", ".join(f"{x:.2f}" for x in report["load_average"])
    print(f"{scenario.name}, load average {load} on {report['cpus']} CPUs")
    for row in rows:
        n512 = "measured" if row["generation_512_measured"] else "extrapolated"
        print(f"workers {row['workers']}: generation 1 (n={row['population']}, alpha={row['alpha']}, seed "
              f"{row['seed']}) measured {row['generation_s']:.1f} s, {row['runs']} runs "
              f"({row['memo_hits']} memo hits), {row['s_per_run'] * 1e3:.1f} ms/run; warm-up (pool, numba, "
              f"generation 0) {row['warmup_s']:.1f} s, not counted")
        print(f"  n=512 generation: {row['generation_512_s']:.1f} s ({n512}); paper's full configuration: "
              f"{row['paper_full_h']:.2f} h (extrapolated)")
    if "engine" in report:
        e = report["engine"]
        print(f"engine baseline, same process, {e['sample']} runs: compiled {e['compiled_s_per_run'] * 1e3:.1f} "
              f"ms/run, SimPy engine {e['engine_s_per_run']:.2f} s/run, x{e['speedup']:.0f}; "
              f"objectives equal: {e['objectives_equal']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
