"""The engine's columnar job store and event log: records only for jobs in play, and every
table and rebuilt record exactly as the per-job records would give them."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from simsched.core.engine import Engine, EngineConfig
from simsched.core.eventlog import EventLog
from simsched.core.jobstore import JobRecord, JobStore
from simsched.core.metrics import jobs_frame
from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
from simsched.core.outputs import ALL, TIMELINE_COLUMNS
from simsched.policies import ORDERINGS, PLACEMENTS
from simsched.policies.allocation import Home
from simsched.policies.preemptive import PreemptiveScheduler
from simsched.policies.queue import QueueScheduler

EVENT_COLUMNS = ["time", "event", "job_id", "detail"]



def timeline_frame_reference(events: pd.DataFrame, spells: pd.DataFrame) -> pd.DataFrame:
    """``outputs.timeline_frame`` grouped by the text columns: the reference it is tested against.

    The state after every change, as rows (time, cluster, gpu_type, busy_milli, running, queued).

    Rows with ``cluster == gpu_type == "*"`` (:data:`ALL`) hold fleet totals and
    are written at every time anything changes; rows of one (cluster, GPU type)
    at every time its busy milli-GPUs or running count changes. ``queued`` is
    the fleet's one queue on every row. Each row's values hold until the next
    row of the same (cluster, gpu_type). Same-time events are netted: a job
    that arrives and is started in the same decision leaves the queue length
    unchanged at that time.
    """
    kinds = events["event"].to_numpy()
    queue_delta = np.select([kinds == "arrive", kinds == "preempt", kinds == "start", kinds == "unscheduled"],
                            [1, 1, -1, -1], 0).astype(np.int64)
    times = events["time"].to_numpy(float)
    keep = queue_delta != 0
    queue = pd.DataFrame({"time": times[keep], "queue": queue_delta[keep]})

    busy = (spells["share"] * spells["workers"]).to_numpy(np.int64)
    open_ = spells["end"].isna().to_numpy()
    group_deltas = pd.DataFrame({
        "time": np.concatenate([spells["start"].to_numpy(float), spells["end"].to_numpy(float)[~open_]]),
        "cluster": np.concatenate([spells["cluster"].to_numpy(object), spells["cluster"].to_numpy(object)[~open_]]),
        "gpu_type": np.concatenate([spells["gpu_type"].to_numpy(object),
                                    spells["gpu_type"].to_numpy(object)[~open_]]),
        "busy": np.concatenate([busy, -busy[~open_]]),
        "running": np.concatenate([np.ones(len(spells), np.int64), -np.ones(int((~open_).sum()), np.int64)]),
    })

    # fleet-wide: net change per time, then running sums
    fleet = pd.concat([group_deltas[["time", "busy", "running"]].assign(queue=0),
                       queue.assign(busy=0, running=0)], ignore_index=True)
    fleet = fleet.groupby("time", sort=True)[["busy", "running", "queue"]].sum()
    fleet = fleet[(fleet != 0).any(axis=1)].cumsum()
    queued_at = fleet["queue"]

    per_group = group_deltas.groupby(["cluster", "gpu_type", "time"], sort=True)[["busy", "running"]].sum()
    per_group = per_group[(per_group != 0).any(axis=1)]
    per_group = per_group.groupby(level=["cluster", "gpu_type"], sort=False).cumsum().reset_index()
    # the queue length in force at each group row's time (fleet rows exist at every change time)
    position = np.searchsorted(queued_at.index.to_numpy(float), per_group["time"].to_numpy(float), side="right") - 1
    queued = queued_at.to_numpy(np.int64)
    per_group["queue"] = np.where(position >= 0, queued[np.maximum(position, 0)], 0) if len(queued) else 0

    fleet = fleet.reset_index()
    fleet["cluster"] = ALL
    fleet["gpu_type"] = ALL
    table = pd.concat([fleet, per_group], ignore_index=True)
    table = table.rename(columns={"busy": "busy_milli", "queue": "queued"})
    table["_fleet"] = table["cluster"] != ALL
    table = table.sort_values(["time", "_fleet", "cluster", "gpu_type"], kind="stable").drop(columns="_fleet")
    for column in ("busy_milli", "running", "queued"):
        table[column] = table[column].astype(np.int64)
    table["time"] = table["time"].astype(float)
    return table[list(TIMELINE_COLUMNS)].reset_index(drop=True)


def hetero_fleet() -> Fleet:
    return Fleet((ClusterSpec("a", (NodeGroup(2, 4, "V100"), NodeGroup(1, 8, "K80"))),
                  ClusterSpec("b", (NodeGroup(2, 8, "T4"),))), builtin_gpu_types())


def random_specs(n: int, seed: int, *, integer_times: bool = False) -> list[JobSpec]:
    """Mixed jobs: typed and untyped, homed and not, a few with deadlines, one too large for any node."""
    rng = np.random.default_rng(seed)
    specs = []
    submit = 0.0
    for i in range(n):
        if i:  # the first job arrives at 0.0, while SimPy's clock is still the int 0
            submit += float(rng.integers(0, 50)) if integer_times else float(rng.exponential(20.0))
        gpus = float(rng.choice([0.5, 1, 2, 4, 8]))
        workers = 2 if gpus == 8 and rng.random() < 0.5 else 1
        specs.append(JobSpec(
            f"j{i}", submit, float(rng.integers(1, 300)), gpus, workers, weight=int(rng.integers(1, 4)),
            deadline=submit + 500.0 if rng.random() < 0.3 else None,
            home_cluster=str(rng.choice(["a", "b", "elsewhere"])) if rng.random() < 0.7 else None,
            gpu_type=str(rng.choice(["V100", "K80", "T4"])) if rng.random() < 0.6 else None))
    specs.append(JobSpec("huge", submit, 10.0, 64.0, 1))  # fits no node: unscheduled at arrival
    return specs


def queue_scheduler(policy: str = "fifo", backfill: bool = True) -> QueueScheduler:
    return QueueScheduler(ORDERINGS[policy], PLACEMENTS["best_fit"](), Home(), backfill)


def engines() -> list[tuple[str, Engine]]:
    """Engines about to run: fifo, preemptive srtf with a restart penalty, heterogeneous, int clock."""
    fleet = hetero_fleet()
    return [
        ("fifo", Engine(fleet, random_specs(120, 1), queue_scheduler())),
        ("srtf-preemptive", Engine(fleet, random_specs(120, 2), PreemptiveScheduler(
            ORDERINGS["srtf"].key, PLACEMENTS["best_fit"](), Home()), EngineConfig(
            heterogeneous=True, restart_penalty_s=3.0))),
        ("hetero-strict", Engine(fleet, random_specs(120, 3), queue_scheduler("sjf", backfill=False),
                                 EngineConfig(heterogeneous=True))),
        ("int-clock", Engine(fleet, random_specs(60, 4, integer_times=True), queue_scheduler())),
    ]


def fields(job: JobRecord) -> dict:
    """Every slot of a record with its type (a rebuilt record must match in both)."""
    out = {}
    for name in JobRecord.__slots__:
        value = getattr(job, name)
        out[name] = (type(value).__name__, list(value) if isinstance(value, list) else value)
    return out


def same(a: dict, b: dict) -> bool:
    def norm(v):
        kind, value = v
        return kind, ("nan" if isinstance(value, float) and math.isnan(value) else value)

    return {k: norm(v) for k, v in a.items()} == {k: norm(v) for k, v in b.items()}


@pytest.mark.parametrize("case", range(4), ids=[name for name, _ in engines()])
def test_rebuilt_records_equal_the_records_when_they_left_play(monkeypatch, case):
    name, engine = engines()[case]
    at_retirement: dict[int, dict] = {}
    kept: dict[int, JobRecord] = {}
    retire = JobStore.retire

    def spy(store, job):
        at_retirement[job.index] = fields(job)
        kept[job.index] = job
        retire(store, job)

    monkeypatch.setattr(JobStore, "retire", spy)
    assert engine.run()
    store = engine.jobs
    assert not store.live  # nothing in play after a complete run
    assert sorted(at_retirement) == list(range(len(store)))
    for i, expected in at_retirement.items():
        rebuilt = store[i]
        assert rebuilt is not kept[i]
        assert same(fields(rebuilt), expected), (name, i)
        assert same(fields(kept[i]), expected)  # a record someone kept has its final state
    if name == "srtf-preemptive":
        assert sum(r.preemptions for r in store) > 0  # the case does preempt
    if name == "int-clock":
        assert any(type(r.first_start) is int for r in store)  # SimPy's clock starts at the int 0
    statuses = {r.status for r in store}
    assert "infeasible" in statuses and "done" in statuses


@pytest.mark.parametrize("case", range(4), ids=[name for name, _ in engines()])
def test_tables_from_columns_equal_the_tables_from_records(case):
    _, engine = engines()[case]
    assert engine.run()
    names = engine.fleet.cluster_names
    pd.testing.assert_frame_equal(jobs_frame(engine.jobs, names), jobs_frame(list(engine.jobs), names))
    pd.testing.assert_frame_equal(engine.events.frame(), pd.DataFrame(list(engine.events), columns=EVENT_COLUMNS))


def test_partial_run_tables_include_the_jobs_in_play():
    _, engine = engines()[1]
    engine.env.run(until=1500.0)  # stops mid-run: jobs queued, running and not yet arrived
    store = engine.jobs
    assert engine.queue and engine.running and any(s == 0 for s in store.status)
    names = engine.fleet.cluster_names
    table = jobs_frame(store, names)
    pd.testing.assert_frame_equal(table, jobs_frame(list(store), names))
    assert set(table["status"]) >= {"queued", "running", "pending", "done"}


def test_all_int_start_times_make_an_int_column_as_records_do():
    """Jobs submitted at 0.0 all start at SimPy's int clock 0: both ways give an int64 start column."""
    fleet = hetero_fleet()
    engine = Engine(fleet, [JobSpec(f"j{i}", 0.0, 10.0 + i, 1.0, 1) for i in range(5)], queue_scheduler())
    assert engine.run()
    names = fleet.cluster_names
    table = jobs_frame(engine.jobs, names)
    assert table["start"].dtype == np.int64
    pd.testing.assert_frame_equal(table, jobs_frame(list(engine.jobs), names))


def test_records_exist_only_for_jobs_in_play():
    _, engine = engines()[1]
    store, env = engine.jobs, engine.env
    most = 0
    while env.peek() < math.inf:
        env.step()
        in_play = {j.index for j in engine.queue.values()} | {j.index for j in engine.running.values()}
        assert set(store.live) == in_play
        most = max(most, len(in_play))
        for job in engine.queue.values():
            assert store[job.index] is job  # one object while in play
    assert 0 < most < len(store)


def test_store_reads_as_a_sequence_and_by_id():
    _, engine = engines()[0]
    store = engine.jobs
    assert len(store) == 121
    pending = store[-1]
    assert pending.job_id == "huge" and pending.status == "pending" and store[120] is pending
    assert [r.job_id for r in store[:3]] == ["j0", "j1", "j2"]
    with pytest.raises(IndexError):
        store[121]
    assert engine.run()
    assert engine.by_id["huge"].status == "infeasible"
    assert engine.by_id["j7"].job_id == "j7" and "j7" in engine.by_id and len(engine.by_id) == 121


def test_event_log_reads_as_tuples():
    log = EventLog(["a", "b"])
    log.add(0, 0, 0)
    log.add(0, 1, 0, (3, 3))
    log.add(1.5, 0, 1)
    log.add(1.5, 4, 1, reason="too large")
    log.add(2.25, 2, 0)
    expected = [(0, "arrive", "a", ""), (0, "start", "a", "3 3"), (1.5, "arrive", "b", ""),
                (1.5, "unscheduled", "b", "too large"), (2.25, "finish", "a", "")]
    assert log == expected and list(log) == expected
    assert type(log[0][0]) is int and type(log[2][0]) is float
    assert log[-1] == expected[-1] and log[1:3] == expected[1:3] and len(log) == 5
    with pytest.raises(IndexError):
        log[5]
    pd.testing.assert_frame_equal(log.frame(), pd.DataFrame(expected, columns=EVENT_COLUMNS))
    only_ints = EventLog(["a"])
    only_ints.add(0, 0, 0)
    only_ints.add(0, 4, 0, reason="x")
    assert only_ints.frame()["time"].dtype == np.int64  # as a list of int tuples gives
    pd.testing.assert_frame_equal(only_ints.frame(), pd.DataFrame(list(only_ints), columns=EVENT_COLUMNS))


def result_pair(engine: Engine):
    """A RunResult built from the engine's columns and one built the record way (events table,
    options dict): every derived table must be the same."""
    from simsched.core import outputs
    from simsched.runs.single import JobOptions, RunResult

    names = engine.fleet.cluster_names
    state = engine.fleet_state
    nodes = outputs.nodes_frame(state.node_cluster, state.node_type, state.node_capacity, names)
    columnar = RunResult(jobs_frame(engine.jobs, names), engine.events, {}, nodes, JobOptions(engine.jobs, state),
                         names)
    records = list(engine.jobs)
    by_records = RunResult(jobs_frame(records, names), pd.DataFrame(list(engine.events), columns=EVENT_COLUMNS), {},
                           nodes, {job.job_id: job.options for job in records}, names)
    return columnar, by_records


@pytest.mark.parametrize("case", range(4), ids=[name for name, _ in engines()])
def test_spells_jobs_and_timeline_from_the_log_equal_the_table_way(case):
    name, engine = engines()[case]
    assert engine.run()
    columnar, by_records = result_pair(engine)
    for table in ("spells", "jobs", "timeline", "events"):
        pd.testing.assert_frame_equal(getattr(columnar, table), getattr(by_records, table))

    pd.testing.assert_frame_equal(columnar.timeline, timeline_frame_reference(by_records.events, by_records.spells))
    if name == "srtf-preemptive":
        assert (columnar.jobs["runs"] > 1).any() and columnar.jobs["nodes"].str.contains("|", regex=False).any()
    assert (columnar.spells["workers"] > 1).any()


def test_spells_of_a_partial_run_from_the_log_keep_open_spells():
    _, engine = engines()[1]
    engine.env.run(until=1500.0)
    columnar, by_records = result_pair(engine)
    assert columnar.spells["end"].isna().any()
    for table in ("spells", "jobs", "timeline"):
        pd.testing.assert_frame_equal(getattr(columnar, table), getattr(by_records, table))

    pd.testing.assert_frame_equal(columnar.timeline, timeline_frame_reference(by_records.events, by_records.spells))


@pytest.mark.parametrize("case", [1, 3], ids=["srtf-preemptive", "int-clock"])
def test_events_csv_written_in_chunks_has_the_bytes_of_the_whole_table(tmp_path, case):
    _, engine = engines()[case]
    assert engine.run()
    whole, chunked = tmp_path / "whole.csv", tmp_path / "chunked.csv"
    pd.DataFrame(list(engine.events), columns=EVENT_COLUMNS).to_csv(whole, index=False)
    engine.events.write_csv(chunked, chunk=7)
    assert chunked.read_bytes() == whole.read_bytes()
    assert engine.events.frame(7, 14).equals(engine.events.frame().iloc[7:14].reset_index(drop=True))


def test_tables_of_a_run_where_no_job_ever_runs():
    engine = Engine(hetero_fleet(), [JobSpec("huge", 5.0, 10.0, 64.0, 1), JobSpec("huger", 6.0, 1.0, 128.0, 1)],
                    queue_scheduler())
    assert engine.run()
    columnar, by_records = result_pair(engine)

    assert len(columnar.spells) == 0 and len(columnar.timeline) == 0  # arrive + unscheduled at once: no change
    pd.testing.assert_frame_equal(columnar.timeline, timeline_frame_reference(by_records.events, by_records.spells))
    pd.testing.assert_frame_equal(columnar.spells, by_records.spells)
    pd.testing.assert_frame_equal(columnar.jobs, by_records.jobs)


def test_a_store_pickles_and_its_copy_works():
    """Records in play hold SimPy processes, so a store pickles before or after a run."""
    import pickle

    _, engine = engines()[0]
    before = pickle.loads(pickle.dumps(engine.jobs))
    job = before.record(3)
    assert same(fields(job), fields(engine.jobs[3]))
    job.status, job.end, job.reason = "infeasible", 12.5, "test"
    before.retire(job)  # the remade views write into the copy's columns
    assert before[3].status == "infeasible" and before[3].reason == "test" and engine.jobs[3].status == "pending"
    assert engine.run()
    after = pickle.loads(pickle.dumps(engine.jobs))
    assert all(same(fields(a), fields(b)) for a, b in zip(after, engine.jobs))
