"""olmOCR-bench's unit tests of a page's markdown, decided exactly as the official scorer does.

Reference: ``olmocr.bench.tests`` of the PyPI release olmocr 0.4.27 (git tag v0.4.27, commit
1e139a5), the code ``pip install olmocr`` scores with today. Verdicts and explanation strings are
checked equal to that code's on 1,500 generated cases (``tests/fixtures/olmocr_bench``). The
decisions rest on rapidfuzz's ``ratio``/``partial_ratio`` and fuzzysearch's
``find_near_matches`` (the same libraries the reference calls; checked with rapidfuzz 3.14 and
fuzzysearch 0.8.1) and on BeautifulSoup's ``html.parser`` for HTML tables.

Test types (a JSONL line each; unknown fields are refused):

- ``present`` / ``absent``: ``text`` (normalised) must / must not occur in the normalised page:
  ``partial_ratio(text, page) / 100 >= 1 - max_diffs / len(text)``. ``case_sensitive`` (default
  true) and a ``first_n`` / ``last_n`` character window of the normalised page.
- ``order``: some fuzzy occurrence (Levenshtein <= ``max_diffs``) of ``before`` starts strictly
  before some occurrence of ``after``.
- ``table``: some cell of some table (markdown, unless ``ignore_markdown_tables``, then HTML)
  with ``ratio(cell) >= max(0.5, 1 - max_diffs / len(cell))`` whose neighbours ``up`` / ``down``
  / ``left`` / ``right`` and headings ``top_heading`` / ``left_heading`` match under the same
  rule (each with its own length).
- ``baseline``: the page is not blank (alphanumeric characters), does not end in more than
  ``max_repeats`` repetitions of a 1- to 5-gram, and holds no CJK, kana or emoji; with
  ``max_length``, only "at most that many alphanumeric characters" (blank-page tests).
- ``math``: some equation of the page (``\\(…\\)``, ``\\[…\\]``, then unless
  ``ignore_dollar_delimited`` ``$$…$$`` and ``$…$``, each kind removed before the next is
  looked for) equals ``math``, or renders like it (:func:`evalsuite.render.katex.renders_match`),
  tried in decreasing ``ratio`` to ``math``.

Quirks kept from the reference: ``partial_ratio`` aligns the shorter string inside the longer,
so a page shorter than the text can "contain" it; neighbour checks at a table's edge pass; a
heading can be the cell itself (markdown row 0 and column 0 are headings); a non-integer
``rowspan``/``colspan`` makes the test raise (the benchmark counts that as an error); the
repetition, character and math checks read the raw page, the others the normalised one; a
``math`` reference KaTeX cannot parse matches any page with at least one equation. Deviation:
a test line with a non-string text field is refused (the reference crashes on it).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from bs4 import BeautifulSoup
from fuzzysearch import find_near_matches
from rapidfuzz import fuzz

from evalsuite.errors import EvalsuiteError
from evalsuite.render.katex import renders_match, shared_renderer

OLMOCR_VERSION = "0.4.27"
"""The olmocr release whose ``olmocr.bench.tests`` this module reproduces."""

_REPLACEMENTS = {
    "‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"', "＿": "_",
    "–": "-", "—": "-", "‑": "-", "‒": "-", "−": "-", "\u00b5": "\u03bc",
}
_DISALLOWED = re.compile(
    "[\u4e00-\u9fff\u3040-\u309f\u30a0-\u30ff"
    "\U0001f600-\U0001f64f\U0001f300-\U0001f5ff\U0001f680-\U0001f6ff\U0001f1e0-\U0001f1ff]"
)
_IMAGE_LINK = re.compile(r"!\[.*?\]\(.*?\)")
_TEST_TYPES = ("baseline", "present", "absent", "order", "table", "math")
_COMMON_FIELDS = {"pdf", "page", "id", "type", "max_diffs", "checked", "url"}


class TestDefinitionError(EvalsuiteError, ValueError):
    """A test line the official loader refuses (its ``ValidationError`` or ``TypeError``)."""

    __test__ = False  # not a pytest test class


@dataclass(frozen=True)
class Verdict:
    """Whether a test passed, and the official explanation of a failure ("" on a pass)."""

    passed: bool
    explanation: str = ""


def normalize_text(text: str) -> str:
    """olmOCR-bench's text normalisation, in its order: ``<br>``/``<br/>`` to a space, every
    whitespace run to one space, markdown bold (``**``, ``__``), ``<b>``/``<i>`` tags, then
    italics (``*``, ``_``) unwrapped, NFC, typographic quotes, dashes, fullwidth low line and
    micro sign mapped to their plain forms."""
    text = re.sub(r"<br/?>", " ", text)
    text = re.sub(r"\s+", " ", text)
    for pattern in (r"\*\*(.*?)\*\*", r"__(.*?)__"):
        text = re.sub(pattern, r"\1", text)
    text = re.sub(r"</?b>", "", text)
    text = re.sub(r"</?i>", "", text)
    for pattern in (r"\*(.*?)\*", r"_(.*?)_"):
        text = re.sub(pattern, r"\1", text)
    text = unicodedata.normalize("NFC", text)
    for fancy, plain in _REPLACEMENTS.items():
        text = text.replace(fancy, plain)
    return text


def _threshold(max_diffs: int, expected: str) -> float:
    """``1 - max_diffs / len(expected)`` (len 0 counts as 1)."""
    return 1.0 - max_diffs / (len(expected) if len(expected) > 0 else 1)


def _cell_threshold(max_diffs: int, expected: str) -> float:
    return max(0.5, _threshold(max_diffs, expected))


@dataclass(frozen=True)
class PageTest:
    """A test's common fields: the page it is about (``pdf``, 1-based ``page``), its ``id`` and
    type, and ``max_diffs``, the edits it tolerates."""

    __test__ = False

    pdf: str
    page: Any
    id: str
    type: str
    max_diffs: int = 0
    checked: Any = None
    url: Any = None

    required_texts: ClassVar[tuple[str, ...]] = ()
    """Text fields a line of this type must have."""
    optional_texts: ClassVar[tuple[str, ...]] = ()
    normalized: ClassVar[bool] = True
    """Whether the text fields are normalised when the line is read (all types but math)."""

    def check(self) -> None:
        """Raise TestDefinitionError where the official loader refuses the test as read."""

    def run(self, markdown: str) -> Verdict:
        """Decide the test on a page's markdown."""
        raise NotImplementedError


@dataclass(frozen=True)
class PresenceTest(PageTest):
    """``present`` / ``absent``: ``text`` as normalised when the test was read."""

    text: str = ""
    case_sensitive: Any = True
    first_n: Any = None
    last_n: Any = None

    required_texts: ClassVar[tuple[str, ...]] = ("text",)

    def check(self) -> None:
        if not self.text.strip():
            raise TestDefinitionError("Text field cannot be empty")

    def run(self, markdown: str) -> Verdict:
        query, page = self.text, normalize_text(markdown)
        if not self.case_sensitive:
            query, page = query.lower(), page.lower()
        if self.first_n and self.last_n:
            page = page[: self.first_n] + page[-self.last_n :]
        elif self.first_n:
            page = page[: self.first_n]
        elif self.last_n:
            page = page[-self.last_n :]
        threshold = _threshold(self.max_diffs, query)
        best_ratio = fuzz.partial_ratio(query, page) / 100.0
        found = best_ratio >= threshold
        if self.type == "present":
            if found:
                return Verdict(True)
            expectation = f"Expected '{query[:40]}...'"
        else:
            if not found:
                return Verdict(True)
            expectation = f"Expected absence of '{query[:40]}...'"
        return Verdict(
            False,
            f"{expectation} with threshold {threshold} but best match ratio was {best_ratio:.3f}",
        )


@dataclass(frozen=True)
class OrderTest(PageTest):
    """``order``: ``before`` and ``after``, normalised when the test was read."""

    before: str = ""
    after: str = ""

    required_texts: ClassVar[tuple[str, ...]] = ("before", "after")

    def check(self) -> None:
        if not self.before.strip():
            raise TestDefinitionError("Before field cannot be empty")
        if not self.after.strip():
            raise TestDefinitionError("After field cannot be empty")
        if self.max_diffs > len(self.before) // 2 or self.max_diffs > len(self.after) // 2:
            raise TestDefinitionError(
                "Max diffs is too large for this test, greater than 50% of the search string"
            )

    def run(self, markdown: str) -> Verdict:
        page = normalize_text(markdown)
        starts = []
        for name, text in (("before", self.before), ("after", self.after)):
            matches = find_near_matches(text, page, max_l_dist=self.max_diffs)
            if not matches:
                return Verdict(
                    False, f"'{name}' text '{text[:40]}...' not found with max_l_dist "
                    f"{self.max_diffs}"
                )
            starts.append([match.start for match in matches])
        if min(starts[0]) < max(starts[1]):
            return Verdict(True)
        return Verdict(
            False,
            f"Could not find a location where '{self.before[:40]}...' appears before "
            f"'{self.after[:40]}...'.",
        )


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


@dataclass(frozen=True)
class TableTest(PageTest):
    """``table``: a ``cell`` and what must surround it; every text normalised when read."""

    cell: str = ""
    up: str = ""
    down: str = ""
    left: str = ""
    right: str = ""
    top_heading: str = ""
    left_heading: str = ""
    ignore_markdown_tables: Any = False

    required_texts: ClassVar[tuple[str, ...]] = ("cell",)
    optional_texts: ClassVar[tuple[str, ...]] = (
        "up", "down", "left", "right", "top_heading", "left_heading"
    )

    def run(self, markdown: str) -> Verdict:
        tables = [] if self.ignore_markdown_tables else markdown_tables(markdown)
        tables += html_tables(markdown)
        if not tables:
            return Verdict(False, "No tables found in the content")
        threshold = _cell_threshold(self.max_diffs, self.cell)
        reasons: list[str] = []
        for table in tables:
            rows, columns = table.shape
            for row in range(rows):
                for column in range(columns):
                    similarity = fuzz.ratio(self.cell, normalize_text(table.grid[row][column]))
                    if similarity / 100.0 < threshold:
                        continue
                    failures = self._relation_failures(table, row, column)
                    if not failures:
                        return Verdict(True)
                    reasons.extend(failures)
        if not reasons:
            return Verdict(
                False, f"No cell matching '{self.cell}' found in any table with threshold "
                f"{threshold}"
            )
        return Verdict(
            False, f"Found cells matching '{self.cell}' but relationships were not satisfied: "
            f"{'; '.join(reasons)}"
        )

    def _relation_failures(self, table: Table, row: int, column: int) -> list[str]:
        rows, columns = table.shape
        failures = []
        neighbours = (
            (self.up, row > 0, (row - 1, column), "Cell above"),
            (self.down, row < rows - 1, (row + 1, column), "Cell below"),
            (self.left, column > 0, (row, column - 1), "Cell to the left"),
            (self.right, column < columns - 1, (row, column + 1), "Cell to the right"),
        )
        for expected, exists, (r, c), label in neighbours:
            if not expected or not exists:  # at the table's edge the relation holds
                continue
            text = normalize_text(table.grid[r][c])
            similarity = fuzz.ratio(expected, text) / 100.0
            if similarity < _cell_threshold(self.max_diffs, expected):
                failures.append(
                    f"{label} '{text}' doesn't match expected '{expected}' "
                    f"(similarity: {similarity:.2f})"
                )
        if self.top_heading:
            candidates = (
                table.col_headers.get(column, []),
                [table.grid[r][column] for r in sorted(table.header_rows) if r < row],
                [table.grid[r][column] for r in range(row)],
            )
            failures += self._heading_failures(self.top_heading, candidates, "Top", row, column)
        if self.left_heading:
            candidates = (
                table.row_headers.get(row, []),
                [table.grid[row][c] for c in sorted(table.header_cols) if c < column],
                [table.grid[row][c] for c in range(column)],
            )
            failures += self._heading_failures(self.left_heading, candidates, "Left", row, column)
        return failures

    def _heading_failures(
        self, expected: str, candidates: tuple[list[Any], list[str], list[str]], side: str,
        row: int, column: int,
    ) -> list[str]:
        """The reference's three-stage heading search: the recorded headings, then non-blank
        cells of heading rows/columns before the cell, and only when neither gave any text
        scoring above 0, any non-blank cell before it; the first two stop at a good match."""
        recorded, heading_cells, any_cells = candidates
        threshold = _cell_threshold(self.max_diffs, expected)
        best_text, best_similarity = "", 0.0
        stages = (
            ([text for _, text in recorded], True, False),
            (heading_cells, True, True),
            (any_cells, False, True),
        )
        for stage, (texts, stops, skips_blank) in enumerate(stages):
            if stage == 2 and best_text:
                break
            for raw in texts:
                if skips_blank and not raw.strip():
                    continue
                text = normalize_text(raw)
                similarity = fuzz.ratio(expected, text) / 100.0
                if similarity > best_similarity:
                    best_similarity, best_text = similarity, text
                    if stops and best_similarity >= threshold:
                        return []
        if not best_text:
            return [f"No {side.lower()} heading found for cell at ({row}, {column})"]
        if best_similarity < threshold:
            return [
                f"{side} heading '{best_text}' doesn't match expected '{expected}' "
                f"(similarity: {best_similarity:.2f})"
            ]
        return []


def trailing_repeats(text: str, max_size: int) -> list[int]:
    """For n = 1..max_size, how many back-to-back copies of the text's last n characters end
    it (whitespace runs count as one space). Text shorter than n: 0."""
    text = re.sub(r"\s+", " ", text)
    counts = []
    for size in range(1, max_size + 1):
        count = 0
        if len(text) >= size:
            tail, start = text[-size:], len(text) - size
            while start >= 0 and text[start : start + size] == tail:
                count, start = count + 1, start - size
        counts.append(count)
    return counts


@dataclass(frozen=True)
class BaselineTest(PageTest):
    """``baseline``: page health; with ``max_length``, a blank-page check instead."""

    max_length: Any = None
    max_length_skips_image_alt_tags: Any = False
    max_repeats: Any = 30
    check_disallowed_characters: Any = True

    def run(self, markdown: str) -> Verdict:
        if self.max_length is not None:
            counted = markdown
            if self.max_length_skips_image_alt_tags:
                counted = _IMAGE_LINK.sub("", markdown)
            length = sum(1 for c in counted if c.isalnum())
            if length > self.max_length:
                return Verdict(
                    False, f"{length} characters were output for a page we expected to be blank"
                )
            return Verdict(True)
        if not any(c.isalnum() for c in markdown):
            return Verdict(False, "The text contains no alpha numeric characters")
        for size, count in enumerate(trailing_repeats(markdown, 5), start=1):
            if count > self.max_repeats:
                return Verdict(False, f"Text ends with {count} repeating {size}-grams, invalid")
        disallowed = _DISALLOWED.findall(markdown)
        if self.check_disallowed_characters and disallowed:
            return Verdict(False, f"Text contains disallowed characters {disallowed}")
        return Verdict(True)


_EQUATION_PATTERNS = (r"\\\((.+?)\\\)", r"\\\[(.+?)\\\]")
_DOLLAR_PATTERNS = (r"\$\$(.+?)\$\$", r"\$(.+?)\$")


def page_equations(markdown: str, *, dollars: bool = True) -> list[str]:
    """The page's delimited equations, stripped: every ``\\(…\\)``, then (with that text
    removed) every ``\\[…\\]``, then ``$$…$$`` and ``$…$`` (non-greedy, across lines)."""
    equations: list[str] = []
    patterns = _EQUATION_PATTERNS + (_DOLLAR_PATTERNS if dollars else ())
    for pattern in patterns:
        equations += [found.strip() for found in re.findall(pattern, markdown, re.DOTALL)]
        markdown = re.sub(pattern, "", markdown, flags=re.DOTALL)
    return equations


@dataclass(frozen=True)
class MathTest(PageTest):
    """``math``: a LaTeX equation the page must show."""

    math: str = ""
    ignore_dollar_delimited: Any = False

    required_texts: ClassVar[tuple[str, ...]] = ("math",)
    normalized: ClassVar[bool] = False

    def check(self) -> None:
        if not self.math.strip():
            raise TestDefinitionError("Math test must have non-empty math expression")

    def run(self, markdown: str) -> Verdict:
        equations = page_equations(markdown, dollars=not self.ignore_dollar_delimited)
        if any(equation == self.math for equation in equations):
            return Verdict(True)
        renderer = shared_renderer()
        reference = renderer.render(self.math)
        for equation in sorted(equations, key=lambda e: -fuzz.ratio(e, self.math)):
            if renders_match(reference, renderer.render(equation)):
                return Verdict(True)
        return Verdict(False, f"No match found for {self.math} anywhere in content")


_TEST_CLASSES: dict[str, type[PageTest]] = {
    "present": PresenceTest, "absent": PresenceTest, "order": OrderTest, "table": TableTest,
    "baseline": BaselineTest, "math": MathTest,
}
def parse_test(line: Mapping[str, Any]) -> PageTest:
    """A test from its JSONL object, validated and normalised as the official loader does.

    Raises TestDefinitionError with the official message for an empty ``pdf`` or ``id``, a
    ``max_diffs`` that is not a non-negative int, an unknown type, an empty (normalised)
    text, an ``order`` test whose ``max_diffs`` exceeds half of either text, and for a missing
    or unknown field.
    """
    kind = line.get("type")
    test_class = _TEST_CLASSES.get(kind)  # type: ignore[arg-type]
    if test_class is None:
        raise TestDefinitionError(f"Unknown test type: {kind}")
    own = {name for name in test_class.__dataclass_fields__} - _COMMON_FIELDS
    unknown = sorted(set(line) - _COMMON_FIELDS - own)
    if unknown:
        raise TestDefinitionError(f"unexpected field {unknown[0]!r} for a {kind} test")
    required = test_class.required_texts
    missing = [name for name in ("pdf", "page", "id", "type", *required) if name not in line]
    if missing:
        raise TestDefinitionError(f"a {kind} test needs the field {missing[0]!r}")
    if not line["pdf"]:
        raise TestDefinitionError("PDF filename cannot be empty")
    if not line["id"]:
        raise TestDefinitionError("Test ID cannot be empty")
    max_diffs = line.get("max_diffs", 0)
    if not isinstance(max_diffs, int) or max_diffs < 0:
        raise TestDefinitionError("Max diffs must be positive number or 0")
    values = dict(line)
    for name in (*required, *test_class.optional_texts):
        value = values.get(name)
        if (value is None and name in required) or not isinstance(value, (str, type(None))):
            # the official loader crashes here (AttributeError/TypeError): refused all the same
            raise TestDefinitionError(
                f"field {name!r} of a {kind} test must be a string, got {type(value).__name__}"
            )
        if value is not None and test_class.normalized:
            values[name] = normalize_text(value)
    test = test_class(**values)
    test.check()
    return test
