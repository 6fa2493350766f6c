"""FinixDocBench pages: a track folder as published (inclusionAI/FinixDocBench:
``track*/mds/<page>.md`` ground truth, ``track*/images/<page>.png`` page images), or a flat folder
of ``.md`` pages with their images beside them (same stem, ``.png``/``.jpg``/``.jpeg``); pages
without an image are rendered by the caller. Also PubTabNet examples
(``PubTabNet_Examples.jsonl`` + PNGs) as single-table pages."""

from __future__ import annotations

import html
from dataclasses import dataclass
from pathlib import Path

from evalsuite.datasets import Schema, json_line, require_path
from evalsuite.errors import DatasetFormatError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
MARKDOWN_DIR = "mds"
IMAGE_DIR = "images"
PUBTABNET_SCHEMA = Schema("PubTabNet (ibm-aur-nlp/PubTabNet)", ("filename", "html"))


@dataclass(frozen=True)
class FinixPage:
    name: str
    markdown: str
    image_path: Path | None


def load_finix_pages(folder: Path) -> list[FinixPage]:
    """Every ``.md`` page (sorted by name) of a track folder's ``mds/`` or of a flat folder, with
    its image (from ``images/``, or beside it) when there is one."""
    require_path(folder, "finix")
    track = (folder / MARKDOWN_DIR).is_dir()
    gt_dir = folder / MARKDOWN_DIR if track else folder
    image_dir = folder / IMAGE_DIR if track else folder
    pages = []
    for md_path in sorted(gt_dir.glob("*.md")):
        image = next(
            (p for s in IMAGE_SUFFIXES if (p := image_dir / f"{md_path.stem}{s}").exists()), None
        )
        try:
            markdown = md_path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise DatasetFormatError(f"{md_path} is not UTF-8: {exc}") from exc
        pages.append(FinixPage(md_path.stem, markdown, image))
    if not pages:
        raise DatasetFormatError(f"{gt_dir} holds no .md pages")
    return pages


def pubtabnet_html(record: dict) -> str:
    """The ground-truth ``<table>`` of a PubTabNet record: structure tokens with cell contents."""
    cells = iter(record["html"]["cells"])
    parts: list[str] = []
    for token in record["html"]["structure"]["tokens"]:
        parts.append(token)
        if token == "</td>":
            continue
        if token in ("<td>", ">"):
            # ">" closes a spanning "<td" opening tag; the cell's content follows either one.
            # Single characters are text (escaped); longer tokens are inline tags like <b>.
            tokens = next(cells)["tokens"]
            parts.append("".join(html.escape(t) if len(t) == 1 else t for t in tokens))
    return "<table>" + "".join(parts) + "</table>"


def load_pubtabnet_pages(directory: Path, limit: int | None = None) -> list[FinixPage]:
    """PubTabNet examples as pages whose ground truth is one HTML table."""
    annotations = require_path(directory / "PubTabNet_Examples.jsonl", "finix")
    pages = []
    for line_number, line in enumerate(annotations.read_text(encoding="utf-8").splitlines(), 1):
        if limit is not None and len(pages) >= limit:
            break
        where = f"{annotations}:{line_number}"
        record = json_line(line, where)
        PUBTABNET_SCHEMA.check_record(record, where)
        try:
            table_html = pubtabnet_html(record)
        except (KeyError, StopIteration, TypeError) as exc:
            raise DatasetFormatError(
                f"{where}: 'html' needs structure.tokens and one cell per <td>: {exc!r}"
            ) from exc
        name = Path(record["filename"]).stem
        pages.append(FinixPage(name, table_html, directory / record["filename"]))
    return pages
