"""Every simsched command of README.md, docs/assignment.md and the assignment's handout (docs/examples/README.md)
runs as written and exits 0 (issue 37).

The commands are read from the documents themselves: each line of a fenced ``bash``/``text`` block (a trailing
backslash joins lines, ``#`` comments and ``&&`` chains are split off) that starts ``python -m simsched``,
``simsched``, ``.venv/bin/python -m simsched`` or ``python tools/``, and each inline code span that is a whole
command (it names a file or is a subcommand that takes none; fragments such as `python -m simsched learn` and
placeholders such as `simsched FILE` are not commands). They run in document order, each document in its own
copy of the checkout's scenarios, workloads, docs, experiments and tools (the commands write ``out/``,
``cmp/``, ``grades/`` ... there), with no limits the text does not give. Files the text says the reader makes
(task 1's ``my_policy2.py``; the teacher's placeholders ``alice.py``, ``bob.py``, ``carol.py``) are made as the
text says, from the template. The handout's commands run in a folder written by ``simsched assignment``.

Slow (minutes: whole example scenarios, a learn, an RL training, experiment presets): marked ``slow``, which
the README's ``pytest`` leaves out and .ci/run runs (``pytest -m slow``).
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simsched.cli.commands import SUBCOMMANDS

REPO = Path(__file__).resolve().parents[1]
COPIED = ("scenarios", "workloads", "docs", "experiments", "tools")
STARTS = ("python -m simsched", "simsched ", ".venv/bin/python -m simsched", "python tools/")
#: subcommands that are whole commands with no argument
BARE = ("gpu-types", "examples")
#: one run may take this long before it counts as hung (a guard, not a timing check)
HANG_S = 3600


def commands(text: str) -> list[str]:
    """The simsched commands of a Markdown text, in order (blocks first within each block's place)."""
    found: list[tuple[int, str]] = []
    for match in re.finditer(r"```(\w*)\n(.*?)```", text, flags=re.S):
        if match.group(1) not in ("bash", "sh", "text", "console", ""):
            continue
        for line in match.group(2).replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            for part in line.split("&&"):
                part = " ".join(part.split())
                if part.startswith(STARTS):
                    found.append((match.start(), part))
    prose = re.sub(r"```.*?```", lambda m: " " * len(m.group(0)), text, flags=re.S)
    for match in re.finditer(r"`([^`]+)`", prose):
        span = " ".join(match.group(1).split())
        if not span.startswith(("python -m simsched ", "simsched ")):
            continue
        words = shlex.split(span)[3 if span.startswith("python") else 1:]
        if any(re.fullmatch(r"[A-Z]+", word) or "..." in word for word in words):
            continue  # a placeholder (simsched FILE, simsched ...)
        if words == [] or (words[0] in SUBCOMMANDS and len(words) == 1 and words[0] not in BARE):
            continue  # a fragment naming a subcommand
        found.append((match.start(), span))
    return [command for _, command in sorted(found, key=lambda item: item[0])]


def _argv(command: str) -> list[str]:
    words = shlex.split(command)
    if words[0].endswith("python") and words[1:3] == ["-m", "simsched"]:
        return [sys.executable, "-m", "simsched", *words[3:]]
    if words[0] == "simsched":
        script = Path(sys.executable).with_name("simsched")  # the console script, where it is installed
        return [str(script), *words[1:]] if script.exists() else [sys.executable, "-m", "simsched", *words[1:]]
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    raise AssertionError(f"not a command this test knows how to run: {command}")


def _workspace(tmp: Path) -> Path:
    for folder in COPIED:
        shutil.copytree(REPO / folder, tmp / folder, ignore=shutil.ignore_patterns("__pycache__", "_tmp_*"))
    return tmp


def _policy_copy(template: Path, target: Path, cls: str) -> None:
    """The template policy as another file and class, as the text tells the reader to make it."""
    text = template.read_text(encoding="utf-8")
    assert "class MyPolicy:" in text
    target.write_text(text.replace("class MyPolicy:", f"class {cls}:"), encoding="utf-8")


def _run_all(found: list[str], cwd: Path) -> None:
    failures = []
    for command in found:
        done = subprocess.run(_argv(command), cwd=cwd, capture_output=True, text=True, timeout=HANG_S,
                              stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            failures.append(f"{command}\n  exit {done.returncode}: {done.stderr.strip()[-800:]}")
    assert not failures, "\n".join(failures)


def test_the_extractor_reads_blocks_inline_commands_and_skips_fragments() -> None:
    text = ("x `python -m simsched learn` y `simsched new FILE --from NAME` `python -m simsched gpu-types`\n"
            "`simsched ...` `python -m simsched compare a.toml ...`\n"
            "```bash\npython -m simsched a.toml --out o/ \\\n    --seed 3   # note\n"
            "python3 -m venv .venv && .venv/bin/python -m simsched b.toml\npip install -e .\n```\n"
            "`python -m simsched compare c.toml\n   --seeds 5`\n")
    assert commands(text) == ["python -m simsched gpu-types", "python -m simsched a.toml --out o/ --seed 3",
                              ".venv/bin/python -m simsched b.toml", "python -m simsched compare c.toml --seeds 5"]


def test_the_documents_hold_the_commands_they_are_known_for() -> None:
    readme = commands((REPO / "README.md").read_text(encoding="utf-8"))
    assignment = commands((REPO / "docs" / "assignment.md").read_text(encoding="utf-8"))
    handout = commands((REPO / "docs" / "examples" / "README.md").read_text(encoding="utf-8"))
    assert ".venv/bin/python -m simsched scenarios/philly_hetero.toml" in readme and len(readme) >= 20
    assert any("my_policy2.py:MyPolicy2" in c for c in assignment) and any("alice.py:Policy" in c for c in assignment)
    assert any(c.startswith("python tools/tenant_waits.py") for c in assignment)
    assert any("--keep-going" in c and "--out grades/" in c for c in handout) and len(handout) >= 8


@pytest.mark.slow
def test_every_readme_command_runs_as_written(tmp_path: Path) -> None:
    _run_all(commands((REPO / "README.md").read_text(encoding="utf-8")), _workspace(tmp_path))


@pytest.mark.slow
def test_every_assignment_command_runs_as_written(tmp_path: Path) -> None:
    found = commands((REPO / "docs" / "assignment.md").read_text(encoding="utf-8"))
    work = _workspace(tmp_path)
    examples = work / "docs" / "examples"
    # task 1: "Copy docs/examples/my_policy.py to my_policy2.py beside it, rename the class"
    _policy_copy(examples / "my_policy.py", examples / "my_policy2.py", "MyPolicy2")
    # for teachers: "the file names here are placeholders for your students' files"
    for student in ("alice", "bob", "carol"):
        _policy_copy(examples / "my_policy.py", examples / f"{student}.py", "Policy")
    _run_all(found, work)


@pytest.mark.slow
def test_every_handout_command_runs_as_written_in_a_written_handout(tmp_path: Path) -> None:
    """docs/examples/README.md is the handout's README: its commands run from the folder
    ``simsched assignment`` writes, which holds nothing else."""
    done = subprocess.run([sys.executable, "-m", "simsched", "assignment", "hw"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stderr
    hw = tmp_path / "hw"
    found = commands((hw / "README.md").read_text(encoding="utf-8"))
    assert found == commands((REPO / "docs" / "examples" / "README.md").read_text(encoding="utf-8"))
    _run_all(found, hw)
    assert (hw / "grades" / "compare.csv").is_file()
