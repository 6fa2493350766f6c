"""``evalsuite golden``: accept the measured entries a run wrote beside the golden files
(``<benchmark>.obtained.json``), or list what waits to be accepted."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsuite.errors import GoldenError
from evalsuite.golden import GoldenStore
from evalsuite.textformat import echo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    accept = actions.add_parser(
        "accept", help="move <benchmark>.obtained.json entries into the golden files"
    )
    accept.add_argument(
        "benchmarks", nargs="*", metavar="BENCHMARK", help="benchmarks to accept (default: all)"
    )
    pending = actions.add_parser("pending", help="list obtained entries waiting to be accepted")
    for sub in (accept, pending):
        sub.add_argument("--golden-dir", type=Path, default=Path("golden"),
                         help="folder of the golden files (default: %(default)s)")


def run(args: argparse.Namespace) -> int:
    store = GoldenStore(args.golden_dir)
    waiting = store.obtained_benchmarks()
    if args.action == "pending":
        for benchmark in waiting:
            echo(f"{benchmark}: {store.obtained_path(benchmark)}")
        if not waiting:
            echo(f"no obtained entries under {args.golden_dir}")
        return 0
    chosen = args.benchmarks or waiting
    if not chosen:
        echo(f"evalsuite golden: no obtained entries under {args.golden_dir}", file=sys.stderr)
        return 2
    for benchmark in chosen:
        try:
            changes = store.accept_obtained(benchmark)
        except GoldenError as exc:
            echo(f"evalsuite golden: {exc}", file=sys.stderr)
            return 2
        echo(f"{benchmark}: {len(changes)} entries accepted into {store.path(benchmark)}")
        for change in changes:
            echo(f"  {change.describe()}")
    return 0
