"""``evalsuite eval``: run one engine on one page image and score it against a ground truth
(the reports are :mod:`evalsuite.single_image`'s).

``--dry-run`` needs no model: it reports the page's vision-token arithmetic for the mode. Bad
input (unreadable image or ground truth, unknown engine, a mode the engine does not have, no
recording) prints one line on stderr and exits with 2; an engine failing on the page exits
with 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evalsuite.images import add_max_image_pixels_argument, set_max_image_pixels
from evalsuite.prompts import FREE_OCR
from evalsuite.single_image import InputError, dry_run_report, engine_report, format_report
from evalsuite.textformat import echo

DEFAULT_PROMPT = FREE_OCR
DEFAULT_ENGINE = "deepseek-ocr"

KEY_HELP = """\
identifying key of the page, for --engine replay and --record: comma-separated FIELD=VALUE pairs,
e.g. "document=invoice,render_config=font_mono". Default: experiment=compression and
document=<image file name without extension>; pairs given here add to or override these. VALUE is
an int when it is all digits (question_id=3), None when it is "null" or empty. The sample id (the
image file name without extension), the mode (--mode), the prompt (--prompt) and the image's
SHA-256 complete the key; see the replay engine's lookup rules in the docs."""

EPILOG = """\
examples:
  evalsuite eval --image invoice.png --mode small --dry-run
  evalsuite eval --image invoice.png --ground-truth invoice.txt --engine tesseract
  evalsuite eval --image invoice.png --engine replay --mode tiny   # $EVALSUITE_DATA recordings
  evalsuite eval --image page.png --engine deepseek-ocr --model-path DIR --record runs.jsonl
  evalsuite eval --image page.png --engine deepseek-ocr-2 --mode global

exit status: 0 success, 1 the engine failed on this page, 2 bad input or engine unavailable."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("--image", required=True, type=Path, help="the page image (PNG, JPEG, ...)")
    parser.add_argument(
        "--ground-truth", type=Path, help="UTF-8 text file with the page's expected text"
    )
    parser.add_argument(
        "--mode",
        help="the engine's resolution mode: DeepSeek-OCR tiny, small, base, large, gundam; "
        "DeepSeek-OCR-2 default, global; tesseract native (default: small where the engine "
        "has it, else its first mode; small for --dry-run)",
    )
    parser.add_argument(
        "--engine", default=DEFAULT_ENGINE, help=f"engine name (default {DEFAULT_ENGINE})"
    )
    parser.add_argument("--model-path", help="checkpoint folder for the DeepSeek engines")
    parser.add_argument(
        "--recordings",
        action="append",
        help="recordings file for --engine replay (repeatable; default $EVALSUITE_RECORDINGS, "
        "then $EVALSUITE_DATA/deepseek_ocr_recordings/recordings.jsonl)",
    )
    parser.add_argument("--record", type=Path, help="append the engine's result to this JSONL file")
    parser.add_argument("--replay-key", "--key", dest="replay_key", default="", help=KEY_HELP)
    parser.add_argument(
        "--prompt", default=DEFAULT_PROMPT, help="prompt sent with the image (default: Free OCR.)"
    )
    add_max_image_pixels_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="token arithmetic only, no model")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    """Print the page's report (a table, or JSON with ``--json``); the exit status."""
    set_max_image_pixels(args.max_image_pixels)  # for this read and the engine's own
    try:
        report = dry_run_report(args) if args.dry_run else engine_report(args)
    except InputError as exc:
        _fail(str(exc))
        return 2
    if args.json:
        print(json.dumps(report, ensure_ascii=False, indent=2, default=str))
    else:
        echo(format_report(report))
    if report.get("error"):
        _fail(f"engine {args.engine!r} failed on {args.image}: {report['error']}")
        return 1
    return 0


def _fail(message: str) -> None:
    echo(f"evalsuite eval: error: {' '.join(message.split())}", file=sys.stderr)
