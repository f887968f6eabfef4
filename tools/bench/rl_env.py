"""Environment steps per second of ``simsched.learning.rl_env.SchedulingEnv``, warm.

    python tools/bench/rl_env.py [SCENARIO] [--episodes 3] [--policy first|random] [--json]

Runs one warm-up episode (imports, first-call costs), then times ``episodes``
more and reports steps/s over them, warm, measured (not extrapolated): with the
cost of ``reset()`` (loading the workload and building the engine) and without
it. For scale, the same instances are also run with the plain ``fifo``
scheduler in the same process, and the ratio of the two wall times is printed:
it is what driving the engine one decision at a time (and building an
observation per step) costs over the engine alone.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

import simsched
from simsched.config.scenario import load_scenario
from simsched.learning.rl_env import SchedulingEnv

REPO = Path(__file__).resolve().parents[2]


def episode(env: SchedulingEnv, seed: int, choose) -> tuple[int, float, float]:
    """(steps, seconds in reset, seconds in steps)."""
    started = time.perf_counter()
    _, info = env.reset(seed=seed)
    after_reset = time.perf_counter()
    steps, done = 0, False
    while not done:
        _, _, done, _, info = env.step(choose(info))
        steps += 1
    return steps, after_reset - started, time.perf_counter() - after_reset


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("scenario", nargs="?", default=str(REPO / "scenarios" / "rl" / "philly_contended.toml"))
    p.add_argument("--episodes", type=int, default=3)
    p.add_argument("--policy", choices=("first", "random"), default="random",
                   help="which allowed action the bench takes (default: uniformly random)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    scenario = load_scenario(args.scenario)
    env = SchedulingEnv(scenario)
    rng = np.random.default_rng(0)
    if args.policy == "first":
        def choose(info):
            return int(np.flatnonzero(info["action_mask"])[0])
    else:
        def choose(info):
            return int(rng.choice(np.flatnonzero(info["action_mask"])))
    episode(env, scenario.seed, choose)  # warm-up
    seeds = [scenario.seed + 1 + i for i in range(args.episodes)]
    steps = reset_s = step_s = 0.0
    for seed in seeds:
        n, r, s = episode(env, seed, choose)
        steps, reset_s, step_s = steps + n, reset_s + r, step_s + s
    fifo = replace(scenario.scheduler, policy="fifo", options={})
    engine_s = 0.0
    for seed in seeds:
        started = time.perf_counter()
        simsched.run(scenario.with_overrides(seed=seed, scheduler=fifo))
        engine_s += time.perf_counter() - started
    row = {"scenario": scenario.name, "episodes": args.episodes, "policy": args.policy, "warm": True,
           "extrapolated": False, "steps": int(steps), "steps_per_s": steps / step_s,
           "steps_per_s_with_reset": steps / (step_s + reset_s), "reset_s": reset_s / args.episodes,
           "episode_s": (step_s + reset_s) / args.episodes, "fifo_run_s": engine_s / args.episodes,
           "env_over_fifo": (step_s + reset_s) / engine_s}
    if args.json:
        print(json.dumps(row, indent=2))
        return 0
    print(f"{row['scenario']}: {row['steps']} steps over {args.episodes} episodes ({args.policy} actions), warm: "
          f"{row['steps_per_s']:,.0f} steps/s ({row['steps_per_s_with_reset']:,.0f} with reset); "
          f"episode {row['episode_s']:.2f} s vs the fifo scheduler's run {row['fifo_run_s']:.2f} s "
          f"({row['env_over_fifo']:.1f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
