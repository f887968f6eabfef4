"""``python -m simsched learn SCENARIO.toml --out FILE.json``: GP priority learning with rich progress.

The work is :func:`simsched.learning.gp.learn`; this module parses flags, shows
progress on stderr (generation, best/mean fitness, runs, time left) and prints
the winner. Ctrl-C stops after writing nothing new: the checkpoint of the last
finished generation stays, and ``--resume`` continues from it (exit 130).
"""

from __future__ import annotations

import os
import sys

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import add_plot_flags as _add_plot_flags
from simsched.cli.args import check_plot_flags as _check_plot_flags
from simsched.cli.args import clock as _clock
from simsched.cli.args import command as _command
from simsched.cli.args import non_negative_int as _non_negative_int
from simsched.cli.args import positive_int as _positive_int
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.config.scenario import load_scenario
from simsched.core.atomic import check_out_file
from simsched.core.errors import InputError, ResourceFailure
from simsched.core.inputs import check_outputs, note_read, scenario_inputs
from simsched.core.interrupts import exit_code
from simsched.learning.gp import (
    FITNESS_ENGINES,
    LearnProgress,
    checkpoint_path,
    learn,
    learn_config,
)
from simsched.present.plots.draw import draw
from simsched.present.report import Console
from simsched.runs.experiment.lock import FolderLock
from simsched.runs.parallel import EXECUTORS, TasksLost


def time_left(seconds: float | None) -> str:
    """The progress line's time left: "estimating" until learn has one (simsched.learning.eta: after a
    generation past the session's first), then ``H:MM:SS left``."""
    return "estimating time left" if seconds is None else f"{_clock(seconds)} left"


def _parser() -> _Parser:
    p = _Parser(prog=_command("learn"),
                description="Learn a priority function by GP (Algorithm 3) on the scenario's instances "
                            "(the scenario under other seeds). Defaults: the paper's settings, "
                            "or the scenario's [learn] table.")
    p.add_argument("scenario", help="scenario TOML file, or a shipped example's name (simsched examples)")
    p.add_argument("--out", required=True, metavar="FILE.json",
                   help="the learned function (checkpoint beside it: FILE.json.ckpt)")
    p.add_argument("--population", type=_positive_int, help="population size n (default 512)")
    p.add_argument("--generations", type=_non_negative_int, help="generations (default 100)")
    p.add_argument("--alpha", type=_positive_int, help="training instances per generation (default 3, or --train when it is smaller)")
    p.add_argument("--train", type=_positive_int, help="training instances (default 50)")
    p.add_argument("--validation", type=_positive_int, help="validation instances (default 10)")
    p.add_argument("--jobs", type=_positive_int, help="keep only the first N jobs of every instance")
    p.add_argument("--seed", type=_non_negative_int, help="GP random seed (default: the scenario seed)")
    p.add_argument("--instances", choices=("seeds", "paper", "sizes"),
                   help="instance source: the scenario under other seeds (default), the paper's generated "
                        "train/validation sets, or the single cluster at [learn] sizes (docs/learning.md)")
    p.add_argument("--instance-seed", type=_non_negative_int, help="seed of the paper instance sets (default 0)")
    p.add_argument("--workers", type=_positive_int,
                   help=f"parallel evaluations (default: CPU count, {os.cpu_count()}); 1 = in this process")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local processes (default) or ray")
    p.add_argument("--address", help="Ray cluster address (with --executor ray; default: $RAY_ADDRESS if set, else start a local Ray)")
    p.add_argument("--fitness-engine", choices=("compiled", "simpy"), default="compiled",
                   help="how a candidate is scored: the compiled replay of the engine (default; same "
                        "objectives, tested) or the SimPy engine itself")
    p.add_argument("--resume", action="store_true", help="continue from FILE.json.ckpt when it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_plot_flags(p)  # figures and report.html go to FILE_plots/ beside FILE.json
    return p


def learn_command(argv: list[str]) -> int:
    from rich.progress import BarColumn, Progress, TextColumn

    args = _parser().parse_args(argv)
    pictures = _check_plot_flags(args, _command("learn"))
    if args.address and args.executor != "ray":
        raise InputError(f"{_command('learn')}: --address needs --executor ray")
    out = check_out_file(args.out)
    args.scenario = str(_scenario_path(args.scenario))  # a file, or a shipped example's name
    config = learn_config(args.scenario, population=args.population, generations=args.generations,
                          alpha=args.alpha, train=args.train, validation=args.validation, jobs=args.jobs,
                          seed=args.seed, instances=args.instances, instance_seed=args.instance_seed)
    workers = args.workers or (os.cpu_count() or 1)
    console = Console(stderr=True, soft_wrap=True)  # long paths stay on one line (no terminal width)
    ckpt = checkpoint_path(out)

    note_read(args.scenario, "scenario")
    scenario_inputs(load_scenario(args.scenario))  # its trace and policy files, read later by learn()
    figures = out.parent / f"{out.stem}_plots"  # --plots/--report: FILE_plots/ and its plots/ (draw)
    check_outputs([out, ckpt], [figures, figures / "plots"] if pictures else [])
    if args.resume and not ckpt.exists() and not args.quiet:
        console.print(f"no checkpoint at {ckpt}: starting from the first generation")
    kwargs = dict(out=out, workers=workers, executor=args.executor, address=args.address, resume=args.resume,
                  objective_fn=FITNESS_ENGINES[args.fitness_engine])
    lock = FolderLock(out.parent, output=out).acquire()  # one learner per --out file (and its checkpoint)
    if lock.warning and not args.quiet:
        console.print(lock.warning)
    try:
        if args.quiet:
            result = learn(args.scenario, config, **kwargs)
        else:
            columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[runs]}"),
                       TextColumn("{task.fields[eta]}"))
            with Progress(*columns, console=console, transient=True) as bar:
                task = bar.add_task("starting", total=None, runs="", eta=time_left(None))

                def show(p: LearnProgress) -> None:
                    if p.phase == "generation_done":
                        bar.console.print(f"gen {p.generation}/{p.generations}: best {p.best:.4f}, "
                                          f"mean {p.mean:.4f}, {_clock(p.elapsed_s)} elapsed, "
                                          f"{time_left(p.eta_s)}")
                        return
                    if p.phase == "init":
                        what = f"gen 0/{p.generations} (initial population)"
                    elif p.phase == "validation":
                        what = f"validation ({config.validation} instances)"
                    else:
                        what = f"gen {p.generation}/{p.generations}"
                    if p.phase != "init":
                        what += f"  last: best {p.best:.4f} mean {p.mean:.4f}"
                    bar.update(task, description=what, completed=p.evaluated, total=p.to_evaluate or None,
                               runs=f"{p.evaluated}/{p.to_evaluate} runs", eta=time_left(p.eta_s))

                result = learn(args.scenario, config, progress=show, **kwargs)
    except TasksLost as exc:  # Ray's retries ran out for a fitness run: the cluster's resources, not a bug
        where = (f"checkpoint {ckpt} kept (continue with --resume)" if ckpt.is_file() else "no checkpoint yet")
        raise ResourceFailure(f"learn: {exc} (the worker running it died on every retry); that is the "
                              f"cluster's resources (memory, a node lost), not a bug in simsched; {where}") from None
    except KeyboardInterrupt as exc:
        code = exit_code(exc)
        what = "terminated" if code == 143 else "interrupted"
        where = (f"; checkpoint {ckpt} kept (continue with --resume)" if ckpt.is_file()
                 else "; no checkpoint yet")
        print(f"{what}{where}", file=sys.stderr)
        return code
    finally:
        lock.release()
    if not args.quiet:
        valid = result.meta["validation"]
        console.print(f"learned: {valid['winner']['infix']}")
        if result.meta.get("simplified"):
            console.print(f"simplified (% as /): {result.meta['simplified']}")
        console.print(f"validation ({len(valid['seeds'])} instances): mean objective "
                      f"{valid['winner']['mean_objective']:.6g} vs SRSF {valid['srsf']['mean_objective']:.6g}; "
                      f"mean ratio to SRSF {valid['winner']['mean_ratio_to_srsf']:.4f}")
        console.print(f"wrote {out} ({result.meta['wall_time_s']:.0f} s)", soft_wrap=True)  # a path stays whole
    if pictures:
        drawn = draw(out, fmt=args.plot_format, plots=args.plots, report=args.report)
        if not args.quiet:
            console.print("wrote " + ", ".join(str(p) for p in drawn))
    return 0
