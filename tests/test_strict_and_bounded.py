"""Bounded work and strict readers (issue 24): each class of lenient or unbounded input is one line,
exit 2, before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from simsched.cli.main import main

SCENARIO = """
name = "s"
seed = 1
{gpu_types}
[[cluster]]
name = "c0"
nodes = [{{ count = 2, gpus = 4, gpu_type = "{node_type}" }}]
[workload]
source = "csv"
path = "jobs.csv"
strict = {strict}
[scheduler]
policy = "fifo"
"""


def _write(folder: Path, jobs: str, *, strict: bool = True, gpu_types: str = "", node_type: str = "V100") -> Path:
    (folder / "jobs.csv").write_text(jobs)
    path = folder / "s.toml"
    path.write_text(SCENARIO.format(gpu_types=gpu_types, node_type=node_type, strict=str(strict).lower()))
    return path


def _one_line(capsys, argv: list[str], *expected: str) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    for text in expected:
        assert text in err[0], err[0]
    return err[0]


@pytest.mark.parametrize("header", ["job_id,submit,duration,gpus,gpus", "job_id,job_id,submit,duration,gpus"])
def test_a_duplicated_csv_column_is_an_error(tmp_path: Path, capsys, header: str) -> None:
    cells = ",".join(["1"] * len(header.split(",")))
    path = _write(tmp_path, f"{header}\n{cells}\n", strict=False)
    _one_line(capsys, [str(path), "--quiet"], "jobs.csv:1: column", "appears 2 times")


@pytest.mark.parametrize("cell", ["１００", "1_000", "inf", "nan", "0x10", "١٢"])
def test_strict_numbers_follow_csv_conventions(tmp_path: Path, capsys, cell: str) -> None:
    path = _write(tmp_path, f"job_id,submit,duration,gpus\na,0,{cell},1\n")
    _one_line(capsys, [str(path), "--quiet"], "jobs.csv:2: bad duration")


@pytest.mark.parametrize("value", ["V100;;NOPE;", "V100||T4", "V100|NOPE", "V100|V100"])
def test_allowed_types_must_name_known_types_separated_by_bars(tmp_path: Path, capsys, value: str) -> None:
    path = _write(tmp_path, f"job_id,submit,duration,gpus,allowed_types\na,0,10,1,{value}\n")
    _one_line(capsys, [str(path), "--quiet"], "jobs.csv:2: bad allowed_types")


def test_valid_allowed_types_still_pass(tmp_path: Path) -> None:
    path = _write(tmp_path, "job_id,submit,duration,gpus,allowed_types\na,0,10,1,V100|T4\nb,1,10,1,\n")
    assert main([str(path), "--quiet"]) == 0


def test_two_gpu_types_with_one_name_are_an_error(tmp_path: Path, capsys) -> None:
    twice = ('[[gpu_type]]\nname = "Z1"\nspeedup = 1.0\nmemory_gb = 16\n'
             '[[gpu_type]]\nname = "Z1"\nspeedup = 2.0\nmemory_gb = 16\n')
    path = _write(tmp_path, "job_id,submit,duration,gpus\na,0,10,1\n", gpu_types=twice, node_type="Z1")
    _one_line(capsys, [str(path), "--quiet"], "gpu_type[1].name", "also declared by gpu_type[0]")


@pytest.mark.parametrize("value", ["5e-324", "1e-300", "1e-10"])
def test_a_positive_key_too_small_to_divide_by_is_refused(tmp_path: Path, capsys, value: str) -> None:
    path = tmp_path / "load.toml"
    path.write_text('name = "s"\nseed = 1\n[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4, '
                    'gpu_type = "V100" }]\n[workload]\nsource = "synthetic"\ngenerator = "simple"\njobs = 20\n'
                    f"load = {value}\n")
    _one_line(capsys, [str(path), "--quiet"], "workload.load", "must be >= 1e-09")


@pytest.mark.parametrize("argv, flag", [
    (["compare", "{s}", "--rank-by", ""], "--rank-by"),
    (["rl", "train", "{s}", "--out", "{d}/a.npz", "--lr", "inf"], "--lr"),
    (["rl", "train", "{s}", "--out", "{d}/a.npz", "--lr", "nan"], "--lr"),
    (["rl", "train", "{s}", "--out", "{d}/a.npz", "--lr", "1_0"], "--lr"),
    (["{s}", "--seed", "１"], "--seed"),
    (["{s}", "--jobs", "1_000"], "--jobs"),
])
def test_cli_numbers_and_names_are_range_checked(tmp_path: Path, capsys, argv: list[str], flag: str) -> None:
    path = _write(tmp_path, "job_id,submit,duration,gpus\na,0,10,1\n")
    _one_line(capsys, [a.format(s=path, d=tmp_path) for a in argv] + ["--quiet"], flag)


def test_a_grid_too_large_is_refused_before_expansion(tmp_path: Path, capsys) -> None:
    _write(tmp_path, "job_id,submit,duration,gpus\na,0,10,1\n")
    values = ", ".join(str(i + 1) for i in range(300))
    spec = tmp_path / "bomb.toml"
    spec.write_text(f'name = "bomb"\nscenarios = ["s.toml"]\nschedulers = ["fifo"]\n[sweep]\n'
                    f'"workload.jobs_limit" = [{values}]\n"scheduler.restart_penalty_s" = [{values}]\n'
                    f'"scheduler.interval_s" = [{values}]\n')
    line = _one_line(capsys, ["experiment", str(spec), "--out", str(tmp_path / "out"), "--quiet"],
                     "27,000,000 runs", "--max-runs")
    assert "1,000,000" in line
    assert not (tmp_path / "out").exists()
    seeds = tmp_path / "seeds.toml"
    seeds.write_text('name = "many"\nscenarios = ["s.toml"]\nschedulers = ["fifo"]\nseeds = 1000000000000\n'
                     'ea_streams = 1000000000\n')
    _one_line(capsys, ["experiment", str(seeds), "--out", str(tmp_path / "out"), "--quiet"], "--max-runs")
