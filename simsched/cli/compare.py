"""``simsched compare SCENARIO``: several schedulers over seeds and instances; the tables, files and figures."""

from __future__ import annotations

import sys
from pathlib import Path

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import add_limit_flags as _add_limit_flags
from simsched.cli.args import add_override_flags as _add_override_flags
from simsched.cli.args import add_plot_flags as _add_plot_flags
from simsched.cli.args import check_plot_flags as _check_plot_flags
from simsched.cli.args import command as _command
from simsched.cli.args import positive_int as _positive_int
from simsched.cli.args import scheduler_flags as _scheduler_flags
from simsched.cli.args import settings_of
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.config.scenario import load_scenario
from simsched.core.atomic import check_out_dir
from simsched.core.errors import InputError
from simsched.core.extras import install_hint
from simsched.core.inputs import check_outputs, note_read, scenario_inputs
from simsched.core.interrupts import exit_code
from simsched.core.outputs import require_format
from simsched.present.compare_tables import rich_tables
from simsched.present.plots.draw import draw
from simsched.present.report import Console, wide_console
from simsched.runs.compare import (
    COMPARE_FILES,
    CompareInterrupted,
    RunsLost,
    WorkerDied,
    compare_spec,
    run_compare,
    warnings_of,
    write_partial,
)
from simsched.runs.experiment.lock import FolderLock

#: compare --keep-going: the exit code when some runs failed (docs/assignment.md, "For teachers")
KEEP_GOING_EXIT = 4


#: compare --keep-going without --decide-timeout: a generous limit per decide() call
DEFAULT_DECIDE_TIMEOUT_S = 60.0


def compare_command(argv: list[str]) -> int:
    """Several schedulers over seeds and instances: mean +- std table, ranks, CSV/Markdown."""
    import os

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    p = _Parser(prog=_command("compare"),
                description="Compare schedulers on a scenario over several seeds (and [compare] instances).")
    p.add_argument("scenario", help="scenario TOML file, or a shipped example's name (simsched examples)")
    p.add_argument("--schedulers", metavar="A,B,C",
                   help="comma-separated policy names or file.py:Class (default: [compare] schedulers)")
    p.add_argument("--seeds", type=_positive_int, help="seeds per instance: seed .. seed+N-1 (default 1)")
    p.add_argument("--workers", type=_positive_int,
                   help=f"local worker processes (default: CPU count, {os.cpu_count()}); 1 = no subprocesses")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help=f"local processes (default) or a Ray cluster ({install_hint('ray')})")
    p.add_argument("--address", help="Ray cluster address (with --executor ray; default: $RAY_ADDRESS if set, else start a local Ray)")
    p.add_argument("--out", metavar="DIR", help="write compare.csv, compare_runs.csv and compare.md here (an earlier comparison "
                        "there is replaced as a whole, docs/outputs.md)")
    _add_override_flags(p, policy=False, seed_flag=False)  # as run's: --jobs-limit, --nodes-per-type, --placement, ...
    p.add_argument("--rank-by", metavar="METRIC", help="metric the ranks use (default avg_jct), any an experiment's metric takes, e.g. p99_wait or avg_wait@TENANT")
    p.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    p.add_argument("--resume", action="store_true",
                   help="continue an interrupted comparison in --out DIR (reuses its finished runs)")
    p.add_argument("--keep-going", action="store_true",
                   help="a run whose policy fails (raises, decides badly, times out) becomes a failed row and the "
                        f"rest are ranked; exit {KEEP_GOING_EXIT} when any run failed (grading many policies)")
    _add_limit_flags(p, decide_default=f"off, {DEFAULT_DECIDE_TIMEOUT_S:g} s with --keep-going")
    p.add_argument("--keep-jobs", action="store_true",
                   help="also write every run's per-job table (OUT/jobs/NNN.csv, index.csv); --plots draws "
                        "every scheduler's JCT CDF from them")
    p.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help=f"file format of the --keep-jobs tables (default csv; parquet needs {install_hint('parquet')})")
    _add_plot_flags(p)
    args = p.parse_args(argv)
    pictures = _check_plot_flags(args, _command("compare"))
    if args.keep_jobs and not args.out:
        raise InputError(f"{_command('compare')}: --keep-jobs needs --out")
    if args.format is not None:
        if not args.keep_jobs:
            raise InputError(f"{_command('compare')}: --format needs --keep-jobs (it is the format of the "
                             "per-job tables; the compare tables stay CSV)")
        require_format(args.format)
    if args.resume and not args.out:
        raise InputError(f"{_command('compare')}: --resume needs --out DIR (the interrupted comparison's folder)")
    if args.out:
        check_out_dir(args.out, create=False)  # made when the run writes (bad input below leaves none)
    schedulers = None
    if args.schedulers is not None:
        schedulers = [name.strip() for name in args.schedulers.split(",")]
        if not any(schedulers):
            raise InputError(f"{_command('compare')}: --schedulers: give at least one name")
        if not all(schedulers):  # as simsched.compare(schedulers=["fifo", ""]) refuses it
            raise InputError(f"{_command('compare')}: --schedulers {args.schedulers!r}: an empty name (two commas "
                             "in a row, or one at an end); give names separated by single commas")

    args.scenario = str(_scenario_path(args.scenario))  # a file, or a shipped example's name
    spec = compare_spec(args.scenario, schedulers=schedulers, seeds=args.seeds, jobs=args.jobs,
                        rank_by=args.rank_by, nodes_per_type=args.nodes_per_type,
                        scheduler_keys=_scheduler_flags(args), settings=settings_of(args),
                        check_policies=not args.keep_going)
    if args.out:  # the scenario is read by now: refuse an --out that would replace an input

        note_read(args.scenario, "scenario")
        for instance in spec.instances:  # each scenario's trace, workload and policy files
            scenario_inputs(load_scenario(instance))
        check_outputs([Path(args.out) / name for name in COMPARE_FILES],
                      [Path(args.out) / "jobs", Path(args.out) / "plots"])
    timeout = args.decide_timeout if args.decide_timeout is not None else (
        DEFAULT_DECIDE_TIMEOUT_S if args.keep_going else None)
    where = dict(workers=args.workers, executor=args.executor, address=args.address, keep_jobs=args.keep_jobs,
                 out=args.out, resume=args.resume, keep_going=args.keep_going, decide_timeout=timeout,
                 run_timeout=args.run_timeout, run_memory=args.run_memory)
    # one comparison per --out folder (its journal, tables and PARTIAL marker), as an experiment's store
    lock = FolderLock(check_out_dir(args.out)).acquire() if args.out else None
    if lock is not None and lock.warning:
        print(lock.warning, file=sys.stderr)
    try:
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
                command = _command("compare", *(a for a in argv if a not in ("--resume", "--debug")))
                write_partial(args.out, exc, command)
            raise InputError(f"{exc} ({len(exc.rows)} of {exc.total} runs finished"
                             + (f", kept in {args.out}, marked PARTIAL)" if args.out else ")")) from None
        except RunsLost as exc:  # Ray's retries ran out for a run: the cluster's resources, finished runs kept
            if args.out:
                command = _command("compare", *(a for a in argv if a not in ("--resume", "--debug")))
                write_partial(args.out, exc, command)
            raise RunsLost(f"{exc} ({len(exc.rows)} of {exc.total} runs finished"
                           + (f", kept in {args.out}, marked PARTIAL; continue with --resume)" if args.out else
                              "; give --out DIR to keep finished runs and --resume later, or --keep-going to rank "
                              "the rest)"), exc.rows, exc.total) from None
        except CompareInterrupted as exc:
            code = exit_code(exc)
            what = "terminated" if code == 143 else "interrupted"
            if args.out:
                command = _command("compare", *(a for a in argv if a not in ("--resume", "--debug")))
                write_partial(args.out, exc, command)
                print(f"{what}: {len(exc.rows)} of {exc.total} runs finished, kept in {args.out} (marked PARTIAL, "
                      "nothing ranked); continue with --resume", file=sys.stderr)
            else:
                print(f"{what}: {len(exc.rows)} of {exc.total} runs finished; nothing ranked "
                      "(give --out DIR to keep finished runs and --resume later)", file=sys.stderr)
            return code
        for warning in warnings_of(result):  # before the tables, where they are seen
            print(f"warning: {warning}", file=sys.stderr)
        shown = result.labels  # alice.py:Policy as alice:Policy (compare.csv has the full path)
        for failure in result.failed:  # --keep-going: each failed run, one line, before the tables
            print(f"failed: {shown[failure['scheduler']]} on {failure['instance']} (seed {failure['seed']}): "
                  f"{failure['error']}", file=sys.stderr)
        if not args.quiet:
            tables = rich_tables(result)
            console = wide_console(tables)  # piped: as wide as the tables, so no header is cut
            for table in tables:
                console.print(table)
        if args.out:
            paths = result.write(args.out, format=args.format or "csv")
            if pictures:
                paths += draw(args.out, fmt=args.plot_format, plots=args.plots, report=args.report)
            if not args.quiet:
                print("wrote " + ", ".join(str(p) for p in paths), file=sys.stderr)
        if result.failed:
            print(f"{len(result.failed)} run(s) failed; a scheduler that failed any case is placed after every "
                  f"scheduler that completed all cases (exit {KEEP_GOING_EXIT})", file=sys.stderr)
            return KEEP_GOING_EXIT
        return 0
    finally:
        if lock is not None:
            lock.release()
