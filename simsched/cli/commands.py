"""The subcommands: each is a module of :mod:`simsched.cli`, loaded by name only when it is used
(`simsched compare` never loads the experiment runner, and `--help` loads nothing heavy)."""

#: Subcommand name -> "module:function(argv) -> exit code", imported only when used.
#: A new subcommand is one line here and a module of its own.
SUBCOMMANDS: dict[str, str] = {
    "validate": "simsched.cli.validate:validate_command",
    "gpu-types": "simsched.cli.gpu_types:gpu_types_command",
    "compare": "simsched.cli.compare:compare_command",
    "learn": "simsched.cli.learn:learn_command",
    "rl": "simsched.cli.rl:rl_command",
    "experiment": "simsched.cli.experiment:experiment_command",
    "plot": "simsched.cli.plot:plot_command",
    "examples": "simsched.cli.examples:examples_command",
    "run": "simsched.cli.run:run_named",
    "new": "simsched.cli.examples:new_command",
    "assignment": "simsched.cli.assignment:assignment_command",
}
