"""``evalsuite score BENCHMARK``: score markdown predictions you already have against a public
benchmark's ground truth, with the official scorer's numbers, without running any engine.

``evalsuite score omnidocbench --gt OmniDocBench.json --pred DIR [--version 1.0|1.5|1.6]
[--no-cdm] [--json] [--filter KEY=VALUE]``: ``DIR`` holds one ``<image stem>.md`` per page (the
official naming). Scored as OmniDocBench's official end-to-end evaluation of ``--version``: 1.0
(895837f, the DeepSeek-OCR paper's), 1.5 (0f22218) or 1.6 (9dc1dec); by default the version of
the ground truth's release by its page count (981: 1.0, 1355: 1.5, 1651: 1.6), else the newest.
From v1.5 on display formulas are scored with CDM unless ``--no-cdm``. Prints the version and
commit, the overall figures (v1.0: the paper's per-language table; from v1.5 on: the leaderboard
overall, its parts rounded (v1.5's notebook) or not (v1.6's eval_report)), breakdowns per page
attribute, and the pages without a prediction, which v1.0 and v1.5 skip and v1.6 scores as
empty pages (exit status 1 when there are any); ``--json`` prints ``{"version", "commit",
"pages": {stem: {"text_block_edit_dist", "display_formula_edit_dist", "table_teds",
"table_teds_structure_only", "table_edit_dist", "reading_order_edit_dist"}}, "overall",
"official", "missing_predictions", "table_format"}`` (from v1.5 on with ``"figures"``; its
``"overall"`` is the leaderboard overall, null without CDM, with its parts and ``"rule"``, the
rounding applied), null where the official code has no value.

``evalsuite score olmocr-bench --tests BENCH_DATA --pred DIR [--json]``: ``BENCH_DATA`` holds
the ``*.jsonl`` test files and ``pdfs/``; ``DIR`` one ``<pdf path less .pdf>_pg<page>_repeat<n>.md``
per page and repeat (olmOCR-bench's candidate naming). Prints the overall score with its 95 %
bootstrap interval, the score per test file and per test type, and every failed test with the
official explanation; ``--json`` prints ``{"tests": {id: {"passed", "explanation"}},
"per_category", "per_type", "overall", "ci", "missing_pages", "errors", "status"}``. Exit status
1 when a page has no prediction or a test raised (the official benchmark then reports the
candidate as "FAILED (errors)"; the scores shown count those tests as failed), 2 on bad input
(a prediction file that is not UTF-8 included, for both benchmarks).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from evalsuite.commands.score_cdm import add_parser as add_cdm_parser
from evalsuite.commands.score_cdm import run_cdm
from evalsuite.datasets.olmocr_bench import load_olmocr_bench
from evalsuite.datasets.omnidocbench import load_omnidocbench
from evalsuite.errors import DatasetFormatError, EvalsuiteError
from evalsuite.metrics.cdm import CdmToolchainUnavailableError
from evalsuite.metrics.olmocr_bench import BenchScores, score_predictions
from evalsuite.metrics.olmocr_tests import OLMOCR_VERSION
from evalsuite.metrics.omnidocbench.common.formula_cdm import FormulaCdm, cdm_hook
from evalsuite.metrics.omnidocbench.evaluation import (
    OFFICIAL_VERSION,
    Evaluation,
    evaluate_pages,
    predictions_in,
)
from evalsuite.metrics.omnidocbench.versions import (
    DATASET_VERSIONS,
    rules_for,
    version_for_pages,
)
from evalsuite.render.katex import KatexUnavailableError
from evalsuite.textformat import echo, format_table, shorten


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
        "omnidocbench", help="OmniDocBench end-to-end, as its official v1.0, v1.5 or v1.6 scorer",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    omnidoc.add_argument("--version", choices=sorted({*OFFICIAL_VERSION,
                                                      *DATASET_VERSIONS.values()}),
                         help="official evaluation version (default: the ground truth's release "
                         "by its page count, else the newest implemented)")
    omnidoc.add_argument("--no-cdm", action="store_true",
                         help="v1.5, v1.6: leave CDM out (no formula CDM, no leaderboard overall)")
    omnidoc.add_argument("--gt", required=True, help="OmniDocBench.json")
    omnidoc.add_argument("--pred", required=True, help="folder of <image stem>.md files")
    omnidoc.add_argument("--json", action="store_true", help="print the results as JSON")
    omnidoc.add_argument("--filter", action="append", default=[], metavar="KEY=VALUE",
                         help="only pages whose page attribute KEY is VALUE (the official "
                         "dataset.filter), e.g. language=english; repeatable")
    add_cdm_parser(benchmarks)


def run(args: argparse.Namespace) -> int:
    if args.benchmark == "omnidocbench":
        return run_omnidocbench(args)
    if args.benchmark == "cdm":
        return run_cdm(args)
    try:
        bench = load_olmocr_bench(args.tests, force=args.force)
        scores = score_predictions(bench.tests, bench.pdfs, args.pred,
                                   n_bootstrap=args.bootstrap_samples, seed=args.seed)
    except (DatasetFormatError, KatexUnavailableError, OSError) as error:
        echo(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(scores.to_json(), ensure_ascii=False, indent=1))
    else:
        echo(summary(scores))
    if scores.errors:
        echo(f"FAILED (errors), as the official benchmark would report it: "
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


def _cdm_hook(version: str) -> FormulaCdm | None:
    """``version``'s CDM hook; a missing toolchain's message also offers ``--no-cdm``."""
    try:
        return cdm_hook(version)
    except CdmToolchainUnavailableError as error:
        raise CdmToolchainUnavailableError(f"{error}; or pass --no-cdm to score without CDM"
                                       ) from None


def run_omnidocbench(args: argparse.Namespace) -> int:
    try:
        filters = dict(_key_value(item) for item in args.filter)
        bench = load_omnidocbench(args.gt)
        version = args.version or version_for_pages(len(bench.pages))
        rules_for(version)
        folder = Path(args.pred)
        if not folder.is_dir():
            raise DatasetFormatError(f"--pred {folder} is not a folder")
        pages = [page for page in bench.pages
                 if all(str(page["page_info"]["page_attribute"].get(key)) == value
                        for key, value in filters.items())]
        if not pages:
            raise DatasetFormatError(f"no page of {args.gt} passes the filter {filters}")
        formula_cdm = None if args.no_cdm else _cdm_hook(version)
        evaluation = evaluate_pages(pages, predictions_in(folder), bench.page_info(),
                                    version=version, formula_cdm=formula_cdm)
    except (EvalsuiteError, OSError) as error:
        echo(f"error: {error}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(evaluation.to_json(), ensure_ascii=False, indent=1))
    else:
        echo(omnidocbench_summary(evaluation, len(pages)))
    if evaluation.missing:
        treated = ("were scored as empty pages, as the official v1.6 evaluation scores them"
                   if rules_for(evaluation.version).missing_pages_scored_empty else
                   f"were skipped, as the official v{evaluation.version} evaluation skips them")
        echo(f"{len(evaluation.missing)} page(s) have no prediction and {treated}: "
             f"{', '.join(evaluation.missing[:5])}"
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
    lines = [f"{OFFICIAL_VERSION[evaluation.version]}: {scored} of {page_count} pages scored "
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
    if evaluation.leaderboard is not None:
        board = evaluation.leaderboard
        lines += ["", "leaderboard overall (((1 - text edit) x 100 + formula CDM + table TEDS) "
                  f"/ 3; {board['rule']}):", format_table(
                      ("overall", "text edit", "formula CDM", "table TEDS"),
                      [tuple(_number(board[key]) for key in (
                          "overall", "text_block_edit_dist", "display_formula_cdm",
                          "table_teds"))],
                      align="rrrr")]
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
