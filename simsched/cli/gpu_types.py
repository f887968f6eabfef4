"""``simsched gpu-types [SCENARIO] [--basis B] [--models] [--csv]``: the GPU type catalog (valid
``gpu_type`` names), fastest first, on a speed basis; ``--models`` the per-model speeds (issue 38)."""

from __future__ import annotations

import csv
import sys

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import command as _command
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.config.scenario import load_scenario
from simsched.core.model import (
    DEFAULT_SPEED_BASIS,
    SPEED_BASES,
    GpuType,
    builtin_gpu_types,
    model_sources,
    model_speed_table,
)
from simsched.present.report import wide_console

#: the measured types of the model table, in column order
MODEL_COLUMNS = ("K80", "P100", "V100", "A10", "A100", "A100M80", "H100")


def gpu_types_command(argv: list[str]) -> int:
    """The GPU type catalog: every valid ``gpu_type`` name with its speed, memory and source."""
    p = _Parser(prog=_command("gpu-types"),
                description="List the GPU types a scenario may name (the built-in catalog, or a scenario's), "
                            "fastest first.")
    p.add_argument("scenario", nargs="?", help="also show the types this scenario adds or overrides "
                                               "(on the scenario's own speed_basis)")
    p.add_argument("--basis", choices=SPEED_BASES, default=None,
                   help=f"speed basis of the built-in catalog (default {DEFAULT_SPEED_BASIS}: published training "
                        "throughputs; fp32: FP32 datasheet TFLOPS ratios, the catalog before issue 38)")
    p.add_argument("--models", action="store_true",
                   help="the per-model speeds a job with `model = ...` runs at (simsched/data/model_speeds.toml)")
    p.add_argument("--csv", action="store_true", help="plain CSV rows (name,speedup,memory_gb,source)")
    args = p.parse_args(argv)
    if args.models:
        return _models(args.csv)
    if args.scenario:
        if args.basis is not None:
            p.error("--basis: give a scenario or a basis, not both (a scenario sets its own speed_basis)")
        scenario = load_scenario(_scenario_path(args.scenario))
        types, basis = scenario.gpu_types, scenario.speed_basis
    else:
        basis = args.basis or DEFAULT_SPEED_BASIS
        types = builtin_gpu_types(basis)
    rows = _fastest_first(types)
    if args.csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["name", "speedup", "memory_gb", "source"])
        for t in rows:
            writer.writerow([t.name, f"{t.speedup:g}", f"{t.memory_gb:g}", t.source])
        return 0
    from rich.table import Table

    table = Table(title=f"GPU types, {basis} basis (speedup: throughput relative to V100; memory per GPU)")
    for column, justify in (("gpu_type", "left"), ("speedup", "right"), ("memory (GB)", "right"),
                            ("source", "left")):
        table.add_column(column, justify=justify)
    for t in rows:
        table.add_row(t.name, f"{t.speedup:g}", f"{t.memory_gb:g}", t.source)
    wide_console([table]).print(table)
    return 0


def _fastest_first(types: dict[str, GpuType]) -> list[GpuType]:
    """Types by speedup, fastest first; catalog order among equals."""
    order = {name: i for i, name in enumerate(types)}
    return sorted(types.values(), key=lambda t: (-t.speedup, order[t.name]))


def _models(as_csv: bool) -> int:
    speeds, sources = model_speed_table(), model_sources()
    header = ["model", *MODEL_COLUMNS, "source"]
    cells = [[model, *(f"{row[t]:g}" if t in row else "" for t in MODEL_COLUMNS), sources[model]]
             for model, row in speeds.items()]
    if as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(cells)
        return 0
    from rich.table import Table

    table = Table(title="Per-model training speed relative to V100 (blank: the type's average is used)")
    for column in header:
        table.add_column(column, justify="left" if column in ("model", "source") else "right")
    for row in cells:
        table.add_row(*row)
    wide_console([table]).print(table)
    return 0
