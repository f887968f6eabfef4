"""The scenario keys simsched itself reads: one definition per key (type, default, choices,
range, one line of meaning), used by the validator and by the generated key reference.

:mod:`simsched.config.scenario` reads every table below through :class:`DeclaredParams`, which takes
a key's type, default, choices and range from here, and refuses (as an internal error) to read
a key that is not declared here. ``tools/gen_key_reference.py`` writes docs/reference/keys.md
from the same definitions, and ``tests/test_key_reference.py`` checks both directions: every
declared key is accepted by the validator, every key the validator reads is declared.

A section is the key path an error message names, without indices: ``cluster[0].nodes[1]``
is section ``cluster.nodes``. Keys handed on to a policy, a trace reader, a generator or a
cluster builder are validated there (see ``PASS_THROUGH``).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from simsched.config.catalog import ALLOCATIONS as REGISTERED_ALLOCATIONS
from simsched.config.catalog import policy_names
from simsched.core import limits
from simsched.core.metrics import METRIC_ALIASES, RANKABLE, TENANT_WAIT
from simsched.core.model import SPEED_BASES
from simsched.core.params import _MISSING, Params
from simsched.core.tenancy import QUOTA_MODES, RECLAIM_MODES
from simsched.policies import PLACEMENTS
from simsched.workloads import builders_registry, generators_registry
from simsched.workloads.instances import GENERATORS, SETS

#: a key with no default: it must be given (where its section applies)
REQUIRED = _MISSING

#: how a key names files, relative to the file that holds the key: ``path`` always a file (or folder);
#: ``paths`` a list of them; ``module`` a file when the value is ``file.py:Class``; ``json`` a file when
#: the value ends in ``.json`` (else a name or an expression). Every key that names a file is marked
#: with one (``Key.files``), in :data:`SECTIONS` or, for options handed on, in :data:`HANDED_ON_FILES`.
FILE_KINDS = ("path", "paths", "module", "json")


class Dynamic:
    """A default that depends on other keys or files; ``text`` says which (for the docs)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return f"Dynamic({self.text!r})"


@dataclass(frozen=True)
class Key:
    """One scenario key: what the validator accepts and what the reference says about it."""

    name: str
    kind: type | tuple[type, ...]
    doc: str
    default: Any = REQUIRED
    #: the valid values: a tuple, or a function returning them (registries that load lazily)
    choices: Sequence[Any] | Callable[[], Sequence[Any]] | None = None
    min_value: float | None = None
    max_value: float | None = None
    exclusive_min: bool = False
    #: TOML (``key = value`` lines) that must hold in the same table for this key to apply (the docs say so)
    requires: str = ""
    #: TOML the tests put beside the example, where the key needs company the docs need not spell out
    context: str = ""
    #: a valid value, as TOML text (the docs show it; the tests load a scenario with it)
    example: str = ""
    #: the type as the docs say it, where ``kind`` alone says too little ("list of 3 numbers")
    type_text: str = ""
    #: the valid values as the docs say them, where the validator checks them itself (text, or a
    #: function returning it)
    choices_text: str | Callable[[], str] = ""
    #: how the key names files (one of :data:`FILE_KINDS`; "" when it names none): ``simsched new``
    #: copies every file so named beside the starter it writes (simsched.config.examples)
    files: str = ""

    def valid_choices(self) -> Sequence[Any] | None:
        return self.choices() if callable(self.choices) else self.choices

    def choices_doc(self) -> str:
        return self.choices_text() if callable(self.choices_text) else self.choices_text

    def type_name(self) -> str:
        if self.type_text:
            return self.type_text
        kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
        names = {int: "integer", float: "number", str: "string", bool: "boolean", list: "list",
                 dict: "table"}
        return " or ".join(names.get(k, k.__name__) for k in kinds)


def _policies() -> str:
    return ", ".join(f"`{name}`" for name in policy_names()) + ", or `file.py:Class`"


def _placements() -> list[str]:
    return sorted(PLACEMENTS)


def _generators() -> list[str]:
    return sorted(generators_registry())


def _builders() -> list[str]:
    return sorted(builders_registry())


def _instance_generators() -> tuple[str, ...]:
    return GENERATORS


def _instance_sets() -> tuple[str, ...]:
    return tuple(SETS)


def _quota_modes() -> tuple[str, ...]:
    return QUOTA_MODES


def _reclaim_modes() -> tuple[str, ...]:
    return RECLAIM_MODES


def _metrics() -> str:
    """What :func:`simsched.core.metrics.metric_name` accepts (an experiment's ``metric`` too)."""
    return ", ".join(f"`{name}`" for name in RANKABLE + tuple(METRIC_ALIASES)) + \
        f", or `{TENANT_WAIT}<tenant>` (a tenant's mean wait; the instances must have that tenant)"


def _learn_sources() -> tuple[str, ...]:
    return LEARN_SOURCES


#: where GP learning gets its instances (``[learn] instances``; simsched.learning.gp_instances)
LEARN_SOURCES = ("seeds", "paper", "sizes")
SOURCES = ("csv", "philly", "pai", "helios", "itp", "openb", "synthetic")
#: every registered cluster allocation (simsched.policies.registry, filled by simsched.config.catalog)
ALLOCATIONS = tuple(REGISTERED_ALLOCATIONS)
BACKFILL_MODES = ("none", "greedy", "easy", "conservative")
OBJECTIVE_KINDS = ("eq5", "eq16")
#: ``[scheduler] decide_on``: when plans and allocations are made (docs/evo.md, "The trigger")
DECIDE_ON = ("event", "arrival")
DEFAULT_SCHEDULERS = ("fifo", "sjf", "srtf", "edf", "hrrn", "sufferage")

#: every section's keys, in the reference's order: ``""`` is the top level, ``"cluster.nodes"`` a
#: ``[[cluster]]``'s node groups (:func:`section_of` maps an error's key path to its section)
SECTIONS: dict[str, tuple[Key, ...]] = {
    "": (
        Key("name", str, "The scenario's name (in tables, summary.json and file names).",
            Dynamic("the file name without .toml; with [instance], the instance's name"), example='"mine"'),
        Key("seed", int, "Every random draw of the run derives from it.",
            Dynamic("0; with [instance], the instance's own draw"), min_value=0, example="3"),
        Key("description", str, "Free text, shown by `simsched examples` and in report.html.",
            Dynamic('""; with [instance], the instance\'s'), example='"my fleet"'),
        Key("speed_basis", str, "The built-in catalog's speeds: `training` = published training throughputs "
            "(Gavel's matrix, Lambda's mixed-precision benchmark), `fp32` = FP32 datasheet TFLOPS ratios "
            "(the catalog before issue 38; `simsched gpu-types --basis fp32`).",
            Dynamic('"training"; with [instance], "fp32" (the paper\'s all-V100 fleets run alike on both)'),
            choices=SPEED_BASES, example='"fp32"'),
        Key("gpu_type", list, "`[[gpu_type]]` tables: add GPU types to the catalog or override built-in ones.",
            [], type_text="array of tables", example='[{ name = "fast", speedup = 2.0, memory_gb = 32 }]'),
        Key("cluster", list, "`[[cluster]]` tables: the fleet (at least one, unless `[instance]` gives it).",
            REQUIRED, type_text="array of tables", example='[{ name = "c0", nodes = [{ count = 1, gpus = 8 }] }]'),
        Key("workload", dict, "`[workload]`: where the jobs come from, filters and field synthesis "
            "(`source` is required unless `[instance]` gives the workload).", {}, type_text="table",
            example='{ source = "synthetic" }'),
        Key("scheduler", dict, "`[scheduler]`: the policy and how it places jobs.", {}, type_text="table",
            example='{ policy = "sjf" }'),
        Key("objective", dict, "`[objective]`: the objective the tables and EVO-GP report.", {}, type_text="table",
            example='{ kind = "eq16" }'),
        Key("instance", dict, "`[instance]`: a generated paper instance in place of `[[cluster]]` "
            "and `[workload]`.", None, type_text="table", example='{ index = 3 }'),
        Key("compare", dict, "`[compare]`: defaults of `simsched compare` on this scenario.", {},
            type_text="table", example='{ seeds = 2 }'),
        Key("learn", dict, "`[learn]`: defaults of `simsched learn` on this scenario.", {},
            type_text="table", example='{ population = 8 }'),
    ),
    "gpu_type": (
        Key("name", str, "The type's name; a built-in name overrides the catalog's entry "
            "(`simsched gpu-types` lists them).", example='"fast"'),
        Key("speedup", float, "Throughput relative to V100 (run time = duration / speedup).",
            Dynamic("the catalog's, for a built-in name; required for a new type"), min_value=0,
            exclusive_min=True, example="2.0"),
        Key("memory_gb", float, "Memory of one GPU; a job whose per-GPU memory does not fit cannot use the type.",
            Dynamic("the catalog's, for a built-in name; required for a new type"), min_value=0,
            exclusive_min=True, example="32"),
        Key("source", str, "Where the numbers come from (shown by `simsched gpu-types`).", "scenario",
            example='"vendor sheet"'),
    ),
    "cluster": (
        Key("name", str, "The cluster's name, unique in the fleet (inline clusters).", example='"c0"'),
        Key("nodes", list, "Node groups `{ count, gpus, gpu_type }` (inline clusters; at least one).",
            type_text="array of tables", example='[{ count = 2, gpus = 8 }]'),
        Key("file", str, "A TOML file of `[[cluster]]` tables, relative to this file, in place of "
            "`name`/`nodes`.", None, type_text="path", files="path", example='"clusters/philly.toml"'),
        Key("from", str, "A cluster builder that reads a machine table at `path`; its options "
            "(`gpus_limit`, `nodes_per_type`, `nodes_limit`, `name`, ...) go to it.", None, choices=_builders,
            context='path = "cluster_machine_list.csv"', example='"philly_machines"'),
        Key("path", str, "The machine table a `from` builder reads (required with `from`).", type_text="path",
            context='from = "philly_machines"', files="path", example='"cluster_machine_list.csv"'),
        Key("tenant", list, "`[[cluster.tenant]]` tables: tenants' GPU quotas in this cluster.", [],
            type_text="array of tables", example='[{ name = "vc1", gpus = 4 }]'),
        Key("quota_file", str, "A dated quota table (tenants' GPUs over time) in place of `[[cluster.tenant]]`.",
            None, type_text="path", files="path", example='"quotas.csv"'),
        Key("quota_start", (str, date), "The date the run's time 0 falls on in `quota_file` (default: its "
            "first row): a TOML date (2020-04-01) or that text.",
            None, context='quota_file = "quotas.csv"', example='"2020-04-01"', type_text="date or string"),
    ),
    "cluster.nodes": (
        Key("count", int, "Nodes in the group.", min_value=1, example="4"),
        Key("gpus", int, "GPUs per node.", min_value=1, max_value=limits.MAX_GPUS_PER_NODE, example="8"),
        Key("gpu_type", str, "The nodes' GPU type.", "V100", type_text="string (GPU type)",
            choices_text="a catalog type (`simsched gpu-types`) or a `[[gpu_type]]` of this scenario",
            example='"P100"'),
    ),
    "cluster.tenant": (
        Key("name", str, "The tenant (a VC, user or group the jobs name, or a `workload.tenant_mix` key).",
            example='"vc1"'),
        Key("gpus", (float, dict), "Its quota: GPUs in the cluster, or a table of GPUs per type "
            "(`{ V100 = 8 }`).", type_text="number or table", example="4"),
    ),
    "workload": (
        Key("file", str, "A workload TOML (in `workloads/`) whose keys this table overrides.", None,
            type_text="path", files="path", example='"../workloads/philly_like.toml"'),
        Key("source", str, "The trace reader, or `synthetic` for a generator.", choices=SOURCES, example='"csv"'),
        Key("path", str, "The trace file (or folder, for `itp`); required unless `source = \"synthetic\"`.",
            type_text="path", files="path", example='"jobs.csv"'),
        Key("generator", str, "The job generator.", "simple", choices=_generators,
            requires='source = "synthetic"', example='"simple"'),
        Key("jobs_limit", int, "Keep the first N jobs (by submit time).", None, min_value=1, example="100"),
        Key("time_window", list, "Keep jobs with start <= submit < end, then shift so the first submits at 0.",
            None, type_text="[start_s, end_s]", example="[0, 86400]"),
        Key("clusters", list, "Keep jobs whose home cluster (or VC) is listed.", None,
            type_text="list of strings", example='["vc1"]'),
        Key("strict", bool, "A bad trace row is an error naming file and line (default: skip it and count it "
            "by reason in summary.json).", False, example="true"),
        Key("synthesize_deadline", bool, "Give each job deadline = submit + duration x k, "
            "k ~ U[deadline_slack].", False, example="true"),
        Key("synthesize_weight", bool, "Give each job a weight ~ U{weight_range}.", False, example="true"),
        Key("deadline_slack", list, "[low, high] of the deadline factor k, 0 < low <= high.", [1.5, 4.0],
            type_text="[low, high]", example="[2.0, 3.0]"),
        Key("weight_range", list, "[low, high] integer weights, 1 <= low <= high.", [1, 5],
            type_text="[low, high]", example="[1, 3]"),
        Key("reference_gpu_type", str, "The GPU type of jobs that name none (their durations are on it).", None,
            type_text="string (GPU type)",
            choices_text="a catalog type (`simsched gpu-types`) or a `[[gpu_type]]` of this scenario",
            example='"V100"'),
        Key("load", float, "Traces: rescale submit times to this offered load sum(g d)/(GPUs x span); "
            "generators: their arrival rate.", None, min_value=0, exclusive_min=True, max_value=limits.MAX_LOAD,
            example="0.8"),
        Key("download_hint", str, "Said when `path` is missing (how to download the trace).", None,
            example='"bash tools/download/philly.sh"'),
        Key("tenant_mix", dict, "tenant = weight: a tenant drawn for each job that names none.", None,
            type_text="table of numbers", example="{ vc1 = 0.6, vc2 = 0.4 }"),
        Key("model_mix", dict, "model = weight: a model drawn for each job that names none; the job then runs "
            "at that model's measured speed on each GPU type (`simsched gpu-types --models` lists them).", None,
            type_text="table of numbers", example="{ resnet50 = 0.5, lm = 0.5 }"),
    ),
    "scheduler": (
        Key("policy", str, "The policy that orders and places jobs; its own options go in this table too.",
            "fifo", choices_text=_policies, files="module", example='"sjf"'),
        Key("placement", str, "How a job's workers are put on nodes.", "best_fit", choices=_placements,
            example='"first_fit"'),
        Key("backfill", (bool, str), "Start later jobs that fit when the head cannot (`easy` and "
            "`conservative` with reservations).", True, choices_text="true (greedy), false (none), "
            + ", ".join(f'"{m}"' for m in BACKFILL_MODES), type_text="boolean or string", example='"easy"'),
        Key("reserve_depth", int, "Reservations for the first k jobs that cannot start.",
            1, min_value=1, requires='backfill = "easy"', example="2"),
        Key("max_wait_s", float, "Starvation guard: a job queued longer than this goes to the front of the "
            "ordering (oldest first) and gets the reservation, as Slurm's age factor does; queue-order policies.",
            None, min_value=0, exclusive_min=True, example="604800.0"),
        Key("allocation", str, "Which cluster a job goes to.", "home", choices=ALLOCATIONS, example='"mct"'),
        Key("heterogeneous", bool, "Let typed jobs run on other GPU types, their run time scaled by speed.", False,
            example="true"),
        Key("interval_s", float, "Also decide every interval_s seconds (periodic rounds).", None, min_value=0,
            exclusive_min=True, example="60.0"),
        Key("restart_penalty_s", float, "Seconds added to every restart after a preemption.", 0.0, min_value=0,
            example="30.0"),
        Key("quota", str, "Tenants' quotas: ignored, enforced, or lent out while idle.", "none",
            choices=_quota_modes, example='"strict"'),
        Key("reclaim", str, "How an owner gets the GPUs it lent back.", "preempt",
            choices=_reclaim_modes, requires='quota = "borrow"', example='"wait"'),
        Key("decide_on", str, "When `mct-gp`/`evo-gp` plan and `mct-<policy>` allocate: at every event, or only when "
            "a job arrives that the last plan did not place (the evo page, The trigger).", "event",
            choices=DECIDE_ON, example='"arrival"'),
    ),
    "objective": (
        Key("kind", str, "Eq. 5 (weighted queueing times and utilisation) or Eq. 16 "
            "(w AvgJCT + (1 - w) MaxQT).", "eq5", choices=OBJECTIVE_KINDS, example='"eq16"'),
        Key("weights", list, "Eq. 5's [w1, w2, w3] >= 0 (sum at most 1e100): w1 C_q,avg + w2 C_q,max + "
            "w3 (1 - utilisation).",
            [1.0, 1.0, 1.0], type_text="[w1, w2, w3]", requires='kind = "eq5"', example="[1.0, 2.0, 0.0]"),
        Key("w", float, "Eq. 16's weight in [0, 1].", 0.5, min_value=0.0, max_value=1.0, requires='kind = "eq16"',
            example="0.3"),
    ),
    "instance": (
        Key("generator", str, "The instance generator.", "paper", choices=_instance_generators, example='"paper"'),
        Key("seed", int, "The instance-set seed.", 0, min_value=0, example="1"),
        Key("set", str, "A named slice of the instances (train 0..49, validation 50..59, test 60..89).", None,
            choices=_instance_sets, example='"test"'),
        Key("index", int, "The instance: within `set` (0..size-1), or a global index without it.", min_value=0,
            example="7"),
    ),
    "compare": (
        Key("schedulers", list, "The schedulers `simsched compare` runs (names, `file.py:Class`, or labels "
            "of `[compare.options.LABEL]` tables).", list(DEFAULT_SCHEDULERS), type_text="list of strings",
            example='["fifo", "sjf"]'),
        Key("seeds", int, "Runs per scheduler, with seeds seed, seed + 1, ... from the scenario's seed.", 1,
            min_value=1, example="3"),
        Key("instances", list, "More scenario files compared as cases beside this one.", [],
            type_text="list of paths", files="paths", example="[]"),
        Key("rank_by", str, "The metric that ranks the schedulers.", "avg_jct", choices_text=_metrics, example='"avg_wait"'),
        Key("options", dict, "`[compare.options.LABEL]`: `[scheduler]` keys for one label.", {},
            type_text="table of tables", example='{ sjf = { placement = "first_fit" } }'),
    ),
    "learn": (
        Key("population", int, "n, the GP population.", 512, min_value=1, example="8"),
        Key("generations", int, "Generations.", 100, min_value=0, example="2"),
        Key("alpha", int, "Training instances per generation (<= train; default 3, or train when it is smaller).", 3, min_value=1, example="2"),
        Key("train", int, "Training instances.", 50, min_value=1, example="4"),
        Key("validation", int, "Validation instances.", 10, min_value=1, example="2"),
        Key("first_seed", int, "The first training seed.", 1000, min_value=0, example="7"),
        Key("tournament", int, "k of the k-tournament.", 7, min_value=1, example="5"),
        Key("max_depth", int, "Depth limit of a tree (edges).", 7, min_value=0, example="6"),
        Key("init_min", int, "Smallest depth of ramped half-and-half.", 2, min_value=0, example="1"),
        Key("init_max", int, "Largest depth of ramped half-and-half (<= max_depth).", 6, min_value=0, example="5"),
        Key("mutation_rate", float, "r: probability that both children of a crossover are mutated.", 0.1,
            min_value=0, max_value=1, example="0.2"),
        Key("mutation_depth", int, "Largest subtree a mutation inserts.", 4, min_value=0, example="3"),
        Key("internal_bias", float, "Probability that a crossover/mutation point is a function node.", 0.9,
            min_value=0, max_value=1, example="0.8"),
        Key("terminals", list, "A subset of the terminals.", Dynamic("all of them"),
            choices_text="items from: d, q, u, g (simsched/evo/priority.py)", type_text="list of strings",
            example='["d", "q"]'),
        Key("constants", list, "Extra constant terminals.", [], type_text="list of numbers", example="[1, 2]"),
        Key("jobs", int, "Keep the first N jobs of every instance.", None, min_value=1, example="50"),
        Key("seed", int, "The GP's random seed.", Dynamic("the scenario's seed"), min_value=0, example="2"),
        Key("instances", str, "Where training instances come from: seeded copies of this scenario, the "
            "paper's instance sets, or one cluster at several sizes.", "seeds",
            choices=_learn_sources, example='"seeds"'),
        Key("instance_seed", int, "With `instances = \"paper\"`: the seed of the instance sets.", 0, min_value=0,
            example="1"),
        Key("sizes", list, "Node counts of the single cluster (required with `instances = \"sizes\"`).",
            [], type_text="list of integers", requires='instances = "sizes"', example="[10, 12]"),
    ),
}

#: options handed on (to a policy or a trace reader, which validate them) that name files: the
#: reference lists them with their owner; here only so that ``simsched new`` copies their files
HANDED_ON_FILES: dict[str, tuple[Key, ...]] = {
    "workload": (
        Key("task_table", str, "The PAI reader's task table.", None, type_text="path", files="path",
            example='"pai_task_table.csv"'),
        Key("group_table", str, "The PAI reader's group table (tenant_rule = \"group\").", None, type_text="path",
            files="path", example='"pai_group_tag_table.csv"'),
        Key("demand_file", str, "The `helios_demand` generator's hourly per-VC table.", None, type_text="path",
            files="path", example='"earth_vcs_hourly.csv"'),
        Key("sizes_file", str, "The `helios_demand` generator's per-VC job sizes.", None, type_text="path",
            files="path", example='"earth_vc_sizes.csv"'),
    ),
    "scheduler": (
        Key("agent", str, "Policy `rl`: the trained agent.", None, type_text="path", files="path",
            example='"agent.npz"'),
        Key("priority", str, "Policies `gp`, `mct-gp`, `evo-gp`: a built-in priority, an expression, or a "
            "`.json` file from `simsched learn`.", None, files="json", example='"learned.json"'),
    ),
}


def file_keys() -> dict[tuple[str, str], str]:
    """Every key that names files, ``(section, name) -> kind`` (:data:`FILE_KINDS`): declared or handed on."""
    out = {}
    for table in (SECTIONS, HANDED_ON_FILES):
        for section, declared in table.items():
            out.update({(section, k.name): k.files for k in declared if k.files})
    return out


#: where keys that are not listed above go, and who validates them
PASS_THROUGH: dict[str, str] = {
    "cluster": "with `from`, every other key goes to the cluster builder (scenarios page, Cluster builders)",
    "workload": "every other key goes to the trace reader or the generator, which validates it "
                "(scenarios page, Readers and Generators)",
    "scheduler": "every other key is an option of the chosen policy, which validates it "
                 "(scenarios page, policy-specific keys)",
}

#: a section's title in the docs: the TOML header it stands for
TITLES: dict[str, str] = {
    "": "top level", "gpu_type": "[[gpu_type]]", "cluster": "[[cluster]]", "cluster.nodes": "[[cluster]] nodes",
    "cluster.tenant": "[[cluster.tenant]]", "workload": "[workload]", "scheduler": "[scheduler]",
    "objective": "[objective]", "instance": "[instance]", "compare": "[compare]", "learn": "[learn]",
}

_BY_SECTION: dict[str, dict[str, Key]] = {s: {k.name: k for k in keys} for s, keys in SECTIONS.items()}


def section_of(prefix: str) -> str:
    """``cluster[0].nodes[1]`` -> ``cluster.nodes``: the section a key path belongs to."""
    return re.sub(r"\[\d+\]", "", prefix)


def key(section: str, name: str) -> Key:
    try:
        return _BY_SECTION[section][name]
    except KeyError:
        raise UndeclaredKey(f"the validator reads {section + '.' if section else ''}{name}, which "
                            "simsched/config/keys.py does not declare; declare it there (the key reference "
                            "is generated from it)") from None


def names(section: str) -> tuple[str, ...]:
    return tuple(k.name for k in SECTIONS[section])


def default_of(section: str, name: str) -> Any:
    return key(section, name).default


class UndeclaredKey(RuntimeError):
    """A developer error: the validator reads a key the reference does not list."""


class DeclaredParams(Params):
    """:class:`Params` for a section of :data:`SECTIONS`: a key's type, default, choices and
    range come from its declaration, and reading an undeclared key is an internal error.

    Arguments given explicitly win (a default that depends on other keys, such as a built-in
    GPU type's speedup, or a range that depends on the chosen set); a static default or static
    choices given again must agree with the declaration.
    """

    def __init__(self, table: Mapping[str, Any], prefix: str, file: str | Path = "<scenario>") -> None:
        super().__init__(table, prefix, file)
        self.section = section_of(prefix)
        if self.section not in SECTIONS:
            raise UndeclaredKey(f"no section {self.section!r} in simsched/config/keys.py")

    @classmethod
    def of(cls, params: Params) -> DeclaredParams:
        """The same table (and the same record of keys read) as a declared section."""
        if isinstance(params, DeclaredParams):
            return params
        out = cls(params._table, params._prefix, params._file)
        out._used = params._used
        return out

    def has(self, name: str) -> bool:
        key(self.section, name)
        return super().has(name)

    def get(self, name: str, kind: type | tuple[type, ...] | None = None, default: Any = _MISSING, *,
            choices: Sequence[Any] | None = None, min_value: float | None = None, max_value: float | None = None,
            exclusive_min: bool | None = None) -> Any:
        k = key(self.section, name)
        if default is _MISSING and not isinstance(k.default, Dynamic):
            default = k.default
            if isinstance(default, (list, dict)):
                default = copy.deepcopy(default)  # a caller may change the list it gets
        elif default is not _MISSING and not isinstance(k.default, Dynamic) and k.default is not _MISSING \
                and default != k.default:
            raise UndeclaredKey(f"{self.section}.{name}: default {default!r} here, {k.default!r} declared")
        if choices is None:
            choices = k.valid_choices()
        return super().get(name, kind or k.kind, default, choices=choices,
                           min_value=k.min_value if min_value is None else min_value,
                           max_value=k.max_value if max_value is None else max_value,
                           exclusive_min=k.exclusive_min if exclusive_min is None else exclusive_min)

    def sub(self, name: str) -> Params:
        """A nested table: declared if its section is (``[compare.options]`` is handed on as it is)."""
        key(self.section, name)
        value = Params.get(self, name, dict, {})
        declared = section_of(self.key(name)) in SECTIONS
        return (DeclaredParams if declared else Params)(value, self.key(name), self._file)
