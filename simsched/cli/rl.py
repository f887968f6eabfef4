"""``python -m simsched rl train SCENARIO --out agent.npz``: train the built-in agent with rich progress.

The work is :func:`simsched.learning.rl_train.train`; this module parses flags and shows
progress on stderr. A checkpoint (``OUT.ckpt.npz``) is written after every
update; Ctrl-C keeps it and ``--resume`` continues from it (exit 130).
"""

from __future__ import annotations

import os
import sys

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import clock as _clock
from simsched.cli.args import command as _command
from simsched.cli.args import non_negative_int as _non_negative_int
from simsched.cli.args import positive_float as _positive_float
from simsched.cli.args import positive_int as _positive_int
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.config.scenario import load_scenario
from simsched.core.atomic import check_out_file
from simsched.core.errors import InputError
from simsched.core.extras import install_hint
from simsched.core.inputs import check_outputs, note_read, scenario_inputs
from simsched.learning.rl_train import TrainConfig, TrainProgress, checkpoint_path, train
from simsched.present.report import Console
from simsched.runs.experiment.lock import FolderLock

ACTIONS = ("train",)


def _parser() -> _Parser:
    d = TrainConfig()
    p = _Parser(prog=_command("rl", "train"),
                description="Train the built-in RL agent (linear scorer, masked softmax, REINFORCE with a "
                            "shared baseline) on the scenario's instances; see docs/rl.md.")
    p.add_argument("scenario", help="scenario TOML file, or a shipped example's name (simsched examples)")
    p.add_argument("--out", required=True, metavar="FILE.npz",
                   help="the trained agent (checkpoint beside it: FILE.npz.ckpt.npz)")
    p.add_argument("--episodes", type=_positive_int, help=f"training episodes (default {d.episodes})")
    p.add_argument("--batch", type=_positive_int, help=f"instances per update (default {d.batch})")
    p.add_argument("--rollouts", type=_positive_int,
                   help=f"episodes per instance per update, >= 2 (default {d.rollouts})")
    p.add_argument("--lr", type=_positive_float, help=f"Adam learning rate (default {d.learning_rate})")
    p.add_argument("--validation", type=_positive_int, help=f"greedy validation instances (default {d.validation})")
    p.add_argument("--eval-every", type=_positive_int, help=f"updates between validations (default {d.eval_every})")
    p.add_argument("--top-k", type=_positive_int, help=f"candidates per decision (default {d.top_k})")
    p.add_argument("--order", help=f"candidate order: an ordering name (default {d.order})")
    p.add_argument("--reward", help=f"weighted_flow or objective (default {d.reward})")
    p.add_argument("--jobs", type=_positive_int, help="keep only the first N jobs of every instance")
    p.add_argument("--seed", type=_non_negative_int, help=f"action-sampling seed (default {d.seed})")
    p.add_argument("--workers", type=_positive_int,
                   help=f"parallel episodes (default: CPU count, {os.cpu_count()}); 1 = in this process")
    p.add_argument("--resume", action="store_true", help="continue from FILE.npz.ckpt.npz when it exists")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def rl_command(argv: list[str]) -> int:
    if not argv or argv[0] not in ACTIONS:
        if argv and argv[0] in ("-h", "--help"):
            print(f"usage: {_command('rl', 'train')} SCENARIO --out FILE.npz [flags]  (rl train --help)")
            return 0
        got = repr(argv[0]) if argv else "nothing"
        raise InputError(f"{_command('rl')}: expected an action ({', '.join(ACTIONS)}), got {got}")
    return _train(argv[1:])


def _train(argv: list[str]) -> int:
    from dataclasses import replace

    from rich.progress import BarColumn, Progress, TextColumn

    try:
        import gymnasium  # noqa: F401
    except ImportError:
        raise InputError(f"{_command('rl', 'train')} needs gymnasium: {install_hint('rl')}") from None

    args = _parser().parse_args(argv)
    out = check_out_file(args.out)  # a file in a writable folder: `--out .` is a folder, refused in one line
    flags = {"episodes": args.episodes, "batch": args.batch, "learning_rate": args.lr, "rollouts": args.rollouts,
             "validation": args.validation, "eval_every": args.eval_every, "top_k": args.top_k,
             "order": args.order, "reward": args.reward, "jobs": args.jobs, "seed": args.seed}
    config = replace(TrainConfig(), **{k: v for k, v in flags.items() if v is not None})
    try:
        config.check()
    except InputError as exc:
        raise InputError(f"{_command('rl', 'train')}: {exc}") from None
    args.scenario = str(_scenario_path(args.scenario))  # a file, or a shipped example's name
    workers = args.workers or (os.cpu_count() or 1)
    console = Console(stderr=True, soft_wrap=True)  # long paths and progress lines stay on one line
    ckpt = checkpoint_path(out)

    note_read(args.scenario, "scenario")
    scenario_inputs(load_scenario(args.scenario))  # its workload files and policy too
    check_outputs([out, ckpt])
    if args.resume and not ckpt.exists() and not args.quiet:
        console.print(f"no checkpoint at {ckpt}: starting from the first update")
    lock = FolderLock(out.parent, output=out).acquire()  # one trainer per --out file (and its checkpoint)
    if lock.warning and not args.quiet:
        console.print(lock.warning)
    try:
        if args.quiet:
            agent = train(args.scenario, config, out=out, workers=workers, resume=args.resume)
        else:
            columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[detail]}"),
                       TextColumn("left {task.fields[eta]}"))
            with Progress(*columns, console=console, transient=True) as bar:
                task = bar.add_task("validating the initial agent", total=config.updates, detail="",
                                    eta=_clock(None))

                def show(p: TrainProgress) -> None:
                    valid = "" if p.validation_jct is None else f", validation JCT {p.validation_jct:,.0f} s"
                    bar.console.print(f"update {p.update}/{p.updates} ({p.episodes} episodes): return "
                                      f"{p.mean_return:,.1f}, sampled JCT {p.mean_jct:,.0f} s{valid}")
                    bar.update(task, completed=p.update, description=f"update {p.update}/{p.updates}",
                               detail=f"best validation JCT {p.best_jct:,.0f} s", eta=_clock(p.eta_s))

                agent = train(args.scenario, config, out=out, workers=workers, resume=args.resume, progress=show)
    except KeyboardInterrupt:
        where = f"; continue with --resume from {ckpt}" if ckpt.is_file() else ""
        print(f"interrupted{where}", file=sys.stderr)
        return 130
    finally:
        lock.release()
    if not args.quiet:
        first = agent.meta["history"][0]["validation_jct"]
        console.print(f"best validation mean JCT {agent.meta['validation_jct']:,.0f} s "
                      f"(the initial agent, which starts the first {config.order} candidate: {first:,.0f} s)")
        console.print(f"wrote {out} ({agent.meta['wall_time_s']:.0f} s)")
    return 0
