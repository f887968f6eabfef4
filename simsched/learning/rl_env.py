"""``SchedulingEnv``: a Gymnasium environment over the real engine (docs/rl.md).

There is no second simulator. The environment builds the scenario's
:class:`simsched.core.engine.Engine` with a stand-in scheduler, :class:`DecisionPoint`,
whose ``decide`` returns nothing and only notes that the engine asked. The
environment steps SimPy one event at a time (``env.step()``) until the engine
asks for a decision, then hands that decision point to the agent. A chosen
candidate goes to the engine as a one-start :class:`Decision` through
``Engine.apply``, which validates it exactly as it validates any policy's
decision; several starts at one time are several steps, each applied at
once, in the order chosen, as a policy returning them together would have
them applied. "Wait" resumes the simulation until the next decision point.
So events keep the engine's order and only the engine changes state.

Decision points where no candidate fits now are passed over (the agent would
have no choice but to wait). The episode ends when no event is left, that is
when every job has finished or was unscheduled at arrival.
"""

from __future__ import annotations

import time
from pathlib import Path

import gymnasium as gym
import numpy as np
from simpy.core import EmptySchedule

from simsched.config.scenario import Scenario, load_scenario
from simsched.core.contract import EMPTY_DECISION, Decision, Start
from simsched.core.engine import QUEUED, RUNNING, UNSCHEDULED, View
from simsched.core.errors import DecisionError, InputError
from simsched.core.model import MILLI
from simsched.core.seeding import stream
from simsched.rl.features import Candidates, FleetShape, ObsConfig, Observer, action_mask
from simsched.rl.placing import Placer, check_allocation
from simsched.runs.single import RunResult, Simulation, collect, simulation

REWARDS = ("weighted_flow", "objective")

#: the weighted_flow reward is in weight x hours
FLOW_UNIT_S = 3600.0


class DecisionPoint:
    """The stand-in scheduler: the engine calls it at each decision point; it starts nothing."""

    def __init__(self, restrict_to_home: bool) -> None:
        self.restrict_to_home = restrict_to_home
        self.asked = False

    def decide(self, view) -> Decision:
        self.asked = True
        return EMPTY_DECISION


class SchedulingEnv(gym.Env):
    """Pick which queued job starts next, or wait (docs/rl.md has the full contract).

    ``scenario``: a :class:`Scenario` or a TOML path; its fleet, workload, placement,
    allocation (``home``, ``round_robin`` or ``random``) and heterogeneity are used, its
    policy is not. ``seed``: the workload instance of the first episode (default: the
    scenario's seed); each later ``reset()`` without a seed takes the next seed, and
    ``reset(seed=s)`` runs instance ``s``. ``top_k``: candidates per decision point.
    ``reward``: ``weighted_flow`` or ``objective``. ``order``: the candidate order.
    ``jobs``: keep only the first N jobs of each instance. ``invalid_action``: what a
    masked action does: ``"wait"`` (default; waits, or starts the first candidate that
    fits when waiting is masked, and sets ``info["invalid_action"]``) or ``"raise"``.
    """

    metadata = {"render_modes": []}

    def __init__(self, scenario: Scenario | str | Path, *, seed: int | None = None, top_k: int = 16,
                 reward: str = "weighted_flow", order: str = "fifo", jobs: int | None = None,
                 invalid_action: str = "wait") -> None:
        super().__init__()
        if reward not in REWARDS:
            raise InputError(f'SchedulingEnv: "reward" must be one of {", ".join(REWARDS)}, got {reward!r}')
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise InputError(f'SchedulingEnv: "seed" must be an integer >= 0, got {seed!r}')
        if invalid_action not in ("wait", "raise"):
            raise InputError(f'SchedulingEnv: "invalid_action" must be "wait" or "raise", got {invalid_action!r}')
        self.invalid_action = invalid_action
        self.scenario = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
        self.config = ObsConfig(top_k=top_k, order=order)
        self.reward_kind = reward
        self.jobs_limit = jobs
        self._next_seed = self.scenario.seed if seed is None else seed
        check_allocation(self.scenario.scheduler.allocation, str(self.scenario.path))
        probe = self._build(self._next_seed)
        self.shape = FleetShape.of(probe.engine.fleet_state)
        size = Observer(self.config, self.shape, probe.engine.fleet_state.groups, lambda job, view: 0).size
        self.observation_space = gym.spaces.Box(-1.0, 1.0, shape=(size,), dtype=np.float32)
        self.action_space = gym.spaces.Discrete(top_k + 1)
        self.wait_action = top_k
        self.instance_seed: int | None = None
        self._sim: Simulation | None = None
        self._done = True

    # -- building ---------------------------------------------------------------
    def _build(self, seed: int) -> Simulation:
        spec = self.scenario.scheduler
        self._point = DecisionPoint(restrict_to_home=spec.allocation == "home")
        return simulation(self.scenario, seed=seed, jobs=self.jobs_limit, scheduler=self._point)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        instance = self._next_seed if seed is None else int(seed)
        self._next_seed = instance + 1
        self.instance_seed = instance
        self._sim = self._build(instance)
        engine = self._sim.engine
        spec = self.scenario.scheduler
        self._placer = Placer(spec.allocation, spec.placement, stream(instance, "allocation"),
                              engine.fleet_state.groups)
        self._observer = Observer(self.config, self.shape, engine.fleet_state.groups, self._placer.cluster_for)
        if FleetShape.of(engine.fleet_state) != self.shape:  # pragma: no cover - one scenario, one fleet
            raise InputError("SchedulingEnv: the fleet changed between instances")
        self._event_cursor = 0
        self._in_system_weight = 0.0
        self._flow_clock = engine.env.now
        self._arrived: list = []
        self._objective_before = 0.0
        self._first_submit = min((job.submit for job in engine.jobs), default=0.0)
        self._done = False
        self._started = time.perf_counter()
        self._advance()
        self._settle_reward()
        return self._observation(), self._info()

    # -- stepping ---------------------------------------------------------------
    def step(self, action):
        if self._done or self._sim is None:
            raise DecisionError("SchedulingEnv.step: the episode is over; call reset()")
        action = int(action)
        mask = self._mask
        invalid = not 0 <= action < len(mask) or not mask[action]
        if invalid:
            if self.invalid_action == "raise":
                raise DecisionError(f"SchedulingEnv.step: action {action} is not allowed now; "
                                    f"allowed: {np.flatnonzero(mask).tolist()} (info['action_mask'])")
            action = self.wait_action if mask[self.wait_action] else int(np.flatnonzero(mask)[0])
        if action == self.wait_action:
            self._advance()
        else:
            engine = self._sim.engine
            job = self._candidates.jobs[action]
            nodes = self._placer.place(job, self._candidates.clusters[action], list(engine.free))
            engine.apply(Decision((Start(job.job_id, nodes),)))  # the engine validates and starts it
            if not self._refresh():
                self._advance()
        reward = self._settle_reward()
        info = self._info()
        info["invalid_action"] = invalid
        return self._observation(), reward, self._done, False, info

    def _view(self) -> View:
        engine = self._sim.engine
        return View(engine.env.now, engine.fleet_state, engine.queue, engine.running, engine.free)

    def _refresh(self) -> bool:
        """Candidates and mask of the current state; False (and nothing kept) when no candidate fits."""
        engine = self._sim.engine
        view = self._view()
        selection = self._observer.select(engine.queue.values(), view, engine.free)
        if not any(selection[1]):
            return False
        self._candidates = self._observer.observe(selection, view, engine.free, len(engine.running),
                                                  len(engine.queue), engine.fleet_state.node_capacity)
        self._mask = action_mask(self._candidates, self.config.top_k, len(engine.running))
        return True

    def _advance(self) -> None:
        """Run the engine to the next decision point where some candidate fits, or to the end."""
        engine = self._sim.engine
        step = engine.env.step
        point = self._point
        while True:
            point.asked = False
            try:
                while not point.asked:
                    step()
            except EmptySchedule:
                # as Engine.run ends: anything left queued is reported unscheduled (never, with the mask)
                engine._close_unfinished()
                self._done = True
                self._candidates = Candidates([], [], [], np.zeros((self.config.top_k, self._observer.row_size),
                                              np.float32), np.zeros(self._observer.global_size, np.float32))
                self._mask = np.zeros(self.config.top_k + 1, dtype=np.int8)
                self._mask[self.wait_action] = 1
                return
            if engine.queue and self._refresh():
                return

    # -- rewards ----------------------------------------------------------------
    def _settle_reward(self) -> float:
        """Take the engine's new events into the reward trackers; the reward since the last step."""
        engine = self._sim.engine
        events = engine.events
        flow = 0.0
        weight = self._in_system_weight
        clock = self._flow_clock
        by_id = engine.by_id
        for i in range(self._event_cursor, len(events)):
            time, kind, job_id, _ = events[i]
            if kind == "arrive":
                flow += weight * (time - clock)
                clock = time
                job = by_id[job_id]
                weight += job.weight
                self._arrived.append(job)
            elif kind == "finish" or kind == "unscheduled":
                flow += weight * (time - clock)
                clock = time
                job = by_id[job_id]
                weight -= job.weight
        self._event_cursor = len(events)
        now = engine.env.now
        if not self._done:
            flow += weight * (now - clock)
            clock = now
        self._in_system_weight = weight
        self._flow_clock = clock
        if self.reward_kind == "weighted_flow":
            return -flow / FLOW_UNIT_S
        value = self._objective()
        reward = -(value - self._objective_before)
        self._objective_before = value
        return reward

    def _objective(self) -> float:
        """Eq. 5 of the run so far: the §7 summary's objective if the run ended now.

        C_q,avg and C_q,max over the jobs that have arrived (queued time so far),
        utilisation = GPU-seconds held so far / (fleet GPUs x (now - first submit)).
        At the end it equals ``summary["objective"]``, so an episode's rewards add up to
        minus the run's objective.
        """
        engine = self._sim.engine
        now = engine.env.now
        if self._done:
            now = max((job.end for job in engine.jobs if job.status == "done"), default=now)
        uq = []
        held = 0.0
        for job in self._arrived:
            if job.status == UNSCHEDULED:
                continue
            wait = job.wait_so_far + (now - job.queued_since if job.status == QUEUED else 0.0)
            uq.append(job.weight * wait)
            held += job.gpu_seconds
            if job.status == RUNNING:
                held += (now - job.run_start) * job.run_share * job.workers / MILLI
        w1, w2, w3 = self.scenario.objective_weights
        cq_avg = sum(uq) / len(uq) if uq else 0.0
        cq_max = max(uq) if uq else 0.0
        horizon = now - self._first_submit
        gpus = engine.fleet.total_gpus
        utilization = held / (gpus * horizon) if horizon > 0 and gpus > 0 else 1.0
        return w1 * cq_avg + w2 * cq_max + w3 * (1.0 - utilization)

    # -- outputs ----------------------------------------------------------------
    def _observation(self) -> np.ndarray:
        return self._candidates.observation()

    def _info(self) -> dict:
        engine = self._sim.engine
        return {"action_mask": self._mask.copy(), "time": float(engine.env.now),
                "queued": len(engine.queue), "running": len(engine.running),
                "instance_seed": self.instance_seed}

    def action_masks(self) -> np.ndarray:
        """The current mask as booleans (the method name sb3-contrib's ``MaskablePPO`` looks for)."""
        return self._mask.astype(bool)

    def result(self) -> RunResult:
        """The finished episode as a run: jobs, events and summary, as ``simsched.run`` gives them."""
        if self._sim is None:
            raise DecisionError("SchedulingEnv.result: no episode yet; call reset()")
        engine = self._sim.engine
        return collect(engine, self.scenario.with_overrides(seed=self.instance_seed), self._done,
                       self._sim.skipped, time.perf_counter() - self._started)
