"""Learning by simulation, above the run layer: GP learning of priority functions (Algorithm 3) with its
compiled replay, and the Gymnasium environment and REINFORCE training of the RL agent."""
