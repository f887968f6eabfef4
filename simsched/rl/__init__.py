"""Reinforcement-learning scheduling (docs/rl.md).

- :class:`SchedulingEnv` (``simsched.rl.env``): a Gymnasium environment over the
  real engine; needs the ``rl`` extra (gymnasium), imported on first use.
- :mod:`simsched.rl.agent`: the built-in numpy agent (linear scorer, masked softmax).
- :mod:`simsched.rl.train`: REINFORCE with a learned baseline.
- :mod:`simsched.rl.policy`: ``policy = "rl"``, the agent run greedily (numpy only).
"""

from __future__ import annotations

__all__ = ["SchedulingEnv"]


def __getattr__(name: str):
    if name == "SchedulingEnv":
        from simsched.rl.env import SchedulingEnv

        return SchedulingEnv
    raise AttributeError(f"module 'simsched.rl' has no attribute {name!r}")
