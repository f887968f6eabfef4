"""The scenario key reference (docs/reference/keys.md) and the validator agree, both ways.

- Every declared key (simsched/config/keys.py) is accepted: a scenario holding it, with its
  declared example value (and the company its declaration names), loads, compares and learns.
- Every key the validator reads is declared: scenario.py, compare.py and learn.py read their
  tables through ``DeclaredParams``, which refuses an undeclared key; this test also scans their
  source for every key name they read, so a path no test runs is covered too.
- The committed page is what tools/gen_key_reference.py writes from the declarations.
"""

from __future__ import annotations

import ast
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from simsched.config import keys as scenario_keys
from simsched.config.keys import REQUIRED, SECTIONS, DeclaredParams, Dynamic, UndeclaredKey
from simsched.config.scenario import load_scenario
from simsched.core.errors import InputError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
ALL_KEYS = [(section, key.name) for section, keys in SECTIONS.items() for key in keys]

CLUSTER = '[[cluster]]\nname = "c0"\nnodes = [{ count = 2, gpus = 8 }]\n'
WORKLOAD = '[workload]\nsource = "synthetic"\njobs = 5\n'


def _value(text: str):
    return tomllib.loads(f"v = {text}")["v"]


def _toml(value) -> str:
    """A parsed value back as inline TOML (enough for the declarations' examples)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml(v)}' for k, v in value.items()) + " }"
    return repr(value)


def _table(key) -> dict:
    table = {}
    for text in (key.requires, key.context):
        if text:
            table.update(tomllib.loads(text))
    table[key.name] = _value(key.example)
    return table


def _inline(table: dict) -> str:
    return "\n".join(f"{k} = {_toml(v)}" for k, v in table.items()) + "\n"


def _scenario_text(section: str, key) -> str:
    """A small valid scenario whose ``section`` holds ``key`` = its example."""
    table = _table(key)
    if section == "":
        if key.name == "cluster":
            return f"cluster = {key.example}\n{WORKLOAD}"
        if key.name == "instance":
            return f"instance = {key.example}\n"
        if key.name == "workload":
            return f"workload = {key.example}\n{CLUSTER}"
        return f"{key.name} = {key.example}\n{CLUSTER}{WORKLOAD}"
    if section == "gpu_type":
        entry = {"name": "fast", "speedup": 2.0, "memory_gb": 32, **table}
        return f"[[gpu_type]]\n{_inline(entry)}{CLUSTER}{WORKLOAD}"
    if section == "cluster":
        entry = {"name": "c0", "nodes": [{"count": 2, "gpus": 8}], **table}
        if "file" in entry or "from" in entry:
            del entry["name"], entry["nodes"]
        return f"[[cluster]]\n{_inline(entry)}{WORKLOAD}"
    if section == "cluster.nodes":
        group = {"count": 2, "gpus": 8, **table}
        return f'[[cluster]]\nname = "c0"\nnodes = [{_toml(group)}]\n{WORKLOAD}'
    if section == "cluster.tenant":
        tenant = {"name": "vc1", "gpus": 4, **table}
        return f"{CLUSTER}[[cluster.tenant]]\n{_inline(tenant)}{WORKLOAD}"
    if section == "workload":
        base = {"source": "csv", "path": "jobs.csv"} if key.name in ("path", "source") else {"source": "synthetic"}
        return f"{CLUSTER}[workload]\n{_inline({**base, **table})}"
    if section == "instance":  # in place of [[cluster]] and [workload]
        return f"[instance]\n{_inline({'index': 0, **table})}"
    return f"{CLUSTER}{WORKLOAD}[{section}]\n{_inline(table)}"


def _files(folder: Path) -> None:
    """The files the declarations' examples name, next to the scenario."""
    (folder / "jobs.csv").write_text("job_id,submit,duration,gpus\nj1,0,10,1\n")
    (folder / "cluster_machine_list.csv").write_text("machineId,number of GPUs,single GPU mem\nm1,8,24GB\n")
    (folder / "quotas.csv").write_text("date,vc1\n2020-04-01,4\n")
    (folder / "clusters").mkdir()
    shutil.copy(ROOT / "scenarios" / "clusters" / "philly_small.toml", folder / "clusters" / "philly.toml")
    (folder.parent / "workloads").mkdir(exist_ok=True)
    shutil.copy(ROOT / "workloads" / "philly_like.toml", folder.parent / "workloads" / "philly_like.toml")


@pytest.mark.parametrize("section, name", ALL_KEYS, ids=[f"{s or 'top'}.{n}" for s, n in ALL_KEYS])
def test_every_declared_key_is_accepted(tmp_path, section, name):
    key = scenario_keys.key(section, name)
    assert key.example, f"{section}.{name}: declare an example value"
    folder = tmp_path / "scenarios"
    folder.mkdir()
    _files(folder)
    path = folder / "s.toml"
    path.write_text(_scenario_text(section, key))
    scenario = load_scenario(path)  # an unknown key would be an InputError here
    if section == "compare":
        from simsched.runs.compare import compare_spec

        compare_spec(path)
    elif section == "learn":
        from simsched.learning.gp import learn_config

        learn_config(path)
    assert scenario.name


def test_an_undeclared_key_is_refused_with_its_section():
    with pytest.raises(InputError, match=r"scheduler\.zz_nope: unknown key"):
        DeclaredParams({"zz_nope": 1}, "scheduler", "s.toml").finish()
    with pytest.raises(UndeclaredKey, match="scheduler.zz_nope, which simsched/config/keys.py does not declare"):
        DeclaredParams({}, "scheduler", "s.toml").get("zz_nope", int, 0)
    assert DeclaredParams({}, "cluster[3].nodes[1]", "s.toml").section == "cluster.nodes"


def test_declared_values_are_used_and_not_shared():
    p = DeclaredParams({"gpus": 0}, "cluster[0].nodes[0]", "s.toml")
    with pytest.raises(InputError, match=r"s.toml: cluster\[0\].nodes\[0\].count: is required"):
        p.get("count")
    with pytest.raises(InputError, match=r"nodes\[0\].gpus: must be >= 1, got 0"):
        p.get("gpus")
    assert p.get("gpu_type") == "V100"
    weights = DeclaredParams({}, "objective", "s.toml").get("weights")
    weights.append(9)
    assert scenario_keys.default_of("objective", "weights") == [1.0, 1.0, 1.0]


_READS = {"get", "has", "get_path", "get_list", "sub"}


def _names_read(path: Path) -> set[str]:
    """Every string literal a Params-style read (``p.get("x")``, ``table.has("x")``...) names."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READS \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in {"p", "top", "g", "t", "inner", "nested", "table"}:
                found.add(node.args[0].value)
    return found


def test_every_key_the_validator_reads_is_declared():
    declared = {name for _, name in ALL_KEYS}
    for module in ("simsched/config/scenario.py", "simsched/runs/compare.py", "simsched/learning/gp.py"):
        undeclared = _names_read(ROOT / module) - declared
        assert not undeclared, f"{module} reads {sorted(undeclared)}, not declared in simsched/config/keys.py"
    from simsched.learning.gp import LEARN_KEYS

    assert set(LEARN_KEYS) == {k.name for k in SECTIONS["learn"]}


def test_declared_defaults_are_the_validators():
    """What a minimal scenario gets is what the reference says it gets."""
    from dataclasses import fields

    from simsched.config.scenario import scenario_from_table
    from simsched.learning.gp import LearnConfig
    from simsched.runs.compare import DEFAULT_SCHEDULERS

    scenario = scenario_from_table(tomllib.loads(CLUSTER + WORKLOAD), ROOT / "scenarios" / "x.toml")
    spec = scenario.scheduler
    sched = {"policy": spec.policy, "placement": spec.placement, "backfill": spec.backfill_setting,
             "reserve_depth": spec.reserve_depth, "allocation": spec.allocation, "heterogeneous": spec.heterogeneous,
             "interval_s": spec.interval_s, "restart_penalty_s": spec.restart_penalty_s, "quota": spec.quota,
             "reclaim": spec.reclaim, "decide_on": spec.decide_on, "max_wait_s": spec.max_wait_s}
    assert sched == {k.name: k.default for k in SECTIONS["scheduler"]}
    work = scenario.workload
    assert work.generator == scenario_keys.default_of("workload", "generator")
    assert list(work.deadline_slack) == scenario_keys.default_of("workload", "deadline_slack")
    assert list(work.weight_range) == scenario_keys.default_of("workload", "weight_range")
    for name in ("jobs_limit", "strict", "synthesize_deadline", "synthesize_weight", "reference_gpu_type",
                 "download_hint", "tenant_mix", "time_window", "clusters"):
        assert getattr(work, name) == scenario_keys.default_of("workload", name), name
    assert scenario.objective.kind == scenario_keys.default_of("objective", "kind")
    assert list(scenario.objective.weights) == scenario_keys.default_of("objective", "weights")
    assert scenario.objective.w == scenario_keys.default_of("objective", "w")
    assert list(DEFAULT_SCHEDULERS) == scenario_keys.default_of("compare", "schedulers")
    config = {f.name: f.default for f in fields(LearnConfig)}
    for key in SECTIONS["learn"]:
        if isinstance(key.default, Dynamic) or key.default is REQUIRED:
            continue
        expected = tuple(key.default) if isinstance(key.default, list) else key.default
        assert config[key.name] == expected, key.name


def test_the_committed_reference_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_key_reference", ROOT / "tools" / "gen_key_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    committed = (ROOT / "docs" / "reference" / "keys.md").read_text(encoding="utf-8")
    assert committed == module.render(), "docs/reference/keys.md is out of date: python tools/gen_key_reference.py"
