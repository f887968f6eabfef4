"""The core layer: the model, the engine (the only place that changes simulation state), the policy
contract, the job store and event log, the tenancy ledger, metrics and output tables, and the helpers
every layer shares (errors, seeding, the TOML key checker, limits, the input guard, atomic outputs,
interrupts). It imports nothing above itself (docs/engine.md "Layout")."""
