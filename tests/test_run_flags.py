"""Single-run flags that replace scenario keys (--policy, --placement, --backfill, --heterogeneous,
--jobs-limit, --gpus-limit): each changes the run as the TOML key would, is checked like it,
and is recorded in summary.json."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from simsched.cli.main import main
from simsched.core.model import ClusterSpec, NodeGroup, keep_nodes_per_type
from tests.helpers import write_scenario

ONE_GPU = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "V100" }]'
FIFO = 'policy = "fifo"\nplacement = "best_fit"\nbackfill = true\nheterogeneous = false'


def _run(tmp_path, path, *flags):
    out = tmp_path / "out"
    assert main([str(path), "--quiet", "--out", str(out), *flags]) == 0
    jobs = pd.read_csv(out / "jobs.csv", dtype={"job_id": str}).set_index("job_id")
    return {j: (r.start, r.end) for j, r in jobs.iterrows()}, json.loads((out / "summary.json").read_text())


def test_policy_flag_replaces_the_scenario_policy(tmp_path):
    # one GPU: a runs 0-100; then FIFO takes b (50 s) before c (10 s), SJF the other way round
    path = write_scenario(tmp_path, clusters=ONE_GPU, scheduler=FIFO,
                          jobs=["a,0,100,1,,,,,", "b,1,50,1,,,,,", "c,2,10,1,,,,,"])
    rows, summary = _run(tmp_path, path)
    assert rows == {"a": (0, 100), "b": (100, 150), "c": (150, 160)}
    assert summary["overrides"] == {} and summary["scheduler"]["policy"] == "fifo"
    rows, summary = _run(tmp_path, path, "--policy", "sjf")
    assert rows == {"a": (0, 100), "c": (100, 110), "b": (110, 160)}
    assert summary["overrides"] == {"policy": "sjf"} and summary["scheduler"]["policy"] == "sjf"


def test_backfill_flags(tmp_path):
    # two GPUs: a holds one until 100; b needs both; c (1 GPU) can pass b only with backfill
    two = ONE_GPU.replace("gpus = 1", "gpus = 2")
    path = write_scenario(tmp_path, clusters=two, scheduler=FIFO,
                          jobs=["a,0,100,1,,,,,", "b,1,10,2,,,,,", "c,2,10,1,,,,,"])
    rows, _ = _run(tmp_path, path, "--backfill")
    assert rows["c"] == (2, 12) and rows["b"] == (100, 110)
    rows, summary = _run(tmp_path, path, "--no-backfill")
    assert rows["b"] == (100, 110) and rows["c"] == (110, 120)
    assert summary["scheduler"]["backfill"] is False and summary["overrides"] == {"backfill": False}


def test_heterogeneous_flag_lets_a_typed_job_use_another_type(tmp_path):
    t4 = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1, gpu_type = "T4" }]'
    path = write_scenario(tmp_path, clusters=t4, scheduler=FIFO, jobs=["a,0,100,1,,,,,V100"])
    rows, summary = _run(tmp_path, path)
    assert summary["unscheduled"] == 1
    rows, summary = _run(tmp_path, path, "--heterogeneous")
    assert summary["completed"] == 1 and rows["a"][0] == 0 and rows["a"][1] > 100  # a T4 is slower
    assert summary["scheduler"]["heterogeneous"] is True and summary["overrides"] == {"heterogeneous": True}


def test_placement_flag_and_limits_are_recorded(tmp_path):
    path = write_scenario(tmp_path, clusters=ONE_GPU, scheduler=FIFO,
                          jobs=["a,0,100,1,,,,,", "b,1,50,1,,,,,", "c,2,10,1,,,,,"])
    rows, summary = _run(tmp_path, path, "--placement", "first_fit", "--jobs-limit", "2", "--gpus-limit", "3")
    assert list(rows) == ["a", "b"]
    assert summary["scheduler"]["placement"] == "first_fit"
    # --gpus-limit is the course's name for --nodes-per-type: recorded under the one name
    assert summary["overrides"] == {"placement": "first_fit", "jobs_limit": 2, "nodes_per_type": 3}


def test_gpus_limit_keeps_the_first_nodes_of_each_type(tmp_path):
    two_nodes = ONE_GPU.replace("count = 1", "count = 2")
    path = write_scenario(tmp_path, clusters=two_nodes, scheduler=FIFO, jobs=["a,0,100,1,,,,,", "b,0,100,1,,,,,"])
    rows, _ = _run(tmp_path, path)
    assert rows == {"a": (0, 100), "b": (0, 100)}
    rows, _ = _run(tmp_path, path, "--gpus-limit", "1")
    assert rows == {"a": (0, 100), "b": (100, 200)}


def test_keep_nodes_per_type_counts_nodes_across_groups_and_clusters():
    clusters = (ClusterSpec("x", (NodeGroup(3, 8, "V100"), NodeGroup(2, 2, "T4"))),
                ClusterSpec("y", (NodeGroup(4, 8, "V100"), NodeGroup(1, 2, "P100"))))
    assert keep_nodes_per_type(clusters, 4) == (
        ClusterSpec("x", (NodeGroup(3, 8, "V100"), NodeGroup(2, 2, "T4"))),
        ClusterSpec("y", (NodeGroup(1, 8, "V100"), NodeGroup(1, 2, "P100"))))
    assert keep_nodes_per_type(clusters, 1) == (ClusterSpec("x", (NodeGroup(1, 8, "V100"), NodeGroup(1, 2, "T4"))),
                                                 ClusterSpec("y", (NodeGroup(1, 2, "P100"),)))


@pytest.mark.parametrize("flags, needle", [
    (["--policy", "fastest"], "--policy: scheduler.policy: unknown policy 'fastest'; valid: "),
    (["--placement", "tetris"], "--placement: scheduler.placement: unknown value 'tetris'; valid: best_fit"),
    (["--gpus-limit", "0"], "--gpus-limit: must be >= 1"),
    (["--jobs-limit", "x"], "--jobs-limit: must be an integer"),
])
def test_bad_flags_are_one_line_exit_2(tmp_path, capsys, flags, needle):
    path = write_scenario(tmp_path, clusters=ONE_GPU, scheduler=FIFO, jobs=["a,0,100,1,,,,,"])
    code = main([str(path), "--quiet", *flags])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and needle in err, err


def test_policy_flag_drops_the_old_policys_options(tmp_path):
    las = 'policy = "las"\nlas_thresholds = [600.0]\nheterogeneous = false'
    path = write_scenario(tmp_path, clusters=ONE_GPU, scheduler=las, jobs=["a,0,100,1,,,,,"])
    _, summary = _run(tmp_path, path, "--policy", "fifo")
    assert summary["scheduler"]["policy"] == "fifo" and summary["completed"] == 1


def test_api_accepts_a_scheduler_name_and_records_what_ran(tmp_path):
    import simsched
    from simsched.policies import Decision

    path = write_scenario(tmp_path, clusters=ONE_GPU, scheduler=FIFO,
                          jobs=["a,0,100,1,,,,,", "b,1,50,1,,,,,", "c,2,10,1,,,,,"])
    result = simsched.run(path, scheduler="sjf")
    assert result.summary["scheduler"]["policy"] == "sjf" and result.summary["overrides"] == {"policy": "sjf"}
    assert result.jobs.set_index("job_id").loc["c", "start"] == 100

    class Idle:
        name = "idle"

        def decide(self, view):
            return Decision()

    assert simsched.run(path, scheduler=Idle()).summary["scheduler"]["policy"] == "idle"

    class Unnamed(Idle):
        name = None

    assert simsched.run(path, scheduler=Unnamed()).summary["scheduler"]["policy"].endswith("Unnamed")
    with pytest.raises(simsched.core.errors.InputError, match="scheduler.policy: unknown policy 'fastest'"):
        simsched.run(path, scheduler="fastest")
