"""Checks that no path around them skips (issue 39, items 3-7): a ``--set`` or an experiment override
meets the same fleet-size check as the file; generators guard their size; values that pass one by
one but overflow together are refused; the Python API refuses what the CLI refuses, with one
InputError line; read-back tables are checked for their columns."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import simsched
from simsched.cli.main import main
from simsched.config.overrides import apply_overrides
from simsched.config.scenario import load_scenario, scenario_from_table
from simsched.core import limits
from simsched.core.errors import InputError
from simsched.core.outputs import read_table
from simsched.runs.single import prepare

ONE = """
name = "one"
seed = 1
[[cluster]]
name = "c0"
nodes = [{ count = NODES, gpus = 4, gpu_type = "V100" }]
[workload]
source = "synthetic"
generator = "simple"
jobs = 6
gpus = [1, 2]
mean_duration_s = 60.0
[scheduler]
policy = "fifo"
"""


@pytest.fixture
def one(tmp_path: Path) -> Path:
    path = tmp_path / "one.toml"
    path.write_text(ONE.replace("NODES", "2"))
    return path


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


# -- item 3: an override meets the file's fleet check ---------------------------------------------
def test_cluster_nodes_by_override_is_refused_exactly_when_the_same_number_in_the_file_is(one: Path) -> None:
    too_many = limits.memory_limit() // limits.BYTES_PER_NODE + 1  # this machine's limit, whatever it is
    big = one.with_name("big.toml")
    big.write_text(ONE.replace("NODES", str(too_many)))
    with pytest.raises(InputError, match="nodes would need about"):
        load_scenario(big)
    with pytest.raises(InputError, match="nodes would need about"):
        apply_overrides(load_scenario(one), {"cluster.nodes": too_many}, "--set")
    assert apply_overrides(load_scenario(one), {"cluster.nodes": too_many - 1}, "--set").clusters[0].nodes[0].count \
        == too_many - 1


def test_an_experiment_sweep_over_cluster_nodes_is_refused_before_any_run(one: Path, capsys) -> None:
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    spec = one.with_name("spec.toml")
    spec.write_text(f'name = "s"\nscenarios = ["one.toml"]\nschedulers = ["fifo"]\nseeds = 1\nmetric = "avg_wait"\n'
                    f'[sweep]\n"cluster.nodes" = [2, {10**15}]\n')
    assert main(["experiment", str(spec), "--out", str(one.parent / "out"), "--quiet"]) == 2
    assert "nodes would need about" in _one_line(capsys)
    assert not (one.parent / "out" / "results.csv").exists()


# -- item 4: generators guard their size -----------------------------------------------------------
@pytest.mark.parametrize("generator, key, value, says", [
    ("helios", "jobs_per_day", 1e8, "offer"),
    ("helios", "jobs_per_day", 1e-6, "spread"),
    ("helios", "batch_mean", 1e300, "must be <="),
    ("helios", "jobs", 10**15, "would need about"),
    ("venus", "jobs_per_day", 1e8, "offer"),
    ("venus", "load", 1e300, "must be <="),
    ("venus", "jobs", 10**15, "would need about"),
])
def test_a_generator_refuses_a_size_that_would_not_finish(tmp_path: Path, generator: str, key: str, value: float,
                                                          says: str) -> None:
    raw = {"name": "g", "seed": 1,
           "cluster": [{"name": "c0", "nodes": [{"count": 4, "gpus": 8, "gpu_type": "V100"}]}],
           "workload": {"source": "synthetic", "generator": generator, key: value,
                        **({"cluster": "earth"} if generator == "helios" else {})}}
    scenario = scenario_from_table(raw, tmp_path / "g.toml")
    with pytest.raises(InputError, match=says):
        prepare(scenario)


# -- item 5: finite one by one, not together -------------------------------------------------------
def test_tenant_mix_weights_whose_sum_overflows_are_refused(tmp_path: Path) -> None:
    raw = {"name": "t", "cluster": [{"name": "c0", "nodes": [{"count": 1, "gpus": 4, "gpu_type": "V100"}]}],
           "workload": {"source": "synthetic", "generator": "simple", "jobs": 3, "gpus": [1],
                        "mean_duration_s": 60.0, "tenant_mix": {"a": 1e308, "b": 1e308}}}
    assert math.isinf(1e308 + 1e308)
    with pytest.raises(InputError, match="tenant_mix.*finite sum"):
        scenario_from_table(raw, tmp_path / "t.toml")


def test_a_decide_timeout_beyond_the_timer_range_is_one_line(one: Path, capsys) -> None:
    assert main(["compare", str(one), "--decide-timeout", "1e300", "--quiet"]) == 2
    assert "--decide-timeout" in _one_line(capsys)
    with pytest.raises(InputError, match="decide_timeout"):
        simsched.compare(one, ["fifo"], decide_timeout=1e300)


# -- item 6: the API is as strict as the CLI ----------------------------------------------------------
class NotebookPolicy:
    def decide(self, view):  # pragma: no cover - never run: compare refuses it up front
        raise AssertionError


@pytest.mark.parametrize("kwargs, says", [
    ({"seed": "1"}, "seed must be an integer"),
    ({"seed": 1.5}, "seed must be an integer"),
    ({"seed": -1}, "seed must be an integer >= 0"),
    ({"seed": True}, "seed must be an integer"),
    ({"jobs_limit": 0}, "jobs_limit must be an integer >= 1"),
    ({"jobs_limit": 2.0}, "jobs_limit must be an integer"),
    ({"scheduler": 5}, "scheduler must be a policy name"),
    ({"scheduler": int}, "scheduler must be a policy name"),
    ({"scheduler": lambda view: None}, "scheduler must be a policy name"),
    ({"progress": 3}, "progress must be a function"),
])
def test_run_refuses_what_the_cli_refuses_in_one_line(one: Path, kwargs: dict, says: str) -> None:
    with pytest.raises(InputError, match=says) as caught:
        simsched.run(one, **kwargs)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("simsched.run: ")


@pytest.mark.parametrize("args, kwargs, says", [
    ([[]], {}, "schedulers is empty"),
    ([["fifo"]], {"seeds": 0}, "seeds must be an integer >= 1"),
    ([["fifo"]], {"seeds": "3"}, "seeds must be an integer"),
    ([["fifo"]], {"workers": -1}, "workers must be an integer >= 1"),
    ([["fifo", 5]], {}, "schedulers must be names"),
    ([[NotebookPolicy]], {}, "save the class to a file.*NotebookPolicy"),
    ([["fifo"]], {"keep_going": "no"}, "keep_going must be True or False"),
])
def test_compare_refuses_what_the_cli_refuses_in_one_line(one: Path, args: list, kwargs: dict, says: str) -> None:
    with pytest.raises(InputError, match=says) as caught:
        simsched.compare(one, *args, **kwargs)
    assert "\n" not in str(caught.value) and str(caught.value).startswith("simsched.compare: ")


def test_numpy_integers_are_accepted_where_integers_are(one: Path) -> None:
    a = simsched.run(one, seed=np.int64(3), jobs_limit=np.int64(4))
    b = simsched.run(one, seed=3, jobs_limit=4)
    assert len(a.jobs) == 4 and a.jobs.equals(b.jobs) and a.summary["seed"] == 3
    assert type(a.summary["seed"]) is int  # recorded as a plain int, not numpy's
    comparison = simsched.compare(one, ["fifo"], seeds=np.int32(1), jobs_limit=np.int64(3), workers=np.int64(1))
    assert len(comparison.runs) == 1


def test_load_functions_refuse_a_non_path_in_one_line() -> None:
    for call in (simsched.load_run, simsched.load_experiment):
        with pytest.raises(InputError, match="must be a path"):
            call(42)
        with pytest.raises(InputError, match="control characters"):
            call("out\x00dir")


# -- item 7: read-back tables are checked for their columns ------------------------------------------
def test_a_run_folder_whose_jobs_csv_lacks_columns_is_one_line_naming_them(one: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    simsched.run(one).write(out)
    jobs = (out / "jobs.csv").read_text().splitlines()
    header = jobs[0].split(",")
    keep = [i for i, column in enumerate(header) if column not in ("status", "jct")]
    (out / "jobs.csv").write_text("\n".join(",".join(line.split(",")[i] for i in keep) for line in jobs) + "\n")
    with pytest.raises(InputError, match=r"jobs.csv: not a whole simsched jobs.csv table: missing columns jct, status"):
        simsched.load_run(out)
    with pytest.raises(InputError, match="missing columns jct, status"):
        read_table(out / "jobs.csv")


# -- item 9: an override may not decide what the compared schedulers decide ----------------------------
def test_compare_refuses_a_set_of_what_its_schedulers_decide(one: Path, capsys) -> None:
    assert main(["compare", str(one), "--schedulers", "fifo,hrrn", "--set", "scheduler.policy=sjf", "--quiet"]) == 2
    assert "decide the policy" in _one_line(capsys)
    with pytest.raises(InputError, match="decide the policy"):
        simsched.compare(one, ["fifo", "hrrn"], overrides={"scheduler.policy": "sjf"})


@pytest.mark.parametrize("table", ['[overrides]\n"scheduler.policy" = "sjf"\n',
                                   '[sweep]\n"scheduler.policy" = ["sjf", "fifo"]\n',
                                   '[overrides]\n"scheduler.placement" = "first_fit"\n'])
def test_an_experiment_refuses_an_override_of_what_its_schedulers_decide(one: Path, capsys, table: str) -> None:
    pytest.importorskip("scipy.stats", reason="experiments need the extra 'experiment' (scipy)")
    spec = one.with_name("spec.toml")
    spec.write_text('name = "s"\nscenarios = ["one.toml"]\nseeds = 1\nmetric = "avg_wait"\n'
                    'schedulers = ["fifo", { name = "hrrn-ff", policy = "hrrn", placement = "best_fit" }]\n' + table)
    assert main(["experiment", str(spec), "--out", str(one.parent / "out"), "--quiet"]) == 2
    assert "is decided by each entry of schedulers" in _one_line(capsys)


# -- item 10: a tenant metric on runs without tenants ---------------------------------------------------
@pytest.mark.parametrize("metric", ["jain_slowdown", "ftf_rho_max", "ftf_rho_share_above_1"])
def test_rank_by_a_tenant_metric_without_tenants_is_refused_before_any_run(one: Path, capsys, metric: str) -> None:
    out = one.parent / "out"
    assert main(["compare", str(one), "--schedulers", "fifo,hrrn", "--rank-by", metric, "--quiet",
                 "--out", str(out)]) == 2
    assert f"--rank-by: {metric!r} needs tenants, and no instance has any" in _one_line(capsys)
    assert not list(out.glob("*"))  # no run, nothing written
    with pytest.raises(InputError, match=f"{metric}' needs tenants"):
        simsched.compare(one, ["fifo", "hrrn"], rank_by=metric, workers=1)
