"""Subcommands of ``evalsuite`` that read the benchmark registry or the goldens (``data``,
``golden``); each module provides ``add_arguments(parser)`` and ``run(args) -> int``."""
