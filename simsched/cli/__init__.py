"""The command line (SPEC §8): the guard every command runs under (:mod:`~simsched.cli.main`), the
argument grammar (:mod:`~simsched.cli.args`), one module per subcommand (:mod:`~simsched.cli.commands`)."""
