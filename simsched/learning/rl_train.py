"""Training the built-in agent: REINFORCE with a shared baseline, numpy only (docs/rl.md).

Each update takes ``batch`` workload instances and samples ``rollouts``
episodes on each from the current softmax policy. An episode's advantage is its
return minus the mean return of the rollouts on the same instance (a shared
baseline, as in POMO, Kwon et al. 2020: what differs between rollouts of one
instance is only the agent's choices), divided by the batch's standard
deviation; every step of the episode gets that advantage, and one Adam ascent
step is taken on ``mean over steps of advantage x grad log pi``. (Per-step
discounted returns with a regression baseline on the global features learned
nothing in 80 episodes here: the return-to-go depends on the instance far more
than on the choice.)
Every ``eval_every`` updates the greedy agent runs on the validation instances;
the best one by mean JCT is the one written out (update 0 is the initial agent,
which greedily starts the first candidate: FIFO with backfill).

Instances never overlap: training instance ``i`` (``batch`` per update) runs
seed ``scenario seed + 100000 + i``, validation instance ``i`` seed ``scenario seed + 200000 + i``;
``seed .. seed + N - 1``, which ``compare`` uses, stay held out. The action
draws of episode ``e`` come from ``SeedSequence([train seed, e])``. Episodes
run in worker processes (:class:`simsched.runs.parallel.TaskRunner`) and come back in
task order, so the weights depend on the seed, never on ``workers`` (tested).

A checkpoint (``OUT.ckpt.npz``) is written after every update; ``resume``
continues from it.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from simsched.config.scenario import load_scenario
from simsched.core import atomic
from simsched.core.errors import InputError
from simsched.core.inputs import note_read
from simsched.rl.agent import LinearAgent
from simsched.rl.features import FleetShape, ObsConfig
from simsched.runs.parallel import TaskRunner

TRAIN_SEED_OFFSET = 100_000
VALIDATION_SEED_OFFSET = 200_000


@dataclass(frozen=True)
class TrainConfig:
    episodes: int = 240  # training episodes in all
    batch: int = 2  # instances per update
    rollouts: int = 4  # episodes per instance per update (they share a baseline)
    learning_rate: float = 0.1  # Adam step size
    seed: int = 0  # action sampling
    top_k: int = 16
    order: str = "fifo"
    reward: str = "weighted_flow"
    jobs: int | None = None  # keep only the first N jobs of every instance
    validation: int = 4  # greedy validation instances
    eval_every: int = 3  # updates between validations

    def check(self) -> None:
        for name, low in (("episodes", 1), ("batch", 1), ("rollouts", 2), ("validation", 1), ("eval_every", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise InputError(f'rl train: "{name}" must be an integer >= {low}, got {value!r}')
        if not (math.isfinite(self.learning_rate) and self.learning_rate > 0):
            raise InputError(f'rl train: "learning_rate" must be > 0, got {self.learning_rate!r}')
        if self.jobs is not None and self.jobs < 1:
            raise InputError(f'rl train: "jobs" must be >= 1, got {self.jobs!r}')
        ObsConfig(top_k=self.top_k, order=self.order)  # validates both
        # gymnasium (the rl extra): loaded when training starts
        from simsched.learning.rl_env import REWARDS

        if self.reward not in REWARDS:
            raise InputError(f'rl train: "reward" must be one of {", ".join(REWARDS)}, got {self.reward!r}')

    @property
    def per_update(self) -> int:
        return self.batch * self.rollouts

    @property
    def updates(self) -> int:
        return -(-self.episodes // self.per_update)


@dataclass(frozen=True)
class TrainProgress:
    update: int  # updates done
    updates: int
    episodes: int  # episodes done
    mean_return: float  # of the last batch
    mean_jct: float  # of the last batch (sampled actions)
    validation_jct: float | None  # of the last validation (greedy)
    best_jct: float | None
    elapsed_s: float
    eta_s: float | None


# -- episodes (run in worker processes) ---------------------------------------------------
_ENVS: dict[tuple, object] = {}


def _env(scenario: str, config: dict):
    # gymnasium (the rl extra): loaded when training starts
    from simsched.learning.rl_env import SchedulingEnv

    key = (scenario, config["top_k"], config["order"], config["reward"], config["jobs"])
    env = _ENVS.get(key)
    if env is None:
        env = _ENVS[key] = SchedulingEnv(scenario, top_k=config["top_k"], order=config["order"],
                                         reward=config["reward"], jobs=config["jobs"])
    return env


def run_episode(scenario: str, config: dict, instance_seed: int, sample_key: tuple[int, int] | None,
                parameters: np.ndarray, shape: dict) -> dict:
    """One episode; ``sample_key`` None = greedy (no trajectory kept), else the action-draw seed."""
    env = _env(scenario, config)
    agent = LinearAgent.initial(ObsConfig(top_k=config["top_k"], order=config["order"]), FleetShape.from_dict(shape))
    agent.set_parameters(parameters)
    rng = None if sample_key is None else np.random.default_rng(np.random.SeedSequence(list(sample_key)))
    obs, info = env.reset(seed=instance_seed)
    k = config["top_k"]
    row = agent.theta.size
    rows, globals_, masks, actions, rewards = [], [], [], [], []
    done = False
    while not done:
        cand_rows = obs[:k * row].reshape(k, row)
        cand_globals = obs[k * row:]
        mask = info["action_mask"]
        if rng is None:
            action = agent.greedy(cand_rows, mask)
        else:
            action = agent.sample(cand_rows, mask, rng)
            rows.append(cand_rows)
            globals_.append(cand_globals)
            masks.append(mask)
            actions.append(action)
        obs, reward, done, _, info = env.step(action)
        rewards.append(reward)
    summary = env.result().summary
    out = {"avg_jct": summary["avg_jct"], "weighted_jct": summary["weighted_jct"],
           "return": float(np.sum(rewards))}
    if rng is not None:
        out.update(rows=np.array(rows), globals=np.array(globals_), masks=np.array(masks),
                   actions=np.array(actions), rewards=np.array(rewards))
    return out


# -- learning -------------------------------------------------------------------------------
def policy_gradient(agent: LinearAgent, episodes: list[dict], groups: list[int]) -> np.ndarray:
    """The REINFORCE gradient of a batch; ``groups[e]`` is episode e's instance (shared baseline)."""
    returns = np.array([e["return"] for e in episodes])
    group = np.array(groups)
    advantage = returns.copy()
    for g in set(groups):
        advantage[group == g] -= returns[group == g].mean()
    std = advantage.std()
    if std > 0:
        advantage /= std
    grad = np.zeros(agent.parameters().size)
    steps = 0
    for e, episode in zip(advantage, episodes):
        for rows, mask, action in zip(episode["rows"], episode["masks"], episode["actions"]):
            steps += 1
            if e != 0 and mask[:-1].sum() > 1:  # one fitting candidate: nothing to learn
                grad += e * agent.grad_log_prob(rows, mask, int(action))
    return grad / max(1, steps)


class Adam:
    def __init__(self, size: int, learning_rate: float) -> None:
        self.learning_rate = learning_rate
        self.m = np.zeros(size)
        self.v = np.zeros(size)
        self.t = 0

    def ascend(self, params: np.ndarray, grad: np.ndarray, beta1: float = 0.9, beta2: float = 0.999) -> np.ndarray:
        self.t += 1
        self.m = beta1 * self.m + (1 - beta1) * grad
        self.v = beta2 * self.v + (1 - beta2) * grad * grad
        m_hat = self.m / (1 - beta1 ** self.t)
        v_hat = self.v / (1 - beta2 ** self.t)
        return params + self.learning_rate * m_hat / (np.sqrt(v_hat) + 1e-8)


def checkpoint_path(out: Path) -> Path:
    return out.with_name(out.name + ".ckpt.npz")


def _read_checkpoint(ckpt: Path, key: str, size: int, updates: int) -> dict:
    """A training checkpoint, checked by content: numeric finite arrays of the agent's size, counters
    in range, a history of tables. A damaged, foreign or binary file is an :class:`InputError`."""
    def bad(why: str) -> InputError:
        return InputError(f"{ckpt}: not a usable rl train checkpoint: {why}; delete it to start afresh")

    if not ckpt.is_file():  # a FIFO or device (/dev/zero) would be read forever
        raise bad("not a regular file (a folder, device or pipe)")
    try:
        with np.load(ckpt, allow_pickle=False) as data:
            fields = {name: data[name] for name in ("key", "params", "m", "v", "t", "update", "best",
                                                    "best_jct", "history")}
    except KeyError as exc:
        raise bad(f"field {exc} is missing") from None
    except Exception as exc:  # noqa: BLE001 - object arrays, a damaged zip, not an npz at all
        raise bad(f"{type(exc).__name__}: {exc}") from None
    if str(fields["key"]) != key:
        raise InputError(f"{ckpt}: the checkpoint is from other settings; "
                         "start afresh without --resume or use the same flags")
    out: dict = {}
    for name in ("params", "m", "v", "best"):
        array = fields[name]
        if array.dtype.kind not in "fiu" or array.shape != (size,):
            raise bad(f"{name} must be {size} numbers, got {array.dtype} of shape {array.shape}")
        if not np.isfinite(array).all():
            raise bad(f"{name} holds NaN or infinite values")
        out[name] = array.astype(float)
    for name, high in (("t", 10**12), ("update", updates)):
        value = fields[name]
        if value.dtype.kind not in "iu" or value.shape != () or not 0 <= int(value) <= high:
            raise bad(f"{name} must be an integer from 0 to {high}, got {value!r:.40}")
        out[name] = int(value)
    best_jct = fields["best_jct"]
    if best_jct.dtype.kind != "f" or best_jct.shape != () or np.isinf(best_jct):
        raise bad(f"best_jct must be a number or NaN, got {best_jct!r:.40}")
    out["best_jct"] = None if np.isnan(best_jct) else float(best_jct)
    try:
        history = json.loads(str(fields["history"]))
    except json.JSONDecodeError as exc:
        raise bad(f"history is not JSON ({exc.msg})") from None
    if not isinstance(history, list) or not all(isinstance(row, dict) for row in history):
        raise bad("history must be a list of tables")
    out["history"] = history
    return out


def _config_key(scenario: Path, config: TrainConfig) -> str:
    return json.dumps({"scenario": str(scenario.resolve()), **asdict(config)}, sort_keys=True)


def _save_checkpoint(path: Path, key: str, agent: LinearAgent, adam: Adam, update: int, best: np.ndarray,
                     best_jct: float | None, history: list[dict]) -> None:
    with atomic.replacing(path) as tmp, open(tmp, "wb") as fh:  # a fresh name, never a planted link
        np.savez(fh, params=agent.parameters(), m=adam.m, v=adam.v, t=np.array(adam.t), update=np.array(update),
                 best=best, best_jct=np.array(np.nan if best_jct is None else best_jct),
                 key=np.array(key), history=np.array(json.dumps(history)))


def train(scenario: str | Path, config: TrainConfig, *, out: str | Path, workers: int = 1,
          resume: bool = False, progress: Callable[[TrainProgress], None] | None = None) -> LinearAgent:
    """Train an agent on ``scenario`` and write the best one to ``out`` (see the module docstring)."""
    config.check()
    scenario = Path(scenario)
    loaded = load_scenario(scenario)
    out = Path(out)
    # gymnasium (the rl extra): loaded when training starts
    from simsched.learning.rl_env import SchedulingEnv

    probe = SchedulingEnv(loaded, top_k=config.top_k, order=config.order, reward=config.reward, jobs=config.jobs)
    obs_config = probe.config
    agent = LinearAgent.initial(obs_config, probe.shape)
    adam = Adam(agent.parameters().size, config.learning_rate)
    key = _config_key(scenario, config)
    ckpt = checkpoint_path(out)
    update = 0
    best = agent.parameters()
    best_jct: float | None = None
    history: list[dict] = []
    if resume and ckpt.exists():  # an irregular file is refused in _read_checkpoint, not skipped
        note_read(ckpt, "checkpoint")
        saved = _read_checkpoint(ckpt, key, agent.parameters().size, config.updates)
        agent.set_parameters(saved["params"])
        adam.m, adam.v, adam.t = saved["m"], saved["v"], saved["t"]
        update, best, best_jct, history = saved["update"], saved["best"], saved["best_jct"], saved["history"]
    env_config = {"top_k": config.top_k, "order": config.order, "reward": config.reward, "jobs": config.jobs}
    shape = probe.shape.as_dict()
    path = str(scenario)
    started = time.perf_counter()
    done_at_start = update
    last_validation = history[-1].get("validation_jct") if history else None

    def validate(runner: TaskRunner, params: np.ndarray) -> float:
        tasks = [(path, env_config, loaded.seed + VALIDATION_SEED_OFFSET + i, None, params, shape)
                 for i in range(config.validation)]
        return float(np.mean([r["avg_jct"] for r in runner.map(run_episode, tasks)]))

    with TaskRunner("local", workers) as runner:
        if best_jct is None:
            best_jct = validate(runner, best)
            last_validation = best_jct
            history.append({"update": 0, "validation_jct": best_jct})
        while update < config.updates:
            first = update * config.per_update
            count = min(config.per_update, config.episodes - first)
            params = agent.parameters()
            instances = [loaded.seed + TRAIN_SEED_OFFSET + update * config.batch + i // config.rollouts
                         for i in range(count)]
            tasks = [(path, env_config, instances[i], (config.seed, first + i), params, shape) for i in range(count)]
            episodes = runner.map(run_episode, tasks)
            grad = policy_gradient(agent, episodes, instances)
            agent.set_parameters(adam.ascend(params, grad))
            update += 1
            entry = {"update": update, "mean_return": float(np.mean([e["return"] for e in episodes])),
                     "mean_jct": float(np.mean([e["avg_jct"] for e in episodes]))}
            if update % config.eval_every == 0 or update == config.updates:
                last_validation = entry["validation_jct"] = validate(runner, agent.parameters())
                if last_validation < best_jct:
                    best_jct, best = last_validation, agent.parameters()
            history.append(entry)
            _save_checkpoint(ckpt, key, agent, adam, update, best, best_jct, history)
            if progress is not None:
                elapsed = time.perf_counter() - started
                rate = elapsed / (update - done_at_start)
                progress(TrainProgress(update, config.updates, min(config.episodes, update * config.per_update),
                                       entry["mean_return"], entry["mean_jct"], last_validation, best_jct,
                                       elapsed, rate * (config.updates - update)))
    result = LinearAgent.initial(obs_config, probe.shape)
    result.set_parameters(best)
    result.meta = {"scenario": loaded.name, "scenario_file": str(scenario), "scenario_sha256": loaded.digest,
                   "algorithm": "REINFORCE with a shared per-instance baseline, Adam", "config": asdict(config),
                   "validation_jct": best_jct, "history": history,
                   "train_seeds": [loaded.seed + TRAIN_SEED_OFFSET,
                                   loaded.seed + TRAIN_SEED_OFFSET + config.updates * config.batch - 1],
                   "validation_seeds": [loaded.seed + VALIDATION_SEED_OFFSET,
                                        loaded.seed + VALIDATION_SEED_OFFSET + config.validation - 1],
                   "wall_time_s": time.perf_counter() - started}
    result.save(out)
    return result
