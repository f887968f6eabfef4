"""``simsched new FILE --from NAME`` (issue 39 item 11): every file a shipped example names, through any
file-valued key of the key reference, is copied beside the starter, which then validates from any folder
and never names the package's own path."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from simsched.cli.main import main
from simsched.config.examples import PACKAGE, _plan, examples, file_values, root
from simsched.config.keys import FILE_KINDS, HANDED_ON_FILES, SECTIONS, file_keys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent

#: a value of each kind naming the file ``name`` (``name`` without a suffix, which the kind may add)
VALUES = {"path": '"{0}.dat"', "paths": '["{0}.toml"]', "module": '"{0}.py:Mine"', "json": '"{0}.json"'}


def test_every_key_that_names_a_file_is_marked() -> None:
    """A key the reference types as a path is marked with how it names files, and every mark is a kind
    the rewriter knows (simsched.config.examples.named_files refuses others)."""
    for table in (SECTIONS, HANDED_ON_FILES):
        for section, keys in table.items():
            for key in keys:
                if "path" in key.type_name():
                    assert key.files, f"{section}.{key.name} is a path but has no files= mark"
                assert key.files in ("", *FILE_KINDS), f"{section}.{key.name}: unknown kind {key.files!r}"
    assert set(file_keys().values()) == set(FILE_KINDS)  # every kind is used, so every kind is tested below


def test_every_file_the_validator_reads_by_key_is_marked() -> None:
    """Every ``get_path("key", ...)`` in the package (a key read as a file) names a marked key: a new
    file-valued key cannot be added without ``simsched new`` copying its file."""
    marked = {name for _, name in file_keys()}
    read = set()
    for source in (ROOT / "simsched").rglob("*.py"):
        read |= set(re.findall(r'get_path\(\s*"(\w+)"', source.read_text(encoding="utf-8")))
    assert read and read <= marked, f"read as files but not marked in simsched/config/keys.py: {read - marked}"
    # the policy options whose files a run notes as read (simsched/core/inputs.py, scenario_inputs)
    inputs = (ROOT / "simsched" / "core" / "inputs.py").read_text(encoding="utf-8")
    options = re.search(r"for key, suffix, what in \((.*?)\):", inputs, re.S)
    assert options, "simsched/core/inputs.py no longer lists the policy options that name files"
    named = set(re.findall(r'\("(\w+)", "\.', options.group(1)))
    assert {"agent", "priority"} <= named <= marked, named - marked


def _scenario(section: str, text: str) -> str:
    header = {"cluster": "[[cluster]]"}.get(section, f"[{section}]")
    base = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 8 }]\n\n' if section != "cluster" else ""
    return f"{base}{header}\n{text}\n"


@pytest.mark.parametrize(("section", "name", "kind"), [(s, n, k) for (s, n), k in sorted(file_keys().items())],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_the_rewriter_copies_the_files_of_every_marked_key(tmp_path: Path, section: str, name: str,
                                                           kind: str) -> None:
    """For every marked key, an example naming a file beside it and one outside its folder: both are
    copied, the first keeps its path, the second gets a path inside the starter's folder."""
    base = tmp_path / "examples"
    home = base / "scenarios"
    home.mkdir(parents=True)
    for file in (home / "sub" / "near", base / "far" / "away"):
        file.parent.mkdir(parents=True, exist_ok=True)
        for suffix in (".dat", ".toml", ".py", ".json"):
            file.with_suffix(suffix).write_text("" if suffix == ".toml" else "x", encoding="utf-8")
    sections = ["scheduler", "compare.options.mine"] if section == "scheduler" else [section]
    for where in sections:
        for value, expected in ((VALUES[kind].format("sub/near"), "sub/near"),
                                (VALUES[kind].format("../far/away"), "far/away")):
            example = home / "example.toml"
            example.write_text(_scenario(where, f"{name} = {value}"), encoding="utf-8")
            plan = _plan(example, home, base)
            targets = {copy.target for copy in plan.copies}
            assert any(target.startswith(expected + ".") for target in targets), (where, value, targets)
            found = [v for _, key, _, v in file_values(tomllib.loads(plan.text)) if key == name]
            assert found and expected in str(found[0]) and ".." not in str(found[0])


def test_the_rewriter_reads_inline_tables_and_files_that_name_files(tmp_path: Path) -> None:
    """``cluster = [{ file = ... }]`` is rewritten, and a cluster file's own quota_file is copied and
    its path rewritten relative to where the cluster file goes."""
    base = tmp_path / "examples"
    (base / "scenarios" / "deep").mkdir(parents=True)
    (base / "fleets").mkdir()
    (base / "quotas").mkdir()
    (base / "quotas" / "q.csv").write_text("date,a\n2020-01-01,1\n", encoding="utf-8")
    (base / "fleets" / "f.toml").write_text(
        '[[cluster]]\nname = "c"\nnodes = [{ count = 1, gpus = 8 }]\nquota_file = "../quotas/q.csv"\n',
        encoding="utf-8")
    example = base / "scenarios" / "deep" / "e.toml"
    example.write_text('cluster = [{ file = "../../fleets/f.toml" }]\n', encoding="utf-8")
    plan = _plan(example, example.parent, base)
    assert 'cluster = [{ file = "fleets/f.toml" }]' in plan.text
    by_target = {copy.target: copy for copy in plan.copies}
    assert set(by_target) == {"fleets/f.toml", "quotas/q.csv"}
    assert 'quota_file = "../quotas/q.csv"' in by_target["fleets/f.toml"].text


RUNNABLE = [example.name for example in examples() if not example.needs_trace]


def test_some_examples_are_checked() -> None:
    assert "rl/philly_contended" in RUNNABLE and "philly_hetero" in RUNNABLE and len(RUNNABLE) >= 8


@pytest.mark.parametrize("name", RUNNABLE)
def test_new_from_every_example_validates_from_another_folder(tmp_path: Path, monkeypatch, capsys,
                                                              name: str) -> None:
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    path = here / "mine.toml"
    assert main(["new", str(path), "--from", name]) == 0
    monkeypatch.chdir(elsewhere)
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    own = {str(PACKAGE), str(root()), str(PACKAGE.resolve()), "site-packages"}
    for file in here.rglob("*"):
        if file.is_file():
            data = file.read_bytes()
            assert not any(text.encode() in data for text in own), f"{file} names the package's own path"


def test_the_rl_starter_has_its_agent_beside_it(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "x.toml"
    assert main(["new", str(path), "--from", "rl/philly_contended"]) == 0
    agent = tomllib.loads(path.read_text(encoding="utf-8"))["scheduler"]["agent"]
    assert (tmp_path / agent).is_file() and not Path(agent).is_absolute()
    monkeypatch.chdir(tmp_path.parent)
    assert main(["validate", str(path.relative_to(tmp_path.parent))]) == 0


def test_a_copy_never_overwrites_a_file(tmp_path: Path, capsys) -> None:
    """An identical file already there is reused; a different one is refused in one line, exit 2, and
    nothing is written."""
    assert main(["new", str(tmp_path / "a.toml"), "--from", "philly_hetero"]) == 0
    assert main(["new", str(tmp_path / "b.toml"), "--from", "philly_hetero"]) == 0  # the same copies
    mine = tmp_path / "workloads" / "philly_like.toml"
    mine.write_text("# mine\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["new", str(tmp_path / "c.toml"), "--from", "philly_hetero"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "philly_like.toml exists" in err[0]
    assert mine.read_text(encoding="utf-8") == "# mine\n" and not (tmp_path / "c.toml").exists()
