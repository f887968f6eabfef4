"""Argument parsing shared by every subcommand: one-line errors (exit 2) and integer checks.

It sits below ``cli.py`` and every ``*_cli`` module so that none of them
imports another (no import circles).
"""

from __future__ import annotations

import argparse

from simsched.errors import InputError


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message} (see --help)")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def add_plot_flags(p: argparse.ArgumentParser) -> None:
    """``--plots``, ``--report`` and ``--plot-format`` (drawn by simsched.plots after the outputs are written)."""
    p.add_argument("--plots", action="store_true",
                   help="also draw the figures into OUT/plots/ (needs pip install -e '.[plots]')")
    p.add_argument("--report", action="store_true",
                   help="also write a self-contained OUT/report.html (figures inline as SVG, metric tables)")
    p.add_argument("--plot-format", choices=("png", "svg"), default="png", help="figure file format (default png)")


def check_plot_flags(args: argparse.Namespace, prog: str) -> bool:
    """True when figures or a report are asked for; checks --out is given and matplotlib is there
    before any work starts (so nothing is computed only to fail at the end)."""
    if not (args.plots or args.report):
        return False
    if not getattr(args, "out", None):
        raise InputError(f"{prog}: --plots and --report need --out (they draw from the files written there)")
    from simsched.plots import require

    require()
    return True


def clock(seconds: float | None) -> str:
    """``H:MM:SS`` for progress lines; ``--:--:--`` while unknown."""
    if seconds is None:
        return "--:--:--"
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
