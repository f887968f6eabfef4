"""One metric grammar (issue 39): ``compare --rank-by``, ``[compare] rank_by``, ``simsched.compare(rank_by=)``
and an experiment's ``metric`` accept and refuse exactly the same names, with the same line.

The table below is run through every one of them: a refused name is one line and exit 2 before any
run, and the line after its ``where`` prefix (``--rank-by:``, ``metric:``) is the same for both commands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import simsched
from simsched.cli.main import main
from simsched.core.errors import InputError
from simsched.runs.compare import compare_spec
from simsched.runs.experiment.spec import load_spec

# one 1-GPU node; jobs j0 (b), j1 (a), j2 (b) queue behind j0, j3 (no tenant) comes later alone
JOBS = "job_id,submit,duration,gpus,tenant\nj0,0,100,1,b\nj1,1,50,1,a\nj2,2,10,1,b\nj3,200,10,1,\n"
PLAIN = "job_id,submit,duration,gpus\nj0,0,100,1\nj1,1,50,1\n"
SCENARIO = """name = "{name}"
seed = 1
[[cluster]]
name = "c0"
nodes = [{{ count = 1, gpus = 1, gpu_type = "V100" }}]
[workload]
source = "csv"
path = "{name}.csv"
[scheduler]
policy = "fifo"
"""

TENANTS, NONE = "tenants", "plain"
#: (fleet, metric, the metric it names, or the error after the where prefix)
TABLE = [
    (TENANTS, "avg_jct", "avg_jct"),
    (TENANTS, "unscheduled", "unfinished"),  # the old name
    (TENANTS, "jain_slowdown", "jain_slowdown"),
    (TENANTS, "avg_wait@a", "avg_wait@a"),
    (TENANTS, "avg_wait@(no tenant)", "avg_wait@(no tenant)"),  # j3 has none, and the run has tenants
    (NONE, "p99_wait", "p99_wait"),
    (TENANTS, "speed", "unknown metric 'speed'; valid: completed, "),
    (TENANTS, "AVG_JCT", "unknown metric 'AVG_JCT'"),
    (TENANTS, "", "unknown metric ''"),
    (TENANTS, "avg_wait@", "unknown metric 'avg_wait@'"),
    (TENANTS, "avg_jct@a", "unknown metric 'avg_jct@a'"),
    (TENANTS, "avg_wait@zzz", "'avg_wait@zzz': no instance has a tenant 'zzz' (every run would have no value and "
                              "tie); valid: avg_wait@(no tenant), avg_wait@a, avg_wait@b"),
    (TENANTS, "avg_wait@a\u200b", "'avg_wait@a<U+200B>': no instance has a tenant 'a<U+200B>'"),
    (NONE, "avg_wait@a", "'avg_wait@a': no instance has a tenant 'a' (every run would have no value and tie); valid: none: "
                         "no instance has tenants"),
    (NONE, "jain_slowdown", "'jain_slowdown' needs tenants, and no instance has any"),
    (NONE, "ftf_rho_max", "'ftf_rho_max' needs tenants, and no instance has any"),
    (NONE, "ftf_rho_share_above_1", "'ftf_rho_share_above_1' needs tenants, and no instance has any"),
]
ACCEPTED = [(fleet, metric, named) for fleet, metric, named in TABLE if "'" not in named]  # errors quote
REFUSED = [(fleet, metric, line) for fleet, metric, line in TABLE if "'" in line]


def _scenario(folder: Path, fleet: str) -> Path:
    (folder / f"{fleet}.csv").write_text(JOBS if fleet == TENANTS else PLAIN)
    path = folder / f"{fleet}.toml"
    path.write_text(SCENARIO.format(name=fleet))
    return path


def _spec(folder: Path, fleet: str, metric: str) -> Path:
    _scenario(folder, fleet)
    path = folder / "spec.toml"
    quoted = metric.replace("\u200b", "\\u200B")
    path.write_text(f'name = "s"\nscenarios = ["{fleet}.toml"]\nschedulers = ["fifo", "sjf"]\nmetric = "{quoted}"\n')
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("fleet, metric, named", ACCEPTED)
def test_compare_and_experiment_accept_the_same_names(tmp_path: Path, fleet: str, metric: str, named: str) -> None:
    path = _scenario(tmp_path, fleet)
    assert compare_spec(path, schedulers=["fifo", "sjf"], rank_by=metric).rank_by == named
    with path.open("a") as fh:
        fh.write(f'[compare]\nrank_by = "{metric}"\n')
    assert compare_spec(path, schedulers=["fifo", "sjf"]).rank_by == named
    assert load_spec(_spec(tmp_path, fleet, metric)).metric == named


@pytest.mark.parametrize("fleet, metric, line", REFUSED)
def test_compare_and_experiment_refuse_the_same_names_in_one_line(tmp_path: Path, capsys, fleet: str,
                                                                  metric: str, line: str) -> None:
    path = _scenario(tmp_path, fleet)
    out = tmp_path / "out"
    assert main(["compare", str(path), "--schedulers", "fifo,sjf", "--rank-by", metric, "--quiet",
                 "--out", str(out)]) == 2
    by_compare = _one_line(capsys).split(": --rank-by: ", 1)[1]
    assert by_compare.startswith(line) and not list(out.glob("*")), by_compare  # no run, nothing written
    with pytest.raises(InputError) as api:
        simsched.compare(path, ["fifo", "sjf"], rank_by=metric, workers=1)
    assert str(api.value).split(": --rank-by: ", 1)[1] == by_compare
    with path.open("a") as fh:
        fh.write(f'[compare]\nrank_by = "{metric.replace(chr(0x200B), chr(92) + "u200B")}"\n')
    with pytest.raises(InputError) as own:
        compare_spec(path, schedulers=["fifo", "sjf"])
    assert str(own.value).split(": compare.rank_by: ", 1)[1] == by_compare
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    assert main(["experiment", str(_spec(tmp_path, fleet, metric)), "--workers", "1", "--quiet",
                 "--out", str(out)]) == 2
    assert _one_line(capsys).split(": metric: ", 1)[1] == by_compare
    assert not (out / "results.csv").exists()


def test_rank_by_a_tenants_wait_orders_by_that_tenants_mean_wait(tmp_path: Path) -> None:
    """fifo: j0 0-100, j1 100-150, j2 150-160: a waits 99 s, b (0 + 148) / 2 = 74 s.
    sjf: j0 0-100, then the shorter j2 100-110, j1 110-160: a waits 109 s, b (0 + 98) / 2 = 49 s.
    j3 runs alone at 200 in both. So fifo ranks first by avg_wait@a, sjf by avg_wait@b."""
    path = _scenario(tmp_path, TENANTS)
    for metric, first, waits in (("avg_wait@a", "fifo", [99.0, 109.0]), ("avg_wait@b", "sjf", [74.0, 49.0])):
        comparison = simsched.compare(path, ["fifo", "sjf"], rank_by=metric, workers=1)
        runs = comparison.runs.set_index("scheduler")
        assert list(runs[metric]) == waits
        assert runs["rank"].to_dict() == {first: 1.0, ({"fifo", "sjf"} - {first}).pop(): 2.0}
        assert comparison.standing["place"].idxmin() == first


def test_rank_by_a_tenants_wait_keeps_it_beyond_thirty_tenants(tmp_path: Path) -> None:
    """Past 30 tenants the per-tenant rows leave the tables, but not the one the ranks use."""
    jobs = "job_id,submit,duration,gpus,tenant\n" + "".join(f"j{i},{i},10,1,t{i}\n" for i in range(31))
    (tmp_path / "many.csv").write_text(jobs)
    path = tmp_path / "many.toml"
    path.write_text(SCENARIO.format(name="many"))
    comparison = simsched.compare(path, ["fifo", "sjf"], rank_by="avg_wait@t30", workers=1)
    assert [c for c in comparison.runs.columns if c.startswith("avg_wait@")] == ["avg_wait@t30"]
    assert list(comparison.runs["avg_wait@t30"]) == [270.0, 270.0]  # j<i> starts at 10 i s: j30 at 300, not 30
