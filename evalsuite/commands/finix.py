"""``evalsuite finix``: score a directory of markdown page predictions the FinixDocBench way, with
the metrics of :mod:`evalsuite.metrics.markdown`; ``python -m evalsuite.finix`` (:func:`main`) is
the same command as a drop-in for FinixDocBench's ``run_eval.py``::

    python -m evalsuite.finix --gt_dir G --pred_dir P --output_json out.json [--allow_name_mismatch]

Writes ``{"success", "metrics", "inputs", "notes", "success_rate", "pages"}`` (see
docs/finix.md), or ``{"success": false, "error"}`` and exits 1 on failure.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from evalsuite.commands.arguments import add_workers_argument
from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.markdown import (
    MAX_PRED_ITEMS,
    MAX_SINGLE_ITEM_LENGTH,
    MAX_TABLE_CELLS,
    MAX_TOTAL_LENGTH,
    RATIO_THRESHOLD,
    Safeguards,
    evaluate_dirs,
)
from evalsuite.records.atomic import atomic_write_json
from evalsuite.textformat import echo, significant


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of run_eval.py, plus worker count and safeguard overrides."""
    parser.add_argument("--gt_dir", "--gt-dir", required=True, help="ground-truth .md pages")
    parser.add_argument("--pred_dir", "--pred-dir", required=True, help="predicted .md pages")
    parser.add_argument(
        "--output_json", "--output-json", required=True, help="where to write the results"
    )
    parser.add_argument(
        "--allow_name_mismatch",
        "--allow-name-mismatch",
        action="store_true",
        help="score missing predictions as empty pages and report unexpected ones "
        "instead of failing",
    )
    add_workers_argument(parser, "pages scored at once, one process each")
    limits = parser.add_argument_group("safeguards (FinixDocBench's defaults)")
    for option, default, kind, text in (
        ("--max_table_cells", MAX_TABLE_CELLS, int, "a larger table scores TEDS 0"),
        ("--max_pred_items", MAX_PRED_ITEMS, int, "more predicted blocks fail the page"),
        ("--ratio_threshold", RATIO_THRESHOLD, float, "more blocks per gt block fail the page"),
        ("--max_total_length", MAX_TOTAL_LENGTH, int, "a longer prediction fails the page"),
        ("--max_single_item_length", MAX_SINGLE_ITEM_LENGTH, int, "a longer block fails it"),
    ):
        limits.add_argument(option, type=kind, default=default, help=f"{text} (default {default})")


def run(args: argparse.Namespace) -> int:
    """Evaluate, write ``args.output_json`` atomically, print a summary line; 0 on success."""
    start = time.perf_counter()
    try:
        safeguards = Safeguards(
            max_table_cells=args.max_table_cells,
            max_pred_items=args.max_pred_items,
            ratio_threshold=args.ratio_threshold,
            max_total_length=args.max_total_length,
            max_single_item_length=args.max_single_item_length,
        )
        result = evaluate_dirs(
            args.pred_dir,
            args.gt_dir,
            allow_name_mismatch=args.allow_name_mismatch,
            workers=args.workers,
            safeguards=safeguards,
        )
    except (EvalsuiteError, OSError, ValueError, TypeError, BrokenProcessPool) as error:
        result = {"success": False, "error": str(error) or type(error).__name__}
    elapsed = time.perf_counter() - start
    try:
        atomic_write_json(args.output_json, result)
    except OSError as error:
        echo(f"error: cannot write {args.output_json}: {error}", file=sys.stderr)
        return 1
    if not result["success"]:
        echo(f"error: {result['error']}", file=sys.stderr)
        return 1
    echo(summary_line(result, elapsed, args.output_json))
    return 0


def summary_line(result: dict[str, Any], seconds: float, output: str) -> str:
    """One line: pages, time, pages per second, the four metrics and anomalies."""
    metrics = result["metrics"]
    pages = metrics["num_samples"]
    teds = metrics["table_TEDS"]
    statuses = [page["status"] for page in result["pages"].values()]
    extras = [
        f"{count} {label}"
        for count, label in (
            (statuses.count("missing"), "missing"),
            (statuses.count("failed"), "failed"),
            (len(result["inputs"]["unexpected_predictions"]), "unexpected"),
        )
        if count
    ]
    return (
        f"finix: {pages} pages in {seconds:.2f} s ({pages / max(seconds, 1e-9):.1f} pages/s)"
        f" | text_block_Edit_dist {significant(metrics['text_block_Edit_dist'])}"
        f" | reading_order_Edit_dist {significant(metrics['reading_order_Edit_dist'])}"
        f" | table_TEDS {'n/a' if teds is None else significant(teds)}"
        f" | overall {significant(metrics['overall'])}"
        + (f" | {', '.join(extras)}" if extras else "")
        + f" -> {output}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m evalsuite.finix``: this command on its own."""
    parser = argparse.ArgumentParser(
        prog="python -m evalsuite.finix",
        description="Score markdown page predictions against ground truth (FinixDocBench).",
    )
    add_arguments(parser)
    return run(parser.parse_args(argv))

