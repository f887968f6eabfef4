"""Where GP learning gets its instances (``[learn] instances``; docs/learning.md).

An instance is named by a key that survives pickling to worker processes and
JSON (checkpoints, the learned file's metadata):

- ``"seeds"`` (default): the scenario itself under another seed; the key is
  the seed (an int): training ``first_seed ..``, validation the next ones.
- ``"paper"``: the paper's generated multi-cluster instances
  (:mod:`simsched.workloads.instances`); key ``"paper:S:I"`` = global
  instance I of instance-set seed S. Training takes the first ``train`` of
  the ``train`` set (at most 50), validation the first ``validation`` of the
  ``validation`` set (at most 10), both of ``instance_seed``. The fleets vary
  as in the paper. The scenario contributes its ``[objective]`` (the fitness).
  Each instance keeps its own workload seed.
- ``"sizes"``: the scenario's single cluster resized to each node count of
  ``sizes`` (the paper's single-cluster learning, Fig. 9b); key
  ``"size:N:SEED"``. Training runs every size with workload seed
  ``first_seed``, so all sizes get the same jobs when the workload does not
  depend on the fleet (a trace, or ``venus`` without ``load`` on clusters of at
  least 64 GPUs, its default ``max_gpus``). Validation
  runs the same sizes with seed ``first_seed + 1``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from simsched.config.instances import paper_instance
from simsched.config.keys import LEARN_SOURCES as SOURCES
from simsched.core.errors import InputError
from simsched.core.model import ClusterSpec, NodeGroup
from simsched.workloads.instances import SETS

InstanceKey = int | str


def check_scenario(source: str, scenario: Any) -> None:
    """Raise when the scenario cannot give this source's instances."""
    if source == "sizes" and (len(scenario.clusters) != 1 or len(scenario.clusters[0].nodes) != 1):
        raise InputError(f"{scenario.path}: learn.instances: \"sizes\" resizes a single cluster of one node "
                         f"group; this scenario has {len(scenario.clusters)} cluster(s)")


def keys(source: str, *, first_seed: int, train: int, validation: int, instance_seed: int,
         sizes: tuple[int, ...]) -> tuple[list[InstanceKey], list[InstanceKey]]:
    """(training keys, validation keys) of an instance source."""
    if source == "seeds":
        return (list(range(first_seed, first_seed + train)),
                list(range(first_seed + train, first_seed + train + validation)))
    if source == "paper":
        first_train, first_valid = SETS["train"][0], SETS["validation"][0]
        return ([f"paper:{instance_seed}:{first_train + i}" for i in range(train)],
                [f"paper:{instance_seed}:{first_valid + i}" for i in range(validation)])
    if source == "sizes":
        return [f"size:{n}:{first_seed}" for n in sizes], [f"size:{n}:{first_seed + 1}" for n in sizes]
    raise InputError(f"learn: unknown instances {source!r}; valid: {', '.join(SOURCES)}")


def resolve(scenario: Any, key: InstanceKey) -> Any:
    """The :class:`~simsched.config.scenario.Scenario` an instance key names, from the learning scenario."""
    if isinstance(key, int):
        return scenario.with_overrides(seed=key)
    kind, _, rest = str(key).partition(":")
    try:
        first, second = (int(x) for x in rest.split(":"))
    except ValueError:
        raise InputError(f"learn: bad instance key {key!r}") from None
    if kind == "paper":
        instance = paper_instance(first, second)
        return replace(instance, objective=scenario.objective, objective_weights=scenario.objective_weights)
    if kind == "size":
        check_scenario("sizes", scenario)
        cluster = scenario.clusters[0]
        group = cluster.nodes[0]
        resized = ClusterSpec(cluster.name, (NodeGroup(first, group.gpus, group.gpu_type),))
        return replace(scenario, clusters=(resized,), seed=second)
    raise InputError(f"learn: bad instance key {key!r}")
