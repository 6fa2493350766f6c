"""The benchmark options of the pytest plugin: :func:`add_options` declares them, in groups,
and :func:`parse_options` turns them into :class:`SuiteOptions`, every bad value a usage error
before any test runs or any file is written. Each group, its declaration and its parsing, is a
module here: engines and server, served model, run selection, results, resume, and the options
of single benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from evalsuite.plugin.options.benchmarks import add_benchmark_options, parse_benchmark_options
from evalsuite.plugin.options.engines import (
    add_engine_options,
    check_engines,
    check_server_command,
    engine_modes,
    parse_engine_options,
)
from evalsuite.plugin.options.results import (
    add_results_options,
    check_recordings,
    parse_results_options,
)
from evalsuite.plugin.options.resume import (
    add_resume_option,
    check_resume,
    parse_resume_option,
    request_identity,
)
from evalsuite.plugin.options.selection import add_selection_options, parse_selection_options
from evalsuite.plugin.options.served_model import (
    _check_model,
    add_served_model_options,
    parse_served_model_options,
)

# re-exported for tests/plugin/test_options.py, which imports them from here
from evalsuite.plugin.options.served_model import _model as _model
from evalsuite.plugin.options.served_model import _rate as _rate
from evalsuite.plugin.options.served_model import _token_prices as _token_prices
from evalsuite.plugin.options.suite import SuiteOptions

__all__ = [
    "INI_BENCHMARKS",
    "SuiteOptions",
    "add_options",
    "engine_modes",
    "parse_options",
    "request_identity",
]

INI_BENCHMARKS = "evalsuite_benchmarks"
"""ini option: modules that declare more benchmarks (a user's own), imported at start-up."""


def add_options(parser: pytest.Parser) -> None:
    """Declare the evalsuite option group, a part per option group, and the ini option."""
    group = parser.getgroup("evalsuite", "evalsuite benchmarks")
    add_engine_options(group)
    add_served_model_options(group)
    add_selection_options(group)
    add_results_options(group)
    add_resume_option(group)
    add_benchmark_options(group)
    parser.addini(
        INI_BENCHMARKS,
        type="linelist",
        default=[],
        help="modules declaring benchmarks beyond the built-in ones (imported at start-up)",
    )


def parse_options(config: pytest.Config, gpu_engines: Sequence[str] = ()) -> SuiteOptions:
    """The options of ``config``; a bad value raises ``pytest.UsageError`` naming it and the
    valid values (pytest then exits with its usage-error status before running anything).
    ``gpu_engines``: the engines ``--gpu`` runs without ``--engine``, whose modes ``--modes``
    must name."""
    served_model = parse_served_model_options(config)
    options = SuiteOptions(
        **parse_engine_options(config, served_model["model"]),
        **served_model,
        **parse_selection_options(config),
        **parse_results_options(config),
        resume=parse_resume_option(config),
        **parse_benchmark_options(config),
    )
    check_engines(options, gpu_engines)
    _check_model(options)
    if options.shard is not None and options.update_golden:
        raise pytest.UsageError(
            "--shard and --update-golden exclude each other: a shard is part of the samples; "
            "merge the shards (evalsuite merge), then set goldens from the merged run or a "
            "whole run"
        )
    check_server_command(options)
    check_recordings(options)
    check_resume(options, config)
    return options
