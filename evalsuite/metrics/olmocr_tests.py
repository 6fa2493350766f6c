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
from dataclasses import dataclass
from typing import Any, ClassVar

from fuzzysearch import find_near_matches
from rapidfuzz import fuzz

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.olmocr_tables import Table, html_tables, markdown_tables
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
