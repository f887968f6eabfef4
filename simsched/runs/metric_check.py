"""Whether the runs will have a value of the metric that ranks them, checked before any run.

``compare`` (``--rank-by``, ``[compare] rank_by``, ``simsched.compare(rank_by=)``) and an
experiment's ``metric`` read a metric name through one grammar
(:func:`simsched.core.metrics.metric_name`), then :func:`check_metric_tenants` here against the
instances they will run: a metric that needs tenants (the fairness ones, ``avg_wait@<tenant>``) on
instances without any, or ``avg_wait@<tenant>`` for a tenant no instance has, would give every run
no value, so every run would tie. Both are one line, before any run.
"""

from __future__ import annotations

from collections.abc import Iterable

from simsched.config.scenario import Scenario
from simsched.core.errors import InputError, visible
from simsched.core.fairness import NO_TENANT
from simsched.core.metrics import TENANT_WAIT, needs_tenants
from simsched.runs.single import prepare

NO_TENANTS = "no [[cluster.tenant]], quota_file, tenant_mix or tenant column"


def check_metric_tenants(metric: str, scenarios: Iterable[Scenario], where: str) -> None:
    """Refuse ``metric`` when the runs of ``scenarios`` would have no value of it (module docstring).

    The tenants with quotas and those of ``tenant_mix`` are read from the scenarios; only when they do
    not settle it are the workloads loaded (a trace's own tenant column), once per distinct workload
    and fleet. ``where`` starts the error line (``spec.toml: metric``, ``compare: --rank-by``)."""
    if not needs_tenants(metric):
        return
    scenarios = list({id(s): s for s in scenarios}.values())
    tenant = metric[len(TENANT_WAIT):] if metric.startswith(TENANT_WAIT) else None
    known: set[str] = set()
    for scenario in scenarios:
        for cluster in scenario.clusters:
            known.update(t.name for t in cluster.tenants)
            if cluster.quota_schedule is not None:
                known.update(cluster.quota_schedule.tenants)
        known.update(name for name, _ in scenario.workload.tenant_mix or ())
    if (tenant is None and known) or tenant in known:
        return
    seen: set[tuple[int, int]] = set()
    for scenario in scenarios:
        key = (id(scenario.workload), id(scenario.clusters))
        if key in seen:
            continue
        seen.add(key)
        _, table, _ = prepare(scenario)
        if "tenant" not in table:
            continue
        names = set(table["tenant"].fillna("").astype(str))
        if names - {""}:  # a run with tenants reports the jobs without one as "(no tenant)"
            known.update(name or NO_TENANT for name in names)
        if (tenant is None and known) or tenant in known:
            return
    if tenant is None:
        raise InputError(f"{where}: {metric!r} needs tenants, and no instance has any ({NO_TENANTS}): every run "
                         "would have no value and tie; rank by another metric")
    valid = ", ".join(TENANT_WAIT + name for name in sorted(known, key=visible)) if known else \
        f"none: no instance has tenants ({NO_TENANTS})"
    raise InputError(f"{where}: {visible(metric)!r}: no instance has a tenant {visible(tenant)!r} "
                     f"(every run would have no value and tie); valid: {valid}")
