"""OTSL table tokens to HTML, as MinerU2.5's client converts them (mineru-vl-utils 0.1.22 and 2.0.7,
``post_process/otsl2html.py:convert_otsl_to_html``, docling's parser and HTML export).

OTSL writes a table row by row: ``<fcel>`` a cell with text (the text follows the tag), ``<ecel>``
an empty cell, ``<lcel>`` / ``<ucel>`` / ``<xcel>`` a position covered by the cell to the left /
above / both, ``<nl>`` the end of a row. Rows are padded with ``<ecel>`` to the widest; a cell's
colspan is 1 + the run of ``<lcel>``/``<xcel>`` right of it, its rowspan 1 + the run of
``<ucel>``/``<xcel>`` below it. Cells are laid on a grid (a later cell overwrites an earlier one
where they overlap) and written row by row where they start, as ``<td>`` with ``rowspan`` before
``colspan``, text stripped and HTML-escaped; a grid position no cell covers is an empty
``<td></td>``. Quirks kept: a text piece belongs to a tag only when it directly follows that tag in
the answer and the tag lines up with the padded rows (text before the first tag, or after an
``<ecel>`` or span tag, is lost); an answer that already is ``<table…</table>`` is returned as is;
no cell at all gives "".
"""

from __future__ import annotations

import html
import itertools
import re
from dataclasses import dataclass

NEW_ROW = "<nl>"
FULL = "<fcel>"
EMPTY = "<ecel>"
LEFT = "<lcel>"
UP = "<ucel>"
CROSS = "<xcel>"
TAGS = (NEW_ROW, FULL, EMPTY, LEFT, UP, CROSS)
_TAG = re.compile("(" + "|".join(TAGS) + ")")


@dataclass(frozen=True)
class _Cell:
    text: str
    row: int
    column: int
    rows: int = 1
    columns: int = 1


def _rows(tags: list[str]) -> list[list[str]]:
    """The tag rows between ``<nl>``s (empty rows dropped), padded with ``<ecel>``."""
    rows = [list(run) for is_break, run in itertools.groupby(tags, lambda t: t == NEW_ROW)
            if not is_break]
    width = max((len(row) for row in rows), default=0)
    return [row + [EMPTY] * (width - len(row)) for row in rows]


def _stream(rows: list[list[str]], pieces: list[str]) -> list[str]:
    """The padded rows as one stream with each text piece after its tag: a piece is kept only
    when the answer's next piece is that very tag and the piece after it is text."""
    stream: list[str] = []
    at = 0
    for row in rows:
        for tag in row:
            stream.append(tag)
            if at < len(pieces) and pieces[at] == tag:
                at += 1
                if at < len(pieces) and pieces[at] not in TAGS:
                    stream.append(pieces[at])
                    at += 1
        stream.append(NEW_ROW)
        if at < len(pieces) and pieces[at] == NEW_ROW:
            at += 1
    return stream


def _run(cells: list[str], spans: tuple[str, ...]) -> int:
    """Length of the run of ``spans`` tags at the start of ``cells``."""
    return sum(1 for _ in itertools.takewhile(lambda tag: tag in spans, cells))


def _cells(rows: list[list[str]], stream: list[str]) -> list[_Cell]:
    cells = []
    row = column = 0
    for position, item in enumerate(stream):
        if item in (FULL, EMPTY):
            text, after = "", 1
            if item == FULL and stream[position + 1] not in TAGS:
                text, after = stream[position + 1], 2
            right = stream[position + after] if position + after < len(stream) else ""
            below = rows[row + 1][column] if row + 1 < len(rows) else ""
            columns = 1 + (_run(rows[row][column + 1:], (LEFT, CROSS))
                           if right in (LEFT, CROSS) else 0)
            down = [rows[r][column] for r in range(row + 1, len(rows))]
            spanned_rows = 1 + (_run(down, (UP, CROSS)) if below in (UP, CROSS) else 0)
            cells.append(_Cell(text.strip(), row, column, spanned_rows, columns))
        if item in (FULL, EMPTY, LEFT, UP, CROSS):
            column += 1
        elif item == NEW_ROW:
            row, column = row + 1, 0
    return cells


def otsl_to_html(answer: str) -> str:
    """The HTML table of an OTSL answer (see the module docstring)."""
    if answer.startswith("<table") and answer.endswith("</table>"):
        return answer
    pieces = [piece for piece in _TAG.split(answer) if piece.strip()]
    rows = _rows(_TAG.findall(answer))
    cells = _cells(rows, _stream(rows, pieces))
    if not cells:
        return ""
    height, width = len(rows), len(rows[0]) if rows else 0
    grid: list[list[_Cell | None]] = [[None] * width for _ in range(height)]
    for cell in cells:
        for r in range(min(cell.row, height), min(cell.row + cell.rows, height)):
            for c in range(min(cell.column, width), min(cell.column + cell.columns, width)):
                grid[r][c] = cell
    parts = ["<table>"]
    for r, grid_row in enumerate(grid):
        parts.append("<tr>")
        for c, cell in enumerate(grid_row):
            if cell is None:
                parts.append("<td></td>")
            elif (cell.row, cell.column) == (r, c):
                spans = (f' rowspan="{cell.rows}"' if cell.rows > 1 else "") + (
                    f' colspan="{cell.columns}"' if cell.columns > 1 else "")
                parts.append(f"<td{spans}>{html.escape(cell.text)}</td>")
        parts.append("</tr>")
    return "".join(parts) + "</table>"
