"""The config layer: scenario TOML -> validated Scenario, the key reference, ``--set`` overrides, the
shipped examples and the one input resolver, and the catalog of every built-in scheduler family. It
sits above the domain packages (policies, workloads, evo, rl), whose names it checks."""
