"""``evalsuite report``: write the static HTML dashboard of the run history and its PNG plots
(the page is :mod:`evalsuite.reports.dashboard`'s)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsuite.records.history import DEFAULT_HISTORY
from evalsuite.reports.dashboard import DEFAULT_MAX_SAMPLES, write_dashboard
from evalsuite.textformat import echo

DEFAULT_OUT = Path("reports") / "index.html"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", type=Path, default=DEFAULT_HISTORY,
                        help="run history file (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="HTML file to write (default: %(default)s)")
    parser.add_argument("--golden-dir", type=Path, default=Path("golden"),
                        help="golden files for the golden lines (default: %(default)s)")
    parser.add_argument("--max-samples", type=int, default=DEFAULT_MAX_SAMPLES, metavar="N",
                        help="worst samples per engine x data x parameter in the drill-down "
                             "(default: %(default)s)")
    parser.add_argument("--no-png", action="store_true", help="skip the PNG plots")


def run(args: argparse.Namespace) -> int:
    if args.max_samples < 0:
        echo("evalsuite report: --max-samples must be >= 0", file=sys.stderr)
        return 2
    if args.out.is_dir():
        echo(f"evalsuite report: --out {args.out} is a folder; give the HTML file to write, "
             f"e.g. {args.out / 'index.html'}", file=sys.stderr)
        return 2
    try:
        html_path, pngs = write_dashboard(
            args.history, args.out, golden_dir=args.golden_dir,
            max_samples=args.max_samples, png=not args.no_png,
        )
    except FileNotFoundError as error:
        echo(f"evalsuite report: {error}", file=sys.stderr)
        return 2
    echo(f"dashboard: {html_path}")
    for path in pngs:
        echo(f"plot: {path}")
    return 0
