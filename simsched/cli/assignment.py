"""``simsched assignment DIR``: write the assignment's handout into a new folder (docs/assignment.md)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import command as _command
from simsched.config.handout import files
from simsched.core.atomic import write_with
from simsched.core.errors import InputError


def assignment_command(argv: list[str]) -> int:
    """Write the handout into ``DIR`` (new, or an empty folder): the scenario, the policy template,
    tasks 1 and 2's scenarios and data, and a README.md with the exact commands, run from ``DIR``."""
    p = _Parser(prog=_command("assignment"),
                description="Write the assignment's handout (scenario, policy template, task 1 and 2's data, "
                            "a README with the commands) into a new folder.")
    p.add_argument("dir", metavar="DIR", help="the folder to write (new, or empty; nothing is overwritten)")
    args = p.parse_args(argv)

    target = Path(args.dir)
    where = f"{_command('assignment')}: {target}"
    if target.exists() or target.is_symlink():
        if not target.is_dir() or target.is_symlink():
            raise InputError(f"{where}: exists and is not a folder (or is a link to one); give a new folder name")
        if any(target.iterdir()):
            raise InputError(f"{where}: is not empty; give a new or empty folder (nothing is overwritten)")
    elif not target.parent.is_dir():
        raise InputError(f"{where}: folder {target.parent} does not exist")
    sources = files()
    try:
        target.mkdir(exist_ok=True)
        for source in sources:
            write_with(target / source.name, lambda tmp, source=source: shutil.copyfile(source, tmp))
    except OSError as exc:
        raise InputError(f"{where}: cannot write there ({exc.strerror or exc})") from None
    print(f"wrote {target}/: {', '.join(source.name for source in sources)}", file=sys.stderr)
    print(f"next: cd {target} and read README.md; its commands run from there "
          f"(start with `{_command('compare_mine.toml')}`)", file=sys.stderr)
    return 0
