"""Short labels (issue 37): a file policy ``dir/alice.py:Policy`` shows as ``alice:Policy`` in compare's
tables and failure lines, two files of one name in other folders are told apart, and compare.csv
keeps the name as given with the file's full path."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

from simsched.cli.main import main
from simsched.runs.compare import short_labels

CLASS = Path(__file__).parent / "data" / "class37"


def test_a_file_policy_shows_as_its_stem_and_a_class(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    names = ["fifo", "alice.py:Policy", str(tmp_path / "hw" / "bob.py") + ":Mine", "las-short", "pkg.mod:Cls"]
    assert short_labels(names, scenario) == {"fifo": "fifo", "alice.py:Policy": "alice:Policy",
                                             names[2]: "bob:Mine", "las-short": "las-short",
                                             "pkg.mod:Cls": "pkg.mod:Cls"}


def test_labels_that_clash_get_their_folders(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    names = ["a/policy.py:Policy", "b/policy.py:Policy", "x/a/p.py:P", "y/a/p.py:P", "policy.py:Other"]
    assert short_labels(names, scenario) == {"a/policy.py:Policy": "a/policy:Policy",
                                             "b/policy.py:Policy": "b/policy:Policy",
                                             "x/a/p.py:P": "x/a/p:P", "y/a/p.py:P": "y/a/p:P",
                                             "policy.py:Other": "policy:Other"}


def test_compare_shows_short_labels_and_keeps_the_full_path(tmp_path: Path, capsys) -> None:
    for folder, student in (("a", "good.py"), ("b", "exits.py")):
        (tmp_path / folder).mkdir()
        shutil.copy(CLASS / student, tmp_path / folder / "policy.py")
    shutil.copy(CLASS / "class.toml", tmp_path / "class.toml")
    out = tmp_path / "out"
    code = main(["compare", str(tmp_path / "class.toml"), "--schedulers", "fifo,a/policy.py:Policy,b/policy.py:Policy",
                 "--keep-going", "--workers", "1", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 4
    assert "failed: b/policy:Policy on class37 (seed 1): " in captured.err
    assert "a/policy:Policy" in captured.out and "a/policy.py:Policy" not in captured.out
    report = (out / "compare.md").read_text()
    assert "| `a/policy:Policy` |" in report and "| `b/policy:Policy` | failed | failed (1 of 1) |" in report
    with open(out / "compare.csv", newline="") as fh:
        rows = {(row["scheduler"], row["shown_as"], row["policy_file"]) for row in csv.DictReader(fh)}
    assert rows == {("fifo", "fifo", ""), ("a/policy.py:Policy", "a/policy:Policy", str(tmp_path / "a" / "policy.py")),
                    ("b/policy.py:Policy", "b/policy:Policy", str(tmp_path / "b" / "policy.py"))}
