"""Dotted scenario keys (``workload.load``, ``scheduler.restart_penalty_s``, ``objective.weights``)
applied to a validated :class:`~simsched.config.scenario.Scenario`.

A section is turned back into its TOML table, the keys are set, and the table
goes through the scenario parser again, so an override is validated exactly
like the same key written in a scenario file (type, range, choices, unknown
keys), and works the same on a scenario read from a file and on a generated
paper instance. Generator and reader options (``workload.jobs_per_node``) are
checked by the generator when the run loads its jobs; :func:`check_runs`
does that once per grid point before anything runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from simsched.config import scenario as scenario_module
from simsched.config.scenario import Scenario, SchedulerSpec, WorkloadSpec
from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec
from simsched.core.params import Params


def apply_overrides(scenario: Scenario, overrides: Mapping[str, Any], where: str = "") -> Scenario:
    """A copy of ``scenario`` with every dotted key of ``overrides`` set (then re-validated).

    ``where`` prefixes error messages (the spec file and table the keys come from).
    """
    by_section: dict[str, dict[str, Any]] = {}
    for key, value in overrides.items():
        section, _, rest = key.partition(".")
        by_section.setdefault(section, {})[rest] = value
    changes: dict[str, Any] = {}
    label = f"{where or scenario.path} (overriding {scenario.name})"
    for section, keys in by_section.items():
        if section == "scheduler":
            raw = _set_all(scheduler_table(scenario.scheduler), keys)
            if raw.get("quota") != "borrow" and "reclaim" not in keys:
                raw.pop("reclaim", None)  # the file's reclaim belongs to the borrow mode an override replaced
            changes["scheduler"] = scenario_module._scheduler(Params(raw, "scheduler", label),
                                                              len(scenario.clusters))
        elif section == "workload":
            raw = _set_all(workload_table(scenario.workload), keys)
            workload = scenario_module._workload(Params(raw, "workload", label), scenario.path,
                                                 scenario.workload.base_dir, scenario.gpu_types)
            # the generator or reader checks its own keys when the run loads: name the overriding spec
            changes["workload"] = replace(workload, params_file=label)
        elif section == "objective":
            changes.update(_objective(scenario, keys, label))
        elif section == "cluster":
            changes["clusters"] = _resized(scenario, keys, label)
        else:
            raise InputError(f"{label}: {section}: cannot be overridden; valid sections: "
                             "workload.*, scheduler.*, objective.*, cluster.nodes")
    return replace(scenario, **changes) if changes else scenario


def _set_all(table: dict[str, Any], keys: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(table)
    for dotted, value in keys.items():
        node = out
        parts = dotted.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            node[part] = dict(child) if isinstance(child, dict) else {}
            node = node[part]
        node[parts[-1]] = value
    return out


def scheduler_table(spec: SchedulerSpec) -> dict[str, Any]:
    """The ``[scheduler]`` TOML table that parses back to ``spec``."""
    table: dict[str, Any] = {"policy": spec.policy, "placement": spec.placement,
                             "allocation": spec.allocation, "heterogeneous": spec.heterogeneous,
                             "restart_penalty_s": spec.restart_penalty_s}
    if spec.backfill_given:  # absent stays absent (the default; a user policy refuses a given mode)
        table["backfill"] = spec.backfill_setting
    if spec.interval_s is not None:
        table["interval_s"] = spec.interval_s
    if spec.reserve_depth != 1:
        table["reserve_depth"] = spec.reserve_depth
    if spec.max_wait_s is not None:
        table["max_wait_s"] = spec.max_wait_s
    if spec.decide_on != "event":
        table["decide_on"] = spec.decide_on
    if spec.quota != "none":  # tenants' quotas: dropping them would run every override without quotas
        table["quota"] = spec.quota
        if spec.quota == "borrow":
            table["reclaim"] = spec.reclaim
    table.update(spec.options)
    return table


def workload_table(spec: WorkloadSpec) -> dict[str, Any]:
    """The ``[workload]`` TOML table that parses back to ``spec`` (paths made absolute)."""
    table: dict[str, Any] = dict(spec.params)
    table["source"] = spec.source
    if spec.generator is not None:
        table["generator"] = spec.generator
    if spec.path is not None:
        table["path"] = str(spec.path.resolve())
    defaults = {f.name: f.default for f in fields(WorkloadSpec)}
    for key in ("jobs_limit", "strict", "synthesize_deadline", "synthesize_weight", "reference_gpu_type",
                "load", "download_hint"):
        value = getattr(spec, key)
        if value != defaults[key]:
            table[key] = value
    for key in ("time_window", "clusters", "deadline_slack", "weight_range"):
        value = getattr(spec, key)
        if value is not None and value != defaults[key]:
            table[key] = list(value)
    if spec.tenant_mix is not None:  # (issue 36: an override of any workload key once dropped it)
        table["tenant_mix"] = dict(spec.tenant_mix)
    if spec.model_mix is not None:
        table["model_mix"] = dict(spec.model_mix)
    return table


def objective_table(scenario: Scenario) -> dict[str, Any]:
    """The ``[objective]`` TOML table that parses back to the scenario's objective."""
    spec = scenario.objective
    if spec.kind == "eq16":
        return {"kind": "eq16", "w": spec.w}
    return {"kind": spec.kind, "weights": list(spec.weights)}


def _objective(scenario: Scenario, keys: Mapping[str, Any], label: str) -> dict[str, Any]:
    raw = objective_table(scenario)
    if "kind" in keys and keys["kind"] != raw["kind"]:  # another kind: start from its defaults
        raw = {}
    objective = scenario_module._objective(Params(_set_all(raw, keys), "objective", label))
    return {"objective": objective, "objective_weights": objective.weights}


def _resized(scenario: Scenario, keys: Mapping[str, Any], label: str) -> tuple[ClusterSpec, ...]:
    """``cluster.nodes = N``: the scenario's one cluster of one node type with N nodes (the paper's
    single-cluster load sweep, Fig. 9b: the same jobs on a smaller or larger cluster)."""
    for key in keys:
        if key != "nodes":
            raise InputError(f"{label}: cluster.{key}: cannot be overridden; valid: cluster.nodes")
    nodes = keys["nodes"]
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise InputError(f"{label}: cluster.nodes: must be a whole number of nodes >= 1, got {nodes!r}")
    if len(scenario.clusters) != 1 or len(scenario.clusters[0].nodes) != 1:
        raise InputError(f"{label}: cluster.nodes: resizes a scenario of one cluster with one node type; "
                         f"{scenario.name} has {len(scenario.clusters)} clusters and "
                         f"{sum(len(c.nodes) for c in scenario.clusters)} node groups")
    cluster = scenario.clusters[0]
    if cluster.tenants or cluster.quota_schedule is not None:
        raise InputError(f"{label}: cluster.nodes: cluster {cluster.name} gives tenants quotas; resize it in its "
                         "own file, where the quotas can follow")
    resized = (replace(cluster, nodes=(replace(cluster.nodes[0], count=nodes),)),)
    scenario_module.check_fleet(f"{label}: cluster.nodes = {nodes}", resized)  # as the same number in a file
    return resized
