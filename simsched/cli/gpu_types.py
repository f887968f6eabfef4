"""``simsched gpu-types [SCENARIO] [--csv]``: the GPU type catalog (valid ``gpu_type`` names)."""

from __future__ import annotations

import sys

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import command as _command
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.config.scenario import load_scenario
from simsched.core.model import builtin_gpu_types
from simsched.present.report import wide_console


def gpu_types_command(argv: list[str]) -> int:
    """The GPU type catalog: every valid ``gpu_type`` name with its speed, memory and source."""
    p = _Parser(prog=_command("gpu-types"),
                description="List the GPU types a scenario may name (the built-in catalog, or a scenario's).")
    p.add_argument("scenario", nargs="?", help="also show the types this scenario adds or overrides")
    p.add_argument("--csv", action="store_true", help="plain CSV rows (name,speedup,memory_gb,source)")
    args = p.parse_args(argv)


    types = builtin_gpu_types()
    if args.scenario:
        types = load_scenario(_scenario_path(args.scenario)).gpu_types
    if args.csv:
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["name", "speedup", "memory_gb", "source"])
        for t in types.values():
            writer.writerow([t.name, f"{t.speedup:g}", f"{t.memory_gb:g}", t.source])
        return 0
    from rich.table import Table


    table = Table(title="GPU types (speedup: throughput relative to V100; memory per GPU)")
    for column, justify in (("gpu_type", "left"), ("speedup", "right"), ("memory (GB)", "right"),
                            ("source", "left")):
        table.add_column(column, justify=justify)
    for t in types.values():
        table.add_row(t.name, f"{t.speedup:g}", f"{t.memory_gb:g}", t.source)
    wide_console([table]).print(table)
    return 0
