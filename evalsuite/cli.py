"""The ``evalsuite`` command. Each subcommand lives in its own module, which provides
``add_arguments(parser)`` and ``run(args) -> int``; this file only wires them together."""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings
from collections.abc import Sequence

from evalsuite.textformat import echo

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("evalsuite.commands.eval_page", "run an engine on one page image and score it"),
    "finix": ("evalsuite.commands.finix", "score a directory of markdown predictions "
              "(FinixDocBench)"),
    "score": ("evalsuite.commands.score", "score predictions you have with a public benchmark's "
              "official scorer (olmocr-bench, omnidocbench)"),
    "data": ("evalsuite.commands.data", "download benchmark data, or list what is present"),
    "golden": ("evalsuite.commands.golden", "accept measured golden entries"),
    "trend": ("evalsuite.commands.trend", "show how scores moved over the last runs"),
    "report": ("evalsuite.commands.report", "write the static HTML dashboard"),
    "compare": ("evalsuite.commands.compare", "rank OCR outputs of several models against gt.txt"),
    "ab": ("evalsuite.commands.ab", "paired A/B test of two runs: did the candidate get worse?"),
    "merge": ("evalsuite.commands.merge", "join the runs of pytest --shard K/N into one run "
              "and gate it"),
    "serve": ("evalsuite.commands.serve", "serve an engine over an OpenAI-compatible HTTP API"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalsuite",
        description="evalsuite's commands: one page, reports, goldens, data and model serving. "
        "The benchmarks themselves run under pytest (pytest benches).",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        module = importlib.import_module(module_name)
        sub = commands.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.showwarning = print_warning
        return int(args.handler(args) or 0)


def print_warning(
    message: Warning | str, category: type[Warning], filename: str, lineno: int, *_: object
) -> None:
    """A warning as the commands print it: ``warning: <message>`` on stderr, one line per
    warning, without the Python source location (the message names the file concerned)."""
    echo(f"warning: {message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
