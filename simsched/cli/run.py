"""``simsched SCENARIO [flags]`` and ``simsched run NAME|FILE``: the flags of one run, checked before anything
heavy loads (--help, --version and a bad flag answer at once); the run itself is :mod:`simsched.cli.simulate`."""

from __future__ import annotations

import argparse
import contextlib
import sys

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import add_limit_flags as _add_limit_flags
from simsched.cli.args import add_override_flags as _add_override_flags
from simsched.cli.args import add_plot_flags as _add_plot_flags
from simsched.cli.args import command as _command
from simsched.cli.args import non_negative_int as _non_negative_int
from simsched.cli.commands import SUBCOMMANDS
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.core.extras import install_hint
from simsched.core.version import __version__


def run_parser() -> argparse.ArgumentParser:
    p = _Parser(prog=_command(), description="Simulate a scheduling scenario.",
                epilog="subcommands: " + ", ".join(SUBCOMMANDS) + f" ({_command('SUBCOMMAND', '--help')})")
    p.add_argument("scenario", help="scenario TOML file, or a shipped example's name (simsched examples)")
    p.add_argument("--version", action="version", version=f"simsched {__version__}")
    common_flags(p)
    return p


def common_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=_non_negative_int, help="override the scenario seed")
    _add_override_flags(p)
    p.add_argument("--out", metavar="DIR", help="write jobs.csv, events.csv, nodes.csv, spells.csv, timeline.csv and summary.json "
                                                "here (docs/outputs.md)")
    p.add_argument("--format", choices=("csv", "parquet"), default=None,
                   help=f"file format of the tables in --out (default csv; parquet needs {install_hint('parquet')})")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    _add_limit_flags(p)
    _add_plot_flags(p)


def run_named(argv: list[str]) -> int:
    """``simsched run NAME|FILE [flags]``: a shipped example by name, or a scenario file."""
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: {_command('run')} NAME|SCENARIO.toml [run flags]\n\nRun a shipped example by name "
              f"(simsched examples lists them) or a scenario file; the flags are {_command()}'s.")
        return 0
    return run_command(argv)  # the scenario is resolved there, as `simsched NAME` is


def run_command(argv: list[str]) -> int:
    """``simsched SCENARIO [flags]``: parse and resolve, then simulate."""
    args = run_parser().parse_args(argv)  # before the heavy imports: --help stays fast
    args.scenario = str(_scenario_path(args.scenario))  # a file, or a shipped example's name
    # pandas, numpy, simpy and rich (about 0.4 s) load once the arguments are checked
    from simsched.cli import simulate

    if args.json:  # stdout carries the JSON alone: whatever a policy prints goes to stderr
        json_out = sys.stdout
        with contextlib.redirect_stdout(sys.stderr):
            return simulate.run_parsed(args, json_out)
    return simulate.run_parsed(args, sys.stdout)
