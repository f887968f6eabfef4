"""The policy interface (SPEC §3-§4, STYLE rule 2).

A scheduler is anything with ``decide(view) -> Decision``. The engine calls it
once per decision point with a read-only :class:`SchedulerView` and applies
the returned :class:`Decision` after validating it. Built-ins, EVO-GP and a
student's ``my_policy.py:MyPolicy`` all meet this one method.

Optionally a scheduler may define ``interval_s`` (float: ask for periodic
decision rounds) and ``bind(fleet_view)`` (called once before the run).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Option:
    """One way a job can run: a cluster and GPU type, the milli-GPUs per worker there,
    and the speed factor (run time = remaining work / speed). The speed is this job's: the
    type's speedup over its reference type's, or its ``model``'s measured speeds (issue 38)."""

    cluster: int
    gpu_type: str
    per_worker: int
    speed: float


@dataclass(frozen=True, slots=True)
class Start:
    """Start ``job_id`` with one node index per worker (all nodes of one GPU type)."""

    job_id: str
    nodes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Decision:
    """What a policy asks for: preemptions first, then starts, applied in order.

    A job both preempted and started in one decision is migrated (its progress
    is kept and its remaining work rescaled to the new GPU type).
    """

    starts: tuple[Start, ...] = ()
    preempts: tuple[str, ...] = ()


EMPTY_DECISION = Decision()


class JobView(Protocol):
    """What a policy may read about a job (the engine's record; never write to it)."""

    job_id: str
    index: int  # input order
    submit: float
    duration: float  # on the reference GPU type
    gpus: float
    workers: int
    weight: int
    deadline: float | None
    home_cluster: int | None  # index into view.fleet.clusters
    options: tuple[Option, ...]  # where it may run, fastest type first
    remaining_work: float  # reference-type seconds still to run
    attained_service: float  # GPU-seconds received so far (LAS)
    queued_since: float  # when it last entered the queue
    queue_seq: int  # grows by one each time any job enters the queue (newest = largest)
    wait_so_far: float  # queue time accumulated before the current queue spell
    running_nodes: tuple[int, ...]  # nodes while running, () when queued
    running_cluster: int | None
    run_start: float  # when the current run started (running jobs)
    run_speed: float  # speed factor of the current run
    run_share: int  # milli-GPUs per worker in the current run
    run_penalty: float  # restart penalty paid at the start of the current run
    preemptions: int
    tenant: str | None  # the VC, user or group it belongs to (None: none)


class TenantView(Protocol):
    """``view.tenants`` when the scenario gives tenants quotas (None otherwise): quotas and usage
    in GPUs held (after SPEC §2's memory scaling). A tenant without its own quota in a cluster
    with quotas shares the pool of unlisted tenants there (simsched.core.tenancy)."""

    mode: str  # "strict" | "borrow" (scheduler.quota)

    def limited(self, cluster: int) -> bool: ...

    def tenant_names(self, cluster: int | None = None) -> tuple[str, ...]: ...

    def quota(self, tenant: str | None, cluster: int, gpu_type: str | None = None) -> float | None: ...

    def usage(self, tenant: str | None, cluster: int | None = None, gpu_type: str | None = None) -> float: ...


class FleetView(Protocol):
    """Static facts about the fleet: nodes and clusters."""

    node_cluster: Sequence[int]  # cluster index per node
    node_type: Sequence[str]  # GPU type per node
    node_capacity: Sequence[int]  # milli-GPUs per node
    cluster_names: Sequence[str]
    # nodes of each (cluster, gpu_type), in index order
    groups: dict[tuple[int, str], tuple[int, ...]]
    heterogeneous: bool


class SchedulerView(Protocol):
    """The read-only state a policy decides on."""

    now: float
    fleet: FleetView
    queue: Sequence[JobView]  # queued jobs in arrival order (re-queued jobs at the end)
    running: Sequence[JobView]
    free: Sequence[int]  # free milli-GPUs per node

    queue_length: int
    tenants: TenantView | None  # tenants' quotas and usage (None when the scenario has no quotas)

    def queued_after(self, seq: int) -> list[JobView]:
        """Jobs that entered the queue after ``queue_seq`` ``seq``, newest first (for incremental policies)."""
        ...

    def queued_time(self, job: JobView) -> float:
        """Total time ``job`` has waited so far, preemptions included."""
        ...

    def remaining_time(self, job: JobView, speed: float = 1.0) -> float:
        """Seconds ``job`` still needs at the given speed factor (1.0 = reference type)."""
        ...


@runtime_checkable
class Scheduler(Protocol):
    """The one method every scheduler implements."""

    def decide(self, view: SchedulerView) -> Decision: ...
