"""``evalsuite score BENCHMARK``: score markdown predictions you already have against a public
benchmark's ground truth, with the official scorer's numbers, without running any engine.

``evalsuite score olmocr-bench --tests BENCH_DATA --pred DIR [--json]``: ``BENCH_DATA`` holds
the ``*.jsonl`` test files and ``pdfs/``; ``DIR`` one ``<pdf path less .pdf>_pg<page>_repeat<n>.md``
per page and repeat (olmOCR-bench's candidate naming). Prints the overall score with its 95 %
bootstrap interval, the score per test file and per test type, and every failed test with the
official explanation; ``--json`` prints ``{"tests": {id: {"passed", "explanation"}},
"per_category", "per_type", "overall", "ci", "missing_pages", "errors", "status"}``. Exit status
1 when a page has no prediction or a test raised (the official benchmark then reports the
candidate as "FAILED (errors)"; the scores shown count those tests as failed), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

from evalsuite.datasets.olmocr_bench import load_olmocr_bench
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.olmocr_bench import BenchScores, score_predictions
from evalsuite.metrics.olmocr_tests import OLMOCR_VERSION
from evalsuite.render.katex import KatexUnavailable
from evalsuite.textformat import format_table, shorten


def add_arguments(parser: argparse.ArgumentParser) -> None:
    benchmarks = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    olmocr = benchmarks.add_parser(
        "olmocr-bench", help=f"olmOCR-bench's unit tests, decided as olmocr {OLMOCR_VERSION}",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    olmocr.add_argument("--tests", required=True, help="bench_data folder: *.jsonl and pdfs/")
    olmocr.add_argument("--pred", required=True, help="folder of <pdf>_pg<N>_repeat<M>.md files")
    olmocr.add_argument("--json", action="store_true", help="print the results as JSON")
    olmocr.add_argument("--force", action="store_true",
                        help="score even when some PDF page has no test (as the official --force)")
    olmocr.add_argument("--bootstrap-samples", type=int, default=1000,
                        help="resamples of the confidence interval (default 1000)")
    olmocr.add_argument("--seed", type=int, default=0,
                        help="seed of the interval's resampling (default 0)")


def run(args: argparse.Namespace) -> int:
    try:
        bench = load_olmocr_bench(args.tests, force=args.force)
        scores = score_predictions(bench.tests, bench.pdfs, args.pred,
                                   n_bootstrap=args.bootstrap_samples, seed=args.seed)
    except (DatasetFormatError, KatexUnavailable, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(scores.to_json(), ensure_ascii=False, indent=1))
    else:
        print(summary(scores))
    if scores.errors:
        print(f"FAILED (errors), as the official benchmark would report it: "
              f"{len(scores.errors)} error(s), e.g. {scores.errors[0]}", file=sys.stderr)
        return 1
    return 0


def summary(scores: BenchScores) -> str:
    """Overall score and interval, tables per test file and per type, then the failed tests."""
    low, high = scores.ci
    lines = [
        f"olmOCR-bench (olmocr {OLMOCR_VERSION} rules): {scores.overall * 100:.1f}% "
        f"(95% CI {low * 100:.1f}-{high * 100:.1f}%) over {len(scores.outcomes)} tests, "
        "mean of the per-file scores",
        "",
    ]
    counts = scores.category_counts()
    lines.append(format_table(
        ("test file", "score", "passed"),
        [(name, f"{rate * 100:.1f}%", "{}/{}".format(*counts[name]))
         for name, rate in scores.per_category.items()],
        align="lrr",
    ))
    lines += ["", format_table(
        ("test type", "mean pass rate"),
        [(name, f"{rate * 100:.1f}%") for name, rate in scores.per_type.items()],
        align="lr",
    )]
    failed = [outcome for outcome in scores.outcomes if not outcome.passed]
    if failed:
        lines += ["", f"{len(failed)} failed tests:", format_table(
            ("test", "page", "why"),
            [(o.id, f"{o.pdf} p{o.page}", shorten(o.explanation, 90)) for o in failed],
            align="lll",
        )]
    return "\n".join(lines)
