"""``evalsuite ab BASELINE CANDIDATE``: is the candidate worse than the baseline on the same
samples, by more than chance explains?

Both runs are results.json files (given as a path, a run folder, a run id under
``--report-dir``, or a ``--run-name``). Records are paired by benchmark x data x parameter and
engine label; records left over are paired across engines when each run has exactly one for a
benchmark x data x parameter (model A vs model B). Within a pair, samples are paired by id.

Every metric with a better direction gets a paired test on the samples both runs scored
(:mod:`evalsuite.stats_paired`): McNemar's exact test for a proportion; for a mean, the exact
sign-flip test of the mean difference up to 16 pairs and a paired bootstrap of it beyond (or,
with ``--mean-test wilcoxon``, the Wilcoxon signed-rank test). The p-values of all tests are
Holm-adjusted together, so "significant" holds for the whole family at ``--alpha``. A metric
regressed when its adjusted p-value is below alpha and it moved in its bad direction by more
than ``--tolerance``. Weighted means are compared per sample, unweighted; per-group aggregates
(``metric[group]``) are left out.

Output: a terminal table (or ``--json``), the samples that got worse most with a word-level
diff of their two outputs, and with ``--html`` a page in the dashboard's style with a paired
plot (candidate vs baseline per sample) per changed metric. ``--fail-on-regression`` exits 1
when any metric regressed. The header names each engine's peer model profile and version (from
the runs' engine details) and warns when the comparison is not like with like: the two sides of
a pair ran different versions of one model's profile, or a benchmark ran on different data in
the two runs (those records are not paired).

This module is the command: its arguments, finding the runs (:func:`resolve_run`, which
``evalsuite merge`` uses too), and writing what :mod:`~evalsuite.reports.ab_compute` computes as
:mod:`~evalsuite.reports.ab_render` renders it.
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

from evalsuite.errors import NothingPairedError, RunNotFoundError
from evalsuite.records.atomic import atomic_write_text
from evalsuite.records.history import read_history
from evalsuite.records.metadata import require_run_id
from evalsuite.records.results import RESULTS_FILE, read_results
from evalsuite.reports.ab_compute import ALPHA, MEAN_TESTS, WORST_SAMPLES, compare_runs
from evalsuite.reports.ab_render import render_html, render_text, report_json
from evalsuite.stats_paired import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, SIGN_FLIP_MAX_PAIRS
from evalsuite.textformat import echo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("baseline", metavar="BASELINE",
                        help="run id, run name (--run-name; the newest run of that name) or a "
                        "results.json path / run folder")
    parser.add_argument("candidate", metavar="CANDIDATE", help="the run to judge, as BASELINE")
    parser.add_argument("--report-dir", type=Path, default=Path("reports"),
                        help="where run ids and names are looked up (default reports/)")
    parser.add_argument("--alpha", type=float, default=ALPHA,
                        help=f"family-wise significance level, Holm-adjusted (default {ALPHA})")
    parser.add_argument("--tolerance", type=float, default=0.0,
                        help="a significant drop counts as a regression only beyond this much, "
                        "in the metric's units (default 0)")
    parser.add_argument("--mean-test", choices=MEAN_TESTS, default="bootstrap",
                        help="paired test of a mean: the mean difference, by exact sign "
                        f"flips up to {SIGN_FLIP_MAX_PAIRS} pairs and bootstrap beyond "
                        "(default), or Wilcoxon signed-rank")
    parser.add_argument("--resamples", type=int, default=BOOTSTRAP_RESAMPLES,
                        help=f"bootstrap resamples (default {BOOTSTRAP_RESAMPLES})")
    parser.add_argument("--seed", type=int, default=BOOTSTRAP_SEED,
                        help=f"bootstrap random seed (default {BOOTSTRAP_SEED})")
    parser.add_argument("--worst", type=int, default=WORST_SAMPLES,
                        help=f"samples that got worse most to list (default {WORST_SAMPLES})")
    parser.add_argument("--all", action="store_true",
                        help="list unchanged metrics too (default: only those that moved)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--html", type=Path, metavar="PATH",
                        help="write an HTML page with paired plots and the worst samples' diffs")
    parser.add_argument("--fail-on-regression", action="store_true",
                        help="exit 1 when a metric dropped significantly beyond --tolerance")


def run(args: argparse.Namespace) -> int:
    problem = _argument_problem(args)
    if problem:
        echo(f"evalsuite ab: {problem}", file=sys.stderr)
        return 2
    try:
        paths = [resolve_run(ref, args.report_dir) for ref in (args.baseline, args.candidate)]
        runs = [read_results(path) for path in paths]
        report = compare_runs(
            runs[0], runs[1], alpha=args.alpha, tolerance=args.tolerance,
            mean_test=args.mean_test, resamples=args.resamples, seed=args.seed,
            worst=args.worst,
        )
    except (RunNotFoundError, NothingPairedError, ValueError, OSError) as error:
        echo(f"evalsuite ab: {error}", file=sys.stderr)
        return 2
    report.sources = (str(paths[0]), str(paths[1]))
    if args.json:
        print(json.dumps(report_json(report), ensure_ascii=False, indent=1))
    else:
        echo(render_text(report, show_all=args.all))
    if args.html:
        written = atomic_write_text(args.html, render_html(report))
        echo(f"html: {written}", file=sys.stderr if args.json else sys.stdout)
    return 1 if args.fail_on_regression and report.regressions else 0


def _argument_problem(args: argparse.Namespace) -> str | None:
    if not 0 < args.alpha < 1:
        return f"--alpha must lie between 0 and 1, got {args.alpha}"
    if args.tolerance < 0:
        return f"--tolerance must be >= 0, got {args.tolerance}"
    if args.resamples < 1:
        return f"--resamples must be >= 1, got {args.resamples}"
    if args.worst < 0:
        return f"--worst must be >= 0, got {args.worst}"
    return None


def resolve_run(reference: str, report_dir: str | Path) -> Path:
    """The results.json that ``reference`` names: a results.json path or run folder, a run id
    under ``report_dir``, or a run name in ``report_dir/history.jsonl`` (the newest run of that
    name). RunNotFoundError lists close matches otherwise."""
    report_dir = Path(report_dir)
    given = Path(reference)
    for path in (given, given / RESULTS_FILE):
        if path.is_file():
            return path
    try:
        by_id = report_dir / require_run_id(reference) / RESULTS_FILE
    except (TypeError, ValueError):
        by_id = None
    if by_id is not None and by_id.is_file():
        return by_id
    history = report_dir / "history.jsonl"
    entries = read_history(history) if history.is_file() else []
    named = [e for e in entries if e.metadata.run_name == reference and e.results_path]
    if named:
        newest = max(named, key=lambda entry: entry.metadata.created_utc)
        path = history.parent / str(newest.results_path)
        if path.is_file():
            return path
        raise RunNotFoundError(f"run {reference!r} ({newest.metadata.run_id}): {path} is gone")
    known = sorted({p.parent.name for p in report_dir.glob(f"*/{RESULTS_FILE}")}
                   | {e.metadata.run_name for e in entries if e.metadata.run_name})
    close = difflib.get_close_matches(reference, known, n=5, cutoff=0.5)
    hint = (f"close matches: {', '.join(close)}" if close
            else f"{len(known)} runs known there" + (f", e.g. {', '.join(known[-3:])}"
                                                      if known else ""))
    raise RunNotFoundError(
        f"no run {reference!r}: not a results.json path or run folder, nor a run id under "
        f"{report_dir}, nor a run name in {history}; {hint}"
    )
