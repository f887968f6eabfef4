"""What the queue walk remembers between decisions: the kinds of queued job that failed to start.

A decision often starts from the state the last one left: an arrival finds the
same free GPUs, and usually the same quota usage, so every kind of job that
failed then fails again. Remembering that makes a decision cost about the
newcomers, not the whole queue. A kind fails for one of three reasons, each
with what it depends on:

- **full**: no option of the job fits the free GPUs. A property of the job's
  shape ``(cluster, options, workers)`` whatever its tenant, so one tenant's
  failure stands for every tenant's jobs of that shape. It holds while the
  free GPUs are those the last walk ended with: free GPUs only shrink during
  a walk, and every built-in placement that fails with some free GPUs fails
  with fewer (it needs enough slots, SPEC §4).
- **over quota**: the tenant's quota refuses every option (tenants' quotas,
  simsched.policies.quota). It does not depend on the free GPUs; it holds
  while the tenant's room has not grown (no job of the tenant ended or was
  preempted in a cluster where it then has room left, and the dated quota
  table did not move: the ledger counts its releases, ``Staged.mark`` /
  ``Staged.grown_since``; a tenant still at or above its quota there,
  borrowing under ``"borrow"``, refuses every job). When a tenant's room
  did grow, each of its refused kinds asks the room again with one of its
  jobs, without trying a placement, and stays refused while the room
  refuses every option (a release of 2 GPUs does not make room for an
  8-GPU job).
- **mixed**: some options refused by the quota, the others full. It holds
  while both hold.

The walk skips the kinds in :attr:`WalkMemory.full` (by shape) and
:meth:`WalkMemory.quota_failures` (by kind) and reports each new failure with
:meth:`WalkMemory.failed`. Kinds and shapes are known by small integers
(:meth:`WalkMemory.ids`, one per signature tuple and per shape tuple): the
walk looks them up for every bucket at every decision, and an integer hashes
far faster than a tuple. The rooms come from the
walk's ``admission`` (:class:`~simsched.policies.quota.Admission`); a walk
without one (no quotas, or the borrowing pass) refuses nothing, so it uses
only the "full" failures and keeps the quota ones for the next walk that has
an admission. Nothing is remembered with ``backfill = false``: there a
failure also blocks a cluster's line, which can differ between decisions.
"""

from __future__ import annotations

#: an empty set for walks that refuse nothing for quotas
_NONE: frozenset = frozenset()


class WalkMemory:
    """The failures a queue walk may reuse (see the module docstring)."""

    __slots__ = ("free_after", "most", "options", "full", "quota", "mixed", "by_tenant", "probes", "mark",
                 "_kind_ids", "_shape_ids")

    def __init__(self) -> None:
        # a small integer per kind of job (signature) and per shape (its first three fields), for the
        # walk's life: what the sets below hold (see ids)
        self._kind_ids: dict[tuple, tuple[int, int]] = {}
        self._shape_ids: dict[tuple, int] = {}
        self.free_after: list[int] | None = None  # the free GPUs the last walk ended with
        # the most free milli-GPUs on one node of those, when a walk found it and started nothing after
        self.most: int | None = None
        # option shapes (cluster, type, per_worker, workers) that did not fit (place_job's ``failed``)
        self.options: set[tuple] = set()
        self.full: set[int] = set()  # job shapes (cluster, id(options), workers) none of whose options fit
        # kinds (signatures) refused (partly) for their tenant's quota -> True when the refusal is mixed
        # (it also depends on the free GPUs); ``mixed`` those, ``by_tenant`` them all by tenant
        # (what to forget when the free GPUs change, when a tenant's room grows)
        self.quota: dict[int, bool] = {}
        self.mixed: set[int] = set()
        self.by_tenant: dict[str | None, set[int]] = {}
        # a refused kind -> one of its jobs and its cluster: what asks its tenant's room again (begin)
        self.probes: dict[int, tuple] = {}
        self.mark: tuple | None = None  # the ledger's mark after the last walk with an admission (Staged.mark)

    def ids(self, signature: tuple) -> tuple[int, int]:
        """(kind, shape): the integers this memory knows a signature (cluster, id(options), workers[,
        tenant]) and its shape (its first three fields) by; one per distinct tuple."""
        ids = self._kind_ids.get(signature)
        if ids is None:
            shape = self._shape_ids.setdefault(signature[:3], len(self._shape_ids))
            ids = self._kind_ids[signature] = (len(self._kind_ids), shape)
        return ids

    def _forget_quota(self) -> None:
        self.quota, self.mixed, self.by_tenant, self.probes = {}, set(), {}, {}

    def begin(self, free: list[int], admission, reuse: bool) -> None:
        """Forget what may no longer hold for a walk starting from ``free`` under ``admission``."""
        if not reuse:
            self.options, self.full = set(), set()
            self._forget_quota()
            self.mark = self.most = None
            return
        if free is not self.free_after and free != self.free_after:
            self.options, self.full = set(), set()
            self.most = None
            if self.mixed:
                quota, probes = self.quota, self.probes
                for kind in self.mixed:
                    del quota[kind]
                    del probes[kind]
                self.mixed = set()
        if admission is not None and self.quota:
            grown = admission.staged.grown_since(self.mark)
            if grown is None:
                self._forget_quota()
            elif grown:
                quota, mixed, by_tenant, probes = self.quota, self.mixed, self.by_tenant, self.probes
                staged = admission.staged
                for tenant in grown:
                    kinds = by_tenant.pop(tenant, None)
                    if not kinds:
                        continue
                    kept = set()
                    for kind in kinds:
                        was_mixed = quota.get(kind)
                        if was_mixed is False and _refused(probes[kind], staged):
                            kept.add(kind)  # its room grew, not enough for any option: it still refuses
                            continue
                        if was_mixed is not None:
                            del quota[kind]
                            del probes[kind]
                            if was_mixed:
                                mixed.discard(kind)
                    if kept:
                        by_tenant[tenant] = kept

    def quota_failures(self, admission) -> dict | frozenset:
        """The quota failures this walk may skip (none without an admission)."""
        return self.quota if admission is not None else _NONE

    def failed(self, job, signature: tuple, kind: int, shape: int, asked: int, refused: int) -> None:
        """``job``, of ``signature`` (known as ``kind``, its shape as ``shape``), did not fit, the quota
        refusing ``refused`` of the ``asked`` options (all its options in its cluster; 0 of 0 in a
        walk without quotas): remember why."""
        if not refused:
            self.full.add(shape)
        elif len(signature) == 4:  # (cluster, options, workers, tenant): see QueueScheduler._signature
            mixed = refused < asked
            self.quota[kind] = mixed
            self.probes[kind] = (job, signature[0])
            if mixed:
                self.mixed.add(kind)
            else:
                self.mixed.discard(kind)
            tenant = self.by_tenant.get(signature[3])
            if tenant is None:
                self.by_tenant[signature[3]] = {kind}
            else:
                tenant.add(kind)

    def end(self, free: list[int], admission) -> None:
        """The walk ended leaving ``free`` (after its starts, charged to ``admission``)."""
        self.free_after = free
        if admission is not None:
            self.mark = admission.staged.mark()


def _refused(probe: tuple, staged) -> bool:
    """Whether the tenant's room (``staged``) refuses every option of the probe's job in its cluster
    (None: any), as :func:`~simsched.policies.queue.place_job` asks it (a backfilling walk, which
    alone reuses failures, blocks no cluster)."""
    job, cluster = probe
    workers, tenant = job.workers, job.tenant
    for option in job.options:
        if (cluster is None or option.cluster == cluster) and staged.admits(
                tenant, option.cluster, option.gpu_type, option.per_worker * workers):
            return False
    return True
