"""One simulation from the command line: load, run with live progress, write outputs and print the metric table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from simsched.cli.args import check_plot_flags as _check_plot_flags
from simsched.cli.args import command as _command
from simsched.cli.args import scheduler_flags as _scheduler_flags
from simsched.cli.args import settings_of
from simsched.config.overrides import apply_overrides
from simsched.config.resolve import policy_ref
from simsched.config.scenario import load_scenario
from simsched.core import heap, interrupts
from simsched.core.atomic import check_out_dir
from simsched.core.errors import InputError
from simsched.core.inputs import check_outputs, scenario_inputs
from simsched.core.outputs import require_format
from simsched.present.report import LiveProgress, metric_table, wide_console
from simsched.runs.isolated import AVAILABLE as ISOLATION
from simsched.runs.isolated import run_watched
from simsched.runs.single import (
    RUN_FILES,
    RunResult,
    is_user_code,
    limits_of,
    simulation,
    user_code_file,
)


def run_parsed(args: argparse.Namespace, stdout) -> int:
    pictures = _check_plot_flags(args, _command())  # before anything is created or run
    if args.format is not None:
        if not args.out:
            raise InputError(f"{_command()}: --format needs --out (it is the format of the tables written there)")
        require_format(args.format)
    if args.out:
        check_out_dir(args.out, create=False)  # made when the run writes (bad input below leaves none)
    scenario = with_settings(with_flags(load_scenario(args.scenario), args), args)
    console = wide_console(stderr=True, minimum=160)  # piped: the progress line and warnings are not cut
    quiet = args.quiet or args.json
    if args.out:  # refuse an --out that would replace an input (simsched.core.inputs)
        scenario_inputs(scenario)
        check_outputs([Path(args.out) / name for name in RUN_FILES], [Path(args.out) / "plots"])

    def warn(text: str) -> None:
        console.print(f"warning: {text}", style="yellow", highlight=False, soft_wrap=True)

    if ISOLATION and is_user_code(scenario, None):  # a user policy: in a child process, under the limits
        result = _watched(scenario, args, console, quiet, warn)
    else:
        ready = simulation(scenario, seed=args.seed, jobs=args.jobs)
        for warning in ready.warnings:
            warn(warning)
        if quiet:
            result = ready.run()
        else:
            with LiveProgress(console, scenario.name) as live:
                result = ready.run(progress=live)
        said = len(ready.warnings)
        del ready  # the engine (its job columns, queue and nodes) goes before the outputs are built, as in simsched.run
        heap.release()
        for warning in result.summary["warnings"][said:]:  # what the run found: before the table
            warn(warning)
    if args.out:
        result.write(args.out, format=args.format or "csv")
    if pictures and not result.partial:
        # the figures' modules (networkx and every kind of figure, about 0.3 s) load only with --plots or
        # --report: a run without pictures does not pay for them (issue 35)
        from simsched.present.plots.draw import draw

        drawn = draw(args.out, fmt=args.plot_format, plots=args.plots, report=args.report)
        if not quiet:
            console.print("wrote " + ", ".join(str(p) for p in drawn))
    with interrupts.deferred():
        if args.json:
            print(json.dumps(result.summary, indent=2, sort_keys=True), file=stdout)
        elif not args.quiet:
            title = f"{scenario.name}: {scenario.scheduler.policy} (seed {result.summary['seed']})"
            if result.partial:
                title += f" -- PARTIAL, interrupted at t={result.summary['simulated_until']:,.0f} s"
            table = metric_table(result.summary, title)
            wide_console([table]).print(table)  # a file or pipe: wide enough for the whole table
            if args.out:
                ext = args.format or "csv"
                console.print(f"wrote {Path(args.out) / ('jobs.' + ext)}, events.{ext}, nodes.{ext}, spells.{ext}, "
                              f"timeline.{ext}, summary.json")
    if result.partial or interrupts.received():
        code = interrupts.exit_code()
        what = "terminated" if code == 143 else "interrupted"
        if result.partial:
            where = f" written to {args.out} (marked PARTIAL)" if args.out else " (use --out DIR to keep them)"
            print(f"{what}: partial results{where}", file=sys.stderr)
        else:
            print(f"{what}: the run had finished; outputs are complete", file=sys.stderr)
        return code
    return 0


def _watched(scenario, args: argparse.Namespace, console, quiet: bool, warn):
    """The run of a user policy, in a child process under --decide-timeout, --run-timeout and
    --run-memory (simsched.runs.isolated): its warnings and progress come over the pipe."""
    limits = limits_of(args.decide_timeout, args.run_timeout, args.run_memory, _command())
    said: list[str] = []

    def target(send):
        ready = simulation(scenario, seed=args.seed, jobs=args.jobs)
        send(tuple(ready.warnings))  # what it said before simulating: a tuple, ahead of the Progress
        return ready.run(progress=None if quiet else send)

    def shown(live):
        def take(message) -> None:
            if isinstance(message, tuple):
                said.extend(message)
                for text in message:
                    warn(text)
            elif live is not None:
                live(message)
        return take

    who = f"{scenario.scheduler.policy} (seed {scenario.seed if args.seed is None else args.seed})"
    file = user_code_file(scenario, None)
    if quiet:
        result = run_watched(target, (), who=who, limits=limits, progress=shown(None), on_interrupt="partial",
                             file=file, returns=RunResult)
    else:
        with LiveProgress(console, scenario.name) as live:
            result = run_watched(target, (), who=who, limits=limits, progress=shown(live), on_interrupt="partial",
                                 file=file, returns=RunResult)
    for warning in result.summary["warnings"][len(said):]:
        warn(warning)
    return result


def with_settings(scenario, args: argparse.Namespace):
    """``--set KEY=VALUE``: dotted keys validated like an experiment spec's overrides, recorded in
    summary.json under ``overrides``."""
    from dataclasses import replace


    settings = settings_of(args)
    if not settings:
        return scenario
    scenario = apply_overrides(scenario, settings, "--set")
    return replace(scenario, overrides={**scenario.overrides, **settings})


def with_flags(scenario, args: argparse.Namespace):
    """Apply the single-run flags that replace scenario keys; each is checked like its
    TOML key and recorded in ``summary.json`` under ``overrides``."""
    from dataclasses import replace


    for key, value in _scheduler_flags(args).items():
        if key == "policy":
            value = policy_ref(value, scenario.path)
        scenario = scenario.with_scheduler_keys({key: value}, f"--{key}")
    recorded = {}
    if args.jobs is not None:
        recorded["jobs_limit"] = args.jobs
    if args.nodes_per_type is not None:
        scenario = scenario.with_overrides(nodes_per_type=args.nodes_per_type)
        recorded["nodes_per_type"] = args.nodes_per_type
    return replace(scenario, overrides={**scenario.overrides, **recorded}) if recorded else scenario
