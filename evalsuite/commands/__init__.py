"""The subcommands of ``evalsuite`` (:mod:`evalsuite.cli` wires them), one module each, which
provides ``add_arguments(parser)`` and ``run(args) -> int``: the arguments, the exit status and
what is printed; the work itself is done by the library modules they call.
:mod:`~evalsuite.commands.arguments` holds the argument types they share."""
