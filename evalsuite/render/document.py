"""Rendered pages and their layout metadata (the ground truth of detection and recognition).

Boxes are ``(x1, y1, x2, y2)`` integer pixels with exclusive ends, PIL's convention:
``page.image.crop(line.box)`` is exactly the line's ink, and a box is the tightest one
holding every pixel its glyphs cover.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from evalsuite.render.config import RenderConfig

Box = tuple[int, int, int, int]


@dataclass(frozen=True)
class RenderedLine:
    """One drawn line of text: its text as drawn (no leading/trailing spaces) and its ink box.

    ``role`` says what the line belongs to: ``text`` (render_text), ``heading``, ``paragraph``,
    ``list_item``, ``code`` or ``table_cell`` (render_markdown).
    """

    text: str
    box: Box
    role: str = "text"


@dataclass(frozen=True)
class RenderedCell:
    """One table cell: its place in the table grid and its ruled rectangle, rules included."""

    table: int
    row: int
    col: int
    rowspan: int
    colspan: int
    header: bool
    text: str
    box: Box


@dataclass(frozen=True, eq=False)
class RenderedPage:
    """One page image with the lines, table cells and horizontal rules drawn on it."""

    image: Image.Image
    lines: tuple[RenderedLine, ...] = ()
    cells: tuple[RenderedCell, ...] = ()
    rules: tuple[Box, ...] = ()

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return self.image.size

    def png_bytes(self) -> bytes:
        """The page as PNG: IHDR, IDAT and IEND only (no time, text or dpi chunks)."""
        buffer = io.BytesIO()
        self.image.save(buffer, format="PNG")
        return buffer.getvalue()

    def content_hash(self) -> str:
        """Hex sha256 of :meth:`png_bytes`."""
        return hashlib.sha256(self.png_bytes()).hexdigest()

    def save(self, path: str | Path) -> Path:
        """Write :meth:`png_bytes` to ``path``; returns the path."""
        path = Path(path)
        path.write_bytes(self.png_bytes())
        return path

    def layout(self) -> dict[str, Any]:
        """JSON-ready metadata: size, lines, cells and rules, boxes as lists."""
        width, height = self.size
        return {
            "width": width,
            "height": height,
            "lines": [{**asdict(line), "box": list(line.box)} for line in self.lines],
            "cells": [{**asdict(cell), "box": list(cell.box)} for cell in self.cells],
            "rules": [list(box) for box in self.rules],
        }


@dataclass(frozen=True, eq=False)
class RenderedDocument:
    """The pages of one rendered text or markdown source, with the config that drew them."""

    pages: tuple[RenderedPage, ...]
    config: RenderConfig
    source: str

    @property
    def lines(self) -> list[RenderedLine]:
        """Every rendered line of every page, in reading order."""
        return [line for page in self.pages for line in page.lines]

    def content_hash(self) -> str:
        """Hex sha256 of the pages' PNG bytes, concatenated in page order."""
        digest = hashlib.sha256()
        for page in self.pages:
            digest.update(page.png_bytes())
        return digest.hexdigest()

    def save(self, path: str | Path) -> list[Path]:
        """Write the pages as PNG: ``path`` itself for one page, else ``<stem>_p<N><suffix>``.

        N counts from 1 and is zero-padded to the width of the page count.
        """
        path = Path(path)
        if len(self.pages) == 1:
            return [self.pages[0].save(path)]
        width = len(str(len(self.pages)))
        return [
            page.save(path.with_name(f"{path.stem}_p{number:0{width}d}{path.suffix}"))
            for number, page in enumerate(self.pages, start=1)
        ]

    def layout(self) -> dict[str, Any]:
        """JSON-ready metadata of every page and the config."""
        return {"config": asdict(self.config), "pages": [page.layout() for page in self.pages]}
