"""``evalsuite trend``: how each metric moved over the last runs, regressions flagged (the
report is :mod:`evalsuite.reports.trend`'s).

One line per series by default; ``--all`` prints the long form instead: one table per benchmark
x metric with every one of the last N runs. ``--fail-on-regression`` exits 1 when the newest run
regressed against the previous comparable run of any shown series, for CI. Per-group aggregates
(``edit_precision[600-700]``) are shown and judged only with ``--groups`` or when ``--metric``
names one.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalsuite.commands.arguments import whole_number
from evalsuite.records.history import DEFAULT_HISTORY, read_history
from evalsuite.reports.series import (
    chronological,
    collect_series,
    load_golden_index,
    newest_regressions,
)
from evalsuite.reports.trend import render_trend, select_series
from evalsuite.textformat import echo

DEFAULT_LAST = 12


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", type=Path, default=DEFAULT_HISTORY,
                        help="run history file (default: %(default)s)")
    parser.add_argument("--benchmark", help="show only this benchmark")
    parser.add_argument("--metric", help="show only this metric")
    parser.add_argument("--last", type=whole_number(1), default=DEFAULT_LAST, metavar="N",
                        help="runs per series to show: the sparkline's length, or with --all "
                             "the rows (default: %(default)s)")
    parser.add_argument("--all", action="store_true", dest="every_run",
                        help="the long form: a row per run of each series, with its 95%% "
                             "interval, instead of one line per series")
    parser.add_argument("--golden-dir", type=Path, default=Path("golden"),
                        help="golden files giving each metric's tolerance (default: %(default)s)")
    parser.add_argument("--tolerance", type=float, default=None,
                        help="tolerance for means without a golden entry (default: half the "
                             "previous run's 95%% interval)")
    parser.add_argument("--groups", action="store_true",
                        help="also show per-group aggregates such as edit_precision[600-700]")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when the newest run regressed against the previous "
                             "comparable run")


def run(args: argparse.Namespace) -> int:
    try:
        entries = read_history(args.history)
    except FileNotFoundError as error:
        echo(f"evalsuite trend: {error}", file=sys.stderr)
        return 2
    if args.tolerance is not None and args.tolerance < 0:
        echo("evalsuite trend: --tolerance must be >= 0", file=sys.stderr)
        return 2
    series = select_series(
        collect_series(entries), args.benchmark, args.metric, groups=args.groups
    )
    if not series:
        what = " ".join(
            f"--{name} {value}"
            for name, value in (("benchmark", args.benchmark), ("metric", args.metric))
            if value
        )
        echo(f"evalsuite trend: no series in {args.history}" + (f" match {what}" if what else ""),
             file=sys.stderr)
        return 2
    golden = load_golden_index(args.golden_dir, {key.benchmark for key in series})
    echo(render_trend(entries, series, golden, last=args.last, source=str(args.history),
                       default_tolerance=args.tolerance, every_run=args.every_run))
    newest = chronological(entries)[-1].metadata.run_id
    regressions = newest_regressions(series, newest, golden, default_tolerance=args.tolerance)
    return 1 if args.fail_on_regression and regressions else 0
