"""``python -m simsched plot OUT [--format png|svg] [--report] [--metric M]``: the command's arguments.

OUT is what a command wrote: a run's ``--out`` folder (summary.json, jobs.csv ...),
a ``compare --out`` folder (compare_runs.csv), an ``experiment`` folder
(results.csv), or the JSON file ``learn --out`` wrote. Figures go to
``OUT/plots/NAME.FORMAT`` (for a learned file: ``FILE_plots/``); the report to
``OUT/report.html`` (for a learned file: ``FILE_plots/report.html``). The drawing is
:func:`simsched.present.plots.draw.draw` (also behind the ``--plots``/``--report`` flags).
"""

from __future__ import annotations

import sys

from simsched.cli.args import Parser, command
from simsched.core.extras import install_hint
from simsched.present.plots import require
from simsched.present.plots.draw import draw
from simsched.present.plots.report import FORMATS


def _parser() -> Parser:
    p = Parser(prog=command("plot"),
               description="Draw the figures of a run, compare, experiment or learn output "
                           f"(needs the plots extra: {install_hint('plots')}).")
    p.add_argument("output", help="a run/compare/experiment --out folder, or a learned priority .json file")
    p.add_argument("--format", choices=FORMATS, default="png", help="figure file format (default png)")
    p.add_argument("--report", action="store_true", help="also write a self-contained report.html")
    p.add_argument("--metric", help="experiment folders: the metric of rank bars and sweep lines "
                                    "(default: objective, as experiment specs)")
    return p


def plot_command(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    require()
    paths = draw(args.output, fmt=args.format, report=args.report, metric=args.metric,
                 notify=lambda line: print(line, file=sys.stderr))
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
