"""The reclaim step of ``quota = "borrow"``, ``reclaim = "preempt"`` (SPEC §3) against its rules,
checked from outside :mod:`simsched.policies.quota`.

tests/test_quota_walk.py holds the quota wrapper's walk to a plain one; this file holds each reclaim
to what SPEC §3 says a reclaim is, with a checker written here from the spec and the ledger
(:class:`simsched.core.tenancy.Staged`), not from the wrapper's helpers: a reclaim takes back only
borrowed GPUs (each victim's tenant holds more than its quota just before it is preempted, victims
taken smallest first), its job fits its tenant's room and fits on its nodes once the victims' GPUs
are back (an exact fit is a fit), every victim shares a node with it, the ledger gives the victims'
GPUs back to their tenants and charges the job's tenant, and a reclaim that does not start its job
preempts nobody and changes nothing.

What it does not fix: which victims a reclaim picks among several valid sets (newest first across
the group, or the cheapest set node by node), nor whether a reclaim that exists is found. Those are
the victim search's rules, tested where the search is defined.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

import simsched
from simsched.core.engine import Engine, EngineConfig
from simsched.core.model import (
    ClusterSpec,
    Fleet,
    JobSpec,
    NodeGroup,
    TenantQuota,
    builtin_gpu_types,
)
from simsched.core.tenancy import Staged
from simsched.policies import ORDERINGS, PLACEMENTS
from simsched.policies.allocation import ALLOCATIONS
from simsched.policies.queue import QueueScheduler
from simsched.policies.quota import QuotaScheduler
from simsched.runs.single import build_tenancy
from tests.helpers import log, write_scenario

TENANT_HEADER = "job_id,submit,duration,gpus,tenant"


def _two_nodes(quotas: dict[str, int], gpus: int) -> str:
    text = f'[[cluster]]\nname = "c0"\nnodes = [{{ count = 2, gpus = {gpus}, gpu_type = "V100" }}]\n'
    for name, quota in quotas.items():
        text += f'[[cluster.tenant]]\nname = "{name}"\ngpus = {quota}\n'
    return text


def _borrow_preempt(tmp_path, clusters: str, jobs: list[str]):
    path = write_scenario(tmp_path, clusters=clusters, jobs=jobs, header=TENANT_HEADER,
                          scheduler='policy = "fifo"\nplacement = "best_fit"\nquota = "borrow"\nreclaim = "preempt"')
    return [(t, e, j, d) for t, e, j, d in log(simsched.run(path)) if e != "arrive"]


# -- hand-computed reclaims ---------------------------------------------------------------------------
def test_only_the_victim_on_the_reclaimed_node_is_preempted(tmp_path):
    """Two 4-GPU nodes, quotas a 4, b 4. b borrows all 8 GPUs: b1 (3) and b3 (1) on node 0, b2 (4) on
    node 1. a1 (a, 4 GPUs) reclaims at 10. The only one-victim way is b2: node 1 then has exactly
    the 4 GPUs a1 needs (an exact fit fits). b3, newer than b2 but on node 0, is not preempted (it
    would free 1 GPU where a1 cannot go). b2 restarts on node 1 when a1 ends, with 991 s left."""
    jobs = ["b1,0,1000,3,b", "b2,1,1000,4,b", "b3,2,1000,1,b", "a1,10,100,4,a"]
    assert _borrow_preempt(tmp_path, _two_nodes({"a": 4, "b": 4}, 4), jobs) == [
        (0, "start", "b1", "0"), (1, "start", "b2", "1"), (2, "start", "b3", "0"),
        (10, "preempt", "b2", ""), (10, "start", "a1", "1"),
        (110, "finish", "a1", ""), (110, "start", "b2", "1"),
        (1000, "finish", "b1", ""), (1002, "finish", "b3", ""), (1101, "finish", "b2", "")]


def test_no_reclaim_takes_a_tenant_below_its_quota(tmp_path):
    """Two 2-GPU nodes, quotas a 2, b 1, c 1. b1 and b2 (1 GPU each) fill node 0, b borrowing 1 GPU;
    c1 (at its quota) holds 1 GPU of node 1. a1 (a, 2 GPUs on one node) is within a's quota, but no
    reclaim exists: node 0 would need both of b's jobs (b down to 0 of its 1), node 1 c's (not
    borrowing). So every running job is kept, and a1 starts when b's jobs end. (A ledger that
    charges a victim's GPUs back instead of refunding them sees b still borrowing after b2 and
    preempts both.)"""
    jobs = ["b1,0,1000,1,b", "b2,1,1000,1,b", "c1,2,1000,1,c", "a1,10,200,2,a"]
    assert _borrow_preempt(tmp_path, _two_nodes({"a": 2, "b": 1, "c": 1}, 2), jobs) == [
        (0, "start", "b1", "0"), (1, "start", "b2", "0"), (2, "start", "c1", "1"),
        (1000, "finish", "b1", ""), (1001, "finish", "b2", ""), (1001, "start", "a1", "0"),
        (1002, "finish", "c1", ""), (1201, "finish", "a1", "")]


def test_a_reclaim_across_nodes_keeps_the_victims_off_the_nodes_it_takes(tmp_path):
    """Three 4-GPU nodes, quotas a 1, b 8, c 2. c1, c2 (c, 2 GPUs each) fill node 0, c borrowing 2;
    a3..a6 (a, 2 GPUs each) fill nodes 1 and 2, a borrowing 7. b1 (b, 8 GPUs: two workers of 4, wider
    than a node) reclaims at 10, so the search goes across nodes (docs/scenarios.md "Reclaim"): node
    0 first (ties by index) gives back c2, but c1 may not follow (c would drop to its quota) and node 0
    stays 2 GPUs short; nodes 1 and 2 then give back a's four jobs and b1 takes them, an exact fit. c2
    is on neither node b1 takes, so it is kept running: only a's jobs are preempted."""
    clusters = ('[[cluster]]\nname = "c0"\nnodes = [{ count = 3, gpus = 4, gpu_type = "V100" }]\n'
                + "".join(f'[[cluster.tenant]]\nname = "{n}"\ngpus = {q}\n' for n, q in (("a", 1), ("b", 8), ("c", 2))))
    jobs = ["c1,0,1000,2,c", "c2,0,1000,2,c", "a3,0,1000,2,a", "a4,0,1000,2,a", "a5,0,1000,2,a", "a6,0,1000,2,a",
            "b1,10,100,8,b"]
    assert _borrow_preempt(tmp_path, clusters, jobs) == [
        (0, "start", "c1", "0"), (0, "start", "c2", "0"), (0, "start", "a3", "1"), (0, "start", "a4", "1"),
        (0, "start", "a5", "2"), (0, "start", "a6", "2"),
        (10, "preempt", "a4", ""), (10, "preempt", "a3", ""), (10, "preempt", "a6", ""), (10, "preempt", "a5", ""),
        (10, "start", "b1", "1 2"),
        (110, "finish", "b1", ""), (110, "start", "a3", "1"), (110, "start", "a4", "1"), (110, "start", "a5", "2"),
        (110, "start", "a6", "2"),
        (1000, "finish", "c1", ""), (1000, "finish", "c2", ""),
        (1100, "finish", "a3", ""), (1100, "finish", "a4", ""), (1100, "finish", "a5", ""), (1100, "finish", "a6", "")]


# -- every reclaim of random runs against the rules -------------------------------------------------
FLEET = Fleet((ClusterSpec("c0", (NodeGroup(3, 4, "V100"),),
                           tenants=(TenantQuota("a", 4.0), TenantQuota("b", 4.0), TenantQuota("c", 4.0))),),
              builtin_gpu_types())


def _copy(staged: Staged) -> Staged:
    out = Staged(staged.tenancy)
    out._delta = dict(staged._delta)
    out._type_delta = dict(staged._type_delta)
    return out


def _held(job) -> int:
    return job.run_share * job.workers


class CheckedReclaim(QuotaScheduler):
    """The wrapper, with each reclaim (one job's, ``_reclaim``) checked against SPEC §3 as it returns;
    ``seen`` counts what the checks met (reclaims, victims, exact fits, reclaims that failed)."""

    seen: Counter = Counter()

    def _reclaim(self, job, view, staged, free, running, preempts):
        before, free_before, running_before = _copy(staged), list(free), list(running)
        count = len(preempts)
        start = super()._reclaim(job, view, staged, free, running, preempts)
        victims = [r for r in running_before if r.job_id in set(preempts[count:])]
        assert len(victims) == len(preempts) - count  # only running jobs, each once
        if start is None:  # no reclaim: nobody preempted, nothing charged
            assert not victims and free == free_before and running == running_before
            assert staged._delta == before._delta and staged._type_delta == before._type_delta
            CheckedReclaim.seen["failed"] += 1
            return start
        CheckedReclaim.seen["reclaims"] += 1
        CheckedReclaim.seen["victims"] += len(victims)
        fleet = view.fleet
        first = start.nodes[0]
        option = next(o for o in job.options if (o.cluster, o.gpu_type) == (fleet.node_cluster[first],
                                                                             fleet.node_type[first]))
        need = option.per_worker * job.workers
        assert len(start.nodes) == job.workers
        assert before.admits(job.tenant, option.cluster, option.gpu_type, need)
        # only borrowed GPUs: smallest first, each victim's tenant holds more than its quota just before
        ledger = _copy(before)
        for victim in sorted(victims, key=_held):
            assert victim.running_cluster == option.cluster
            assert ledger.borrowing(victim.tenant, victim.running_cluster, victim.gpu_type_used), victim.job_id
            ledger.add(victim.tenant, victim.running_cluster, victim.gpu_type_used, -_held(victim))
        # the job fits its nodes with the victims' GPUs back (>=: an exact fit fits), and needs each victim
        room = list(free_before)
        for victim in victims:
            assert set(victim.running_nodes) & set(start.nodes), victim.job_id
            for n in victim.running_nodes:
                room[n] += victim.run_share
        wanted = Counter(start.nodes)
        assert all(room[n] >= option.per_worker * k for n, k in wanted.items())
        if any(room[n] == option.per_worker * k for n, k in wanted.items()):
            CheckedReclaim.seen["exact fits"] += 1
        # the wrapper's ledger: the victims' GPUs refunded to their tenants, the job's charged to its own
        ledger.add(job.tenant, option.cluster, option.gpu_type, need)
        for tenant in {job.tenant, *(v.tenant for v in victims)}:
            assert staged.room(tenant, option.cluster, option.gpu_type) == ledger.room(
                tenant, option.cluster, option.gpu_type), tenant
        assert free == [r - option.per_worker * wanted.get(n, 0) for n, r in enumerate(room)]
        return start


def contended(seed: int, count: int) -> list[JobSpec]:
    """Jobs that make reclaims: a burst in which one tenant borrows the fleet, then arrivals of every
    tenant, sized 1-4 GPUs (a node's worth, so exact fits are common) and some 2-worker jobs."""
    rng = np.random.default_rng(seed)
    greedy = ("a", "b", "c")[seed % 3]
    jobs, t = [], 0.0
    for i in range(count):
        burst = i < count // 3
        t += float(rng.integers(0, 3)) if burst else float(np.floor(rng.exponential(25)))
        tenant = greedy if burst else ("a", "b", "c")[int(rng.integers(3))]
        gpus, workers = (8.0, 2) if rng.random() < 0.1 else (float(rng.integers(1, 5)), 1)
        duration = float(rng.choice([20, 100, 400, 1500, rng.integers(1, 3000)]))
        jobs.append(JobSpec(f"j{i}", t, duration, gpus, workers, tenant=tenant))
    return jobs


def _checked_run(seed: int, placement: str, penalty: float) -> list:
    scheduler = CheckedReclaim(QueueScheduler(ORDERINGS["fifo"], PLACEMENTS[placement](), ALLOCATIONS["home"]()),
                               "borrow", "preempt", PLACEMENTS[placement]())
    engine = Engine(FLEET, contended(seed, 40), scheduler, EngineConfig(restart_penalty_s=penalty),
                    build_tenancy(FLEET, "borrow", "preempt"))
    assert engine.run()
    return engine.events


@settings(max_examples=40)
@given(st.integers(0, 10_000), st.sampled_from(sorted(PLACEMENTS)), st.sampled_from([0.0, 30.0]))
@example(0, "best_fit", 30.0)
def test_every_reclaim_follows_the_rules(seed, placement, penalty):
    _checked_run(seed, placement, penalty)


def test_the_contended_runs_meet_every_kind_of_reclaim():
    """The workloads above reclaim, with several victims, with exact fits, and fail to reclaim (else
    the property proves little)."""
    CheckedReclaim.seen = Counter()
    for seed in range(8):
        _checked_run(seed, "best_fit", 30.0)
    seen = CheckedReclaim.seen
    assert seen["reclaims"] > 0 and seen["victims"] > seen["reclaims"], seen
    assert seen["exact fits"] > 0 and seen["failed"] > 0, seen


def test_a_walk_that_gives_a_victim_back_twice_refunds_it_once():
    """Admission.release is the walk's way to give a preempted job's GPUs back to its tenant within the
    decision; a walk may meet the same victim again (another option of its job, a user's walk), and the
    refund is counted once. One 8-GPU node, quotas a 4, b 4: v (b, one worker of 8 GPUs) holds all 8,
    b borrowing 4. Once v is given back, b's room is its quota, 4;
    a second refund would make it 12 and admit an 8-GPU job of b beyond its quota."""
    from types import SimpleNamespace

    from simsched.core.model import to_milli
    from simsched.policies.quota import Admission

    quotas = (TenantQuota("a", 4.0), TenantQuota("b", 4.0))
    fleet = Fleet((ClusterSpec("c0", (NodeGroup(1, 8, "V100"),), tenants=quotas),), builtin_gpu_types())
    tenancy = build_tenancy(fleet, "borrow", "preempt")
    tenancy.hold("b", 0, "V100", to_milli(8))
    victim = SimpleNamespace(job_id="v", tenant="b", running_cluster=0, gpu_type_used="V100", run_share=to_milli(8),
                             workers=1)
    admission = Admission(Staged(tenancy), borrow=True)
    assert admission.staged.room("b", 0, "V100") == to_milli(-4)
    admission.release(victim)
    assert admission.staged.room("b", 0, "V100") == to_milli(4)
    admission.release(victim)  # the same victim again: nothing more comes back
    assert admission.staged.room("b", 0, "V100") == to_milli(4)
    assert not admission.staged.admits("b", 0, "V100", to_milli(8))
    assert admission.released == {"v"}
