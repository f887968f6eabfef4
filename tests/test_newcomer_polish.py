"""Issue 37 item 9, "Newcomer polish": each was a real stumble of a first-time user."""

from __future__ import annotations

import configparser
import io
import warnings
from pathlib import Path

import pytest
from rich.console import Console

import simsched
from simsched.cli.main import main
from simsched.core.errors import SimschedWarning
from simsched.core.metrics import STARVATION_METRICS
from simsched.present.report import metric_table
from tests.cheat_policies import Never
from tests.helpers import write_scenario

REPO = Path(__file__).resolve().parents[1]
CLUSTER = '[[cluster]]\nname = "c0"\nnodes = [{ count = 4, gpus = 8, gpu_type = "V100" }]'
JOBS = ["0,0,100,8,,,,,", "1,10,50,16,,,,,", "2,20,5,1,,,,,"]


def _scenario(folder, name="scenario.toml", extra=""):
    path = write_scenario(folder, clusters=CLUSTER, scheduler='policy = "fifo"', jobs=JOBS, extra=extra)
    return path.rename(folder / name)


def test_validate_prints_the_path_as_typed(tmp_path, monkeypatch, capsys):
    # simsched prints the argument untouched; a viewer that capitalises the first character of an
    # output (as some notebook and agent front-ends do) showed "My.toml" for "my.toml"
    monkeypatch.chdir(tmp_path)
    _scenario(tmp_path, "my.toml")
    (tmp_path / "sub").mkdir()
    _scenario(tmp_path / "sub", "mY.Toml")
    assert main(["validate", "my.toml"]) == 0
    assert capsys.readouterr().out.startswith("my.toml: ok: ")
    assert main(["validate", "./sub/mY.Toml"]) == 0
    assert capsys.readouterr().out.startswith("./sub/mY.Toml: ok: ")


def _rendered(summary: dict) -> str:
    console = Console(width=200, file=io.StringIO())
    console.print(metric_table(summary))
    return console.file.getvalue()


SUMMARY = {
    "avg_jct": 10.0, "seed": 1, "partial": False,
    "starvation": {"p99_wait": 5.0, "max_wait": 6.0, "large_gpu_hours_late_share": 0.25,
                   "wait_by_size": {"1": {"jobs": 2, "mean_wait": 1.0}, "2-8": {"jobs": 1, "mean_wait": 3.0},
                                    ">8": {"jobs": 0, "mean_wait": None}}},
}


def test_run_table_labels_are_those_of_compare_and_experiment():
    text = _rendered(SUMMARY)
    for _, label, _, _ in STARVATION_METRICS:
        assert label in text
    assert "Share of >8-GPU GPU-h waiting >24 h" in text and "0.250" in text
    assert "GPU-h of >8-GPU jobs" not in text  # a share, not hours
    # one hyphenation for the size classes: "1-GPU jobs" like "2-8-GPU jobs" and ">8-GPU jobs"
    assert "Avg wait, 1-GPU jobs (s)" in text and "Avg wait, 2-8-GPU jobs (s)" in text
    assert " GPU jobs" not in text


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_set_seed_says_use_the_seed_flag(tmp_path, capsys):
    path = str(_scenario(tmp_path))
    assert main([path, "--set", "seed=2", "--quiet"]) == 2
    err = _one_error_line(capsys)
    assert "seed is a top-level scenario key" in err and "use --seed 2" in err
    assert main(["compare", path, "--set", "seed=2", "--quiet"]) == 2  # compare has --seeds N, no --seed
    err = _one_error_line(capsys)
    assert "edit seed in the scenario file" in err and "--seeds N" in err and "--seed 2" not in err
    assert main([path, "--set", "name=x", "--quiet"]) == 2
    assert "edit name in the scenario file" in _one_error_line(capsys)
    assert main([path, "--seed", "2", "--quiet"]) == 0


def test_a_missing_policy_file_names_both_folders_looked_in(tmp_path, monkeypatch, capsys):
    (tmp_path / "sc").mkdir()
    (tmp_path / "cwd").mkdir()
    path = str(_scenario(tmp_path / "sc"))
    monkeypatch.chdir(tmp_path / "cwd")
    (tmp_path / "cwd" / "mine.py").write_text("")
    both = (f"looked next to the scenario ({tmp_path / 'sc' / 'nope.py'}) and in the working directory "
            f"({tmp_path / 'cwd' / 'nope.py'})")
    for argv in ([path, "--policy", "nope.py:P", "--quiet"], ["validate", path, "--policy", "nope.py:P"],
                 ["compare", path, "--schedulers", "fifo,nope.py:P", "--quiet"]):
        assert main(argv) == 2
        err = _one_error_line(capsys)
        assert "policy file nope.py not found" in err and both in err, err
    assert main([path, "--policy", "mien.py:P", "--quiet"]) == 2
    assert "did you mean 'mine.py'" in _one_error_line(capsys)  # a typo of a file in the working directory
    # a policy key in the scenario file is looked for next to the scenario only, and says so
    scenario = tmp_path / "sc" / "scenario.toml"
    scenario.write_text(scenario.read_text().replace('policy = "fifo"', 'policy = "nope.py:P"'))
    assert main([path, "--quiet"]) == 2
    assert "is looked for next to the scenario" in _one_error_line(capsys)


def test_a_policy_file_without_its_class_says_to_add_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    path = str(_scenario(tmp_path))
    (tmp_path / "alice.py").write_text("class Alice:\n    pass\n")
    wanted = "'alice.py' is a policy file without its class: give it as 'alice.py:ClassName'"
    for argv in ([path, "--policy", "alice.py", "--quiet"], ["validate", path, "--policy", "alice.py"],
                 ["compare", path, "--schedulers", "fifo,alice.py", "--quiet"]):
        assert main(argv) == 2
        err = _one_error_line(capsys)
        assert wanted in err and "unknown" not in err, err
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(scenario.read_text().replace('policy = "fifo"', 'policy = "alice.py"'))
    assert main([path, "--quiet"]) == 2
    assert "scheduler.policy: " + wanted in _one_error_line(capsys)


def _setup_cfg():
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")
    return cfg


def test_the_package_ships_py_typed_and_has_classifiers():
    assert (REPO / "simsched" / "py.typed").is_file()
    cfg = _setup_cfg()
    assert "py.typed" in [p.strip() for p in cfg["options.package_data"]["simsched"].split(",")]
    classifiers = cfg["metadata"]["classifiers"].strip().splitlines()
    assert "Typing :: Typed" in classifiers and any(c.startswith("Programming Language :: Python :: 3") for c in classifiers)


# a 16-GPU job fits no node of 8 GPUs with workers=1: it is infeasible (the scenario's jobs are
# `job_id,submit,duration,gpus,workers,...`; 16 GPUs as 2 workers of 8 fits, as 1 worker does not)
INFEASIBLE = ["0,0,100,8,,,,,", "1,10,50,16,1,,,,", "2,20,5,1,,,,,"]


def _infeasible_scenario(folder):
    return write_scenario(folder, clusters=CLUSTER, scheduler='policy = "fifo"', jobs=INFEASIBLE)


def test_the_api_warns_a_runs_warnings(tmp_path):
    path = _infeasible_scenario(tmp_path)
    with pytest.warns(SimschedWarning, match="infeasible|no node") as caught:
        result = simsched.run(path)
    assert [str(w.message) for w in caught if w.category is SimschedWarning] == result.summary["warnings"]
    assert caught[0].filename == __file__  # attributed to the caller's line, not simsched's
    with pytest.warns(SimschedWarning) as caught:  # what only the run can tell, from a child process too
        simsched.run(path, scheduler=Never, run_timeout=60)
    assert any("left 2 of 2 feasible jobs unfinished" in str(w.message) for w in caught)
    with warnings.catch_warnings():  # -W error::simsched.core.errors.SimschedWarning
        warnings.simplefilter("error", SimschedWarning)
        with pytest.raises(SimschedWarning):
            simsched.run(path)


def test_compare_through_the_api_warns_too(tmp_path):
    path = _infeasible_scenario(tmp_path)
    with pytest.warns(SimschedWarning) as caught:
        simsched.compare(path, ["fifo", "sjf"], workers=1)
    assert any("infeasible" in str(w.message) or "no node" in str(w.message) for w in caught)


def test_the_cli_prints_the_warnings_and_does_not_warn(tmp_path, capsys):
    path = str(_infeasible_scenario(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SimschedWarning)  # a warn() would raise: main would fail
        assert main([path, "--quiet"]) == 0
        assert main(["compare", path, "--schedulers", "fifo,sjf", "--workers", "1", "--quiet"]) == 0
    assert "warning: " in capsys.readouterr().err
