"""evo-gp ablation keys: ``migrate`` (running jobs stay put) and ``ea_stream`` (the EA's random stream)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import simsched
from simsched.core.errors import InputError
from tests.helpers import write_scenario

CLUSTERS = ('[[cluster]]\nname = "a"\nnodes = [{ count = 2, gpus = 8 }]\n'
            '[[cluster]]\nname = "b"\nnodes = [{ count = 1, gpus = 8 }]\n'
            '[[cluster]]\nname = "c"\nnodes = [{ count = 1, gpus = 4 }]')
# submit, duration, gpus, workers, weight, home
job = st.tuples(st.integers(0, 40), st.integers(1, 60), st.sampled_from([1, 2, 4, 8]),
                st.sampled_from([1, 1, 2]), st.integers(1, 3), st.sampled_from(["a", "b", "c"]))


def _rows(jobs):
    """CSV rows; g is GPUs per worker (a 2 x 8 job fits only cluster a)."""
    return [f"j{i},{s},{d},{g * w},{w},{u},,{home}," for i, (s, d, g, w, u, home) in enumerate(jobs)]


def _evo(tmp, jobs, extra=""):
    scheduler = f'policy = "evo-gp"\npopulation = 6\ngenerations = 4\n{extra}'
    return write_scenario(tmp, clusters=CLUSTERS, scheduler=scheduler, jobs=_rows(jobs))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(job, min_size=2, max_size=18), st.integers(0, 3))
def test_migrate_false_never_preempts_a_running_job(tmp_path_factory, jobs, ea_stream):
    path = _evo(tmp_path_factory.mktemp("nomig"), jobs, f"migrate = false\nea_stream = {ea_stream}")
    result = simsched.run(path)
    assert not (result.events["event"] == "preempt").any()
    assert (result.jobs["preemptions"] == 0).all()
    assert result.summary["preemptions"] == 0
    # every job ran in one piece, in one cluster
    starts = result.events[result.events["event"] == "start"]["job_id"]
    assert starts.is_unique


# Home "a" for all; a is busy with a long job, so evo-gp sends the others to b and c. When a
# frees up, moving a job running away from home can pay: with migrate = true some seed does.
BUSY_HOME = [(0, 500, 8, 2, 1, "a")] + [(k, 200 + 10 * k, 4, 1, 3, "a") for k in range(1, 7)]


def test_migrate_true_can_preempt_on_the_same_workload(tmp_path):
    moved = 0
    for seed in range(4):
        result = simsched.run(_evo(tmp_path, BUSY_HOME), seed=seed)
        moved += int((result.events["event"] == "preempt").sum())
        frozen = simsched.run(_evo(tmp_path, BUSY_HOME, "migrate = false"), seed=seed)
        assert (frozen.events["event"] == "preempt").sum() == 0
    assert moved > 0


def test_ea_stream_zero_is_todays_stream_and_others_differ(tmp_path):
    jobs = [(k % 5, 30 + 7 * k, [1, 2, 4, 8][k % 4], 1, 1 + k % 3, "abc"[k % 3]) for k in range(16)]
    base = simsched.run(_evo(tmp_path, jobs))
    zero = simsched.run(_evo(tmp_path, jobs, "ea_stream = 0"))
    assert base.jobs.equals(zero.jobs)
    again = simsched.run(_evo(tmp_path, jobs, "ea_stream = 2"))
    assert again.jobs.equals(simsched.run(_evo(tmp_path, jobs, "ea_stream = 2")).jobs)  # reproducible
    others = [simsched.run(_evo(tmp_path, jobs, f"ea_stream = {k}")).jobs for k in (1, 2, 3)]
    assert any(not o.equals(base.jobs) for o in others)


def test_ea_stream_children_are_distinct_streams():
    import numpy as np

    from simsched.core.seeding import stream
    from simsched.evo.families import ea_rng

    draws = [ea_rng(stream(5, "optimizer"), k).random(4) for k in range(4)]
    assert np.array_equal(draws[0], stream(5, "optimizer").random(4))
    assert len({tuple(d) for d in draws}) == 4
    assert np.array_equal(ea_rng(stream(5, "optimizer"), 3).random(4), draws[3])


@pytest.mark.parametrize("extra, message", [
    ("migrate = 1", "scheduler.migrate: must be true or false"),
    ("ea_stream = -1", "scheduler.ea_stream: must be >= 0"),
    ("ea_stream = 1.5", "scheduler.ea_stream: must be an integer"),
])
def test_bad_ablation_keys(tmp_path, extra, message):
    with pytest.raises(InputError, match=message):
        simsched.run(_evo(tmp_path, [(0, 5, 1, 1, 1, "a")], extra))


def test_migrate_is_an_evo_gp_key_only(tmp_path):
    path = write_scenario(tmp_path, clusters=CLUSTERS, jobs=_rows([(0, 5, 1, 1, 1, "a")]),
                          scheduler='policy = "mct-gp"\nmigrate = false')
    with pytest.raises(InputError, match="scheduler.migrate: unknown key"):
        simsched.run(path)
