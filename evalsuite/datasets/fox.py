"""Fox page-level OCR (ucaslcl/Fox) in its published layout.

``focus_benchmark_test/{en,cn}_page_ocr.json`` is a list of records with ``image`` (file name in
``{en,cn}_pdf_png/``), ``len`` (ground-truth token count) and ``conversations`` whose second turn's
``value`` is the ground-truth text.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from evalsuite.datasets import Schema, read_json, require_path
from evalsuite.errors import DatasetFormatError

LANGUAGES = ("en", "cn")
FOX_SCHEMA = Schema("Fox page OCR (ucaslcl/Fox)", ("image", "len", "conversations"))


@dataclass(frozen=True)
class FoxPage:
    page_id: str
    image_path: Path
    text: str
    gt_tokens: int


def load_fox_pages(root: Path, language: str = "en") -> list[FoxPage]:
    """Pages of ``root/focus_benchmark_test`` (or ``root`` itself if it is that folder)."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
    base = root / "focus_benchmark_test" if (root / "focus_benchmark_test").is_dir() else root
    annotations = require_path(base / f"{language}_page_ocr.json", "fox")
    images = base / f"{language}_pdf_png"
    records = read_json(annotations, list, "a JSON list of page records")
    pages = []
    for index, record in enumerate(records):
        where = f"{annotations} record {index}"
        FOX_SCHEMA.check_record(record, where)
        try:
            text = record["conversations"][1]["value"]
            gt_tokens = int(record["len"])
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise DatasetFormatError(
                f"{where}: 'conversations' needs a second turn with a 'value' (the ground truth) "
                f"and 'len' a token count: {exc!r}"
            ) from exc
        image_name = str(record["image"])
        pages.append(FoxPage(Path(image_name).stem, images / image_name, text, gt_tokens))
    return pages
