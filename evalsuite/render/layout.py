"""Shared page machinery: word wrapping, bands of drawing operations, pagination, painting.

A renderer turns its source into a list of :class:`Band` objects, horizontal strips that are
never split across pages (a text line, a group of table rows, a gap). :func:`paginate` stacks
the bands into pages and :func:`paint` draws them, measuring every line's ink exactly.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

from evalsuite.render.config import RGB, RenderConfig
from evalsuite.render.document import (
    Box,
    RenderedCell,
    RenderedDocument,
    RenderedLine,
    RenderedPage,
)

Font = ImageFont.FreeTypeFont

_TOKENS = re.compile(r"\s+|\S+")


def wrap(text: str, font: Font, width: float) -> list[str]:
    """Greedy word wrap of one line of ``text`` into pieces at most ``width`` px wide.

    Breaks at whitespace (dropped at the break, kept inside a piece); a word wider than
    ``width`` is split between characters, at least one character per piece. Leading whitespace
    stays on the first piece. An all-blank ``text`` gives no pieces.
    """
    pieces: list[str] = []
    current = ""
    for token in _TOKENS.findall(text.rstrip()):
        if token.isspace():
            current += token
            continue
        if current and font.getlength(current + token) > width and current.strip():
            pieces.append(current.rstrip())
            current = ""
        current += token
        while font.getlength(current) > width and len(current.strip()) > 1:
            cut = _longest_fitting_prefix(current, font, width)
            pieces.append(current[:cut].rstrip())
            current = current[cut:]
    if current.strip():
        pieces.append(current)
    return pieces


def _longest_fitting_prefix(text: str, font: Font, width: float) -> int:
    """Largest n >= (first non-space + 1) with ``text[:n]`` at most ``width`` px wide."""
    low = len(text) - len(text.lstrip()) + 1
    high = len(text) - 1
    while low < high:
        middle = (low + high + 1) // 2
        if font.getlength(text[:middle]) <= width:
            low = middle
        else:
            high = middle - 1
    return low


def wrap_indented(line: str, font: Font, width: float) -> list[tuple[int, str]]:
    """Wrap ``line`` keeping its leading whitespace as an indent of every piece.

    Returns ``(indent_px, piece)`` pairs, pieces without leading whitespace. Where the indent
    leaves no room for a character it is dropped.
    """
    body = line.lstrip()
    indent = font.getlength(line[: len(line) - len(body)])
    if indent >= width or (body and font.getlength(body[0]) > width - indent):
        indent = 0.0
    return [(round(indent), piece) for piece in wrap(body, font, width - indent)]


@dataclass(frozen=True)
class Run:
    """Text drawn with its baseline's left end at ``x`` (absolute) on the line's baseline."""

    x: int
    text: str
    font: Font


@dataclass(frozen=True)
class LineOp:
    """One line of text, possibly several runs (a list marker and its text); ``y`` = baseline."""

    y: int
    runs: tuple[Run, ...]
    role: str


@dataclass(frozen=True)
class CellOp:
    """A table cell's ruled rectangle; ``box`` is exclusive-ended, ``y`` relative to the band."""

    box: Box
    table: int
    row: int
    col: int
    rowspan: int
    colspan: int
    header: bool
    text: str


@dataclass(frozen=True)
class RuleOp:
    """A filled rectangle (a horizontal rule), exclusive-ended box."""

    box: Box


Op = LineOp | CellOp | RuleOp


@dataclass(frozen=True)
class Band:
    """A strip of operations placed at one y; ``height`` = advance to the next band,
    ``extent`` = how far below its top it draws. ``blank`` bands are dropped at a page's top.
    """

    height: int
    extent: int
    ops: tuple[Op, ...] = ()
    blank: bool = False


def text_band(runs: Sequence[Run], role: str, pitch: int) -> Band:
    """A band holding one line of ``runs`` whose advance is ``pitch`` px."""
    ascent = max(run.font.getmetrics()[0] for run in runs)
    descent = max(run.font.getmetrics()[1] for run in runs)
    return Band(height=pitch, extent=ascent + descent, ops=(LineOp(ascent, tuple(runs), role),))


def blank_band(height: int) -> Band:
    """Empty vertical space of ``height`` px (a blank line or a gap between blocks)."""
    return Band(height=height, extent=0, blank=True)


Placement = tuple[int, Band]


def paginate(
    bands: Sequence[Band], config: RenderConfig, *, single_page: bool
) -> list[tuple[int, list[Placement]]]:
    """Stack ``bands`` from the top margin down; returns ``(page_height, [(y, band)])`` per page.

    A band that would draw below ``page_height - bottom margin`` starts a new page; blank
    bands at the top of a later page are dropped, and so are trailing blank bands. With
    ``single_page`` everything goes on one page whose height is the content's plus margins.
    """
    _, top, _, bottom = config.margins
    limit = config.page_height - bottom
    bands = list(bands)
    while bands and bands[-1].blank:
        bands.pop()
    pages: list[list[Placement]] = [[]]
    y = top
    for band in bands:
        if not single_page:
            if top + band.extent > limit:
                raise ValueError(
                    f"config.page_height {config.page_height} px leaves {limit - top} px between "
                    f"the margins, less than a {band.extent} px line or table row; use a larger "
                    "page_height or single_page=True"
                )
            if pages[-1] and y + band.extent > limit:
                pages.append([])
                y = top
        if band.blank and not pages[-1] and len(pages) > 1:
            continue
        pages[-1].append((y, band))
        y += band.height
    if not single_page:
        return [(config.page_height, placements) for placements in pages]
    end = max((y0 + band.extent for y0, band in pages[0]), default=top)
    return [(end + bottom, pages[0])]


def paint(
    pages: Sequence[tuple[int, list[Placement]]], config: RenderConfig, source: str
) -> RenderedDocument:
    """Draw every page and collect its layout metadata."""
    scheme = config.scheme
    rendered = [
        _paint_page(height, placements, config.page_width, scheme.foreground, scheme.background)
        for height, placements in pages
    ]
    return RenderedDocument(pages=tuple(rendered), config=config, source=source)


def _paint_page(
    height: int, placements: list[Placement], width: int, ink: RGB, paper: RGB
) -> RenderedPage:
    image = Image.new("RGB", (width, max(1, height)), paper)
    draw = ImageDraw.Draw(image)
    lines: list[RenderedLine] = []
    cells: list[RenderedCell] = []
    rules: list[Box] = []
    for top, band in placements:
        for op in band.ops:
            if isinstance(op, LineOp):
                line = _draw_line(image, op, top, ink)
                if line is not None:
                    lines.append(line)
            elif isinstance(op, CellOp):
                x1, y1, x2, y2 = op.box
                box = (x1, y1 + top, x2, y2 + top)
                draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), outline=ink, width=1)
                cells.append(
                    RenderedCell(
                        op.table, op.row, op.col, op.rowspan, op.colspan, op.header, op.text, box
                    )
                )
            else:
                x1, y1, x2, y2 = op.box
                box = (x1, y1 + top, x2, y2 + top)
                draw.rectangle((box[0], box[1], box[2] - 1, box[3] - 1), fill=ink)
                rules.append(box)
    return RenderedPage(image=image, lines=tuple(lines), cells=tuple(cells), rules=tuple(rules))


def _draw_line(image: Image.Image, op: LineOp, top: int, ink: RGB) -> RenderedLine | None:
    """Draw the runs and return the line with the union of their ink, clipped to the page.

    Each run is rasterised once into a coverage mask, which gives its exact ink box and is
    then blended onto the page in ``ink`` (the blend ``ImageDraw.text`` itself uses).
    """
    width, height = image.size
    baseline = top + op.y
    x1, y1, x2, y2 = width, height, 0, 0
    for run in op.runs:
        left, upper, right, lower = run.font.getbbox(run.text, anchor="ls")
        if right <= left or lower <= upper:
            continue
        coverage = Image.new("L", (right - left, lower - upper))
        ImageDraw.Draw(coverage).text((-left, -upper), run.text, 255, run.font, anchor="ls")
        ink_box = coverage.getbbox()
        if ink_box is None:
            continue
        image.paste(ink, (run.x + left, baseline + upper), coverage)
        x1 = min(x1, run.x + left + ink_box[0])
        y1 = min(y1, baseline + upper + ink_box[1])
        x2 = max(x2, run.x + left + ink_box[2])
        y2 = max(y2, baseline + upper + ink_box[3])
    box = (max(x1, 0), max(y1, 0), min(x2, width), min(y2, height))
    if box[0] >= box[2] or box[1] >= box[3]:
        return None
    return RenderedLine(text=" ".join(run.text.strip() for run in op.runs), box=box, role=op.role)


def check_render_args(source: object, name: str, config: object, single_page: object) -> str:
    """Validate a renderer's arguments up front; returns ``source`` with newlines as ``\\n``."""
    if not isinstance(source, str):
        raise TypeError(f"{name} must be str, got {type(source).__name__}")
    if not isinstance(config, RenderConfig):
        raise TypeError(f"config must be a RenderConfig, got {type(config).__name__}")
    if not isinstance(single_page, bool):
        raise TypeError(f"single_page must be bool, got {type(single_page).__name__}")
    return source.replace("\r\n", "\n").replace("\r", "\n")
