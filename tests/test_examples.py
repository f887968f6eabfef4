"""Shipped examples by name: ``simsched examples``, ``simsched run NAME``, ``simsched NAME``,
``simsched new FILE --from NAME`` (the wheel's copy is checked by .ci/run from outside the checkout)."""

from __future__ import annotations

import json
from pathlib import Path

from simsched.cli.main import main
from simsched.config.examples import examples, root


def test_examples_list_the_shipped_scenarios_not_their_parts(capsys) -> None:
    names = [example.name for example in examples()]
    assert "philly_hetero" in names and "course/philly" in names
    assert not any(name.startswith("clusters/") for name in names)
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "philly_hetero " in out and "[needs the real trace" in out.split("philly_hetero_trace", 1)[1].splitlines()[0]


def test_an_example_runs_by_name_from_anywhere(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "philly_hetero", "--jobs", "200", "--out", "a", "--quiet"]) == 0
    assert main(["philly_hetero", "--jobs", "200", "--out", "b", "--quiet"]) == 0
    one = json.loads((tmp_path / "a" / "summary.json").read_text())
    two = json.loads((tmp_path / "b" / "summary.json").read_text())
    assert one["avg_jct"] == two["avg_jct"] and one["jobs"] == 200


def test_an_unknown_name_is_one_line_with_a_suggestion(capsys) -> None:
    assert main(["run", "phily_hetero"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean 'philly_hetero'" in err[0]


def test_new_writes_a_starter_that_runs_where_it_is_written(tmp_path: Path, capsys) -> None:
    path = tmp_path / "mine.toml"
    assert main(["new", str(path), "--from", "course/philly"]) == 0
    text = path.read_text()
    assert text.startswith("# A starter scenario") and str(root()) not in text
    assert (tmp_path / "workloads" / "philly_like.toml").is_file()  # copied beside it (tests/test_new_starter.py)
    assert main(["validate", str(path)]) == 0
    assert main(["new", str(path)]) == 2  # never overwritten
    assert "exists" in capsys.readouterr().err


def test_version(capsys) -> None:
    import pytest

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.startswith("simsched ")
