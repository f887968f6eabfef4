"""One input resolver (simsched.config.resolve), the program name in usage lines (simsched.cli.args.program)
and install hints in the form that fits the install (simsched.core.extras.install_hint)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from simsched.cli.main import main
from simsched.config import examples
from simsched.config.resolve import policy_ref, scenario_path
from simsched.core import extras
from simsched.core.errors import InputError

REPO = Path(__file__).resolve().parents[1]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _simsched(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simsched", *argv], capture_output=True, text=True,
                          env=_env(), cwd=cwd)


# -- the resolver ---------------------------------------------------------------------------------------------


def test_an_existing_path_is_returned_as_typed(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "mine.toml").write_text("")
    (tmp_path / "philly_hetero").write_text("")  # a file of an example's name wins over the example
    monkeypatch.chdir(tmp_path)
    assert scenario_path("mine.toml") == Path("mine.toml")
    assert scenario_path(Path("mine.toml")) == Path("mine.toml")
    assert scenario_path("philly_hetero") == Path("philly_hetero")
    assert scenario_path(str(tmp_path / "mine.toml")) == tmp_path / "mine.toml"
    assert scenario_path(".") == Path(".")  # a folder exists: the reader says it is not a scenario file


def test_an_example_name_is_its_shipped_file(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert scenario_path("philly_hetero") == examples.find("philly_hetero")
    assert scenario_path("course/philly") == scenario_path("course/philly.toml") == examples.find("course/philly")
    assert scenario_path("course/philly").is_file()


def test_a_relative_path_is_looked_for_beside_base_first(tmp_path: Path) -> None:
    (tmp_path / "philly_hetero").write_text("")
    assert scenario_path("philly_hetero", base=tmp_path) == tmp_path / "philly_hetero"
    assert scenario_path("course/philly", base=tmp_path) == examples.find("course/philly")


def test_a_typo_is_one_line_naming_what_was_typed_where_it_looked_and_the_closest_example(
        tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as error:
        scenario_path("phily_hetero")
    line = str(error.value)
    assert "\n" not in line
    assert line.startswith("phily_hetero: file not found: ")
    assert f"./phily_hetero in the working directory {Path.cwd()}" in line
    assert f"among the {len(examples.examples())} shipped examples" in line
    assert "(did you mean 'philly_hetero'?)" in line and "simsched examples" in line


def test_a_checkout_path_typed_elsewhere_suggests_the_example(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"did you mean 'philly_hetero'\?"):
        scenario_path("scenarios/philly_hetero.toml")


def test_a_typo_in_a_file_name_suggests_the_file_beside_it(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "cluster_big.toml").write_text("")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=r"did you mean 'sub/cluster_big.toml'\?"):
        scenario_path("sub/cluster_bgi.toml")


def test_an_absolute_path_is_named_as_typed(tmp_path: Path) -> None:
    missing = tmp_path / "nothing.toml"
    with pytest.raises(InputError) as error:
        scenario_path(missing)
    assert str(error.value).startswith(f"{missing}: file not found: looked for {missing} ")


def test_the_cli_keeps_the_file_not_found_line(tmp_path: Path, capsys) -> None:
    for argv in ([str(tmp_path / "nothing.toml")], ["run", str(tmp_path / "nothing.toml")],
                 ["validate", str(tmp_path / "nothing.toml")], ["compare", str(tmp_path / "nothing.toml")]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "nothing.toml: file not found" in err[0], (argv, err)


def test_every_command_names_the_closest_example(capsys) -> None:
    for argv in (["phily_hetero"], ["run", "phily_hetero"], ["validate", "phily_hetero"],
                 ["compare", "phily_hetero"], ["gpu-types", "phily_hetero"],
                 ["learn", "phily_hetero", "--out", "never.json"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "did you mean 'philly_hetero'" in err[0], (argv, err)


def test_a_near_miss_of_a_subcommand_is_still_named_so(capsys) -> None:
    assert main(["comapre", "x.toml"]) == 2
    assert "unknown subcommand 'comapre' (did you mean 'compare'?)" in capsys.readouterr().err


def test_the_python_api_takes_an_example_name(tmp_path: Path, monkeypatch) -> None:
    from simsched.runs.single import scenario_of

    monkeypatch.chdir(tmp_path)
    assert scenario_of("course/philly", "simsched.run").path == examples.find("course/philly")
    with pytest.raises(InputError, match="did you mean 'course/philly'"):
        scenario_of("course/phily", "simsched.run")


def test_an_experiment_spec_takes_example_names_and_files_beside_it(tmp_path: Path) -> None:
    from simsched.runs.experiment.spec import load_spec

    shutil.copy(examples.find("course/philly"), tmp_path / "philly.toml")
    spec = tmp_path / "spec.toml"
    spec.write_text('name = "e"\nscenarios = ["philly.toml", "philly_hetero"]\nschedulers = ["fifo"]\n')
    assert load_spec(spec).scenarios == (tmp_path / "philly.toml", examples.find("philly_hetero"))
    spec.write_text('name = "e"\nscenarios = ["phily_hetero"]\nschedulers = ["fifo"]\n')
    with pytest.raises(InputError) as error:
        load_spec(spec)
    line = str(error.value)
    assert "\n" not in line and line.startswith(f"{spec}: scenarios: phily_hetero: file not found")
    assert "relative to the spec's folder" in line and "did you mean 'philly_hetero'" in line


def test_policy_ref_prefers_the_file_beside_the_scenario(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "here").mkdir()
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "here" / "mine.py").write_text("")
    scenario = tmp_path / "scenarios" / "s.toml"
    monkeypatch.chdir(tmp_path / "here")
    assert policy_ref("fifo", scenario) == "fifo"
    assert policy_ref("mine.py:Mine", scenario) == f"{tmp_path / 'here' / 'mine.py'}:Mine"  # from the cwd
    (tmp_path / "scenarios" / "mine.py").write_text("")
    assert policy_ref("mine.py:Mine", scenario) == "mine.py:Mine"  # beside the scenario
    with pytest.raises(InputError) as nowhere:  # in neither folder: both are named (issue 37)
        policy_ref("gone.py:Gone", scenario)
    assert (f"looked next to the scenario ({tmp_path / 'scenarios' / 'gone.py'}) and in the working directory "
            f"({tmp_path / 'here' / 'gone.py'})") in str(nowhere.value)


def test_commands_take_example_names_from_any_directory(tmp_path: Path) -> None:
    """The issue's commands, run from a folder that holds no scenario (a subprocess with cwd=tmp_path)."""
    done = _simsched("validate", "course/philly", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("course/philly: ok: ")
    done = _simsched("compare", "philly_hetero", "--schedulers", "fifo,sjf", "--seeds", "2", "--jobs", "100",
                     "--workers", "1", "--quiet", "--out", "cmp", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    rows = (tmp_path / "cmp" / "compare_runs.csv").read_text().strip().splitlines()
    assert len(rows) == 1 + 2 * 2  # a header, 2 schedulers x 2 seeds
    done = _simsched("learn", "course/philly", "--population", "8", "--generations", "1", "--train", "2",
                     "--alpha", "2", "--validation", "1", "--jobs", "30", "--workers", "1", "--quiet", "--out", "x.json",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "x.json").read_text())
    done = _simsched("validate", "phily_hetero", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert f"in the working directory {tmp_path.resolve()}" in done.stderr and "did you mean 'philly_hetero'" in done.stderr


# -- the program name ---------------------------------------------------------------------------------------


def test_program_follows_argv0(monkeypatch) -> None:
    from simsched.cli.args import command, program

    monkeypatch.setattr(sys, "argv", ["/venv/bin/simsched", "--help"])
    assert program() == "simsched" and command("compare") == "simsched compare"
    monkeypatch.setattr(sys, "argv", ["C:\\venv\\Scripts\\simsched.exe"] if os.sep == "\\" else ["simsched.exe"])
    assert program() == "simsched"
    monkeypatch.setattr(sys, "argv", [str(REPO / "simsched" / "__main__.py"), "--help"])
    assert program() == "python -m simsched" and command("rl", "train") == "python -m simsched rl train"
    monkeypatch.setattr(sys, "argv", [])
    assert program() == "python -m simsched"


def test_usage_and_messages_quote_the_program_as_started(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["simsched"])
    with pytest.raises(SystemExit):
        main(["validate", "--help"])
    assert capsys.readouterr().out.startswith("usage: simsched validate ")
    assert main(["learn", "x.toml", "--out", "x.json", "--population", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: simsched learn: argument --population")
    monkeypatch.setattr(sys, "argv", ["/somewhere/simsched/__main__.py"])
    assert main(["learn", "x.toml", "--out", "x.json", "--population", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: python -m simsched learn: argument --population")


def _console_script() -> Path | None:
    beside = Path(sys.executable).parent / "simsched"
    found = beside if beside.is_file() else shutil.which("simsched")
    return Path(found) if found else None


def test_help_says_how_the_program_was_started(tmp_path: Path) -> None:
    as_module = _simsched("--help", cwd=tmp_path)
    assert as_module.returncode == 0 and as_module.stdout.startswith("usage: python -m simsched ")
    as_module = _simsched("learn", "--help", cwd=tmp_path)
    assert as_module.returncode == 0 and as_module.stdout.startswith("usage: python -m simsched learn ")
    script = _console_script()
    if script is None:
        pytest.skip("the simsched console script is not installed (pip install -e . puts it beside python)")
    for argv, usage in ((["--help"], "usage: simsched "), (["learn", "--help"], "usage: simsched learn "),
                        (["rl", "--help"], "usage: simsched rl train ")):
        done = subprocess.run([str(script), *argv], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0 and done.stdout.startswith(usage), (argv, done.stdout, done.stderr)


# -- install hints --------------------------------------------------------------------------------------------


def test_install_hint_in_a_checkout_and_from_a_wheel(monkeypatch) -> None:
    monkeypatch.setattr(extras, "from_checkout", lambda: True)
    assert extras.install_hint("plots") == "pip install -e '.[plots]'"
    assert extras.install_hint() == "pip install -e ."
    monkeypatch.setattr(extras, "from_checkout", lambda: False)
    assert extras.install_hint("plots") == "pip install 'simsched[plots]'"
    assert extras.install_hint() == "pip install simsched"


def test_help_names_the_hint_of_this_install(monkeypatch, capsys) -> None:
    monkeypatch.setattr(extras, "from_checkout", lambda: False)
    with pytest.raises(SystemExit):
        main(["--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "pip install 'simsched[parquet]'" in out and "pip install 'simsched[plots]'" in out
    assert "pip install -e" not in out


class _Distribution:
    def __init__(self, direct_url: str | None) -> None:
        self.direct_url = direct_url

    def read_text(self, name: str) -> str | None:
        return self.direct_url if name == "direct_url.json" else None


@pytest.fixture
def detection(tmp_path: Path, monkeypatch):
    """from_checkout() for a package folder in tmp_path, with a stand-in installed distribution."""
    import importlib.metadata

    (tmp_path / "simsched").mkdir()
    monkeypatch.setattr(extras, "PACKAGE", tmp_path / "simsched")

    def detect(direct_url: str | None, setup_cfg: bool = False) -> bool:
        if setup_cfg:
            (tmp_path / "setup.cfg").write_text("[metadata]\nname = simsched\n")
        monkeypatch.setattr(importlib.metadata, "distribution", lambda name: _Distribution(direct_url))
        extras.from_checkout.cache_clear()
        return extras.from_checkout()

    yield detect
    extras.from_checkout.cache_clear()


def test_from_checkout_reads_setup_cfg_and_direct_url(detection) -> None:
    assert detection(json.dumps({"url": "file:///w/simsched.whl", "archive_info": {}})) is False
    assert detection(None) is False  # installed from an index: no direct_url.json
    assert detection("not json") is False
    assert detection(json.dumps({"url": "file:///w/simsched", "dir_info": {"editable": True}})) is True
    assert detection(json.dumps({"url": "file:///w/simsched", "dir_info": {}})) is False
    assert detection(None, setup_cfg=True) is True  # the package folder's parent is a checkout
