"""The command line: outputs, one-line errors with exit code 2 (SPEC §8-§9)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from simsched.cli.main import main
from tests.helpers import write_scenario

CLUSTER = '[[cluster]]\nname = "c0"\nnodes = [{ count = 40, gpus = 8, gpu_type = "V100" }]'
SCHEDULER = 'policy = "fifo"\nplacement = "best_fit"\nbackfill = false\nallocation = "home"\nheterogeneous = false'


def _example(tmp_path, scheduler=SCHEDULER, clusters=CLUSTER, workload=None):
    return write_scenario(tmp_path, clusters=clusters, scheduler=scheduler, workload=workload,
                          jobs=["0,0,100,8,,,,,", "1,10,50,320,,,,,", "2,20,5,1,,,,,"])


def test_spec_example_writes_jobs_and_summary(tmp_path, capsys):
    path = _example(tmp_path)
    assert main([str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    assert capsys.readouterr().out == ""
    jobs = pd.read_csv(tmp_path / "out" / "jobs.csv", dtype={"job_id": str})
    assert list(jobs.columns[:4]) == ["job_id", "submit", "start", "end"]
    # 320 GPUs = 40 workers of 8: it waits for job 0 to free node 0; strict FIFO holds job 2 behind it
    assert jobs[["job_id", "start", "end"]].values.tolist() == [["0", 0, 100], ["1", 100, 150], ["2", 150, 155]]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["completed"] == 3 and summary["seed"] == 1 and not summary["partial"]


def test_json_flag_prints_summary(tmp_path, capsys):
    assert main([str(_example(tmp_path)), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["completed"] == 3


def test_table_output(tmp_path, capsys):
    assert main([str(_example(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "Avg JCT (s)" in out and "Completed jobs" in out and "C_q,max (s)" in out


def _error(capsys, argv) -> str:
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize("scheduler, needle", [
    ('policy = "fastest"', "scheduler.policy: unknown policy 'fastest'; valid: "),
    ('policy = "fifo"\nplacement = "tetris"', "scheduler.placement: unknown value 'tetris'; valid: best_fit"),
    ('policy = "fifo"\nbackfill = "yes"', "scheduler.backfill: unknown mode 'yes'"),
    ('policy = "fifo"\nallocaton = "home"', "scheduler.allocaton: unknown key"),
])
def test_bad_scheduler_keys(tmp_path, capsys, scheduler, needle):
    err = _error(capsys, [str(_example(tmp_path, scheduler=scheduler))])
    assert "scenario.toml" in err and needle in err


def test_negative_count(tmp_path, capsys):
    clusters = '[[cluster]]\nname = "c0"\nnodes = [{ count = -1, gpus = 8 }]'
    err = _error(capsys, [str(_example(tmp_path, clusters=clusters))])
    assert "cluster[0].nodes[0].count: must be >= 1, got -1" in err


def test_wrong_type(tmp_path, capsys):
    clusters = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = "eight" }]'
    err = _error(capsys, [str(_example(tmp_path, clusters=clusters))])
    assert "cluster[0].nodes[0].gpus: must be an integer, got 'eight'" in err


def test_missing_trace_file(tmp_path, capsys):
    err = _error(capsys, [str(_example(tmp_path, workload='source = "csv"\npath = "nope.csv"'))])
    assert "workload.path" in err and "nope.csv not found" in err


def test_missing_scenario_and_bad_flag(tmp_path, capsys):
    assert "nothing.toml: file not found" in _error(capsys, [str(tmp_path / "nothing.toml")])
    assert "--seed" in _error(capsys, [str(_example(tmp_path)), "--seed", "-3"])


def test_bad_csv_line_strict_names_line(tmp_path, capsys):
    path = write_scenario(tmp_path, clusters=CLUSTER, scheduler=SCHEDULER,
                          workload='source = "csv"\npath = "jobs.csv"\nstrict = true',
                          jobs=["0,0,100,8,,,,,", "1,abc,50,8,,,,,"])
    err = _error(capsys, [str(path)])
    assert "jobs.csv:3:" in err


def test_bad_csv_line_counted_when_not_strict(tmp_path):
    import simsched

    path = write_scenario(tmp_path, clusters=CLUSTER, scheduler=SCHEDULER,
                          jobs=["0,0,100,8,,,,,", "1,abc,50,8,,,,,", "2,1,1,0,,,,,"])
    result = simsched.run(path)
    assert len(result.jobs) == 1
    assert result.summary["skipped_rows"]["by_reason"] == {
        "bad submit": 1, "non-positive gpus": 1}


def test_seed_override_changes_synthetic_workload(tmp_path):
    import simsched

    path = _example(tmp_path, workload='source = "synthetic"\njobs = 30')
    a, b, c = simsched.run(path), simsched.run(path), simsched.run(path, seed=2)
    pd.testing.assert_frame_equal(a.jobs, b.jobs)
    assert not a.jobs["duration"].equals(c.jobs["duration"])


def test_validate(tmp_path, capsys):
    assert main(["validate", str(_example(tmp_path))]) == 0
    assert "ok: 1 cluster(s), 40 nodes, 320 GPUs; 3 jobs" in capsys.readouterr().out


def test_missing_cluster_and_workload_files_name_their_key(tmp_path, capsys):
    clusters = '[[cluster]]\nfile = "nope.toml"'
    err = _error(capsys, [str(_example(tmp_path, clusters=clusters))])
    assert "cluster[0].file: cluster file" in err and "nope.toml not found" in err
    err = _error(capsys, [str(_example(tmp_path, workload='file = "w.toml"'))])
    assert "workload.file: workload file" in err and "w.toml not found" in err


def test_invalid_toml(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\n[[cluster]\n')
    assert "not valid TOML" in _error(capsys, [str(path)])
