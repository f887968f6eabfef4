"""Search the calibration space of the main scenario (scenarios/philly_hetero.toml).

Issue 21's targets for the main scenario: FIFO mean wait <= 4 h, no wait
over 7 days (FIFO, the scenario's policy), FIFO/SJF mean JCT >= 1.5, FIFO
utilisation >= 0.6. They pull against each other (a low load gives short
waits but FIFO ~ SJF), so this script runs FIFO and SJF for every
combination of the given values and prints one row per (point, seed) with
the target figures and which targets hold.

    python tools/calibrate/main_scenario.py --load 0.8 0.9 --backfill easy conservative \
        --vary scheduler.reserve_depth=1,2,4 --seeds 1 2 3 [--jobs 20000] \
        [--set workload.diurnal=false] [--workers 2] [--markdown table.md]

``--vary KEY=V1,V2,...`` (repeatable) adds a dimension to the grid; the
script's own key ``fleet.nodes=10/12`` sets the node groups' counts (in
file order: ``--vary fleet.nodes=10/10,10/12``). Each
``--set KEY=VALUE`` (repeatable) applies to every run, like ``simsched run
--set``. A combination the scenario rejects (e.g. ``reserve_depth`` with
``conservative``) is skipped with a note. Rows are printed as they finish
(tab-separated, with a header), so a long search can be read while it runs;
run it niced on a shared machine. ``--markdown FILE`` also writes one line
per point with the range over the seeds of every figure and the number of
seeds that meet all four targets (the table docs/comparison.md quotes).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

HOUR = 3600.0
DAY = 86_400.0
TARGETS = {"wait<=4h": lambda r: r["fifo_wait_h"] <= 4.0,
           "max<=7d": lambda r: r["max_wait_d"] <= 7.0,
           "ratio>=1.5": lambda r: r["ratio"] >= 1.5,
           "util>=0.6": lambda r: r["util"] >= 0.6}
#: figure -> (heading, unit suffix, digits) in the markdown table
FIGURES = {"fifo_wait_h": ("FIFO mean wait", " h", 2), "sjf_wait_h": ("SJF mean wait", " h", 2),
           "max_wait_d": ("FIFO max wait", " d", 1), "sjf_max_wait_d": ("SJF max wait", " d", 1),
           "ratio": ("FIFO/SJF JCT", "", 2), "util": ("FIFO utilisation", "", 2),
           "large_wait_h": ("FIFO >8-GPU mean wait", " h", 1), "p99_h": ("FIFO p99 wait", " h", 1)}


def setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    try:
        return key, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return key, value


def dimension(text: str) -> tuple[str, list]:
    key, _, values = text.partition("=")
    return key, [setting(f"{key}={v}")[1] for v in values.split(",")]


def resized(scenario, counts: str | None):
    """The scenario with its node groups' counts replaced (``fleet.nodes = "10/12"``: the groups in file order)."""
    from dataclasses import replace

    if counts is None:
        return scenario
    wanted = [int(n) for n in str(counts).split("/")]
    groups = [(c, g) for c in scenario.clusters for g in c.nodes]
    if len(wanted) != len(groups):
        raise SystemExit(f"fleet.nodes={counts}: the scenario has {len(groups)} node groups")
    new = iter(wanted)
    clusters = tuple(replace(c, nodes=tuple(replace(g, count=next(new)) for g in c.nodes))
                     for c in scenario.clusters)
    return replace(scenario, clusters=clusters)


def measure(scenario_path: Path, keys: dict, seed: int, jobs: int | None) -> dict:
    """FIFO and SJF on one point: the target figures (max wait and utilisation of the FIFO run)."""
    import simsched
    from simsched.config.overrides import apply_overrides
    from simsched.config.scenario import load_scenario

    keys = dict(keys)
    base = resized(load_scenario(scenario_path), keys.pop("fleet.nodes", None))
    out: dict = {}
    started = time.perf_counter()
    for policy in ("fifo", "sjf"):
        scenario = apply_overrides(base, {**keys, "scheduler.policy": policy}, "main_scenario.py")
        out[policy] = simsched.run(scenario, seed=seed, jobs=jobs).summary
    fifo, sjf = out["fifo"], out["sjf"]
    return {
        "fifo_wait_h": fifo["avg_wait"] / HOUR,
        "sjf_wait_h": sjf["avg_wait"] / HOUR,
        "max_wait_d": fifo["max_wait"] / DAY,
        "sjf_max_wait_d": sjf["max_wait"] / DAY,
        "ratio": fifo["avg_jct"] / sjf["avg_jct"],
        "util": fifo["utilization"],
        "large_wait_h": fifo["starvation"]["wait_by_size"][">8"]["mean_wait"] / HOUR,
        "p99_h": fifo["starvation"]["p99_wait"] / HOUR,
        "wall_s": time.perf_counter() - started,
    }


def safe_measure(args: tuple) -> dict | str:
    from simsched.core.errors import SimschedError

    try:
        return measure(*args)
    except SimschedError as error:  # an invalid combination: say so and go on
        return str(error).splitlines()[0]


def label(point: dict) -> str:
    """``load=0.8, reserve_depth=4``: the point's keys without their table (booleans as in TOML)."""
    def text(value: object) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)
    return ", ".join(f"{key.rpartition('.')[2]}={text(value)}" for key, value in point.items()) or "as shipped"


def markdown(points: list[dict], results: dict) -> str:
    heads = ["point"] + [FIGURES[f][0] for f in FIGURES] + ["seeds meeting all 4"]
    lines = ["| " + " | ".join(heads) + " |", "|---|" + "---:|" * (len(heads) - 1)]
    for index, point in enumerate(points):
        rows = [r for (i, _), r in sorted(results.items()) if i == index and isinstance(r, dict)]
        if not rows:
            continue
        cells = [label(point)]
        for figure, (_, unit, digits) in FIGURES.items():
            low, high = min(r[figure] for r in rows), max(r[figure] for r in rows)
            text = f"{low:.{digits}f}" if f"{low:.{digits}f}" == f"{high:.{digits}f}" else \
                f"{low:.{digits}f}-{high:.{digits}f}"
            cells.append(text + unit)
        met = sum(all(ok(r) for ok in TARGETS.values()) for r in rows)
        cells.append(f"{met}/{len(rows)}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path, default=REPO / "scenarios" / "philly_hetero.toml")
    parser.add_argument("--load", type=float, nargs="+", default=None, help="workload.load values")
    parser.add_argument("--backfill", nargs="+", default=None, help="scheduler.backfill values")
    parser.add_argument("--vary", action="append", default=[], type=dimension, metavar="KEY=V1,V2")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--jobs", type=int, default=None, help="keep the first N jobs (jobs_limit)")
    parser.add_argument("--set", dest="settings", action="append", default=[], type=setting)
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    parser.add_argument("--markdown", type=Path, default=None, help="also write the per-point table here")
    args = parser.parse_args()
    grid = dict(args.vary)
    if args.load:
        grid["workload.load"] = args.load
    if args.backfill:
        grid["scheduler.backfill"] = args.backfill
    settings = dict(args.settings)
    # every point names its --set keys too, so a table from several searches says what each line ran
    points = [{**settings, **dict(zip(grid, values))} for values in itertools.product(*grid.values())]
    tasks = {(i, seed): (args.scenario, point, seed, args.jobs) for i, point in enumerate(points) for seed in args.seeds}
    columns = ["point", "seed", *FIGURES, "wall_s", "met"]
    print("\t".join(columns), flush=True)
    results: dict = {}
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = {key: pool.submit(safe_measure, task) for key, task in tasks.items()}
        for (i, seed), future in futures.items():
            row = results[(i, seed)] = future.result()
            if isinstance(row, str):
                print(f"{label(points[i])}\t{seed}\tskipped: {row}", flush=True)
                continue
            met = ",".join(name for name, ok in TARGETS.items() if ok(row)) or "-"
            cells = [label(points[i]), str(seed)] + [f"{row[c]:.2f}" for c in columns[2:-1]] + [met]
            print("\t".join(cells), flush=True)
    if args.markdown:
        args.markdown.write_text(markdown(points, results), encoding="utf-8")


if __name__ == "__main__":
    main()
