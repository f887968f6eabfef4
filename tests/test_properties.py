"""Invariants on random small workloads (hypothesis): capacity, completion, determinism, metrics."""

from __future__ import annotations

import json

import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simsched
from simsched.core.metrics import summarize
from tests.helpers import write_scenario

job = st.tuples(st.integers(0, 50), st.integers(0, 30), st.sampled_from([1, 2, 3, 4, 8, 16]))
policies = st.sampled_from(["fifo", "sjf", "srtf", "srsf", "edf", "hrrn", "lyra", "sufferage", "las",
                            "srtf-preemptive", "gp"])
placements = st.sampled_from(["best_fit", "first_fit", "worst_fit", "round_robin"])
CLUSTER = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 4 }, { count = 1, gpus = 8 }]'


def _scenario(folder, jobs, policy, placement, backfill):
    rows = [f"j{i},{s},{d},{g},,,{s + 2 * d + 1},," for i, (s, d, g) in enumerate(jobs)]
    scheduler = f'policy = "{policy}"\nplacement = "{placement}"\nbackfill = {str(backfill).lower()}'
    return write_scenario(folder, clusters=CLUSTER, scheduler=scheduler, jobs=rows)


def _replay_capacity(result) -> int:
    """Replay the event log; return the peak use of any node in milli-GPUs."""
    jobs = result.jobs.set_index("job_id")
    capacity = {0: 4000, 1: 4000, 2: 8000}
    used = dict.fromkeys(capacity, 0)
    held: dict[str, list[int]] = {}
    worst = 0
    for _, event, job_id, detail in result.events.itertuples(index=False):
        if event == "start":
            nodes = [int(n) for n in str(detail).split()]
            share = int(1000 * jobs.loc[job_id, "gpus"] / jobs.loc[job_id, "workers"])
            held[job_id] = nodes
            for n in nodes:
                used[n] += share
                worst = max(worst, used[n] - capacity[n])
        elif event in ("finish", "preempt"):
            share = int(1000 * jobs.loc[job_id, "gpus"] / jobs.loc[job_id, "workers"])
            for n in held.pop(job_id):
                used[n] -= share
    return worst


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(job, min_size=1, max_size=25), policies, placements, st.booleans())
def test_invariants(tmp_path_factory, jobs, policy, placement, backfill):
    folder = tmp_path_factory.mktemp("prop")
    path = _scenario(folder, jobs, policy, placement, backfill)
    result = simsched.run(path)
    # no node ever above capacity
    assert _replay_capacity(result) <= 0
    # every job finishes or is reported infeasible (16 GPUs fit no node of 8 with 2 workers of 8: ok)
    status = result.jobs["status"]
    assert set(status) <= {"done", "infeasible"}
    assert (status == "done").sum() + (status == "infeasible").sum() == len(jobs)
    done = result.jobs[status == "done"]
    assert (done["start"] >= done["submit"]).all() and (done["end"] >= done["start"]).all()
    # same scenario, same seed: identical jobs.csv
    again = simsched.run(path)
    pd.testing.assert_frame_equal(result.jobs, again.jobs)
    # metrics recomputed from the written jobs.csv equal summary.json
    out = result.write(folder / "out")
    written = pd.read_csv(out / "jobs.csv", dtype={"job_id": str, "cluster": str, "gpu_type": str,
                                                    "reason": str}, keep_default_na=False,
                          na_values={"start": [""], "end": [""], "wait": [""], "jct": [""], "deadline": [""]})
    summary = json.loads((out / "summary.json").read_text())
    recomputed = summarize(written, {"c0": 16.0}, (1.0, 1.0, 1.0))
    for key, value in recomputed.items():
        if key != "per_cluster":
            assert value == summary[key], key
    assert recomputed["per_cluster"] == summary["per_cluster"]
