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


def _maxmin_events(jobs, backfill: bool, mode: str, reclaim: str, remember: bool) -> list:
    policy = MaxMinHeteroScheduler(PLACEMENTS["best_fit"](), ALLOCATIONS["home"](), backfill, 300.0)
    policy.remember_failures = remember
    if mode == "none":  # weighted by the quotas all the same
        policy.bind_quotas(build_tenancy(FLEET, "none", reclaim))
        scheduler = policy
    else:
        scheduler = QuotaScheduler(policy, mode, reclaim, PLACEMENTS["best_fit"]())
    engine = Engine(FLEET, jobs, scheduler, EngineConfig(heterogeneous=True, restrict_to_home=True,
                                                         restart_penalty_s=30.0, interval_s=300.0),
                    None if mode == "none" else build_tenancy(FLEET, mode, reclaim))
    engine.run()
    return engine.events


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.booleans(),
       st.sampled_from([("none", "preempt"), ("strict", "preempt"), ("borrow", "preempt"), ("borrow", "wait")]),
       st.sampled_from([0.0, 0.5]))
def test_maxmin_hetero_skipping_failed_kinds_equals_trying_every_job(seed, backfill, quota, share_own):
    """maxmin-hetero skips a kind of job that already failed (for the rest of a tenant's turn within
    allocations, where a preemption may make room; for the rest of the pass for leftovers) and ends
    a turn once each of the tenant's kinds failed; in a leftovers pass without admission a kind that
    failed fails for every tenant; a tenant holding nothing whose allocation covers none of its
    jobs sits the within pass out: the same event log as trying every job of every tenant."""
    mode, reclaim = quota
    jobs = many_tenants(seed, 40, share_own)
    assert (_maxmin_events(jobs, backfill, mode, reclaim, True)
            == _maxmin_events(jobs, backfill, mode, reclaim, False))
