"""``evalsuite compare DIR``: rank several OCR models' outputs against a ground truth, in the
terminal and optionally as CSV and HTML (the ranking is :mod:`evalsuite.reports.compare`'s)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from evalsuite.records.atomic import atomic_write_text
from evalsuite.reports.compare import (
    WordOptions,
    detect_layout,
    find_documents,
    rank_models,
    render_csv,
    render_html,
    render_text,
)
from evalsuite.textformat import echo


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", type=Path, metavar="DIR",
                        help="folder with gt.txt and <model>_out.txt (or a folder of such "
                        "folders), or a gt/ folder beside one folder per model")
    parser.add_argument("--csv", type=Path, help="write the ranked table as CSV")
    parser.add_argument("--html", type=Path, help="write an HTML report")
    parser.add_argument("--case-sensitive", action="store_true",
                        help="compare words case-sensitively")
    parser.add_argument("--keep-punctuation", action="store_true",
                        help="keep ASCII punctuation in words instead of splitting on it")


def run(args: argparse.Namespace) -> int:
    options = WordOptions(args.case_sensitive, not args.keep_punctuation)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            layout = detect_layout(args.directory)
            documents = find_documents(args.directory)
        for warning in caught:
            echo(f"note: {warning.message}", file=sys.stderr)
    except (FileNotFoundError, ValueError) as error:
        echo(f"evalsuite compare: {error}", file=sys.stderr)
        return 2
    results = rank_models(documents, options)
    echo(f"layout: {layout}")
    echo(render_text(results, documents, options))
    if args.csv:
        echo(f"csv: {atomic_write_text(args.csv, render_csv(results, documents))}")
    if args.html:
        html = render_html(results, documents, options, title=args.directory.name)
        echo(f"html: {atomic_write_text(args.html, html)}")
    return 0
