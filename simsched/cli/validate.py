"""``simsched validate SCENARIO [--policy FILE.py:Class]``: everything a run checks, without simulating."""

from __future__ import annotations

import sys

from simsched.cli.args import Parser as _Parser
from simsched.cli.args import command as _command
from simsched.config.resolve import policy_ref
from simsched.config.resolve import scenario_path as _scenario_path
from simsched.config.scenario import load_scenario
from simsched.policies.user import UserPolicy, check_interface
from simsched.runs.single import simulation


def validate_command(argv: list[str]) -> int:
    """Check a scenario, its workload and its scheduler without simulating: everything a run
    checks (the run is built up to its first event), with the same warnings. ``--policy
    FILE.py:Class`` loads that policy instead of the scenario's and checks its methods against
    the interface, without calling them."""
    p = _Parser(prog=_command("validate"), description="Validate a scenario and its workload.")
    p.add_argument("scenario", help="scenario TOML file, or a shipped example's name (simsched examples)")
    p.add_argument("--policy", metavar="FILE.py:Class",
                   help="load this policy (or a built-in name) and type-check it, without running it")
    args = p.parse_args(argv)


    scenario = load_scenario(_scenario_path(args.scenario))
    if args.policy is not None:
        scenario = scenario.with_scheduler_keys({"policy": policy_ref(args.policy, scenario.path)},
                                                "--policy")
    ready = simulation(scenario)
    fleet = ready.engine.fleet
    for warning in ready.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    infeasible = ready.infeasible.count if ready.infeasible else 0
    print(f"{args.scenario}: ok: {len(fleet.clusters)} cluster(s), {len(fleet.nodes)} nodes, "
          f"{fleet.total_gpus} GPUs; {len(ready.engine.jobs)} jobs ({infeasible} infeasible); "
          f"{ready.skipped['skipped']} rows skipped; policy {ready.scenario.scheduler.policy}")
    scheduler = ready.engine.scheduler
    if args.policy is not None and isinstance(scheduler, UserPolicy):
        print(f"{scheduler.where()}: ok: {scheduler.name} loads and defines " + ", ".join(check_interface(scheduler)))
    return 0
