"""Command line (SPEC §8): ``python -m simsched SCENARIO.toml [flags]`` and subcommands.

Exit codes: 0 ok, 2 bad input (one line naming file/key and what is valid),
1 internal error. Ctrl-C writes what was finished, marked partial.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from simsched.cli_args import Parser as _Parser
from simsched.cli_args import non_negative_int as _non_negative_int
from simsched.cli_args import positive_int as _positive_int
from simsched.errors import InputError, SimschedError

#: Subcommand name -> "module:function(argv) -> exit code", imported only when used.
#: A new subcommand is one line here and a module of its own.
SUBCOMMANDS: dict[str, str] = {
    "validate": "simsched.cli:_validate",
    "compare": "simsched.cli:_compare",
    "learn": "simsched.learn_cli:learn_command",
}


def _run_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m simsched", description="Simulate a scheduling scenario.",
                epilog="subcommands: " + ", ".join(SUBCOMMANDS) + " (python -m simsched SUBCOMMAND --help)")
    p.add_argument("scenario", help="scenario TOML file")
    _common(p)
    return p


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_non_negative_int, help="override the scenario seed")
    p.add_argument("--jobs", type=_positive_int, help="keep only the first N jobs (workload.jobs_limit)")
    p.add_argument("--out", metavar="DIR", help="write jobs.csv, events.csv, nodes.csv, spells.csv, timeline.csv and summary.json "
                                                "here (docs/outputs.md)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def _subcommand(name: str):
    module, _, function = SUBCOMMANDS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in SUBCOMMANDS:
            return _subcommand(argv[0])(argv[1:])
        return _run(argv)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SimschedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run(argv: list[str]) -> int:
    from rich.console import Console

    from simsched.api import simulation
    from simsched.report import LiveProgress, metric_table
    from simsched.scenario import load_scenario

    args = _run_parser().parse_args(argv)
    scenario = load_scenario(args.scenario)
    console = Console(stderr=True)
    quiet = args.quiet or args.json
    ready = simulation(scenario, seed=args.seed, jobs=args.jobs)
    if quiet:
        result = ready.run()
    else:
        with LiveProgress(console, scenario.name) as live:
            result = ready.run(progress=live)
    if args.out:
        result.write(args.out)
    if args.json:
        print(json.dumps(result.summary, indent=2, sort_keys=True))
    elif not args.quiet:
        title = f"{scenario.name}: {scenario.scheduler.policy} (seed {result.summary['seed']})"
        out = Console()
        if not out.is_terminal:  # a file or pipe: wide enough for one column per cluster
            out = Console(width=max(100, 34 + 16 * (len(scenario.clusters) + 1)))
        out.print(metric_table(result.summary, title))
        if args.out:
            console.print(f"wrote {Path(args.out) / 'jobs.csv'}, events.csv, nodes.csv, spells.csv, timeline.csv, "
                          "summary.json")
    if result.partial:
        print("interrupted: partial results" + (f" written to {args.out}" if args.out else ""), file=sys.stderr)
        return 130
    return 0


def _validate(argv: list[str]) -> int:
    """Check a scenario and its workload without simulating."""
    from simsched.api import prepare
    from simsched.scenario import load_scenario

    p = _Parser(prog="python -m simsched validate", description="Validate a scenario and its workload.")
    p.add_argument("scenario")
    args = p.parse_args(argv)
    scenario = load_scenario(args.scenario)
    fleet, table, skipped = prepare(scenario)
    print(f"{args.scenario}: ok: {len(fleet.clusters)} cluster(s), {len(fleet.nodes)} nodes, "
          f"{fleet.total_gpus} GPUs; {len(table)} jobs; {skipped['skipped']} rows skipped")
    return 0


def _compare(argv: list[str]) -> int:
    """Several schedulers over seeds and instances: mean +- std table, ranks, CSV/Markdown."""
    import os

    from rich.console import Console
    from rich.progress import Progress

    from simsched.compare import compare_spec, rich_tables, run_compare

    p = _Parser(prog="python -m simsched compare",
                description="Compare schedulers on a scenario over several seeds (and [compare] instances).")
    p.add_argument("scenario", help="scenario TOML file")
    p.add_argument("--schedulers", metavar="A,B,C",
                   help="comma-separated policy names or file.py:Class (default: [compare] schedulers)")
    p.add_argument("--seeds", type=_positive_int, help="seeds per instance: seed .. seed+N-1 (default 1)")
    p.add_argument("--workers", type=_positive_int,
                   help=f"local worker processes (default: CPU count, {os.cpu_count()}); 1 = no subprocesses")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local processes (default) or a Ray cluster (pip install -e '.[ray]')")
    p.add_argument("--address", help="Ray cluster address (with --executor ray; default: start a local Ray)")
    p.add_argument("--out", metavar="DIR", help="write compare.csv, compare_runs.csv and compare.md here")
    p.add_argument("--jobs", type=_positive_int, help="keep only the first N jobs of every instance")
    p.add_argument("--rank-by", metavar="METRIC", help="metric the ranks use (default avg_jct)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    args = p.parse_args(argv)
    schedulers = None
    if args.schedulers is not None:
        schedulers = [name.strip() for name in args.schedulers.split(",") if name.strip()]
        if not schedulers:
            raise InputError("python -m simsched compare: --schedulers: give at least one name")
    spec = compare_spec(args.scenario, schedulers=schedulers, seeds=args.seeds, jobs=args.jobs,
                        rank_by=args.rank_by)
    where = dict(workers=args.workers, executor=args.executor, address=args.address)
    if args.quiet:
        result = run_compare(spec, **where)
    else:
        with Progress(console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("runs", total=None)
            result = run_compare(spec, **where,
                                 progress=lambda done, total: bar.update(task, completed=done, total=total))
    if not args.quiet:
        console = Console()
        if not console.is_terminal:
            console = Console(width=max(100, 28 + 24 * len(spec.schedulers)))
        for table in rich_tables(result):
            console.print(table)
    if args.out:
        paths = result.write(args.out)
        if not args.quiet:
            print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    return 0
