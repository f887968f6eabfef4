"""Extrapolate a paper spec's full-preset CPU time from a finished quick-preset run (docs/paper.md).

    python tools/bench/paper_full_time.py experiments/paper/fig4.toml RESULTS_DIR --cpu 55.5
        [--exponent evo-gp=1.6 --exponent mct-=1.3 ...] [--workers 2]

RESULTS_DIR is the ``--out`` folder of ``experiment SPEC --preset quick``; ``--cpu`` is that command's
user + sys CPU seconds (``/usr/bin/time``, worker processes included). The figure is EXTRAPOLATED,
not measured, and says so:

1. per-run CPU = the run's ``wall_s`` x cpu / (sum of ``wall_s``): each run is charged its share of
   the measured CPU (runs shared the cores evenly, so this removes the load of other processes);
2. per scheduler, CPU = a * jobs^b: b from ``--exponent PREFIX=B`` (the first prefix of the
   scheduler's name that matches), else fitted by least squares on log-log over the quick runs when
   they have two or more job counts, else 1.5; a from the quick runs given b. Two small quick
   instances pin b badly (contention, not only size, sets a run's cost), so the docs give b from a
   wider range of sizes;
   a scheduler the quick preset does not run is priced like the dearest quick one of its prefix;
3. the full preset's plan (its job count per run from the generated workload, one per instance and
   grid point) is summed; ``--workers`` divides it for the wall time on that many idle cores.

Warm or cold: per-run CPU includes each run's own start-up (workload generation, numba kernels
loaded from cache), as in a real experiment.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from simsched.runs.experiment.grid import plan  # noqa: E402
from simsched.runs.experiment.spec import load_spec  # noqa: E402
from simsched.runs.experiment.store import read_planned  # noqa: E402
from simsched.runs.single import prepare  # noqa: E402


def fits(results, cpu: float, exponents: dict[str, float]) -> dict[str, tuple[float, float, str]]:
    share = results["wall_s"] * cpu / results["wall_s"].sum()
    out = {}
    for name, rows in results.assign(cpu=share).groupby("scheduler", sort=False):
        x, y = np.log(rows["jobs"].to_numpy(float)), np.log(rows["cpu"].to_numpy(float))
        given = next((b for prefix, b in exponents.items() if name.startswith(prefix)), None)
        if given is not None:
            out[name] = (float(np.mean(y - given * x)), given, "given")
        elif len(set(rows["jobs"])) >= 2:
            b, a = np.polyfit(x, y, 1)
            out[name] = (float(a), float(b), "fitted")
        else:
            out[name] = (float(np.mean(y - 1.5 * x)), 1.5, "default")
    return out


def _exponent(text: str) -> tuple[str, float]:
    prefix, _, value = text.partition("=")
    try:
        return prefix, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--exponent wants PREFIX=NUMBER, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("spec")
    p.add_argument("quick_dir")
    p.add_argument("--cpu", type=float, required=True, help="user + sys CPU seconds of the quick command")
    p.add_argument("--exponent", type=_exponent, action="append", default=[], metavar="PREFIX=B",
                   help="CPU ~ jobs^B for schedulers whose name starts with PREFIX (repeatable)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--preset", default="full")
    args = p.parse_args(argv)
    results, _, _ = read_planned(args.quick_dir)
    exponents = dict(args.exponent)
    model = fits(results, args.cpu, exponents)
    tasks = plan(load_spec(args.spec, args.preset))
    sizes: dict[tuple, int] = {}
    total: dict[str, float] = {}
    for task in tasks:
        key = (task.instance, task.point)
        if key not in sizes:
            sizes[key] = len(prepare(task.resolved)[1])
        base = task.scheduler if task.scheduler in model else task.scheduler.split("/")[0]
        if base not in model:  # not in the quick run: priced like the dearest one of its --exponent prefix
            prefix = next((q for q in exponents if task.scheduler.startswith(q)), None)
            alike = [n for n in model if prefix is not None and n.startswith(prefix)] or list(model)
            base = max(alike, key=lambda n: model[n][0] + model[n][1] * math.log(sizes[key]))
        a, b, _ = model[base]
        total[task.scheduler] = total.get(task.scheduler, 0.0) + math.exp(a + b * math.log(sizes[key]))
    print(f"{args.spec} --preset {args.preset}: {len(tasks)} runs, jobs per run "
          f"{min(sizes.values())}..{max(sizes.values())} (EXTRAPOLATED from {args.quick_dir}, {args.cpu:.0f} s CPU)")
    for name, (a, b, how) in model.items():
        print(f"  {name:24s} CPU ~ {math.exp(a):.3g} * jobs^{b:.2f} ({how}); full: {total.get(name, 0) / 3600:8.1f} h")
    for name in total:
        if name not in model:
            print(f"  {name:24s} (not in the quick run; priced like the dearest of its prefix): "
                  f"{total[name] / 3600:8.1f} h")
    cpu = sum(total.values())
    print(f"total: {cpu / 3600:.1f} CPU-hours = {cpu / 86400:.2f} CPU-days; "
          f"{cpu / args.workers / 3600:.1f} h on {args.workers} idle cores (extrapolated)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
