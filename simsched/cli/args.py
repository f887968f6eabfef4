"""Argument parsing shared by every subcommand: one-line errors (exit 2) and integer checks.

It sits below ``cli.py`` and every ``*_cli`` module so that none of them
imports another (no import circles).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from simsched.core import arguments
from simsched.core.errors import InputError
from simsched.core.extras import install_hint
from simsched.present.plots import require


def program() -> str:
    """How the program was started, as usage lines and messages quote it: ``simsched`` (the
    console script) or ``python -m simsched``."""
    name = Path(sys.argv[0] if sys.argv and sys.argv[0] else "").name
    return "simsched" if name in ("simsched", "simsched.exe") else "python -m simsched"


def command(*words: str) -> str:
    """The command line that starts a subcommand: ``command("compare")`` is ``simsched compare``
    or ``python -m simsched compare``, as :func:`program` was started."""
    return " ".join((program(), *words))


class Parser(argparse.ArgumentParser):
    """argparse that reports a bad flag as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(f"{self.prog}: {message} (see --help)")


_INTEGER = re.compile(r"[+-]?[0-9]+")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def positive_float(text: str) -> float:
    """A finite number > 0 written with ASCII digits (no 'inf', 'nan', '1_0' or full-width digits)."""
    if not _FLOAT.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0 (like 0.01 or 1e-3), got {text!r}")
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {text!r}")
    return value


def memory_size(text: str) -> int:
    """``--run-memory``: 512M, 2G, 1.5G or bytes (simsched.core.arguments.parse_memory, which the API's
    ``run_memory`` goes through too)."""
    try:
        return arguments.parse_memory(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _timeout(maximum: float) -> Callable[[str], float]:
    """``--decide-timeout`` / ``--run-timeout``: the range of the API's ``decide_timeout`` and
    ``run_timeout`` (simsched.core.arguments.seconds), written with ASCII digits."""
    def parse(text: str) -> float:
        if not _FLOAT.fullmatch(text.strip()) or not arguments.timeout_ok(float(text), maximum):
            raise argparse.ArgumentTypeError(f"must be {arguments.timeout_range(maximum)}, got {text!r}")
        return float(text)

    return parse


def add_limit_flags(p: argparse.ArgumentParser, *, decide_default: str = "off") -> None:
    """The limits a user policy's run gets, enforced by the parent process (simsched.runs.isolated)."""
    p.add_argument("--decide-timeout", type=_timeout(arguments.MAX_DECIDE_TIMEOUT_S), metavar="S",
                   help=f"stop a user policy's call (decide(), __init__, import) that runs longer than S seconds "
                        f"(a failed run); default {decide_default}")
    p.add_argument("--run-timeout", type=_timeout(math.inf), metavar="S",
                   help="stop a user policy's run that takes longer than S seconds of wall time (default off)")
    p.add_argument("--run-memory", type=memory_size, metavar="SIZE",
                   help="memory a user policy's run may allocate, e.g. 512M or 2G (default: half this "
                        "machine's memory over the runs at once, at least 1G)")


def positive_int(text: str) -> int:
    if not _INTEGER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    if not _INTEGER.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


#: the ``[scheduler]`` keys a flag of the same name replaces (run: all four; compare: not policy)
SCHEDULER_FLAGS = ("policy", "placement", "backfill", "heterogeneous")


def add_override_flags(p: argparse.ArgumentParser, *, policy: bool = True, seed_flag: bool = True) -> None:
    """The flags that replace scenario keys, shared by ``run`` and ``compare`` (one place, so every
    command that runs a scenario takes the same ones). ``--gpus-limit`` is the course's name for
    ``--nodes-per-type`` (it counts machines per type, like the key ``nodes_per_type``).
    ``seed_flag``: the command has ``--seed`` (``--set seed=2`` then points to it)."""
    p.add_argument("--jobs", "--jobs-limit", dest="jobs", type=positive_int, metavar="N",
                   help="keep only the first N jobs (workload.jobs_limit)")
    p.add_argument("--nodes-per-type", "--gpus-limit", dest="nodes_per_type", type=positive_int, metavar="N",
                   help="keep the first N nodes (machines) of every GPU type, as the [[cluster]] key "
                        "nodes_per_type; --gpus-limit is the course's name for it")
    if policy:
        p.add_argument("--policy", help="scheduler.policy: a built-in name or my_policy.py:MyPolicy")
    p.add_argument("--placement", help="scheduler.placement (first_fit, best_fit, ...)")
    p.add_argument("--backfill", action=argparse.BooleanOptionalAction, default=None,
                   help="scheduler.backfill: start jobs behind one that does not fit")
    p.add_argument("--heterogeneous", action=argparse.BooleanOptionalAction, default=None,
                   help="scheduler.heterogeneous: let jobs run on other GPU types")
    p.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                   type=setting if seed_flag else _setting_without_seed_flag,
                   help="set any dotted scenario key (workload.load=0.8, scheduler.backfill=easy); repeatable; "
                        "VALUE is a TOML value, or text when it is not one; checked like the key in a file")


#: the scenario's top-level keys (not in a section), which ``--set`` cannot reach
TOP_LEVEL_KEYS = ("name", "seed", "description")


def setting(text: str, *, seed_flag: bool = True) -> tuple[str, Any]:
    """``KEY=VALUE`` of ``--set``: a dotted key and a TOML value (bare text when it does not parse as one:
    ``scheduler.policy=sjf``), as Hydra's overrides read. A top-level key (``seed=2``) is refused with
    what to do instead: ``--seed 2`` where the command has it (``seed_flag``)."""
    key, sep, raw = text.partition("=")
    key, raw = key.strip(), raw.strip()
    if sep and key in TOP_LEVEL_KEYS and raw:
        if key != "seed":
            how = f"edit {key} in the scenario file"
        elif seed_flag:
            how = f"use --seed {raw}"
        else:
            how = "edit seed in the scenario file (--seeds N runs seeds seed .. seed+N-1)"
        raise argparse.ArgumentTypeError(f"{text!r}: {key} is a top-level scenario key, not a section's, "
                                         f"and --set takes only dotted keys (section.key); {how}")
    if not sep or not key or "." not in key or not raw:
        raise argparse.ArgumentTypeError(f"{text!r}: give KEY=VALUE with a dotted scenario key, "
                                         "e.g. workload.load=0.8 or scheduler.policy=sjf")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def _setting_without_seed_flag(text: str) -> tuple[str, Any]:
    return setting(text, seed_flag=False)


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    """The ``--set`` keys in the order given (a key given twice: the last wins)."""
    return dict(getattr(args, "settings", None) or [])


def scheduler_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The ``[scheduler]`` keys given as flags (those not given are left out)."""
    return {key: getattr(args, key) for key in SCHEDULER_FLAGS if getattr(args, key, None) is not None}


def add_plot_flags(p: argparse.ArgumentParser) -> None:
    """``--plots``, ``--report`` and ``--plot-format`` (drawn by simsched.present.plots after the outputs are written)."""
    p.add_argument("--plots", action="store_true",
                   help=f"also draw the figures into OUT/plots/ (needs {install_hint('plots')})")
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

    require()
    return True


def clock(seconds: float | None) -> str:
    """``H:MM:SS`` for progress lines; ``--:--:--`` while unknown."""
    if seconds is None:
        return "--:--:--"
    seconds = int(seconds)
    return f"{seconds // 3600:d}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
