"""Read-only views for policies that are not simsched's own (STYLE rule 2: only the engine
mutates state; a policy changes nothing but through the Decision it returns).

The engine hands its own job records to ``decide`` (no copies: built-in policies walk
queues of thousands of jobs at every decision). A student's ``my_policy.py:MyPolicy``
or an object passed to ``simsched.run(scheduler=...)`` is wrapped in
:class:`ReadOnlyPolicy` instead: it sees :class:`ReadOnlyJob` proxies whose attributes
read through to the record and whose writes raise ``AttributeError`` naming the
attribute. Lists come back as tuples and the fleet's ``groups`` as a read-only
mapping, so nothing reachable from the view can be changed in place. The cost (one
proxy per job, made once; a Python call per attribute read) falls only on wrapped
policies.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from simsched.core.contract import Decision

#: engine internals a policy has no business with (SimPy process and wake-up event)
HIDDEN = frozenset({"process", "wakeup"})


class ReadOnlyJob:
    """A job as a policy sees it: every ``JobView`` attribute, none writable."""

    __slots__ = ("_job",)

    def __init__(self, job: Any) -> None:
        object.__setattr__(self, "_job", job)

    def __getattr__(self, name: str) -> Any:
        if name in HIDDEN:
            raise AttributeError(f"job {self._job.job_id!r}: {name!r} is engine state, not part of the policy view")
        value = getattr(self._job, name)
        return tuple(value) if isinstance(value, list) else value

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"job {self._job.job_id!r}: {name!r} is read-only; a policy changes nothing "
                             "but through the Decision it returns")

    def __delattr__(self, name: str) -> None:
        self.__setattr__(name, None)

    def __repr__(self) -> str:
        return f"ReadOnlyJob({self._job.job_id!r})"


def _record(job: Any) -> Any:
    return job._job if isinstance(job, ReadOnlyJob) else job


class ReadOnlyTenants:
    """``view.tenants`` for a policy that is not simsched's own: the reading methods only."""

    __slots__ = ("_tenancy",)

    def __init__(self, tenancy: Any) -> None:
        object.__setattr__(self, "_tenancy", tenancy)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"view.tenants.{name} is read-only")

    @property
    def mode(self) -> str:
        return self._tenancy.mode

    @property
    def reclaim(self) -> str:
        return self._tenancy.reclaim

    def limited(self, cluster: int) -> bool:
        return self._tenancy.limited(cluster)

    def tenant_names(self, cluster: int | None = None) -> tuple[str, ...]:
        return self._tenancy.tenant_names(cluster)

    def quota(self, tenant: str | None, cluster: int, gpu_type: str | None = None) -> float | None:
        return self._tenancy.quota(tenant, cluster, gpu_type)

    def usage(self, tenant: str | None, cluster: int | None = None, gpu_type: str | None = None) -> float:
        return self._tenancy.usage(tenant, cluster, gpu_type)


class ReadOnlyView:
    """The engine's view with every job behind a :class:`ReadOnlyJob` (implements ``SchedulerView``)."""

    __slots__ = ("_view", "_proxy", "_fleet")

    def __init__(self, view: Any, proxy, fleet: Any) -> None:
        object.__setattr__(self, "_view", view)
        object.__setattr__(self, "_proxy", proxy)
        object.__setattr__(self, "_fleet", fleet)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"view.{name} is read-only; a policy changes nothing but through the Decision "
                             "it returns")

    @property
    def now(self) -> float:
        return self._view.now

    @property
    def fleet(self) -> Any:
        return self._fleet

    @property
    def free(self) -> Sequence[int]:
        return tuple(self._view.free)

    @property
    def queue(self) -> tuple[ReadOnlyJob, ...]:
        proxy = self._proxy
        return tuple(proxy(job) for job in self._view.queue)

    @property
    def running(self) -> tuple[ReadOnlyJob, ...]:
        proxy = self._proxy
        return tuple(proxy(job) for job in self._view.running)

    @property
    def queue_length(self) -> int:
        return self._view.queue_length

    def queued_after(self, seq: int) -> list[ReadOnlyJob]:
        return [self._proxy(job) for job in self._view.queued_after(seq)]

    @property
    def tenants(self) -> ReadOnlyTenants | None:
        tenancy = getattr(self._view, "tenants", None)
        return None if tenancy is None else ReadOnlyTenants(tenancy)

    def queued_time(self, job: Any) -> float:
        return self._view.queued_time(_record(job))

    def remaining_time(self, job: Any, speed: float = 1.0) -> float:
        return self._view.remaining_time(_record(job), speed)


class ReadOnlyPolicy:
    """Wraps a policy so that it decides on a :class:`ReadOnlyView`; other attributes
    (``interval_s``, ``name``, ...) read through to the wrapped policy."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self._proxies: dict[str, ReadOnlyJob] = {}
        self._fleet: Any = None

    def __getattr__(self, name: str) -> Any:
        if name == "policy":  # not set yet (during unpickling): no recursion
            raise AttributeError(name)
        return getattr(self.policy, name)

    def _proxy(self, job: Any) -> ReadOnlyJob:
        proxy = self._proxies.get(job.job_id)
        if proxy is None:
            proxy = self._proxies[job.job_id] = ReadOnlyJob(job)
        return proxy

    def decide(self, view: Any) -> Decision:
        if self._fleet is None:
            fleet = view.fleet
            try:
                self._fleet = replace(fleet, groups=MappingProxyType(dict(fleet.groups)))
            except TypeError:  # not a dataclass: hand it on as it is
                self._fleet = fleet
        return self.policy.decide(ReadOnlyView(view, self._proxy, self._fleet))

