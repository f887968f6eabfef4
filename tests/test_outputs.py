"""The output tables beyond the metrics: nodes.csv, spells.csv, timeline.csv, jobs.csv's new columns.

A tiny two-cluster case computed by hand, a preemption case, dtype stability on
read-back, and hypothesis invariants tying the timeline to jobs.csv.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simsched
from simsched.core.outputs import ALL, DTYPES, read_table
from tests.helpers import write_scenario

TWO_CLUSTERS = ('[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4, gpu_type = "V100" }]\n'
                '[[cluster]]\nname = "c1"\nnodes = [{ count = 1, gpus = 2, gpu_type = "T4" }]')
# a fills c0 (2 x 4 GPUs) until 10; b waits for it; c and d share c1's node; e fits nowhere in c1
HAND_JOBS = ["a,0,10,8,2,1,,c0,", "b,1,4,2,1,1,,c0,", "c,2,3,1,1,1,,c1,", "d,3,2,0.5,1,1,,c1,",
             "e,4,5,16,1,1,,c1,"]


def _hand_case(folder: Path) -> Path:
    return write_scenario(folder, clusters=TWO_CLUSTERS, jobs=HAND_JOBS,
                          scheduler='policy = "fifo"\nplacement = "first_fit"\nallocation = "home"')


def test_hand_case_tables(tmp_path):
    out = simsched.run(_hand_case(tmp_path)).write(tmp_path / "out")
    nodes = read_table(out / "nodes.csv")
    assert nodes.to_dict("list") == {"node": [0, 1, 2], "cluster": ["c0", "c0", "c1"],
                                     "gpu_type": ["V100", "V100", "T4"],
                                     "capacity_milli": [4000, 4000, 2000]}
    jobs = read_table(out / "jobs.csv").set_index("job_id")
    assert jobs["home_cluster"].tolist() == ["c0", "c0", "c1", "c1", "c1"]
    assert jobs["nodes"].tolist() == ["0 1", "0", "2", "2", ""]
    assert jobs["share"].tolist() == [4000, 2000, 1000, 500, 0]
    assert jobs["runs"].tolist() == [1, 1, 1, 1, 0]
    spells = read_table(out / "spells.csv")
    assert [tuple(r) for r in spells.itertuples(index=False)] == [
        ("a", 0, 0.0, 10.0, "finish", "c0", "V100", "0 1", 2, 4000),
        ("c", 0, 2.0, 5.0, "finish", "c1", "T4", "2", 1, 1000),
        ("d", 0, 3.0, 5.0, "finish", "c1", "T4", "2", 1, 500),
        ("b", 0, 10.0, 14.0, "finish", "c0", "V100", "0", 1, 2000),
    ]
    timeline = read_table(out / "timeline.csv")
    # at 4, e arrives and is taken out at once: no change, no row
    assert [tuple(r) for r in timeline.itertuples(index=False)] == [
        (0.0, ALL, ALL, 8000, 1, 0), (0.0, "c0", "V100", 8000, 1, 0),
        (1.0, ALL, ALL, 8000, 1, 1),
        (2.0, ALL, ALL, 9000, 2, 1), (2.0, "c1", "T4", 1000, 1, 1),
        (3.0, ALL, ALL, 9500, 3, 1), (3.0, "c1", "T4", 1500, 2, 1),
        (5.0, ALL, ALL, 8000, 1, 1), (5.0, "c1", "T4", 0, 0, 1),
        (10.0, ALL, ALL, 2000, 1, 0), (10.0, "c0", "V100", 2000, 1, 0),
        (14.0, ALL, ALL, 0, 0, 0), (14.0, "c0", "V100", 0, 0, 0),
    ]


def test_preempted_job_has_two_spells(tmp_path):
    path = write_scenario(tmp_path, clusters='[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 1 }]',
                          jobs=["x,0,10,1,1,1,,,", "y,2,3,1,1,1,,,"],
                          scheduler='policy = "srtf-preemptive"\nplacement = "first_fit"')
    result = simsched.run(path)
    spells = result.spells
    assert list(zip(spells["job_id"], spells["spell"], spells["start"], spells["end"], spells["end_event"])) == [
        ("x", 0, 0.0, 2.0, "preempt"), ("y", 0, 2.0, 5.0, "finish"), ("x", 1, 5.0, 13.0, "finish")]
    jobs = result.jobs.set_index("job_id")
    assert jobs.loc["x", "nodes"] == "0|0" and jobs.loc["x", "runs"] == 2
    fleet = result.timeline[result.timeline["cluster"] == ALL]
    # at 2: x back in the queue, y started: queue 1, still one job running
    assert [tuple(r) for r in fleet[["time", "busy_milli", "running", "queued"]].itertuples(index=False)] == [
        (0.0, 1000, 1, 0), (2.0, 1000, 1, 1), (5.0, 1000, 1, 0), (13.0, 0, 0, 0)]


def test_dtypes_stable_whatever_the_data(tmp_path):
    """Single-node starts only and no unscheduled job: node lists and reasons still read as strings."""
    path = write_scenario(tmp_path, clusters='[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 1 }]',
                          jobs=["1,0,5,1,1,1,,,", "2,1,5,1,1,1,,,"],
                          scheduler='policy = "fifo"\nplacement = "first_fit"')
    out = simsched.run(path).write(tmp_path / "out")
    for name, schema in DTYPES.items():
        frame = read_table(out / name)
        assert list(frame.columns) == list(schema), name
        for column, dtype in schema.items():
            assert str(frame[column].dtype) == dtype, (name, column)
    jobs = read_table(out / "jobs.csv")
    assert jobs["job_id"].tolist() == ["1", "2"] and jobs["nodes"].tolist() == ["0", "1"]
    assert jobs["reason"].tolist() == ["", ""]
    assert read_table(out / "events.csv")["detail"].tolist() == ["", "0", "", "1", "", ""]


def test_outputs_doc_lists_every_column():
    doc = (Path(__file__).resolve().parents[1] / "docs" / "outputs.md").read_text()
    for name, schema in DTYPES.items():
        assert f"## {name}" in doc, name
        section = doc.split(f"## {name}", 1)[1].split("\n## ", 1)[0]
        for column, dtype in schema.items():
            assert f"| `{column}` | {dtype} |" in section, (name, column)


def _integral(rows: pd.DataFrame) -> float:
    """GPU-seconds under one (cluster, gpu_type)'s busy step function."""
    time = rows["time"].to_numpy(float)
    return float((rows["busy_milli"].to_numpy(float)[:-1] * np.diff(time)).sum()) / 1000


job = st.tuples(st.integers(0, 40), st.integers(0, 30), st.sampled_from([0.5, 1, 2, 3, 4, 8]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(job, min_size=1, max_size=20), st.sampled_from(["fifo", "sjf", "srtf-preemptive", "las"]))
def test_timeline_agrees_with_jobs(tmp_path_factory, jobs, policy):
    folder = tmp_path_factory.mktemp("tl")
    rows = [f"j{i},{s},{d},{g},,,,," for i, (s, d, g) in enumerate(jobs)]
    path = write_scenario(folder, clusters='[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4 }]',
                          jobs=rows, scheduler=f'policy = "{policy}"\nplacement = "best_fit"')
    result = simsched.run(path)
    timeline, table = result.timeline, result.jobs
    groups = timeline[timeline["cluster"] != ALL]
    per_group = sum(_integral(g) for _, g in groups.groupby(["cluster", "gpu_type"]))
    assert np.isclose(per_group, table["gpu_seconds"].sum(), rtol=1e-9, atol=1e-9)
    assert np.isclose(_integral(timeline[timeline["cluster"] == ALL]), per_group, rtol=1e-9, atol=1e-9)
    # every job ends: the last state is an empty fleet and an empty queue (no rows at all when
    # nothing ever changed, e.g. a single zero-length job)
    if len(timeline):
        assert tuple(timeline.iloc[-1][["busy_milli", "running", "queued"]]) == (0, 0, 0)
    assert (timeline[["busy_milli", "running", "queued"]] >= 0).all().all()
    assert (timeline["busy_milli"] <= 8000).all()
    if policy in ("fifo", "sjf"):  # no preemption: queued at t = submitted by t and not started by t
        done = table[table["status"] == "done"]
        times = np.union1d(done["submit"], done["start"])
        expected = [int(((done["submit"] <= t) & (done["start"] > t)).sum()) for t in times]
        fleet = timeline[timeline["cluster"] == ALL]
        assert (int(fleet["queued"].max()) if len(fleet) else 0) == max(expected)
