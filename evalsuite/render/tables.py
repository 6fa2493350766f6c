"""Tables: cells with spans placed on a grid (the HTML table model), parsed from HTML with lxml,
laid out as a ruled grid and cut into bands between rows that no rowspan crosses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import lxml.html
from lxml import etree

from evalsuite.render.config import RenderConfig
from evalsuite.render.fonts import load_font
from evalsuite.render.layout import Band, CellOp, Font, LineOp, Run, wrap

MAX_COLSPAN = 1000
MAX_ROWSPAN = 65534
"""HTML's limits on colspan and rowspan."""

_ALIGN = re.compile(r"text-align\s*:\s*(left|center|right)", re.IGNORECASE)


@dataclass(frozen=True)
class SourceCell:
    """A cell as written, before it is placed on the grid."""

    text: str
    rowspan: int = 1
    colspan: int = 1
    header: bool = False
    align: str = "left"


@dataclass(frozen=True)
class TableCell:
    """A cell placed on the grid: top-left slot ``(row, col)``, spans clipped to the table."""

    text: str
    row: int
    col: int
    rowspan: int
    colspan: int
    header: bool
    align: str


@dataclass(frozen=True)
class Table:
    cells: tuple[TableCell, ...]
    n_rows: int
    n_cols: int


def place_cells(rows: Sequence[Sequence[SourceCell]]) -> Table:
    """Place cells row by row, each in the first grid slot no earlier cell covers.

    A rowspan reaching past the last row is clipped to it; slots no cell covers stay empty.
    Overlapping cells (a table-model error in HTML) raise ValueError.
    """
    covered: set[tuple[int, int]] = set()
    cells: list[TableCell] = []
    for row, source_row in enumerate(rows):
        col = 0
        for source in source_row:
            while (row, col) in covered:
                col += 1
            rowspan = min(source.rowspan, len(rows) - row)
            slots = {
                (r, c) for r in range(row, row + rowspan) for c in range(col, col + source.colspan)
            }
            if slots & covered:
                raise ValueError(
                    f"table row {row}: cell {len(cells)} (colspan {source.colspan}) overlaps a "
                    "cell spanning down from an earlier row"
                )
            covered |= slots
            cells.append(
                TableCell(
                    source.text, row, col, rowspan, source.colspan, source.header, source.align
                )
            )
            col += source.colspan
    if not cells:
        raise ValueError("table has no cells")
    return Table(tuple(cells), n_rows=len(rows), n_cols=1 + max(c for _, c in covered))


def alignment(style: str | None, default: str = "left") -> str:
    """The ``text-align`` of a CSS ``style`` attribute, else ``default``."""
    match = _ALIGN.search(style or "")
    return match.group(1).lower() if match else default


def parse_html_tables(html: str) -> list[Table]:
    """Every outermost ``<table>`` in ``html``; nested tables are flattened into their cell's text.

    Raises ValueError for a table without cells or a colspan/rowspan that is not an integer
    within HTML's limits.
    """
    try:
        root = lxml.html.fragment_fromstring(html, create_parent="div")
    except etree.ParserError as error:
        raise ValueError(f"html could not be parsed: {error}") from None
    outermost = [
        t for t in root.iter("table") if not any(a.tag == "table" for a in t.iterancestors())
    ]
    return [_html_table(table, number) for number, table in enumerate(outermost)]


def _html_table(table: lxml.html.HtmlElement, number: int) -> Table:
    rows = []
    for index, tr in enumerate(table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")):
        in_head = tr.getparent().tag == "thead"
        row = []
        for cell in tr.xpath("./td | ./th"):
            where = f"html table {number}, row {index}"
            row.append(
                SourceCell(
                    text=_cell_text(cell),
                    rowspan=_span(cell.get("rowspan"), "rowspan", MAX_ROWSPAN, where),
                    colspan=_span(cell.get("colspan"), "colspan", MAX_COLSPAN, where),
                    header=in_head or cell.tag == "th",
                    align=alignment(cell.get("style"), (cell.get("align") or "left").lower()),
                )
            )
        rows.append(row)
    try:
        return place_cells(rows)
    except ValueError as error:
        raise ValueError(f"html table {number}: {error}") from None


def _cell_text(cell: lxml.html.HtmlElement) -> str:
    """The cell's text, whitespace collapsed, with a line break for each ``<br>``."""
    for br in cell.iter("br"):
        br.tail = "\n" + (br.tail or "")
    return "\n".join(" ".join(part.split()) for part in cell.text_content().split("\n")).strip()


def _span(value: str | None, name: str, limit: int, where: str) -> int:
    if value is None:
        return 1
    text = value.strip()
    if not text.isdigit() or not 1 <= int(text) <= limit:
        raise ValueError(f"{where}: {name} must be an integer from 1 to {limit}, got {value!r}")
    return int(text)


def table_bands(table: Table, index: int, config: RenderConfig, x: int, width: int) -> list[Band]:
    """Lay ``table`` out as a ruled grid ``width`` px wide at most, its left edge at ``x``.

    Cells are padded by 0.4 em; header cells use the bold face. Columns get their natural
    width (widest line) when all fit, else shrink towards their longest word, text wrapping.
    Rows are as tall as their tallest cell; a spanning cell's extra need goes to its last row
    or column. One band per group of rows that no rowspan crosses.
    """
    regular = load_font(config.font, config.size_px)
    bold = load_font(config.font, config.size_px, bold=True)

    def font_of(cell: TableCell) -> Font:
        return bold if cell.header else regular

    pad = max(2, round(0.4 * config.size_px))
    pitch = config.line_pitch_px
    ascent, descent = regular.getmetrics()
    col_widths = _column_widths(table, font_of, pad, width - 1)
    xs = [x]
    for col_width in col_widths:
        xs.append(xs[-1] + col_width)
    lines = {
        cell: [
            piece
            for part in cell.text.split("\n")
            for piece in wrap(
                part, font_of(cell), xs[cell.col + cell.colspan] - xs[cell.col] - 2 * pad
            )
        ]
        for cell in table.cells
    }
    needs = {
        cell: 2 * pad + ascent + descent + pitch * max(0, len(lines[cell]) - 1)
        for cell in table.cells
    }
    row_floor = 2 * pad + ascent + descent
    ys = [0]
    for row_height in _spread(
        table.n_rows, ((c.row, c.rowspan, needs[c]) for c in table.cells), row_floor
    ):
        ys.append(ys[-1] + row_height)

    bands = []
    for start, end in _row_groups(table):
        ops: list[CellOp | LineOp] = []
        for cell in (c for c in table.cells if start <= c.row < end):
            x1, x2 = xs[cell.col], xs[cell.col + cell.colspan]
            y1, y2 = ys[cell.row] - ys[start], ys[cell.row + cell.rowspan] - ys[start]
            ops.append(
                CellOp(
                    (x1, y1, x2 + 1, y2 + 1),
                    index,
                    cell.row,
                    cell.col,
                    cell.rowspan,
                    cell.colspan,
                    cell.header,
                    cell.text,
                )
            )
            for number, piece in enumerate(lines[cell]):
                ops.append(
                    LineOp(
                        y1 + pad + ascent + number * pitch,
                        (
                            Run(
                                _aligned_x(piece, font_of(cell), cell.align, x1 + pad, x2 - pad),
                                piece,
                                font_of(cell),
                            ),
                        ),
                        "table_cell",
                    )
                )
        height = ys[end] - ys[start]
        bands.append(Band(height=height, extent=height + 1, ops=tuple(ops)))
    return bands


def _aligned_x(text: str, font: Font, align: str, left: int, right: int) -> int:
    if align == "right":
        return max(left, right - math.ceil(font.getlength(text)))
    if align == "center":
        return max(left, left + (right - left - math.ceil(font.getlength(text))) // 2)
    return left


def _column_widths(
    table: Table, font_of: Callable[[TableCell], Font], pad: int, budget: int
) -> list[int]:
    """Column widths in px summing to at most ``budget`` where the longest words allow.

    All natural widths (widest line) when they fit; else each column between its longest word
    and its natural width, the spare width shared in proportion to the difference; else the
    longest-word widths with the widest capped at a common level (those words are split).
    """

    def widest(cell: TableCell, parts: list[str]) -> int:
        return math.ceil(max((font_of(cell).getlength(p) for p in parts), default=0)) + 2 * pad

    cells = table.cells
    natural = _spread(
        table.n_cols,
        ((c.col, c.colspan, widest(c, c.text.split("\n"))) for c in cells),
        2 * pad + 1,
    )
    minimum = _spread(
        table.n_cols, ((c.col, c.colspan, widest(c, c.text.split())) for c in cells), 2 * pad + 1
    )
    natural = [max(n, m) for n, m in zip(natural, minimum, strict=True)]
    if sum(natural) <= budget:
        return natural
    if sum(minimum) <= budget:
        spare, slack = budget - sum(minimum), sum(natural) - sum(minimum)
        return [m + (n - m) * spare // slack for n, m in zip(natural, minimum, strict=True)]
    return _water_fill(minimum, budget)


def _water_fill(widths: list[int], budget: int) -> list[int]:
    """Cap the widest columns at one level so the sum fits ``budget``; narrow ones stay whole."""
    remaining = budget
    for position, width in enumerate(sorted(widths)):
        left = len(widths) - position
        if width * left > remaining:
            level = max(1, remaining // left)
            return [min(w, level) for w in widths]
        remaining -= width
    return widths


def _spread(count: int, needs: Iterable[tuple[int, int, int]], floor: int) -> list[int]:
    """Sizes of ``count`` slots so each ``(first, span, need)`` fits in its slots' sum.

    Single-slot needs are met first; a spanning need's shortfall goes to its last slot,
    spans handled from short to long.
    """
    sizes = [floor] * count
    for first, span, need in sorted(needs, key=lambda item: item[1]):
        shortfall = need - sum(sizes[first : first + span])
        if shortfall > 0:
            sizes[first + span - 1] += shortfall
    return sizes


def _row_groups(table: Table) -> list[tuple[int, int]]:
    """``(start, end)`` row ranges whose boundaries no rowspan crosses."""
    crossed = {b for c in table.cells for b in range(c.row + 1, c.row + c.rowspan)}
    bounds = [0, *(b for b in range(1, table.n_rows) if b not in crossed), table.n_rows]
    return list(pairwise(bounds))
