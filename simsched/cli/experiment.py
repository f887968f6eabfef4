"""``python -m simsched experiment SPEC.toml [--preset P] [--out DIR] [--workers N | --executor ray]
[--resume]``: run a grid, record every run as it ends, print and write the statistics."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from simsched.cli.args import Parser, add_plot_flags, check_plot_flags, command, positive_int
from simsched.core.atomic import check_out_dir
from simsched.core.errors import InputError
from simsched.core.extras import install_hint
from simsched.core.outputs import require_format
from simsched.present.experiment_tables import rich_tables, write_tables
from simsched.present.plots.draw import draw
from simsched.present.report import Console
from simsched.runs.experiment.grid import plan
from simsched.runs.experiment.runner import ExperimentInterrupted, run_experiment
from simsched.runs.experiment.spec import MAX_RUNS, load_spec
from simsched.runs.experiment.stats import compute
from simsched.runs.experiment.store import read_jobs, stale_notice
from simsched.runs.experiment.verify import MISMATCH_EXIT, lines, parse_only, rebuild, verify


def _parser() -> Parser:
    p = Parser(prog=command("experiment"),
               description="Run an experiment spec (a grid of scenarios x schedulers x seeds x EA streams x "
                           "overrides) into a resumable result store; print and write its statistics.")
    p.add_argument("spec", help="experiment spec TOML (see docs/experiment.md, experiments/paper/)")
    p.add_argument("--preset", metavar="NAME", help="merge the spec's [preset.NAME] table (e.g. quick, full)")
    p.add_argument("--out", metavar="DIR",
                   help="result folder (default: results/<spec name>[-<preset>] in the working directory)")
    p.add_argument("--workers", type=positive_int,
                   help=f"local worker processes (default: CPU count, {os.cpu_count()}); 1 = no subprocesses")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help=f"local processes (default) or Ray ({install_hint('ray')})")
    p.add_argument("--address", help="Ray cluster address (with --executor ray; default: start a local Ray)")
    p.add_argument("--resume", action="store_true",
                   help="continue the experiment in DIR: runs already in results.csv are skipped")
    p.add_argument("--quiet", action="store_true", help="no progress bar or tables")
    p.add_argument("--max-runs", type=positive_int, default=None, metavar="N",
                   help="refuse a grid of more than N runs before expanding it (default 1,000,000)")
    p.add_argument("--verify", type=positive_int, metavar="K",
                   help="re-run K finished rows of --out (at random, or those matching --only) and check that "
                        "every metric reproduces exactly; nothing is written; exit 3 on a mismatch")
    p.add_argument("--tables-only", action="store_true",
                   help="write the statistics of the runs already in --out without running anything; "
                        "instances with a run still missing are left out (for a long run in progress)")
    p.add_argument("--plan-only", action="store_true",
                   help="print the runs the spec plans (per scheduler: instances or scenarios, seeds, EA streams, "
                        "sweep points) and exit without running anything")
    p.add_argument("--only", metavar="KEY=VALUE,...",
                   help="with --verify: only rows with these instance, scheduler, seed, ea_stream or swept-key values "
                        "(e.g. workload.interval_s=840)")
    p.add_argument("--format", choices=("csv", "parquet"), default="csv",
                   help="file format of the per-job tables (record = [\"jobs\"]: DIR/jobs/RUN_ID.csv or .parquet; "
                        f"parquet needs {install_hint('parquet')})")
    add_plot_flags(p)  # rank bars, sweep lines, decision time into DIR/plots/; DIR/report.html
    return p


def experiment_command(argv: list[str]) -> int:
    from rich.progress import Progress

    args = _parser().parse_args(argv)

    require_format(args.format)  # before anything is made or run: one line when pyarrow is missing
    if args.address and args.executor != "ray":
        raise InputError(f"{command('experiment')}: --address needs --executor ray")

    spec = load_spec(args.spec, args.preset, max_runs=args.max_runs or MAX_RUNS)
    out = Path(args.out) if args.out else Path("results") / (spec.name + (f"-{args.preset}" if args.preset else ""))
    if args.only and not args.verify:
        raise InputError(f"{command('experiment')}: --only needs --verify K")
    if (args.verify or args.tables_only) and (args.plots or args.report):
        used = "--verify" if args.verify else "--tables-only"
        raise InputError(f"{command('experiment')}: --plots and --report are not made with {used}; "
                         f"draw them with: {command('plot', str(out))}")
    if args.plan_only:
        if args.verify or args.tables_only or args.resume:
            raise InputError(f"{command('experiment')}: --plan-only runs nothing; it does not go with "
                             "--verify, --tables-only or --resume")
        for line in plan_lines(spec):
            print(line)
        return 0
    if args.verify:
        return _verify(spec, out, args)
    if args.tables_only:
        return _tables_only(spec, out, args)
    args.out = str(out)  # the default folder counts as given for --plots/--report

    check_out_dir(out)  # a regular file, an unwritable folder: one line before any run
    pictures = check_plot_flags(args, command("experiment"))
    err = Console(stderr=True)
    where = dict(workers=args.workers, executor=args.executor, address=args.address, resume=args.resume,
                 jobs_format=args.format,
                 notify=lambda line: err.print(line, markup=False, highlight=False, soft_wrap=True))
    try:
        if args.quiet:
            run = run_experiment(spec, out, **where)
        else:
            with Progress(console=err, transient=True) as bar:
                task = bar.add_task(f"{spec.name}: runs", total=None)
                run = run_experiment(spec, out, **where,
                                     progress=lambda done, total: bar.update(task, completed=done, total=total),
                                     status=lambda text: bar.update(task, description=f"{spec.name}: runs ({text})"))
    except ExperimentInterrupted as exc:
        print(str(exc), file=sys.stderr)
        return exc.code
    if run.stale:
        print(stale_notice(out, run.stale), file=sys.stderr)
    jobs = read_jobs(out, run.results, spec.sweep_keys) if "jobs" in spec.record else None
    stats = compute(run.results, spec, run.decisions, jobs)
    title = spec.name + (f" (preset {spec.preset})" if spec.preset else "")
    paths = write_tables(stats, spec, out, title)
    if pictures:
        paths += draw(out, fmt=args.plot_format, plots=args.plots, report=args.report, metric=spec.metric,
                      schedulers=list(spec.scheduler_names))
    if not args.quiet:
        _print_tables(stats, spec, title)
        retried = f", {run.retries} Ray tasks retried after their node was lost" if run.retries else ""
        err.print(f"{len(run.tasks)} runs ({run.skipped} already recorded, {run.ran} run now{retried}); "
                  f"wrote {out / 'results.csv'}, " + ", ".join(p.name for p in paths))
    return 0


def plan_lines(spec) -> list[str]:
    """What ``--plan-only`` prints: per scheduler, the cases and repeats it runs, then the total."""
    tasks = plan(spec)
    cases = "instance" if spec.instances else "scenario"
    lines = [f"{spec.name}" + (f" (preset {spec.preset})" if spec.preset else "") + f": {len(tasks):,} runs"]
    for entry in spec.schedulers:
        mine = [task for task in tasks if task.scheduler == entry.name]
        places = {(task.scenario, task.instance) for task in mine}
        seeds = {task.seed for task in mine}
        streams = sorted({task.ea_stream for task in mine if task.ea_stream is not None})
        points = {task.point for task in mine}
        lines.append(f"  {entry.name}: {len(mine):,} runs = {len(places)} {cases}(s)"
                     + (f" x {len(seeds)} seed(s) each" if not spec.instances else
                        f", each on its own fixed jobs ({len(seeds)} workload seed(s) in all)")
                     + (f" x {len(streams)} EA stream(s) ({streams[0]}..{streams[-1]})" if streams else
                        " (once per case: it draws from no EA stream)" if not entry.uses_ea else "")
                     + (f" x {len(points)} sweep point(s)" if len(points) > 1 else ""))
    return lines


def _verify(spec, out: Path, args) -> int:
    """``--verify K``: re-run K finished rows of the store and compare their metrics exactly, then
    rebuild the tables from the stored rows and compare them with the committed ones."""
    only = parse_only(args.only, spec.sweep_keys)
    checks = verify(spec, out, args.verify, only)
    report = lines(checks)
    for line in report[:-1]:
        print(line)
    bad_rows = any(check.differences for check in checks)
    print(report[-1], file=sys.stderr if bad_rows else sys.stdout)
    table_lines, bad_tables = _check_tables(spec, out)
    for line in table_lines:
        print(line, file=sys.stderr if bad_tables else sys.stdout)
    return MISMATCH_EXIT if bad_rows or bad_tables else 0


def _check_tables(spec, out: Path) -> tuple[list[str], bool]:
    """The tables rebuilt from the store's rows against the committed ones, byte for byte."""
    rebuilt = rebuild(spec, out)
    with tempfile.TemporaryDirectory() as scratch:
        made = write_tables(rebuilt.stats, spec, Path(scratch), rebuilt.title)
        lines_out, bad = [], False
        for path in made:
            committed = out / path.name
            if not committed.is_file():
                lines_out.append(f"tables: {path.name} is not in {out} (it would be written from the rows)")
                continue
            if path.name == "by_priority.csv" and rebuilt.jobs_missing:
                continue
            if committed.read_bytes() != path.read_bytes():
                bad = True
                lines_out.append(f"MISMATCH  {committed}: differs from the table rebuilt from results.csv "
                                 f"(rebuild it with --tables-only)")
        if rebuilt.jobs_missing:
            lines_out.append("tables: by_priority.csv not checked: the store holds no per-job tables (jobs/)")
    checked = [p.name for p in made if (out / p.name).is_file()
               and not (p.name == "by_priority.csv" and rebuilt.jobs_missing)]
    lines_out.append(f"tables: {', '.join(checked)} " + ("do not all match the rows" if bad else
                                                         "rebuilt from the rows: identical"))
    return lines_out, bad


def _tables_only(spec, out: Path, args) -> int:
    """``--tables-only``: the statistics of the finished runs, over the instances whose every planned
    run has a row; nothing is run. For committing a long experiment as it grows."""
    try:
        rebuilt = rebuild(spec, out)
    except InputError as exc:
        raise InputError(f"--tables-only: {exc}") from None
    paths = write_tables(rebuilt.stats, spec, out, rebuilt.title)
    if not args.quiet:
        _print_tables(rebuilt.stats, spec, rebuilt.title)
    print(f"{rebuilt.complete} of {rebuilt.instances} instances complete ({rebuilt.done} of {rebuilt.planned} runs); "
          "wrote " + ", ".join(p.name for p in paths), file=sys.stderr)
    return 0


def _print_tables(stats, spec, title: str) -> None:
    """The statistics as rich tables on stdout (140 columns wide when stdout is not a terminal)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=140)
    for table in rich_tables(stats, spec, title):
        console.print(table)
