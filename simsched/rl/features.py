"""What an RL agent sees and how its choice becomes a start (numpy only; docs/rl.md).

Both the Gymnasium environment (:mod:`simsched.learning.rl_env`) and the greedy ``rl``
policy (:mod:`simsched.rl.policy`) use :class:`Observer`, so an agent sees the
same candidates and numbers in training and at inference.

**Candidates.** The queue is walked in the candidate order (``fifo``: the order
jobs entered the queue, which is submit time then input order; or any other
ordering name of :data:`simsched.policies.ordering.ORDERINGS`). The first
``top_k`` jobs that fit now come first, in that order, then (filling the rest of
the ``top_k`` rows) jobs that do not fit now, in the same order. A job fits now
when the cluster the scenario's allocation gives it (with ``home``, a job
without a home cluster may use any cluster) has, for one of the job's GPU
types, enough free room for all its workers (every placement rule finds a spot
exactly then).

**Observation** (float32, every entry in [-1, 1]): ``top_k`` rows of
:data:`CANDIDATE_FEATURES` plus one speed column per fleet GPU type, then the
global features: the free fraction of each (cluster, GPU type) node group,
queue length and running-job count. Empty rows are all zeros.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from simsched.core.contract import JobView
from simsched.core.errors import InputError
from simsched.core.model import MILLI
from simsched.policies.ordering import ORDERINGS

#: per-candidate columns, before the per-GPU-type speed columns
CANDIDATE_FEATURES: tuple[str, ...] = (
    "present",  # 1 for a real candidate, 0 for an empty row
    "fits_now",  # 1 when it can start now
    "remaining",  # log1p(remaining s on its fastest type) / log1p(time_scale_s)
    "gpus",  # log2(1 + GPUs) / log2(1 + fleet GPUs)
    "wait",  # log1p(queued s) / log1p(time_scale_s)
    "response",  # wait / (wait + remaining): HRRN's ratio mapped to [0, 1)
    "weight",  # weight / weight_scale
    "slack",  # tanh((deadline - now - remaining) / (remaining + 1)); 1 without a deadline
)
#: global columns after the per-group free fractions
GLOBAL_TAIL: tuple[str, ...] = ("queue_length", "running")


@dataclass(frozen=True)
class ObsConfig:
    """Observation settings; an agent file stores them, so inference sees what training saw."""

    top_k: int = 16
    order: str = "fifo"
    time_scale_s: float = 1e6  # durations and waits are log-scaled against this
    weight_scale: float = 5.0  # the largest weight of the Philly/PAI field synthesis
    count_scale: float = 1e4  # queue length and running count are log-scaled against this

    def __post_init__(self) -> None:
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 1:
            raise InputError(f'"top_k" must be an integer >= 1, got {self.top_k!r}')
        if self.order not in ORDERINGS:
            raise InputError(f'"order" must be one of {", ".join(sorted(ORDERINGS))}, got {self.order!r}')
        for name in ("time_scale_s", "weight_scale", "count_scale"):
            if not getattr(self, name) > 1:
                raise InputError(f'"{name}" must be > 1, got {getattr(self, name)!r}')


@dataclass(frozen=True)
class FleetShape:
    """The fleet facts the observation layout depends on."""

    gpu_types: tuple[str, ...]  # one speed column each, in order of first appearance
    groups: tuple[tuple[int, str], ...]  # (cluster, GPU type) node groups, one free fraction each
    total_gpus: int

    @classmethod
    def of(cls, fleet) -> FleetShape:
        """From a :class:`simsched.core.contract.FleetView` (node groups in the engine's order)."""
        types = tuple(dict.fromkeys(fleet.node_type))
        return cls(types, tuple(fleet.groups), int(sum(fleet.node_capacity) // MILLI))

    def as_dict(self) -> dict:
        return {"gpu_types": list(self.gpu_types), "groups": [list(g) for g in self.groups],
                "total_gpus": self.total_gpus}

    @classmethod
    def from_dict(cls, raw: dict) -> FleetShape:
        return cls(tuple(raw["gpu_types"]), tuple((int(c), str(t)) for c, t in raw["groups"]),
                   int(raw["total_gpus"]))


@dataclass
class Candidates:
    """One decision point: up to ``top_k`` jobs, whether each fits now, and the observation."""

    jobs: list[JobView]
    fits: list[bool]
    clusters: list[int | None]  # the cluster each candidate is placed in (None: fleet-wide)
    rows: np.ndarray  # (top_k, candidate features + types) float32
    globals: np.ndarray  # (global features,) float32

    @property
    def any_fits(self) -> bool:
        return any(self.fits)

    def observation(self) -> np.ndarray:
        return np.concatenate([self.rows.ravel(), self.globals])


class Observer:
    """Builds :class:`Candidates` from the queue, free capacity and the allocation."""

    def __init__(self, config: ObsConfig, shape: FleetShape, groups: dict[tuple[int, str], tuple[int, ...]],
                 cluster_for: Callable[[JobView, object], int | None]) -> None:
        self.config = config
        self.shape = shape
        self._groups = groups
        self._capacity_of_group: list[int] | None = None
        self._cluster_for = cluster_for
        self._type_column = {t: i for i, t in enumerate(shape.gpu_types)}
        self.row_size = len(CANDIDATE_FEATURES) + len(shape.gpu_types)
        self.global_size = len(shape.groups) + len(GLOBAL_TAIL)
        self.size = config.top_k * self.row_size + self.global_size
        self._log_time = math.log1p(config.time_scale_s)
        self._log_gpus = math.log2(1 + max(1, shape.total_gpus))
        self._log_count = math.log1p(config.count_scale)
        # per job: (cluster, signature) and the row's fixed part; the supported allocations
        # decide a job's cluster once, and gpus, weight and speeds never change
        self._placement_of: dict[str, tuple[int | None, tuple]] = {}
        self._fixed_of: dict[str, tuple[float, float, list[float]]] = {}

    def fits(self, job: JobView, cluster: int | None, free: Sequence[int]) -> bool:
        """All workers fit in ``cluster`` (None: any cluster) on one of the job's GPU types
        (any placement rule finds room then)."""
        for option in job.options:
            if cluster is not None and option.cluster != cluster:
                continue
            per_worker = option.per_worker
            slots = 0
            for n in self._groups[option.cluster, option.gpu_type]:
                slots += free[n] // per_worker
            if slots >= job.workers:
                return True
        return False

    def ordered(self, queue: Iterable[JobView], view) -> Iterable[JobView]:
        """The queue in candidate order (``fifo``: queue order)."""
        if self.config.order == "fifo":
            return queue
        return ORDERINGS[self.config.order].sort(queue, view)

    def select(self, queue: Iterable[JobView], view, free: Sequence[int],
               ) -> tuple[list[JobView], list[bool], list[int | None]]:
        """Candidate jobs, whether each fits now, and their clusters (the walk stops at ``top_k``
        fitting jobs). ``view`` serves orderings and the allocation."""
        k = self.config.top_k
        fitting: list[tuple[JobView, int]] = []
        waiting: list[tuple[JobView, int]] = []
        verdict: dict[tuple, bool] = {}  # jobs with one signature fit or fail together
        cluster_for = self._cluster_for
        placement_of = self._placement_of
        for job in self.ordered(queue, view):
            known = placement_of.get(job.job_id)
            if known is None:
                cluster = cluster_for(job, view)
                # the engine shares one options tuple between jobs of one shape: id() is exact
                known = placement_of[job.job_id] = (cluster, (cluster, id(job.options), job.workers))
            cluster, signature = known
            fits = verdict.get(signature)
            if fits is None:
                fits = verdict[signature] = self.fits(job, cluster, free)
            if fits:
                fitting.append((job, cluster))
                if len(fitting) == k:
                    break
            elif len(waiting) < k:
                waiting.append((job, cluster))
        chosen = (fitting + waiting)[:k]
        return ([job for job, _ in chosen], [i < len(fitting) for i in range(len(chosen))],
                [cluster for _, cluster in chosen])

    def candidates(self, queue: Iterable[JobView], view, free: Sequence[int], running: int,
                   queue_length: int, capacity: Sequence[int]) -> Candidates:
        """The decision point's candidates and observation."""
        return self.observe(self.select(queue, view, free), view, free, running, queue_length, capacity)

    def observe(self, selection: tuple[list[JobView], list[bool], list[int | None]], view, free: Sequence[int],
                running: int, queue_length: int, capacity: Sequence[int]) -> Candidates:
        """:class:`Candidates` from a :meth:`select` result."""
        jobs, fit_flags, clusters = selection
        rows = np.zeros((self.config.top_k, self.row_size), dtype=np.float32)
        if jobs:
            rows[:len(jobs)] = [self._row(job, fit_flags[i], view) for i, job in enumerate(jobs)]
        return Candidates(jobs, fit_flags, clusters, rows, self._globals(free, capacity, running, queue_length))

    def _row(self, job: JobView, fits: bool, view) -> list[float]:
        fixed = self._fixed_of.get(job.job_id)
        if fixed is None:
            speeds = [0.0] * len(self.shape.gpu_types)
            for option in job.options:
                column = self._type_column.get(option.gpu_type)
                if column is not None:
                    speeds[column] = max(speeds[column], min(1.0, option.speed / 4.0))
            fixed = self._fixed_of[job.job_id] = (
                min(1.0, math.log2(1 + job.gpus) / self._log_gpus),
                min(1.0, job.weight / self.config.weight_scale), speeds)
        gpus, weight, speeds = fixed
        remaining = view.remaining_time(job, job.options[0].speed)  # on its fastest type
        wait = view.queued_time(job)
        if job.deadline is None:
            slack = 1.0
        else:
            slack = math.tanh((job.deadline - view.now - remaining) / (remaining + 1.0))
        return [
            1.0,
            1.0 if fits else 0.0,
            min(1.0, math.log1p(remaining) / self._log_time),
            gpus,
            min(1.0, math.log1p(wait) / self._log_time),
            wait / (wait + remaining) if wait + remaining > 0 else 0.0,
            weight,
            slack,
            *speeds,
        ]

    def _globals(self, free: Sequence[int], capacity: Sequence[int], running: int, queue_length: int) -> np.ndarray:
        if self._capacity_of_group is None:
            self._capacity_of_group = [sum(capacity[n] for n in self._groups[g]) for g in self.shape.groups]
        out = []
        for group, total in zip(self.shape.groups, self._capacity_of_group):
            out.append(sum(free[n] for n in self._groups[group]) / total if total else 0.0)
        out.append(min(1.0, math.log1p(queue_length) / self._log_count))
        out.append(min(1.0, math.log1p(running) / self._log_count))
        return np.array(out, dtype=np.float32)


def action_mask(candidates: Candidates, top_k: int, running: int) -> np.ndarray:
    """int8 mask of the ``top_k + 1`` actions: candidate i when it fits now; wait (last) while a job runs.

    Waiting with an idle fleet could strand the queue (nothing would wake the
    scheduler again), so it is masked then.
    """
    mask = np.zeros(top_k + 1, dtype=np.int8)
    for i, fits in enumerate(candidates.fits):
        mask[i] = 1 if fits else 0
    mask[top_k] = 1 if running > 0 else 0
    return mask
