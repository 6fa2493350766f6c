"""``evalsuite score BENCHMARK``: score markdown predictions you already have against a public
benchmark's ground truth, with the official scorer's numbers, without running any engine.

``evalsuite score omnidocbench --gt OmniDocBench.json --pred DIR [--json] [--filter KEY=VALUE]``:
``DIR`` holds one ``<image stem>.md`` per page (the official naming). Scored as OmniDocBench
v1.0's end-to-end evaluation (the version of the DeepSeek-OCR paper). Prints the overall
figures, the paper's per-language table, breakdowns per page attribute, and the pages without a
prediction, which v1.0 skips (exit status 1 when there are any); ``--json`` prints ``{"pages":
{stem: {"text_block_edit_dist", "display_formula_edit_dist", "table_teds",
"table_teds_structure_only", "table_edit_dist", "reading_order_edit_dist"}}, "overall",
"official", "missing_predictions", "table_format"}``, null where the official code has no value.

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
import math
import sys
from pathlib import Path

from evalsuite.datasets.olmocr_bench import load_olmocr_bench
from evalsuite.datasets.omnidocbench import load_omnidocbench
from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.olmocr_bench import BenchScores, score_predictions
from evalsuite.metrics.olmocr_tests import OLMOCR_VERSION
from evalsuite.metrics.omnidocbench.evaluation import (
    OFFICIAL_VERSION,
    Evaluation,
    evaluate_pages,
    predictions_in,
)
from evalsuite.metrics.omnidocbench.match import MatchError
from evalsuite.metrics.omnidocbench.normalize import LatexmlUnavailable
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


    omnidoc = benchmarks.add_parser(
        "omnidocbench", help="OmniDocBench end-to-end, as its official v1.0 evaluation",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    omnidoc.add_argument("--gt", required=True, help="OmniDocBench.json")
    omnidoc.add_argument("--pred", required=True, help="folder of <image stem>.md files")
    omnidoc.add_argument("--json", action="store_true", help="print the results as JSON")
    omnidoc.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                         help="only pages whose page attribute KEY is VALUE (the official "
                         "dataset.filter), e.g. language=english; repeatable")


def run(args: argparse.Namespace) -> int:
    if args.benchmark == "omnidocbench":
        return run_omnidocbench(args)
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


def run_omnidocbench(args: argparse.Namespace) -> int:
    try:
        filters = dict(_key_value(item) for item in args.filter)
        bench = load_omnidocbench(args.gt)
        folder = Path(args.pred)
        if not folder.is_dir():
            raise DatasetFormatError(f"--pred {folder} is not a folder")
        pages = [page for page in bench.pages
                 if all(str(page["page_info"]["page_attribute"].get(key)) == value
                        for key, value in filters.items())]
        if not pages:
            raise DatasetFormatError(f"no page of {args.gt} passes the filter {filters}")
        evaluation = evaluate_pages(pages, predictions_in(folder), bench.page_info())
    except (DatasetFormatError, LatexmlUnavailable, MatchError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(evaluation.to_json(), ensure_ascii=False, indent=1))
    else:
        print(omnidocbench_summary(evaluation, len(pages)))
    if evaluation.missing:
        print(f"{len(evaluation.missing)} page(s) have no prediction and were skipped, as the "
              f"official v1.0 evaluation skips them: {', '.join(evaluation.missing[:5])}"
              f"{' …' if len(evaluation.missing) > 5 else ''}", file=sys.stderr)
        return 1
    return 0


def _key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise DatasetFormatError(f"--filter {text!r}: expected KEY=VALUE, e.g. language=english")
    return key, value


def omnidocbench_summary(evaluation: Evaluation, page_count: int) -> str:
    """Overall figures, the paper's per-language table, and the page-attribute breakdowns."""
    figures = evaluation.headline()
    scored = len(evaluation.pages)
    lines = [f"{OFFICIAL_VERSION}: {scored} of {page_count} pages scored "
             f"(tables as {evaluation.table_format})", ""]
    lines.append(format_table(
        ("metric", "value"),
        [(name, _number(value)) for name, value in figures.items()],
        align="lr",
    ))
    if evaluation.overall is not None:
        lines += ["", "by language (the DeepSeek-OCR paper's Table 3 columns):", format_table(
            ("language", "overall", "text", "formula", "table", "order", "table TEDS"),
            [(label, *(_number(evaluation.overall.get(f"{key}_{suffix}")) for key in (
                "overall", "text_block_Edit_dist", "display_formula_Edit_dist",
                "table_Edit_dist", "reading_order_Edit_dist", "table_TEDS")))
             for label, suffix in (("english", "EN"), ("simplified_chinese", "CH"))],
            align="lrrrrrr",
        )]
    breakdown = evaluation.result["text_block"]["page"].get("Edit_dist", {})
    if breakdown:
        lines += ["", "text block edit distance per page attribute:", format_table(
            ("attribute", "edit distance"),
            [(attribute, _number(value)) for attribute, value in breakdown.items()],
            align="lr",
        )]
    return "\n".join(lines)


def _number(value: object) -> str:
    if value is None or value == "-" or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
