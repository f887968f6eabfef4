"""``simsched examples`` (the shipped example scenarios by name) and ``simsched new FILE --from NAME``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import command as _command
from simsched.config.examples import Copy, examples, root, starter
from simsched.core.atomic import check_out_file, write_text, write_with
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
    """``simsched new FILE [--from NAME]``: write a commented starter scenario to edit, and copy the
    files it names (cluster and workload files, agents, priorities, ...) beside it."""
    p = _Parser(prog=_command("new"), description="Write a starter scenario file to edit, with copies of the "
                                                    "files it names beside it.")
    p.add_argument("file", help="the scenario file to write (must not exist)")
    p.add_argument("--from", dest="source", metavar="NAME", help="the example to start from (default philly_hetero)")
    args = p.parse_args(argv)

    path = Path(args.file)
    if path.exists():
        raise InputError(f"{_command('new')}: {path} exists; give a new file name (nothing is overwritten)")
    check_out_file(path, "FILE")
    plan = starter(args.source)
    folder = path.parent
    copies, missing = [], []
    for copy in plan.copies:
        target = folder / copy.target
        if not copy.source.exists():
            if not target.exists():
                missing.append(target)
            continue
        if target.resolve() == path.resolve():
            raise InputError(f"{_command('new')}: {path} is also the name of a file the example names "
                             f"({copy.target}); give another file name (nothing was written)")
        if target.exists() or target.is_symlink():
            if target.is_file() and _same_content(target, copy):
                continue  # already there, as it would be written: reused, not overwritten
            raise InputError(f"{_command('new')}: {target} exists and would be overwritten by the example's "
                             f"{copy.target}; write the scenario in another folder (nothing was written)")
        copies.append((copy, target))
    for copy, target in copies:
        target.parent.mkdir(parents=True, exist_ok=True)
        if copy.text is not None:
            write_text(target, copy.text)
        elif copy.source.is_dir():
            shutil.copytree(copy.source, target)
        else:
            write_with(target, lambda tmp, source=copy.source: shutil.copyfile(source, tmp))
    write_text(path, plan.text)
    beside = f" and {len(copies)} file(s) it names beside it ({', '.join(c.target for c, _ in copies)})" \
        if copies else ""
    print(f"wrote {path}{beside}; check it with `simsched validate {path}`, run it with `simsched {path}`",
          file=sys.stderr)
    for target in missing:
        print(f"not copied: {target}, which the example names, is not there (a trace to download: "
              "`simsched examples` says which examples need one; put it there)", file=sys.stderr)
    return 0


def _same_content(target: Path, copy: Copy) -> bool:
    if copy.source.is_dir():
        return False
    if copy.text is not None:
        return target.read_text(encoding="utf-8", errors="replace") == copy.text
    return target.read_bytes() == copy.source.read_bytes()
