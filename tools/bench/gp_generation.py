"""Wall time of one GP generation (Algorithm 3), serial vs local worker processes.

    python tools/bench/gp_generation.py [SCENARIO] [--population 32] [--alpha 3] [--workers 1 2] [--json]

Runs ``learn`` with one generation and one validation instance and times the
generation phase alone (from its first progress report to the validation
phase). One generation evaluates parents and offspring (2 n candidates) on
alpha instances, so the time scales linearly in n: the script also prints the
time extrapolated to the paper's n = 512 and to the paper's full
configuration (initial population, 100 generations, validation on 10
instances; every run counted, i.e. without memo hits).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from simsched.evo.learn import LearnConfig, LearnProgress, learn

REPO = Path(__file__).resolve().parents[2]


def one_generation(scenario: Path, population: int, alpha: int, workers: int) -> dict:
    marks: dict[str, float] = {}

    def progress(p: LearnProgress) -> None:
        marks.setdefault(p.phase, time.perf_counter())

    config = LearnConfig(population=population, generations=1, alpha=alpha, validation=1, seed=1)
    result = learn(scenario, config, workers=workers, progress=progress)
    seconds = marks["validation"] - marks["generation"]
    runs = 2 * population * alpha
    return {"workers": workers, "population": population, "alpha": alpha, "generation_s": seconds,
            "runs": runs, "s_per_run": seconds / runs, "winner": result.meta["validation"]["winner"]["infix"]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default=str(REPO / "scenarios" / "paper_multicluster.toml"))
    p.add_argument("--population", type=int, default=32)
    p.add_argument("--alpha", type=int, default=3)
    p.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    rows = [one_generation(Path(args.scenario), args.population, args.alpha, w) for w in args.workers]
    full = LearnConfig()
    full_runs = full.population * full.alpha * (1 + 2 * full.generations) + full.population * full.validation
    for row in rows:
        row["generation_512_s"] = row["s_per_run"] * 2 * 512 * args.alpha
        row["paper_full_h"] = row["s_per_run"] * full_runs / 3600
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        print(f"workers {row['workers']}: one generation (n={row['population']}, alpha={row['alpha']}, "
              f"{row['runs']} runs) {row['generation_s']:.1f} s = {row['s_per_run']:.3f} s/run; "
              f"n=512: {row['generation_512_s'] / 60:.1f} min; paper's full configuration "
              f"({full_runs} runs): {row['paper_full_h']:.1f} h")
    if len(rows) > 1:
        print(f"speed-up of {rows[-1]['workers']} workers: {rows[0]['generation_s'] / rows[-1]['generation_s']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
