"""Every scheduler family and cluster allocation that ships, in one list (the in-tree registry).

Each family registers itself in :mod:`simsched.policies.registry` when its module is imported;
this module imports them all, so every name a scenario may give is known before a scenario is
checked or a scheduler built. It sits in the config layer, the lowest layer above every domain
package. A new built-in family adds its module here (docs/engine.md "Where things go").
"""

from __future__ import annotations

import simsched.evo.families  # noqa: F401  gp, mct-gp, evo-gp and the mct allocation
import simsched.policies  # noqa: F401  queue orderings, baselines, mct-*, preemptive, fair share
import simsched.rl.policy  # noqa: F401  rl
from simsched.policies.registry import (
    ALLOCATIONS,
    SCHEDULERS,
    build_scheduler,
    effective_allocation,
    policy_file_without_class,
    policy_names,
)

__all__ = ["ALLOCATIONS", "SCHEDULERS", "build_scheduler", "effective_allocation", "policy_file_without_class",
           "policy_names"]
