"""``policy = "rl"``: a trained agent run greedily like any other scheduler (numpy only).

At each decision the policy builds the same candidates and observation the
environment would (:class:`simsched.rl.features.Observer`), takes the agent's
highest-scoring action, places a chosen job by the scenario's allocation and
placement rule, and repeats until the agent waits or nothing more fits. It
returns all those starts as one decision, which the engine applies in order:
the same run as an environment episode whose agent acts greedily (tested).
"""

from __future__ import annotations

from pathlib import Path

from simsched.core.contract import Decision, SchedulerView, Start
from simsched.core.errors import InputError
from simsched.policies.registry import Request, register
from simsched.rl.agent import LinearAgent
from simsched.rl.features import FleetShape, Observer, action_mask
from simsched.rl.placing import Placer, check_allocation


class RLPolicy:
    """Greedy decisions of a :class:`LinearAgent` (see the module docstring)."""

    def __init__(self, agent: LinearAgent, allocation: str, placement: str, rng, *, source: str = "agent") -> None:
        self.agent = agent
        self._allocation = allocation
        self._placement = placement
        self._rng = rng
        self._source = source
        self._observer: Observer | None = None
        self._placer: Placer | None = None

    def _bind(self, view: SchedulerView) -> None:
        shape = FleetShape.of(view.fleet)
        if shape != self.agent.shape:
            raise InputError(f"{self._source}: the agent was trained for GPU types {list(self.agent.shape.gpu_types)} "
                             f"and node groups {list(self.agent.shape.groups)} ({self.agent.shape.total_gpus} GPUs); "
                             f"this fleet has {list(shape.gpu_types)}, {list(shape.groups)} ({shape.total_gpus} GPUs)")
        self._placer = Placer(self._allocation, self._placement, self._rng, view.fleet.groups)
        self._observer = Observer(self.agent.config, shape, view.fleet.groups, self._placer.cluster_for)

    def decide(self, view: SchedulerView) -> Decision:
        if self._observer is None:
            self._bind(view)
        observer, agent, placer = self._observer, self.agent, self._placer
        top_k = agent.config.top_k
        free = list(view.free)
        capacity = view.fleet.node_capacity
        queue = view.queue
        running = len(view.running)
        taken: set[str] = set()
        starts: list[Start] = []
        while len(taken) < len(queue):
            pending = (job for job in queue if job.job_id not in taken) if taken else queue
            candidates = observer.candidates(pending, view, free, running, len(queue) - len(taken), capacity)
            if not candidates.any_fits:
                break
            mask = action_mask(candidates, top_k, running)
            action = agent.greedy(candidates.rows, mask)
            if action == top_k:
                break  # the agent waits (the built-in one never does while a job fits)
            job = candidates.jobs[action]
            starts.append(Start(job.job_id, placer.place(job, candidates.clusters[action], free)))
            taken.add(job.job_id)
            running += 1
        return Decision(tuple(starts))


def build_rl_policy(options, base_dir: Path, rng, allocation: str, placement: str, file: str) -> RLPolicy:
    """The ``[scheduler]`` table's ``agent = "file.npz"`` (relative to the scenario) as a policy."""
    raw = options.get("agent", str, None)
    if raw is None:
        raise options.error("agent", "policy 'rl' needs agent = \"file.npz\" "
                            "(train one with `python -m simsched rl train SCENARIO --out file.npz`)")
    path = Path(raw) if Path(raw).is_absolute() else base_dir / raw
    check_allocation(allocation, file)
    try:
        agent = LinearAgent.load(path)
    except InputError as exc:
        raise options.error("agent", str(exc)) from None
    return RLPolicy(agent, allocation, placement, rng, source=f"{file}: scheduler.agent ({path.name})")


@register("rl", event_only=True, preemptive_option=False)
def build_rl(request: Request) -> RLPolicy:
    """``policy = "rl"``: the agent of ``agent = "file.npz"``, greedily."""
    spec = request.spec
    return build_rl_policy(request.options, request.base_dir, request.rng_for("allocation"), spec.allocation,
                           spec.placement, request.file)
