"""``simsched examples`` (the shipped example scenarios by name) and ``simsched new FILE --from NAME``."""

from __future__ import annotations

import sys
from pathlib import Path

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import command as _command
from simsched.config.examples import examples, root, starter
from simsched.core.atomic import check_out_file, write_text
from simsched.core.errors import InputError


def examples_command(argv: list[str]) -> int:
    """``simsched examples``: the shipped example scenarios, by name."""
    p = _Parser(prog=_command("examples"), description="List the shipped example scenarios.")
    p.parse_args(argv)

    found = examples()
    width = max(len(example.name) for example in found)
    for example in found:
        trace = " [needs the real trace: download it first]" if example.needs_trace else ""
        print(f"{example.name:<{width}}  {example.summary}{trace}")
    print(f"\n{len(found)} examples in {root() / 'scenarios'}; run one with `simsched run NAME` "
          "(or `simsched NAME`), copy one with `simsched new FILE --from NAME`", file=sys.stderr)
    return 0


def new_command(argv: list[str]) -> int:
    """``simsched new FILE [--from NAME]``: write a commented starter scenario to edit."""
    p = _Parser(prog=_command("new"), description="Write a starter scenario file to edit.")
    p.add_argument("file", help="the scenario file to write (must not exist)")
    p.add_argument("--from", dest="source", metavar="NAME", help="the example to start from (default philly_hetero)")
    args = p.parse_args(argv)

    path = Path(args.file)
    if path.exists():
        raise InputError(f"{_command('new')}: {path} exists; give a new file name (nothing is overwritten)")
    check_out_file(path, "FILE")
    write_text(path, starter(args.source))
    print(f"wrote {path}; check it with `simsched validate {path}`, run it with `simsched {path}`", file=sys.stderr)
    return 0
