"""olmOCR-bench's reading of the tables in a page, as olmocr 0.4.27's ``olmocr.bench.tests``
parses them for its ``table`` test (:class:`~evalsuite.metrics.olmocr_tests.TableTest`): markdown
and HTML tables as rectangular grids of cell texts with their heading rows, heading columns and
the headings of each row and column. (The official code moved this reading to its own module,
``table_parsing.py``, after 0.4.27.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bs4 import BeautifulSoup


@dataclass
class Table:
    """A table as the reference sees it: a rectangular grid of cell texts, its heading rows and
    columns, and per column / row the (index, text) of the headings above / left of it."""

    grid: list[list[str]]
    header_rows: set[int] = field(default_factory=set)
    header_cols: set[int] = field(default_factory=set)
    col_headers: dict[int, list[tuple[int, str]]] = field(default_factory=dict)
    row_headers: dict[int, list[tuple[int, str]]] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.grid), (len(self.grid[0]) if self.grid else 0)


def _rectangular(rows: list[list[str]]) -> list[list[str]]:
    """Rows padded with "" to the widest; text as a numpy str array keeps it (no trailing NUL)."""
    width = max(len(row) for row in rows)
    return [[cell.rstrip("\x00") for cell in row] + [""] * (width - len(row)) for row in rows]


def markdown_tables(markdown: str) -> list[Table]:
    """Every run of two or more consecutive lines containing ``|``, as a table: the first
    line made of ``- :`` only (pipes aside) and lines made of ``- :|`` only are dropped, cells are
    the stripped ``|``-separated pieces less one empty piece at each end; row 0 and column 0
    are the headings."""
    tables = []
    block: list[str] = []
    for line in [*markdown.strip().split("\n"), ""]:
        if "|" in line:
            block.append(line)
            continue
        if len(block) >= 2 and (rows := _markdown_rows(block)):
            grid = _rectangular(rows)
            width = len(grid[0])
            tables.append(
                Table(
                    grid,
                    header_rows={0},
                    header_cols={0} if width > 0 else set(),
                    col_headers={column: [(0, grid[0][column])] for column in range(width)},
                    row_headers={row: [(0, grid[row][0])] for row in range(1, len(grid))}
                    if width > 0 else {},
                )
            )
        block = []
    return tables


def _markdown_rows(lines: list[str]) -> list[list[str]]:
    separator = next(
        (
            index
            for index, line in enumerate(lines)
            if (bare := line.replace("|", "").strip()) and all(c in "- :" for c in bare)
        ),
        None,
    )
    rows = []
    for index, line in enumerate(lines):
        if index == separator or (line.strip() and all(c in "- :|" for c in line)):
            continue
        cells = [cell.strip() for cell in line.split("|")]
        if cells and cells[0] == "":
            cells = cells[1:]
        if cells and cells[-1] == "":
            cells = cells[:-1]
        if cells:
            rows.append(cells)
    return rows


def html_tables(markdown: str) -> list[Table]:
    """Every ``<table>`` (nested ones too, also inside their outer table's rows) with spans laid
    out as the reference does: a rowspan repeats its text downwards, other spanned positions
    are "" and only filled before a later cell of the same row. Heading rows: ``thead`` rows,
    rows with a ``th`` and rows a ``th`` spans; heading columns: those a ``th`` spans.

    Raises ValueError for a ``rowspan``/``colspan`` that ``int()`` rejects.
    """
    soup = BeautifulSoup(markdown, "html.parser")
    return [table for element in soup.find_all("table") if (table := _html_table(element))]


def _html_table(element: Any) -> Table | None:
    rows = element.find_all(["tr"])
    table = Table(grid=[])
    head = element.find("thead")
    if head:
        for row in head.find_all("tr"):
            table.header_rows.add(rows.index(row))  # bs4 tags compare by content, as there
    spanned: dict[tuple[int, int], str] = {}
    column_spans: dict[str, set[int]] = {}
    row_spans: dict[str, set[int]] = {}
    raw_rows: list[list[str]] = []
    for row_index, row in enumerate(rows):
        texts: list[str] = []
        column = 0
        if row.find("th"):
            table.header_rows.add(row_index)
        for cell in row.find_all(["th", "td"]):
            while (row_index, column) in spanned:
                texts.append(spanned[(row_index, column)])
                column += 1
            for line_break in cell.find_all("br"):
                line_break.replace_with("\n")
            text = cell.get_text().strip()
            rowspan, colspan = int(cell.get("rowspan", 1)), int(cell.get("colspan", 1))
            texts.append(text)
            for down in range(rowspan):
                for across in range(colspan):
                    if down or across:
                        spanned[(row_index + down, column + across)] = (
                            text if across == 0 else ""
                        )
            if cell.name == "th":
                _record_heading(table, rows, row_index, column, text, rowspan, colspan,
                                column_spans, row_spans)
            if cell.name == "td" and rowspan > 1 and column in table.header_cols:
                for down in range(1, rowspan):
                    if row_index + down < len(rows):
                        table.row_headers.setdefault(row_index + down, []).append((column, text))
            column += colspan
        raw_rows.append(texts)
    _spread_headings(table, raw_rows, column_spans, row_spans)
    if not raw_rows:
        return None
    width = max(len(row) for row in raw_rows)
    table.grid = _rectangular(raw_rows) if width else [[] for _ in raw_rows]
    return table


def _record_heading(
    table: Table, rows: list[Any], row_index: int, column: int, text: str, rowspan: int,
    colspan: int, column_spans: dict[str, set[int]], row_spans: dict[str, set[int]],
) -> None:
    """A ``th``: its columns become heading columns, the rows it spans heading rows, and it is
    a column heading of each column it covers."""
    table.header_cols.update(range(column, column + colspan))
    table.header_rows.update(
        row_index + down for down in range(1, rowspan) if row_index + down < len(rows)
    )
    for covered in range(column, column + colspan):
        table.col_headers.setdefault(covered, []).append((row_index, text))
        if text and colspan > 1:
            column_spans.setdefault(text, set()).add(covered)
    if text and rowspan > 1:
        row_spans.setdefault(text, set()).update(range(row_index, row_index + rowspan))


def _spread_headings(
    table: Table, raw_rows: list[list[str]], column_spans: dict[str, set[int]],
    row_spans: dict[str, set[int]],
) -> None:
    """A wide ``th`` heads every column from its first one to the row's end (in data rows); a
    tall one heads its rows; every non-blank cell of a heading column heads its row."""
    for text, columns in column_spans.items():
        for start in columns:
            for row_index, row in enumerate(raw_rows):
                if row_index in table.header_rows:
                    continue
                for covered in range(start, len(row)):
                    headings = table.col_headers.setdefault(covered, [])
                    if not any(heading == text for _, heading in headings):
                        first_row = min(r for r, _ in table.col_headers.get(start, [(0, "")]))
                        headings.append((first_row, text))
    for text, spanned_rows in row_spans.items():
        for row_index in spanned_rows:
            if row_index < len(raw_rows):
                first_column = min(table.header_cols) if table.header_cols else 0
                headings = table.row_headers.setdefault(row_index, [])
                if not any(heading == text for _, heading in headings):
                    headings.append((first_column, text))
    for column in table.header_cols:
        for row_index, row in enumerate(raw_rows):
            if column < len(row) and row[column].strip():
                headings = table.row_headers.setdefault(row_index, [])
                if not any(heading == row[column] for _, heading in headings):
                    headings.append((column, row[column]))
