"""Scenario name -> scheduler family, and name -> cluster allocation (SPEC §4, STYLE rule 6).

A family registers a builder under its names with :func:`register`; an allocation with
:func:`register_allocation`. :func:`build_scheduler` looks the policy name up: it never
names a family itself, so a new family is one file and one registration, never another
branch. The families that ship are listed in one place, :mod:`simsched.config.catalog`
(as kube-scheduler lists its in-tree plugins in one registry file); importing it fills
these registries. A user's ``file.py:Class`` is not a registered name: it is loaded from
its file (:mod:`simsched.policies.user`).

Order of checks in :func:`build_scheduler` (each a one-line :class:`InputError` naming the
key): ``decide_on`` for families that decide at every event, ``preemptive = true`` (to the
policy's preemptive variant), reservations (``backfill = "easy"`` ...) for families that walk
their own way, then the family's builder, ``max_wait_s`` for a scheduler without the starvation
guard, then any unread option.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from simsched.core.contract import Scheduler
from simsched.core.params import Params
from simsched.policies.allocation import ALLOCATIONS as CLASSIC_ALLOCATIONS
from simsched.policies.allocation import Allocation
from simsched.policies.placement import PLACEMENTS, Placement
from simsched.policies.user import load_user_policy


@dataclass(frozen=True, slots=True)
class Request:
    """What a family's builder gets: the policy name, the ``[scheduler]`` table and the run's context."""

    policy: str  # the name after ``preemptive = true`` mapped it to its variant
    spec: Any  # the scenario's SchedulerSpec (simsched.config.scenario)
    options: Params  # the table's family-specific keys, read with checks
    base_dir: Path  # the scenario's folder: relative files in options resolve here
    rng_for: Callable[[str], np.random.Generator]  # named random streams of the scenario seed
    file: str  # the scenario file, for messages
    weights: tuple[float, float, float]  # the objective's weights (Eq. 5)
    objective: Any  # the scenario's ObjectiveSpec (Eq. 5 or Eq. 16), or None

    @property
    def decide_on(self) -> str:
        return getattr(self.spec, "decide_on", "event")

    def placement(self, name: str | None = None) -> Placement:
        """The placement rule ``name`` (default: the table's ``placement``)."""
        return PLACEMENTS[name or self.spec.placement]()

    def allocation(self, name: str | None = None) -> Allocation:
        """The cluster allocation ``name`` (default: the table's ``allocation``) on the "allocation"
        stream; ``decide_on`` matters to MCT only (the others decide once per job, when they first
        see it, which is at its arrival either way)."""
        return ALLOCATIONS[name or self.spec.allocation](self.rng_for("allocation"), self.decide_on)


@dataclass(frozen=True, slots=True)
class Family:
    """How one registered name is built."""

    build: Callable[[Request], Scheduler]
    #: the allocation it really uses whatever ``allocation`` says ("mct", "evo"), or None
    allocation: str | None = None
    #: why it takes no reservations (``backfill = "easy"/"conservative"``), or None when it does
    no_reservations: str | None = None
    #: it decides at every event: ``decide_on = "arrival"`` is refused
    event_only: bool = False
    #: it reads ``preemptive = true`` (the classic families); planners and agents do not
    preemptive_option: bool = True


#: every registered policy name -> its family
SCHEDULERS: dict[str, Family] = {}
def _classic(cls: Callable[..., Allocation]) -> Callable[[Any, str], Allocation]:
    """A classic allocation decides once per job, when it first sees it: ``decide_on`` is moot."""

    def build(rng: Any = None, decide_on: str = "event") -> Allocation:
        return cls(rng)

    return build


#: every registered cluster allocation -> builder(rng, decide_on)
ALLOCATIONS: dict[str, Callable[[Any, str], Allocation]] = {
    name: _classic(cls) for name, cls in CLASSIC_ALLOCATIONS.items()}


def register(*names: str, **family: Any) -> Callable[[Callable[[Request], Scheduler]], Callable[[Request], Scheduler]]:
    """Decorator: ``build`` serves ``names`` (keyword arguments: the :class:`Family` fields)."""

    def add(build: Callable[[Request], Scheduler]) -> Callable[[Request], Scheduler]:
        for name in names:
            if name in SCHEDULERS:
                raise ValueError(f"policy name {name!r} registered twice")
            SCHEDULERS[name] = Family(build, **family)
        return build

    return add


def register_allocation(name: str, build: Callable[[Any, str], Allocation]) -> None:
    """``build(rng, decide_on)`` serves ``allocation = name``."""
    if name in ALLOCATIONS:
        raise ValueError(f"allocation {name!r} registered twice")
    ALLOCATIONS[name] = build


def policy_names() -> list[str]:
    """Every registered scenario name for ``scheduler.policy``."""
    return sorted(SCHEDULERS)


def policy_file_without_class(name: str) -> str | None:
    """What is wrong with a policy given as ``alice.py``, a file without its ``:ClassName`` (None for
    anything else): it is not an unknown built-in, it lacks the class to run."""
    if ":" in name or not name.endswith(".py"):
        return None
    return (f"{name!r} is a policy file without its class: give it as '{name}:ClassName', naming the class "
            "in that file to run (e.g. my_policy.py:MyPolicy)")


def effective_allocation(spec: Any) -> str:
    """The allocation a ``[scheduler]`` table really uses: ``mct-*`` and ``mct-gp`` imply MCT,
    ``evo-gp`` the EA; a user policy decides for itself ("custom")."""
    if ":" in spec.policy:
        return "custom"
    family = SCHEDULERS.get(spec.policy)
    if family is None:  # a name the scenario accepted is registered once simsched.config.catalog is loaded
        raise KeyError(f"policy {spec.policy!r} is not registered; import simsched.config.catalog")
    return family.allocation or spec.allocation


#: ``preemptive = true`` turns these policies into their preemptive variant (filled by the
#: preemptive family: simsched.policies.preemptive)
PREEMPTIVE_VARIANT: dict[str, str] = {}


def register_variants(variants: dict[str, str]) -> None:
    """``preemptive = true`` maps each key policy to the value (a registered preemptive policy)."""
    PREEMPTIVE_VARIANT.update(variants)


def common_builder(build: Callable[..., Scheduler]) -> Callable[[Request], Scheduler]:
    """A family builder from ``build(options, *, placement=, allocation=, backfill=, interval_s=)``,
    the shape the preemptive and fair-share builders share."""

    def family_build(request: Request) -> Scheduler:
        return build(request.options, placement=request.placement(), allocation=request.allocation(),
                     backfill=request.spec.backfill, interval_s=request.spec.interval_s)

    return family_build


def build_scheduler(spec: Any, *, base_dir: Path, rng_for: Callable[[str], Any], file: str,
                    weights: tuple[float, float, float] = (1.0, 1.0, 1.0), objective: Any = None) -> Scheduler:
    """The scheduler a ``[scheduler]`` table asks for; ``rng_for(name)`` gives named streams.
    ``objective`` (a :class:`~simsched.config.scenario.ObjectiveSpec`) selects Eq. 5 or Eq. 16 for the planners."""
    options = Params(spec.options, "scheduler", file)
    options.allow(*getattr(spec, "known_keys", ()))  # read by the scenario: "valid keys" lists them too
    policy = spec.policy
    decide_on = getattr(spec, "decide_on", "event")
    user = ":" in policy
    family = None if user else SCHEDULERS[policy]
    if decide_on != "event" and (user or family.event_only):
        raise options.error("decide_on", f"{decide_on!r} applies to the planner schedulers (mct-gp, evo-gp) and "
                                         f"the built-in queue policies; policy {policy!r} decides at every "
                                         'event: use decide_on = "event"')
    check_user_backfill(spec, file)
    if user:
        if getattr(spec, "max_wait_s", None) is not None:  # a user's decide() orders its own queue
            raise _no_guard(options, policy)
        scheduler = load_user_policy(policy, base_dir, options.rest(), file)
        options.finish()
        return scheduler
    if family.preemptive_option and options.get("preemptive", bool, False):
        if policy not in PREEMPTIVE_VARIANT:
            raise options.error("preemptive", f"policy {policy!r} has no preemptive variant; "
                                f"preemptive = true works with {', '.join(sorted(PREEMPTIVE_VARIANT))}")
        policy = PREEMPTIVE_VARIANT[policy]
        family = SCHEDULERS[policy]
    if family.no_reservations and spec.reserve != "none":
        raise options.error("policy", f'{policy!r} {family.no_reservations}; backfill = "{spec.reserve}" '
                                      '(reservations) works with the queue-order policies; use backfill = true or '
                                      'false with it')
    scheduler = family.build(Request(policy, spec, options, base_dir, rng_for, file, weights, objective))
    if getattr(spec, "max_wait_s", None) is not None and not getattr(scheduler, "supports_max_wait", False):
        raise _no_guard(options, policy)
    options.finish()
    return scheduler


def _no_guard(options: Params, policy: str) -> Exception:
    """The one-line refusal of ``max_wait_s`` for a policy that orders its queue its own way."""
    return options.error("max_wait_s", f"policy {policy!r} orders its queue its own way; the starvation guard "
                                       "works with the queue-order policies (fifo, sjf, ...) and their "
                                       "backfill modes: remove max_wait_s")


def check_user_backfill(spec: Any, file: Any = None) -> None:
    """Refuse a backfill mode written for a user policy (``backfill = "easy"``, ``"conservative"``,
    ``"greedy"``/``true``): its decide() places the jobs itself, so the mode would change nothing.
    ``backfill = false``/``"none"`` or no ``backfill`` key is accepted. Needs no user code."""
    setting = spec.backfill_setting
    if ":" not in spec.policy or not getattr(spec, "backfill_given", False) or setting in (False, "none"):
        return
    written = ("true (greedy)" if setting else "false") if isinstance(setting, bool) else f'"{setting}"'
    raise Params(spec.options, "scheduler", file).error(
        "backfill", f"backfill = {written} does not apply to a user policy ({spec.policy}): its decide() places "
                    "the jobs itself, so backfilling is its own code's job; remove backfill or set backfill = false "
                    "(in a comparison, give the built-ins their mode in [compare.options.NAME])")
