"""A user's own pages: a folder of page images (PNG, JPEG) and PDFs with their ground truth.

Layout (one folder, no subfolders read):

- ``<stem>.png`` / ``.jpg`` / ``.jpeg``: one page, id ``<stem>``, ground truth ``<stem>.md`` or
  ``<stem>.txt`` beside it.
- ``<stem>.pdf``: one page per PDF page, ids ``<stem>#p1``, ``<stem>#p2``, …; ground truth
  ``<stem>.md`` or ``<stem>.txt`` holding every page, pages separated by a form feed (``\\f``,
  what ``pdftotext`` writes between pages; one trailing form feed is ignored). A ground truth
  without any form feed for a PDF of several pages makes the PDF one document, id ``<stem>``:
  its pages are read one by one and their outputs joined in order. PDF pages are rendered with
  PDFium (``pypdfium2``) when samples are built, at a chosen resolution.

Every problem is a :class:`~evalsuite.errors.DatasetFormatError` naming the file: a page without
ground truth (or with both ``.md`` and ``.txt``), empty or non-UTF-8 ground truth, an unreadable
image or PDF, a PDF whose ground truth has another number of pages, a folder with no pages.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from evalsuite.datasets import require_path
from evalsuite.errors import DatasetFormatError, ImageInputError
from evalsuite.images import LIMIT_OPTION, format_megapixels, max_image_pixels, open_image

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
PDF_SUFFIX = ".pdf"
TRUTH_SUFFIXES = (".md", ".txt")
PAGE_BREAK = "\f"
POINTS_PER_INCH = 72
PDFIUM_LOCK = threading.Lock()
"""Held around every use of PDFium, which is not thread-safe (pypdfium2's own warning): served
engines render PDF pages in worker threads."""


@dataclass(frozen=True)
class UserPage:
    """One page to read: its id, the file it comes from, its PDF page index (0-based; None
    for an image file) and its ground truth."""

    page_id: str
    path: Path
    pdf_index: int | None
    ground_truth: str
    document_pages: int = 1
    """A PDF whose ground truth has no form feed is one document: its page count (read from
    ``pdf_index`` 0 on), else 1."""

    @property
    def kind(self) -> str:
        """``pdf``, ``pdf document`` (several pages, one ground truth) or ``image``."""
        if self.pdf_index is None:
            return "image"
        return "pdf document" if self.document_pages > 1 else "pdf"


def load_user_pages(folder: Path) -> list[UserPage]:
    """Every page of ``folder`` in file-name order (a PDF's pages in their order)."""
    require_path(folder, "pages")
    if not folder.is_dir():
        raise DatasetFormatError(f"{folder} is not a folder")
    files = sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.suffix.lower() in (*IMAGE_SUFFIXES, PDF_SUFFIX)
    )
    if not files:
        raise DatasetFormatError(f"{folder} holds no page images (PNG, JPEG) or PDFs")
    missing = [p.name for p in files if not _truth_files(p)]
    if missing:
        raise DatasetFormatError(
            f"no ground truth for {', '.join(missing)} in {folder}; put <stem>.md or "
            "<stem>.txt beside each page file"
        )
    pages: list[UserPage] = []
    for path in files:
        truth = _read_truth(path)
        if path.suffix.lower() == PDF_SUFFIX:
            pages.extend(_pdf_pages(path, truth))
        else:
            _check_image(path)
            pages.append(UserPage(path.stem, path, None, _nonempty(truth, path, path.stem)))
    ids = [page.page_id for page in pages]
    duplicates = sorted({page_id for page_id in ids if ids.count(page_id) > 1})
    if duplicates:
        raise DatasetFormatError(
            f"several page files in {folder} share the stem {', '.join(duplicates)}; "
            "rename them so each ground-truth file belongs to one page"
        )
    return pages


def unmatched_ground_truth(folder: Path) -> list[str]:
    """Ground-truth files of ``folder`` (``.md``/``.txt``) with no page file of their stem: a
    mistyped page name would silently drop the page."""
    stems = {p.stem for p in folder.iterdir()
             if p.is_file() and p.suffix.lower() in (*IMAGE_SUFFIXES, PDF_SUFFIX)}
    return sorted(p.name for p in folder.iterdir()
                  if p.is_file() and p.suffix.lower() in TRUTH_SUFFIXES and p.stem not in stems)


def render_pdf_page(
    path: Path,
    index: int,
    dpi: float | Callable[[float, float], float] | None = None,
    *,
    longest_side: int | None = None,
) -> Image.Image:
    """Page ``index`` (0-based) of the PDF at ``path`` (RGB), rendered at ``dpi`` dots per inch
    (or at ``dpi(width, height)`` for the page's size in points) or, with ``longest_side``, at
    the resolution that makes its longer side that many pixels."""
    if (dpi is None) == (longest_side is None):
        raise ValueError("render_pdf_page: give dpi or longest_side, not both or neither")
    with PDFIUM_LOCK:
        return _render(path, index, dpi, longest_side)


def _render(path: Path, index: int, dpi: float | Callable[[float, float], float] | None,
            longest_side: int | None) -> Image.Image:
    document = _open_pdf(path)
    try:
        page = document[index]
        points = page.get_size()
        if longest_side is not None:
            dpi = longest_side * POINTS_PER_INCH / max(points)
        elif callable(dpi):
            dpi = dpi(*points)
        assert isinstance(dpi, (int, float))
        width, height = (round(side * dpi / POINTS_PER_INCH) for side in points)
        if width * height > max_image_pixels():
            raise DatasetFormatError(
                f"{path.name} page {index + 1} at {dpi:g} dpi is {width}×{height} = "
                f"{format_megapixels(width * height)}, above the limit of "
                f"{format_megapixels(max_image_pixels())}; lower the resolution (--pages-dpi "
                f"for your own pages) or raise {LIMIT_OPTION}"
            )
        return page.render(scale=dpi / POINTS_PER_INCH).to_pil().convert("RGB")
    finally:
        document.close()


def pdf_page_count(path: Path) -> int:
    """The number of pages of the PDF at ``path``; DatasetFormatError when PDFium cannot read
    it."""
    with PDFIUM_LOCK:
        document = _open_pdf(path)
        try:
            return len(document)
        finally:
            document.close()


def _open_pdf(path: Path) -> Any:
    import pypdfium2

    try:
        return pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError as exc:
        raise DatasetFormatError(f"cannot read PDF {path}: {exc}") from exc


def _truth_files(page_file: Path) -> list[Path]:
    return [p for s in TRUTH_SUFFIXES if (p := page_file.with_suffix(s)).is_file()]


def _read_truth(page_file: Path) -> str:
    found = _truth_files(page_file)
    if len(found) > 1:
        raise DatasetFormatError(
            f"{page_file.name} has two ground truths ({found[0].name}, {found[1].name}); "
            "keep one"
        )
    try:
        return found[0].read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetFormatError(f"ground truth {found[0]} is not UTF-8: {exc}") from exc


def _nonempty(truth: str, page_file: Path, page_id: str) -> str:
    if not truth.strip():
        raise DatasetFormatError(
            f"the ground truth of {page_id} (from {page_file.name}) is empty"
        )
    return truth


def _check_image(path: Path) -> None:
    try:
        open_image(path).close()
    except ImageInputError as exc:
        raise DatasetFormatError(str(exc)) from exc


def _pdf_pages(path: Path, truth: str) -> list[UserPage]:
    count = pdf_page_count(path)
    parts = truth.removesuffix(PAGE_BREAK).split(PAGE_BREAK)
    if len(parts) == 1 and count > 1:  # one ground truth for the whole document
        return [UserPage(path.stem, path, 0, _nonempty(truth, path, path.stem), count)]
    if len(parts) != count:
        raise DatasetFormatError(
            f"{path.name} has {count} pages but its ground truth has {len(parts)} "
            "(separate the pages' ground truths with a form feed, \\f)"
        )
    pages = []
    for index, part in enumerate(parts):
        page_id = f"{path.stem}#p{index + 1}"
        pages.append(UserPage(page_id, path, index, _nonempty(part, path, page_id)))
    return pages
