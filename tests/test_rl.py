"""The RL environment, the built-in agent and ``policy = "rl"`` (docs/rl.md)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

gym = pytest.importorskip("gymnasium", reason="the rl extra (gymnasium) is not installed")

import simsched  # noqa: E402
from simsched.cli.main import main  # noqa: E402
from simsched.core.errors import DecisionError, InputError  # noqa: E402
from simsched.learning.rl_env import FLOW_UNIT_S, SchedulingEnv  # noqa: E402
from simsched.learning.rl_train import TrainConfig, train  # noqa: E402
from simsched.policies.placement import first_fit  # noqa: E402
from simsched.rl.agent import LinearAgent  # noqa: E402
from tests.helpers import write_scenario  # noqa: E402

ONE_NODE = '[[cluster]]\nname = "c0"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]'
FIFO = 'policy = "fifo"\nplacement = "best_fit"'

# a on the whole node, b and c share it, d arrives at t=5 and needs the whole node
TINY_JOBS = ["a,0,100,4,1,1,,,", "b,0,10,2,1,2,,,", "c,0,50,1,1,1,,,", "d,5,20,4,1,1,,,"]


def _philly(folder, *, policy="fifo", jobs=150, extra_scheduler=""):
    """A contended Philly-like instance: two node classes, heterogeneous placement, queues form."""
    path = folder / "philly.toml"
    path.write_text(f"""name = "philly_small"
seed = 3
[[cluster]]
name = "philly"
nodes = [{{ count = 4, gpus = 2, gpu_type = "2x12" }}, {{ count = 3, gpus = 8, gpu_type = "8x24" }}]
[workload]
source = "synthetic"
generator = "philly"
jobs = {jobs}
load = 50.0
max_gpus = 16
reference_gpu_type = "8x24"
synthesize_deadline = true
synthesize_weight = true
[scheduler]
policy = "{policy}"
placement = "best_fit"
heterogeneous = true
{extra_scheduler}
""")
    return path


def _first_allowed(info) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


def _episode(env, choose=_first_allowed, seed=None):
    obs, info = env.reset(seed=seed)
    rewards, done = [], False
    while not done:
        obs, reward, done, truncated, info = env.step(choose(info))
        assert not truncated
        rewards.append(reward)
    return rewards


# -- environment ---------------------------------------------------------------------------
def test_check_env_passes(tmp_path):
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "no render modes / no spec" notes
        check_env(SchedulingEnv(_philly(tmp_path, jobs=40), top_k=8), skip_render_check=True)


@pytest.mark.parametrize("order", ["fifo", "sjf"])
def test_first_candidate_episode_reproduces_the_scheduler(tmp_path, order):
    """Always starting the first candidate (candidate order = the policy's order) is that policy
    with backfill: the environment drives the engine itself, so jobs.csv is identical."""
    path = _philly(tmp_path, policy=order)
    reference = simsched.run(path)
    env = SchedulingEnv(path, order=order)
    _episode(env)
    result = env.result()
    pd.testing.assert_frame_equal(result.jobs, reference.jobs)
    pd.testing.assert_frame_equal(result.events, reference.events)
    assert reference.summary["avg_jct"] > 0 and result.summary["completed"] == 150


def test_hand_computed_episode_masks_rewards_and_features(tmp_path):
    path = write_scenario(tmp_path, clusters=ONE_NODE, scheduler=FIFO, jobs=TINY_JOBS)
    env = SchedulingEnv(path, top_k=4)
    obs, info = env.reset()
    # t=0: a, b, c all fit the empty node; waiting is masked while nothing runs
    assert info["time"] == 0 and info["action_mask"].tolist() == [1, 1, 1, 0, 0]
    rows = obs[:4 * env._observer.row_size].reshape(4, -1)
    assert rows[:, 0].tolist() == [1, 1, 1, 0]  # present
    b = rows[1]
    assert b[2] == pytest.approx(math.log1p(10) / math.log1p(1e6))  # remaining
    assert b[3] == pytest.approx(math.log2(3) / math.log2(5))  # 2 of the fleet's 4 GPUs
    assert b[4] == 0 and b[5] == 0 and b[6] == pytest.approx(0.4) and b[7] == 1  # wait, response, weight, slack
    assert b[8] == pytest.approx(0.25)  # speed on V100 (untyped job: 1.0) / 4
    assert obs[-3:].tolist() == pytest.approx([1.0, math.log1p(3) / math.log1p(1e4), 0.0])
    steps = [  # action -> (time, mask after, reward in weight-seconds)
        (1, 0, [1, 0, 0, 0, 1], 0.0),  # start b: c fits, a does not; wait allowed (b runs)
        (4, 5, [1, 0, 0, 0, 1], 20.0),  # wait: d arrives at 5; 5 s x weights 1+2+1
        (0, 55, [1, 1, 0, 0, 0], 160.0),  # start c: nothing else fits until c ends at 55
        (1, 75, [1, 0, 0, 0, 0], 40.0),  # start d (the second candidate), it ends at 75
        (0, 175, [0, 0, 0, 0, 1], 100.0),  # start a: runs to 175, the episode ends
    ]
    for action, time, mask, flow in steps:
        obs, reward, done, _, info = env.step(action)
        assert (info["time"], info["action_mask"].tolist()) == (time, mask)
        assert reward == pytest.approx(-flow / FLOW_UNIT_S)
    assert done
    jobs = env.result().jobs.set_index("job_id")
    assert jobs.loc[["a", "b", "c", "d"], ["start", "end"]].values.tolist() == [
        [75, 175], [0, 10], [5, 55], [55, 75]]


def test_mask_matches_an_independent_fit_check(tmp_path):
    """At every step of a random episode, a candidate is allowed exactly when first fit places it."""
    env = SchedulingEnv(_philly(tmp_path, jobs=80), top_k=6)
    rng = np.random.default_rng(0)
    obs, info = env.reset()
    done, checked = False, 0
    while not done:
        engine = env._sim.engine
        mask = info["action_mask"]
        for i, job in enumerate(env._candidates.jobs):
            free = list(engine.free)
            fits = any(first_fit(engine.fleet_state.groups[o.cluster, o.gpu_type], o.per_worker, job.workers, free)
                       is not None for o in job.options)
            assert bool(mask[i]) == fits
            checked += 1
        assert not mask[len(env._candidates.jobs):-1].any()  # empty rows are never allowed
        assert bool(mask[-1]) == bool(engine.running)
        obs, _, done, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
    assert checked > 100


def test_rewards_add_up_to_weighted_flow_and_objective(tmp_path):
    path = _philly(tmp_path, jobs=80)
    rng = np.random.default_rng(1)

    def random_choice(info):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    env = SchedulingEnv(path)
    total = sum(_episode(env, random_choice))
    jobs = env.result().jobs
    assert total * FLOW_UNIT_S == pytest.approx(-(jobs["weight"] * jobs["jct"]).sum(), rel=1e-9)
    env = SchedulingEnv(path, reward="objective")
    total = sum(_episode(env, random_choice))
    assert total == pytest.approx(-env.result().summary["objective"], rel=1e-9)


def test_seeded_reset_is_deterministic_and_seeds_step_on(tmp_path):
    env = SchedulingEnv(_philly(tmp_path, jobs=60), seed=7)
    first, info = env.reset()
    assert info["instance_seed"] == 7
    assert env.reset()[1]["instance_seed"] == 8  # an unseeded reset takes the next instance
    again, info = env.reset(seed=7)
    np.testing.assert_array_equal(first, again)
    r1 = _episode(env, seed=11)
    r2 = _episode(env, seed=11)
    assert r1 == r2 and _episode(env, seed=12) != r1


def test_masked_action_waits_or_raises(tmp_path):
    path = write_scenario(tmp_path, clusters=ONE_NODE, scheduler=FIFO, jobs=TINY_JOBS)
    env = SchedulingEnv(path, top_k=4)
    env.reset()
    env.step(1)  # start b; now only c (0) and wait (4) are allowed
    _, _, _, _, info = env.step(2)  # a masked candidate: treated as wait
    assert info["invalid_action"] and info["time"] == 5
    strict = SchedulingEnv(path, top_k=4, invalid_action="raise")
    strict.reset()
    with pytest.raises(DecisionError, match="action 3 is not allowed now; allowed: \\[0, 1, 2\\]"):
        strict.step(3)


def test_bad_arguments(tmp_path):
    path = write_scenario(tmp_path, clusters=ONE_NODE, scheduler=FIFO, jobs=TINY_JOBS)
    with pytest.raises(InputError, match='"reward" must be one of weighted_flow, objective'):
        SchedulingEnv(path, reward="makespan")
    with pytest.raises(InputError, match='"top_k" must be an integer >= 1'):
        SchedulingEnv(path, top_k=0)
    with pytest.raises(InputError, match='"order" must be one of'):
        SchedulingEnv(path, order="random")
    mct = write_scenario(tmp_path, clusters=ONE_NODE, scheduler=FIFO + '\nallocation = "mct"', jobs=TINY_JOBS)
    with pytest.raises(InputError, match="scheduler.allocation: the RL agent supports home, round_robin, random"):
        SchedulingEnv(mct)


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_vector_envs(tmp_path, kind):
    path = _philly(tmp_path, jobs=40)
    make = [lambda: SchedulingEnv(path, top_k=8) for _ in range(2)]
    vector = gym.vector.SyncVectorEnv(make) if kind == "sync" else gym.vector.AsyncVectorEnv(make)
    try:
        obs, info = vector.reset(seed=[5, 6])
        assert obs.shape == (2, vector.single_observation_space.shape[0]) and obs.dtype == np.float32
        assert info["action_mask"].shape == (2, 9)
        for _ in range(20):
            actions = np.array([int(np.flatnonzero(m)[0]) for m in info["action_mask"]])
            obs, rewards, terminated, truncated, info = vector.step(actions)
            assert rewards.shape == (2,) and np.all(rewards <= 0)
    finally:
        vector.close()


# -- agent ---------------------------------------------------------------------------------
def _tiny_config(**kw) -> TrainConfig:
    return TrainConfig(**{"episodes": 4, "batch": 1, "rollouts": 2, "validation": 1, "eval_every": 1, "top_k": 8, "jobs": 40, **kw})


def _last_weights(out):
    from simsched.learning.rl_train import checkpoint_path

    with np.load(checkpoint_path(out)) as data:
        return data["params"]


def test_training_is_deterministic_and_independent_of_workers(tmp_path):
    path = _philly(tmp_path)
    a = train(path, _tiny_config(), out=tmp_path / "a.npz")
    b = train(path, _tiny_config(), out=tmp_path / "b.npz")
    c = train(path, _tiny_config(), out=tmp_path / "c.npz", workers=2)
    last = _last_weights(tmp_path / "a.npz")
    assert np.any(last != LinearAgent.initial(a.config, a.shape).parameters())  # it learned something
    for other in ("b.npz", "c.npz"):
        np.testing.assert_array_equal(_last_weights(tmp_path / other), last)
    np.testing.assert_array_equal(a.parameters(), b.parameters())
    np.testing.assert_array_equal(a.parameters(), c.parameters())
    train(path, _tiny_config(seed=1), out=tmp_path / "d.npz")
    assert np.any(_last_weights(tmp_path / "d.npz") != last)  # another sampling seed, other weights


def test_resume_continues_to_the_same_weights(tmp_path):
    import shutil

    from simsched.learning.rl_train import checkpoint_path

    path = _philly(tmp_path)
    whole = train(path, _tiny_config(), out=tmp_path / "whole.npz")
    train(path, _tiny_config(episodes=2), out=tmp_path / "part.npz")
    with pytest.raises(InputError, match="checkpoint is from other settings"):
        train(path, _tiny_config(), out=tmp_path / "part.npz", resume=True)
    out = tmp_path / "r.npz"
    seen = []

    def keep_first(progress):  # as if interrupted after update 1: keep that checkpoint
        seen.append(progress.update)
        if progress.update == 1:
            shutil.copy(checkpoint_path(out), tmp_path / "first.ckpt.npz")

    train(path, _tiny_config(), out=out, progress=keep_first)
    shutil.copy(tmp_path / "first.ckpt.npz", checkpoint_path(out))
    resumed_updates = []
    resumed = train(path, _tiny_config(), out=out, resume=True,
                    progress=lambda p: resumed_updates.append(p.update))
    assert seen == [1, 2] and resumed_updates == [2]
    np.testing.assert_array_equal(_last_weights(out), _last_weights(tmp_path / "whole.npz"))
    np.testing.assert_array_equal(resumed.parameters(), whole.parameters())


def test_agent_save_load_round_trip_and_bad_files(tmp_path):
    path = _philly(tmp_path, jobs=40)
    env = SchedulingEnv(path)
    agent = LinearAgent.initial(env.config, env.shape)
    agent.set_parameters(np.random.default_rng(2).normal(size=agent.parameters().size))
    agent.meta = {"note": "hand-made"}
    agent.save(tmp_path / "x.npz")
    back = LinearAgent.load(tmp_path / "x.npz")
    np.testing.assert_array_equal(back.parameters(), agent.parameters())
    assert (back.config, back.shape, back.meta) == (agent.config, agent.shape, agent.meta)
    with pytest.raises(InputError, match="agent file not found"):
        LinearAgent.load(tmp_path / "missing.npz")
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(InputError, match="not a simsched RL agent file"):
        LinearAgent.load(tmp_path / "junk.npz")


def test_rl_policy_equals_a_greedy_episode_and_runs_in_compare(tmp_path):
    path = _philly(tmp_path, jobs=120)
    env = SchedulingEnv(path)
    agent = LinearAgent.initial(env.config, env.shape)
    agent.set_parameters(np.random.default_rng(3).normal(size=agent.parameters().size))
    agent.save(tmp_path / "agent.npz")
    obs, info = env.reset()
    row = env._observer.row_size * env.config.top_k
    done = False
    while not done:
        action = agent.greedy(obs[:row].reshape(env.config.top_k, -1), info["action_mask"])
        obs, _, done, _, info = env.step(action)
    rl_path = _philly(tmp_path, policy="rl", jobs=120, extra_scheduler='agent = "agent.npz"')
    result = simsched.run(rl_path)
    pd.testing.assert_frame_equal(result.jobs, env.result().jobs)
    assert main(["compare", str(rl_path), "--schedulers", "fifo,rl", "--workers", "1", "--quiet",
                 "--out", str(tmp_path / "cmp")]) == 0
    runs = pd.read_csv(tmp_path / "cmp" / "compare_runs.csv")
    assert set(runs["scheduler"]) == {"fifo", "rl"}


def test_rl_policy_input_errors(tmp_path, capsys):
    path = _philly(tmp_path, policy="rl", jobs=40)
    assert main([str(path), "--quiet"]) == 2
    assert 'scheduler.agent: policy \'rl\' needs agent = "file.npz"' in capsys.readouterr().err
    other = write_scenario(tmp_path, clusters=ONE_NODE, scheduler=FIFO, jobs=TINY_JOBS)
    env = SchedulingEnv(other, top_k=4)
    LinearAgent.initial(env.config, env.shape).save(tmp_path / "one_node.npz")
    mismatched = _philly(tmp_path, policy="rl", jobs=40, extra_scheduler='agent = "one_node.npz"')
    assert main([str(mismatched), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "the agent was trained for GPU types ['V100']" in err and len(err.splitlines()) == 1


def test_rl_train_cli(tmp_path, capsys):
    path = _philly(tmp_path, jobs=40)
    out = tmp_path / "agent.npz"
    argv = ["rl", "train", str(path), "--out", str(out), "--episodes", "2", "--batch", "2", "--validation", "1",
            "--top-k", "4", "--workers", "1"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "best validation mean JCT" in err and f"wrote {out}" in err
    assert LinearAgent.load(out).config.top_k == 4
    assert main(argv + ["--resume", "--quiet"]) == 0  # the checkpoint is complete: nothing left to do
    for bad, needle in [(["rl"], "expected an action (train), got nothing"),
                        (["rl", "train", str(path), "--out", str(out), "--reward", "speed"], '"reward" must be one of'),
                        (["rl", "train", str(path), "--out", str(tmp_path / "no" / "a.npz")], "does not exist"),
                        (["rl", "train", str(path), "--out", str(out), "--episodes", "0"], "must be >= 1")]:
        assert main(bad) == 2
        err = capsys.readouterr().err.strip()
        assert needle in err and len(err.splitlines()) == 1, err


def test_any_allowed_actions_finish_every_job_and_rewards_add_up(tmp_path):
    """Property: whatever allowed actions an agent takes (waits included), every job finishes,
    no node is over-allocated (the engine would raise), and the rewards add up to the weighted flow."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    env = SchedulingEnv(_philly(tmp_path, jobs=30), top_k=4)

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(seed=st.integers(0, 1000), draws=st.randoms(use_true_random=False))
    def check(seed, draws):
        rewards = _episode(env, lambda info: draws.choice(np.flatnonzero(info["action_mask"]).tolist()), seed=seed)
        jobs = env.result().jobs
        assert (jobs["status"] == "done").all()
        assert sum(rewards) * FLOW_UNIT_S == pytest.approx(-(jobs["weight"] * jobs["jct"]).sum(), rel=1e-9)

    check()


def test_two_clusters_home_and_fleet_wide_jobs_reproduce_fifo(tmp_path):
    """Jobs with a home cluster stay in it; jobs without one may start in any cluster (fastest type first)."""
    clusters = ('[[cluster]]\nname = "a"\nnodes = [{ count = 1, gpus = 4, gpu_type = "V100" }]\n'
                '[[cluster]]\nname = "b"\nnodes = [{ count = 1, gpus = 4, gpu_type = "A100" }]')
    jobs = ["1,0,100,4,1,1,,a,", "2,0,50,2,1,1,,,", "3,1,30,2,1,1,,b,", "4,2,10,4,1,1,,,", "5,2,10,1,1,1,,a,"]
    path = write_scenario(tmp_path, clusters=clusters, scheduler=FIFO, jobs=jobs)
    reference = simsched.run(path)
    env = SchedulingEnv(path, top_k=4)
    _episode(env)
    pd.testing.assert_frame_equal(env.result().jobs, reference.jobs)
    assert set(reference.jobs["cluster"]) == {"a", "b"}


def test_rl_policy_needs_no_gymnasium(tmp_path):
    """The shipped scenario runs its agent with gymnasium unimportable (inference is numpy only)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import sys; sys.modules['gymnasium'] = None\n"
            "import simsched\n"
            "r = simsched.run('scenarios/rl/philly_contended.toml', jobs=60)\n"
            "assert r.summary['completed'] == 60, r.summary\n"
            "assert 'gymnasium' not in [m for m in sys.modules if sys.modules[m] is not None]\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
