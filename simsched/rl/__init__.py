"""Reinforcement-learning scheduling, the policy side (docs/rl.md).

- :mod:`simsched.rl.agent`: the built-in numpy agent (linear scorer, masked softmax).
- :mod:`simsched.rl.features`: what the agent sees of a decision.
- :mod:`simsched.rl.policy`: ``policy = "rl"``, the agent run greedily (numpy only).

Training runs simulations, so it sits above the run layer: the Gymnasium environment is
:class:`simsched.learning.rl_env.SchedulingEnv` and REINFORCE is :mod:`simsched.learning.rl_train`.
"""
