"""Command line (SPEC §8): ``python -m simsched SCENARIO.toml [flags]`` and subcommands.

Exit codes (SPEC §8): 0 ok, 2 bad input (one line naming the file, key, line
or flag and what is valid; a user policy's failures name its file:line),
1 internal error, 130 interrupted (SIGINT), 143 terminated (SIGTERM). An
interrupt keeps what was finished: outputs are written atomically and are
complete or marked partial. ``--debug`` (any position, every subcommand)
shows the traceback behind an error. :func:`main` is the one guard every
subcommand runs under.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from simsched import interrupts
from simsched.atomic import RESOURCE_ERRNOS, RESOURCE_EXIT
from simsched.cli_args import Parser as _Parser
from simsched.cli_args import add_override_flags as _add_override_flags
from simsched.cli_args import add_plot_flags as _add_plot_flags
from simsched.cli_args import check_plot_flags as _check_plot_flags
from simsched.cli_args import non_negative_int as _non_negative_int
from simsched.cli_args import positive_float as _positive_float
from simsched.cli_args import positive_int as _positive_int
from simsched.cli_args import scheduler_flags as _scheduler_flags
from simsched.errors import InputError, SimschedError, did_you_mean
from simsched.inputs import forget as forget_inputs

#: Subcommand name -> "module:function(argv) -> exit code", imported only when used.
#: A new subcommand is one line here and a module of its own.
SUBCOMMANDS: dict[str, str] = {
    "validate": "simsched.cli:_validate",
    "gpu-types": "simsched.cli:_gpu_types",
    "compare": "simsched.cli:_compare",
    "learn": "simsched.learn_cli:learn_command",
    "rl": "simsched.rl.cli:rl_command",
    "experiment": "simsched.experiment.cli:experiment_command",
    "plot": "simsched.plots.cli:plot_command",
    "examples": "simsched.cli:_examples",
    "run": "simsched.cli:_run_named",
    "new": "simsched.cli:_new",
}


def _run_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m simsched", description="Simulate a scheduling scenario.",
                epilog="subcommands: " + ", ".join(SUBCOMMANDS) + " (python -m simsched SUBCOMMAND --help)")
    p.add_argument("scenario", help="scenario TOML file, or a shipped example's name (simsched examples)")
    p.add_argument("--version", action="version", version=f"simsched {_version()}")
    _common(p)
    return p


def _version() -> str:
    from simsched import __version__

    return __version__


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_non_negative_int, help="override the scenario seed")
    _add_override_flags(p)
    p.add_argument("--out", metavar="DIR", help="write jobs.csv, events.csv, nodes.csv, spells.csv, timeline.csv and summary.json "
                                                "here (docs/outputs.md)")
    p.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help="file format of the tables in --out (default csv; parquet needs pip install -e '.[parquet]')")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    _add_plot_flags(p)


def _subcommand(name: str):
    module, _, function = SUBCOMMANDS[name].partition(":")
    return getattr(importlib.import_module(module), function)


def main(argv: list[str] | None = None) -> int:
    """Run a command; every failure ends as one line on stderr and an exit code."""
    as_program = argv is None  # python -m simsched: a signal also arms the exit watchdog
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    try:
        forget_inputs()  # each command notes its own inputs (simsched.inputs)
        interrupts.install(watchdog=as_program)
        if argv and argv[0] in SUBCOMMANDS:
            return _subcommand(argv[0])(argv[1:])
        if argv and not argv[0].startswith("-") and not Path(argv[0]).exists():
            from simsched.examples import find, is_example

            if is_example(argv[0]):  # `simsched philly_hetero`: a shipped example by name
                return _run([str(find(argv[0])), *argv[1:]])
            hint = did_you_mean(argv[0], SUBCOMMANDS)
            if hint:  # `python -m simsched comapre ...`: a near miss of a subcommand, not a scenario
                raise InputError(f"python -m simsched: unknown subcommand {argv[0]!r}{hint}; "
                                 f"subcommands: {', '.join(SUBCOMMANDS)}")
        return _run(argv)
    except InputError as exc:
        return _fail(exc, f"error: {_one_line(exc)}", 2, debug)
    except SimschedError as exc:
        return _fail(exc, f"error: {_one_line(exc)}", 1, debug)
    except KeyboardInterrupt as exc:
        code = interrupts.exit_code(exc)
        return _fail(exc, f"{'terminated' if code == 143 else 'interrupted'}: stopped before any output "
                     "was written", code, debug)
    except OSError as exc:
        if exc.errno not in RESOURCE_ERRNOS:
            return _fail(exc, f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                         "(a bug in simsched; --debug shows the traceback)", 1, debug)
        return _fail(exc, resource_line(exc), RESOURCE_EXIT, debug)
    except ModuleNotFoundError as exc:  # run from a checkout without installing: not a bug, say what to do
        return _fail(exc, f"error: the package {exc.name!r} is not installed; install simsched with its "
                     "dependencies first, into the python that runs it: python -m pip install -e .  "
                     "(optional extras: docs in README.md)", 1, debug)
    except RecursionError as exc:  # deep input that slipped past validation: still one line
        return _fail(exc, "error: input nested too deeply (RecursionError); --debug shows where", 2, debug)
    except MemoryError as exc:
        return _fail(exc, "error: out of memory; use a smaller workload or fleet (--debug shows where)", 2, debug)
    except Exception as exc:  # noqa: BLE001 - the last guard: a bug, reported on one line
        return _fail(exc, f"internal error: {type(exc).__name__}: {_one_line(exc)} "
                     "(a bug in simsched; --debug shows the traceback)", 1, debug)


def resource_line(exc: OSError) -> str:
    """One line for an output that the disk, quota, mount or rights refuse (exit RESOURCE_EXIT)."""
    import errno
    import os

    where = exc.filename or "an output file"
    what = {errno.ENOSPC: "free some space or choose another --out",
            errno.EDQUOT: "free some of your quota or choose another --out",
            errno.EFBIG: "the file system refuses a file this large; choose another --out",
            errno.EROFS: "the file system is read-only; choose another --out"}.get(
        exc.errno, "you may not write there; check its permissions or choose another --out")
    name = errno.errorcode.get(exc.errno, str(exc.errno))
    return (f"error: cannot write {where}: {exc.strerror or os.strerror(exc.errno)} ({name}); {what}. "
            "Everything written before this stays as it was (an experiment continues with --resume).")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _fail(exc: BaseException, line: str, code: int, debug: bool) -> int:
    if debug:
        import traceback

        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    print(line, file=sys.stderr)
    return code


#: compare --keep-going: the exit code when some runs failed (docs/assignment.md, "For teachers")
KEEP_GOING_EXIT = 4
#: compare --keep-going without --decide-timeout: a generous limit per decide() call
DEFAULT_DECIDE_TIMEOUT_S = 60.0


def _examples(argv: list[str]) -> int:
    """``simsched examples``: the shipped example scenarios, by name."""
    p = _Parser(prog="python -m simsched examples", description="List the shipped example scenarios.")
    p.parse_args(argv)
    from simsched.examples import examples, root

    found = examples()
    width = max(len(example.name) for example in found)
    for example in found:
        trace = " [needs the real trace: download it first]" if example.needs_trace else ""
        print(f"{example.name:<{width}}  {example.summary}{trace}")
    print(f"\n{len(found)} examples in {root() / 'scenarios'}; run one with `simsched run NAME` "
          "(or `simsched NAME`), copy one with `simsched new FILE --from NAME`", file=sys.stderr)
    return 0


def _run_named(argv: list[str]) -> int:
    """``simsched run NAME|FILE [flags]``: a shipped example by name, or a scenario file."""
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m simsched run NAME|SCENARIO.toml [run flags]\n\nRun a shipped example by name "
              "(simsched examples lists them) or a scenario file; the flags are python -m simsched's.")
        return 0
    from simsched.examples import find

    target = argv[0] if Path(argv[0]).is_file() else str(find(argv[0]))
    return _run([target, *argv[1:]])


def _new(argv: list[str]) -> int:
    """``simsched new FILE [--from NAME]``: write a commented starter scenario to edit."""
    p = _Parser(prog="python -m simsched new", description="Write a starter scenario file to edit.")
    p.add_argument("file", help="the scenario file to write (must not exist)")
    p.add_argument("--from", dest="source", metavar="NAME", help="the example to start from (default philly_hetero)")
    args = p.parse_args(argv)
    from simsched.atomic import check_out_file, write_text
    from simsched.examples import starter

    path = Path(args.file)
    if path.exists():
        raise InputError(f"python -m simsched new: {path} exists; give a new file name (nothing is overwritten)")
    check_out_file(path, "FILE")
    write_text(path, starter(args.source))
    print(f"wrote {path}; check it with `simsched validate {path}`, run it with `simsched {path}`", file=sys.stderr)
    return 0


def _run(argv: list[str]) -> int:
    args = _run_parser().parse_args(argv)  # before the heavy imports: --help stays fast
    if args.json:  # stdout carries the JSON alone: whatever a policy prints goes to stderr
        import contextlib

        json_out = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):
            return _run_parsed(args, json_out)
    return _run_parsed(args, sys.stdout)


def _run_parsed(args: argparse.Namespace, stdout) -> int:


    from simsched.api import simulation
    from simsched.atomic import check_out_dir
    from simsched.report import LiveProgress, metric_table, wide_console
    from simsched.scenario import load_scenario

    pictures = _check_plot_flags(args, "python -m simsched")  # before anything is created or run
    if args.format is not None:
        from simsched.outputs import require_format

        if not args.out:
            raise InputError("python -m simsched: --format needs --out (it is the format of the tables written there)")
        require_format(args.format)
    if args.out:
        check_out_dir(args.out)
    scenario = _with_settings(_with_flags(load_scenario(args.scenario), args), args)
    console = wide_console(stderr=True, minimum=160)  # piped: the progress line and warnings are not cut
    quiet = args.quiet or args.json
    ready = simulation(scenario, seed=args.seed, jobs=args.jobs)
    if args.out:  # every input is read by now: refuse an --out that would replace one (simsched.inputs)
        from simsched.api import RUN_FILES
        from simsched.inputs import check_outputs, scenario_inputs

        scenario_inputs(scenario)
        check_outputs([Path(args.out) / name for name in RUN_FILES], [Path(args.out) / "plots"])
    for warning in ready.warnings:
        console.print(f"warning: {warning}", style="yellow", highlight=False, soft_wrap=True)
    if quiet:
        result = ready.run()
    else:
        with LiveProgress(console, scenario.name) as live:
            result = ready.run(progress=live)
    for warning in result.summary["warnings"][len(ready.warnings):]:  # what the run found: before the table
        console.print(f"warning: {warning}", style="yellow", highlight=False, soft_wrap=True)
    if args.out:
        result.write(args.out, format=args.format or "csv")
    if pictures and not result.partial:
        from simsched.plots.cli import draw

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


def _with_settings(scenario, args: argparse.Namespace):
    """``--set KEY=VALUE``: dotted keys validated like an experiment spec's overrides, recorded in
    summary.json under ``overrides``."""
    from dataclasses import replace

    from simsched.cli_args import settings_of
    from simsched.experiment.overrides import apply_overrides

    settings = settings_of(args)
    if not settings:
        return scenario
    scenario = apply_overrides(scenario, settings, "--set")
    return replace(scenario, overrides={**scenario.overrides, **settings})


def _with_flags(scenario, args: argparse.Namespace):
    """Apply the single-run flags that replace scenario keys; each is checked like its
    TOML key and recorded in ``summary.json`` under ``overrides``."""
    from dataclasses import replace

    from simsched.policies import resolve_policy_ref

    for key, value in _scheduler_flags(args).items():
        if key == "policy":
            value = resolve_policy_ref(value, scenario.path)
        scenario = scenario.with_scheduler_keys({key: value}, f"--{key}")
    recorded = {}
    if args.jobs is not None:
        recorded["jobs_limit"] = args.jobs
    if args.nodes_per_type is not None:
        scenario = scenario.with_overrides(nodes_per_type=args.nodes_per_type)
        recorded["nodes_per_type"] = args.nodes_per_type
    return replace(scenario, overrides={**scenario.overrides, **recorded}) if recorded else scenario


def _validate(argv: list[str]) -> int:
    """Check a scenario, its workload and its scheduler without simulating: everything a run
    checks (the run is built up to its first event), with the same warnings. ``--policy
    FILE.py:Class`` loads that policy instead of the scenario's and checks its methods against
    the interface, without calling them."""
    p = _Parser(prog="python -m simsched validate", description="Validate a scenario and its workload.")
    p.add_argument("scenario")
    p.add_argument("--policy", metavar="FILE.py:Class",
                   help="load this policy (or a built-in name) and type-check it, without running it")
    args = p.parse_args(argv)

    from simsched.api import simulation
    from simsched.policies import resolve_policy_ref
    from simsched.policies.user import UserPolicy, check_interface
    from simsched.scenario import load_scenario

    scenario = load_scenario(args.scenario)
    if args.policy is not None:
        scenario = scenario.with_scheduler_keys({"policy": resolve_policy_ref(args.policy, scenario.path)},
                                                "--policy")
    ready = simulation(scenario)
    fleet = ready.engine.fleet
    for warning in ready.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    infeasible = ready.infeasible.count if ready.infeasible else 0
    print(f"{args.scenario}: ok: {len(fleet.clusters)} cluster(s), {len(fleet.nodes)} nodes, "
          f"{fleet.total_gpus} GPUs; {len(ready.engine.jobs)} jobs ({infeasible} infeasible); "
          f"{ready.skipped['skipped']} rows skipped; policy {ready.scenario.scheduler.policy}")
    scheduler = ready.engine.scheduler
    if args.policy is not None and isinstance(scheduler, UserPolicy):
        print(f"{scheduler.where()}: ok: {scheduler.name} loads and defines " + ", ".join(check_interface(scheduler)))
    return 0


def _gpu_types(argv: list[str]) -> int:
    """The GPU type catalog: every valid ``gpu_type`` name with its speed, memory and source."""
    p = _Parser(prog="python -m simsched gpu-types",
                description="List the GPU types a scenario may name (the built-in catalog, or a scenario's).")
    p.add_argument("scenario", nargs="?", help="also show the types this scenario adds or overrides")
    p.add_argument("--csv", action="store_true", help="plain CSV rows (name,speedup,memory_gb,source)")
    args = p.parse_args(argv)

    from simsched.model import builtin_gpu_types

    types = builtin_gpu_types()
    if args.scenario:
        from simsched.scenario import load_scenario

        types = load_scenario(args.scenario).gpu_types
    if args.csv:
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["name", "speedup", "memory_gb", "source"])
        for t in types.values():
            writer.writerow([t.name, f"{t.speedup:g}", f"{t.memory_gb:g}", t.source])
        return 0
    from rich.table import Table

    from simsched.report import wide_console

    table = Table(title="GPU types (speedup: throughput relative to V100; memory per GPU)")
    for column, justify in (("gpu_type", "left"), ("speedup", "right"), ("memory (GB)", "right"),
                            ("source", "left")):
        table.add_column(column, justify=justify)
    for t in types.values():
        table.add_row(t.name, f"{t.speedup:g}", f"{t.memory_gb:g}", t.source)
    wide_console([table]).print(table)
    return 0


def _compare(argv: list[str]) -> int:
    """Several schedulers over seeds and instances: mean +- std table, ranks, CSV/Markdown."""
    import os

    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from simsched.atomic import check_out_dir
    from simsched.compare import (
        CompareInterrupted,
        WorkerDied,
        compare_spec,
        rich_tables,
        run_compare,
        warnings_of,
        write_partial,
    )
    from simsched.interrupts import exit_code
    from simsched.report import wide_console

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
    p.add_argument("--address", help="Ray cluster address (with --executor ray; default: $RAY_ADDRESS if set, else start a local Ray)")
    p.add_argument("--out", metavar="DIR", help="write compare.csv, compare_runs.csv and compare.md here")
    _add_override_flags(p, policy=False)  # as run's: --jobs-limit, --nodes-per-type, --placement, ...
    p.add_argument("--rank-by", metavar="METRIC", help="metric the ranks use (default avg_jct)")
    p.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted comparison in --out DIR (reuses its finished runs)")
    p.add_argument("--keep-going", action="store_true",
                   help="a run whose policy fails (raises, decides badly, times out) becomes a failed row and the "
                        f"rest are ranked; exit {KEEP_GOING_EXIT} when any run failed (grading many policies)")
    p.add_argument("--decide-timeout", type=_positive_float, metavar="S",
                   help="stop a decide() that runs longer than S seconds (a failed run); default off, "
                        f"{DEFAULT_DECIDE_TIMEOUT_S:g} s with --keep-going")
    p.add_argument("--keep-jobs", action="store_true",
                   help="also write every run's per-job table (OUT/jobs/NNN.csv, index.csv); --plots draws "
                        "every scheduler's JCT CDF from them")
    p.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help="file format of the --keep-jobs tables (default csv; parquet needs pip install -e '.[parquet]')")
    _add_plot_flags(p)
    args = p.parse_args(argv)
    pictures = _check_plot_flags(args, "python -m simsched compare")
    if args.keep_jobs and not args.out:
        raise InputError("python -m simsched compare: --keep-jobs needs --out")
    if args.format is not None:
        from simsched.outputs import require_format

        if not args.keep_jobs:
            raise InputError("python -m simsched compare: --format needs --keep-jobs (it is the format of the "
                             "per-job tables; the compare tables stay CSV)")
        require_format(args.format)
    if args.resume and not args.out:
        raise InputError("python -m simsched compare: --resume needs --out DIR (the interrupted comparison's folder)")
    if args.out:
        check_out_dir(args.out)
    schedulers = None
    if args.schedulers is not None:
        schedulers = [name.strip() for name in args.schedulers.split(",") if name.strip()]
        if not schedulers:
            raise InputError("python -m simsched compare: --schedulers: give at least one name")
    from simsched.cli_args import settings_of

    spec = compare_spec(args.scenario, schedulers=schedulers, seeds=args.seeds, jobs=args.jobs,
                        rank_by=args.rank_by, nodes_per_type=args.nodes_per_type,
                        scheduler_keys=_scheduler_flags(args), settings=settings_of(args))
    if args.out:  # the scenario is read by now: refuse an --out that would replace an input
        from simsched.compare import COMPARE_FILES
        from simsched.inputs import check_outputs, note_read, scenario_inputs
        from simsched.scenario import load_scenario

        note_read(args.scenario, "scenario")
        for instance in spec.instances:  # each scenario's trace, workload and policy files
            scenario_inputs(load_scenario(instance))
        check_outputs([Path(args.out) / name for name in COMPARE_FILES],
                      [Path(args.out) / "jobs", Path(args.out) / "plots"])
    timeout = args.decide_timeout if args.decide_timeout is not None else (
        DEFAULT_DECIDE_TIMEOUT_S if args.keep_going else None)
    where = dict(workers=args.workers, executor=args.executor, address=args.address, keep_jobs=args.keep_jobs,
                 out=args.out, resume=args.resume, keep_going=args.keep_going, decide_timeout=timeout)
    try:
        if args.quiet:
            result = run_compare(spec, **where)
        else:
            with Progress(TextColumn("[bold]compare"), BarColumn(), TextColumn("{task.fields[detail]}"),
                          TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
                task = bar.add_task("runs", total=None, detail="")

                def show(snap) -> None:
                    left = "" if snap.left_s is None else f"  about {snap.left_s:,.0f} s left"
                    running = ", ".join(snap.running[:3]) + (" ..." if len(snap.running) > 3 else "")
                    bar.update(task, completed=snap.done, total=snap.total,
                               detail=f"{snap.done}/{snap.total} runs finished{left}  running: {running or '-'}")

                result = run_compare(spec, **where, progress=show)
    except WorkerDied as exc:  # the user's policy ended its worker process: bad input, finished runs kept
        if args.out:
            command = "python -m simsched compare " + " ".join(a for a in argv if a not in ("--resume", "--debug"))
            write_partial(args.out, exc, command)
        raise InputError(f"{exc} ({len(exc.rows)} of {exc.total} runs finished"
                         + (f", kept in {args.out}, marked PARTIAL)" if args.out else ")")) from None
    except CompareInterrupted as exc:
        code = exit_code(exc)
        what = "terminated" if code == 143 else "interrupted"
        if args.out:
            command = "python -m simsched compare " + " ".join(a for a in argv if a not in ("--resume", "--debug"))
            write_partial(args.out, exc, command)
            print(f"{what}: {len(exc.rows)} of {exc.total} runs finished, kept in {args.out} (marked PARTIAL, "
                  "nothing ranked); continue with --resume", file=sys.stderr)
        else:
            print(f"{what}: {len(exc.rows)} of {exc.total} runs finished; nothing ranked "
                  "(give --out DIR to keep finished runs and --resume later)", file=sys.stderr)
        return code
    for warning in warnings_of(result):  # before the tables, where they are seen
        print(f"warning: {warning}", file=sys.stderr)
    for failure in result.failed:  # --keep-going: each failed run, one line, before the tables
        print(f"failed: {failure['scheduler']} on {failure['instance']} (seed {failure['seed']}): {failure['error']}",
              file=sys.stderr)
    if not args.quiet:
        tables = rich_tables(result)
        console = wide_console(tables)  # piped: as wide as the tables, so no header is cut
        for table in tables:
            console.print(table)
    if args.out:
        paths = result.write(args.out, format=args.format or "csv")
        if pictures:
            from simsched.plots.cli import draw

            paths += draw(args.out, fmt=args.plot_format, plots=args.plots, report=args.report)
        if not args.quiet:
            print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
    if result.failed:
        print(f"{len(result.failed)} run(s) failed and are not ranked (exit {KEEP_GOING_EXIT})", file=sys.stderr)
        return KEEP_GOING_EXIT
    return 0
