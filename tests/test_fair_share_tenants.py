"""Fair share whatever the number of tenants (issue 35, item 4): with many tenants (one per job, as
PAI's per-user tenants) the fair-share policies read only the tenants a decision needs, and must
decide as their plain walks do, which read every tenant; the per-tenant entitlements equal the
all-at-once ones; maxmin-hetero's walk skips kinds of job that failed and must decide as trying
every job does."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.core.contract import SchedulerView
from simsched.core.engine import Engine, EngineConfig
from simsched.core.model import ClusterSpec, Fleet, JobSpec, NodeGroup, builtin_gpu_types
from simsched.policies import PLACEMENTS
from simsched.policies import drf as drf_module
from simsched.policies.allocation import ALLOCATIONS
from simsched.policies.drf import DrfScheduler
from simsched.policies.maxmin_hetero import MaxMinHeteroScheduler
from simsched.policies.quota import QuotaScheduler
from simsched.policies.shares import Entitled, entitlements
from simsched.runs.single import build_tenancy
from tests.test_quota_walk import FLEET, TENANTS, _fair_share_events, workload


def many_tenants(seed: int, count: int, share_own: float) -> list:
    """:func:`tests.test_quota_walk.workload`, with about ``share_own`` of the jobs each given a
    tenant of its own (unlisted in every cluster: they share the pools)."""
    rng = np.random.default_rng(seed + 1)
    return [dataclasses.replace(job, tenant=f"u{i}") if rng.random() < share_own else job
            for i, job in enumerate(workload(seed, count))]


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from(["drf", "ftf"]), st.booleans(),
       st.sampled_from([("none", "preempt"), ("strict", "preempt"), ("borrow", "preempt"), ("borrow", "wait")]),
       st.sampled_from([0.5, 1.0]), st.sampled_from([0, 4, drf_module._FEW_IDLE]))
def test_fair_share_with_a_tenant_per_job_equals_the_plain_walk(seed, name, backfill, quota, share_own, few):
    """drf reads the tenants holding no GPUs sorted when they are few (up to ``_FEW_IDLE``), else from
    per-shape lists it keeps while they are many: both (``few`` 0 and 4 force the lists) decide as the
    plain walk does."""
    mode, reclaim = quota
    jobs = many_tenants(seed, 70, share_own)
    kept = drf_module._FEW_IDLE
    drf_module._FEW_IDLE = few
    try:
        fast = _fair_share_events(name, jobs, backfill, mode, reclaim, True)
    finally:
        drf_module._FEW_IDLE = kept
    assert fast == _fair_share_events(name, jobs, backfill, mode, reclaim, False)


class _View:
    """The part of a view entitlements read: the engine's fleet state."""

    def __init__(self) -> None:
        policy = DrfScheduler(PLACEMENTS["best_fit"](), ALLOCATIONS["home"]())
        self.fleet = Engine(FLEET, workload(0, 1), policy, EngineConfig()).fleet_state


@settings(max_examples=60, deadline=None)
@given(st.sets(st.sampled_from([*TENANTS, "u1", "u2", "u3"]), min_size=1), st.booleans())
def test_entitled_one_tenant_at_a_time_equals_entitlements(active, quotas_on):
    view: SchedulerView = _View()
    quotas = build_tenancy(FLEET, "strict", "preempt") if quotas_on else None
    whole = entitlements(view, quotas, active)
    lazy = Entitled(view, quotas, len(active), lambda t: t in active)
    for tenant in sorted(active, key=lambda t: (t is None, str(t))):
        assert lazy[tenant] == whole[tenant]  # the same floats, not only close


def _maxmin_events(jobs, backfill: bool, mode: str, reclaim: str, remember: bool, policies: list | None = None,
                   fleet: Fleet = FLEET) -> list:
    policy = MaxMinHeteroScheduler(PLACEMENTS["best_fit"](), ALLOCATIONS["home"](), backfill, 300.0)
    policy.remember_failures = remember
    if mode == "none":  # weighted by the quotas all the same
        policy.bind_quotas(build_tenancy(fleet, "none", reclaim))
        scheduler = policy
    else:
        scheduler = QuotaScheduler(policy, mode, reclaim, PLACEMENTS["best_fit"]())
    engine = Engine(fleet, jobs, scheduler, EngineConfig(heterogeneous=True, restrict_to_home=True,
                                                         restart_penalty_s=30.0, interval_s=300.0),
                    None if mode == "none" else build_tenancy(fleet, mode, reclaim))
    engine.run()
    if policies is not None:
        policies.append(policy)
    return engine.events


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.booleans(),
       st.sampled_from([("none", "preempt"), ("strict", "preempt"), ("borrow", "preempt"), ("borrow", "wait")]),
       st.sampled_from([0.0, 0.5, 1.0]))
def test_maxmin_hetero_skipping_failed_kinds_equals_trying_every_job(seed, backfill, quota, share_own):
    """maxmin-hetero skips a kind of job that already failed (for the rest of a tenant's turn within
    allocations, where a preemption may make room; for the rest of the pass for leftovers) and ends
    a turn once each of the tenant's kinds failed; in a leftovers pass without admission a kind that
    failed fails for every tenant, and a tenant all of whose kinds cannot be placed on the free GPUs
    at the pass's start is not read; a tenant holding nothing whose allocation (or the bound on it,
    _room_bounds, before the allocation is solved) covers none of its jobs sits the within pass
    out: the same event log as trying every job of every tenant, with the allocation solved at
    every decision."""
    mode, reclaim = quota
    jobs = many_tenants(seed, 40, share_own)
    assert (_maxmin_events(jobs, backfill, mode, reclaim, True)
            == _maxmin_events(jobs, backfill, mode, reclaim, False))


#: one cluster of two GPU types, without quotas (tools/bench/tenant_count.py's fleet)
DEEP_FLEET = Fleet((ClusterSpec("c", (NodeGroup(2, 8, "V100"), NodeGroup(4, 2, "T4"))),), builtin_gpu_types())


def deep_queue(seed: int, count: int) -> list[JobSpec]:
    """Jobs of 1, 2, 4 or 8 GPUs, each its own tenant, arriving faster than 24 GPUs serve them."""
    rng = np.random.default_rng(seed)
    submit = np.floor(np.cumsum(rng.exponential(20.0, size=count)))
    return [JobSpec(f"j{i}", float(submit[i]), float(rng.integers(60, 3600)), float(rng.choice([1, 2, 4, 8])), 1, 1,
                    None, None, None, tenant=f"u{i}") for i in range(count)]


@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000), st.booleans())
def test_maxmin_hetero_with_a_deep_queue_of_tenants_equals_trying_every_job(seed, backfill):
    """As above, where the bound on the allocations rules out whole within passes (a deep queue of
    tenants per job): the same event log as solving the allocation at every decision."""
    jobs = deep_queue(seed, 80)
    assert (_maxmin_events(jobs, backfill, "none", "preempt", True, fleet=DEEP_FLEET)
            == _maxmin_events(jobs, backfill, "none", "preempt", False, fleet=DEEP_FLEET))


def test_maxmin_hetero_solves_only_the_allocations_its_walk_reads():
    """With a tenant per job and a deep queue, most decisions find no tenant with queued jobs that
    holds GPUs and a bound on every allocation (1/k of a class of k identical tenants' GPUs) below
    every queued job's GPUs: they solve no water-filling, and decide as solving one at every
    decision does."""
    jobs = deep_queue(5, 150)
    lazy: list = []
    reference: list = []
    assert _maxmin_events(jobs, True, "none", "preempt", True, lazy, DEEP_FLEET) == _maxmin_events(
        jobs, True, "none", "preempt", False, reference, DEEP_FLEET)
    assert lazy[0].programs < reference[0].programs / 2
