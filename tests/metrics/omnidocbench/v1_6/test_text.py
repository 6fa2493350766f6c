"""OmniDocBench v1.6's text normalisation (:func:`.v1_6.normalize.normalize_text`).

Exactness: the official ``normalized_text`` at 9dc1dec (pylatexenc 2.10) on every text line of
the 54 constructed pages and on random lines reaching each conversion guard, and the text rows
of the official page step on those pages
(``fixtures/omnidocbench/v16_text_cases.json.gz``, from ``gen_v16_text_cases.py``).
"""

from __future__ import annotations

import gzip
import json

import pytest

from evalsuite.metrics.omnidocbench.common import normalize as v10_normalize
from evalsuite.metrics.omnidocbench.v1_6.normalize import inline_to_unicode, normalize_text
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "omnidocbench/v16_text_cases.json.gz"
CASES = json.loads(gzip.decompress(FIXTURE.read_bytes()))["cases"]
PAGE_FIXTURE = TEST_FIXTURES / "omnidocbench/v16_cases.json.gz"


def test_equals_official_on_every_case() -> None:
    wrong = [(text, official, normalize_text(text)) for text, official in CASES
             if normalize_text(text) != official]
    assert wrong == []


def test_cases_tell_the_versions_apart() -> None:
    """The cases are not all ones where v1.0's normaliser would do as well."""
    assert sum(v10_normalize.normalize_text(text) != official for text, official in CASES) > 100


@pytest.mark.parametrize(("body", "converted"), [
    ("x^{2}", "x^2"),                       # converted by pylatexenc 2.10
    ("{a} \\alpha", "a α"),
    ("a^2", "a^2"),                          # no \ { } $: kept, stripped
    ("a & b^2", None),                       # array-like: the span is kept with its $
    ("x" * 129, None),                       # too long
    ("{a", None),                            # unequal brace counts
    ("}a{", "}a{"),                          # equal counts but unbalanced: the body itself
    ("\\left( a", "\\left( a"),
    ("one two six ten \\x", "one two six ten \\x"),  # weak LaTeX: 4 words, 1 command
    ("one two \\x", "one two "),           # not weak: converted
])
def test_inline_conversion_guards(body: str, converted: str | None) -> None:
    assert inline_to_unicode(body) == converted


def test_circled_characters_read_plainly_on_both_sides_of_conversion() -> None:
    assert normalize_text("① ⓑ \\textcircled{ Z } $\\textcircled{7}_1$") == "1bZ7_1"


def test_equals_official_rows_of_the_page_step() -> None:
    """Each text row's normalised strings, as the official page step wrote them on the 54 pages
    (``v16_cases.json.gz``; rows join several lines)."""
    pages = json.loads(gzip.decompress(PAGE_FIXTURE.read_bytes()))["pages"]
    rows = [(row[side], row[f"norm_{side}"]) for page in pages
            for row in page["outputs"]["text_block"] for side in ("gt", "pred")
            if isinstance(row.get(side), str) and f"norm_{side}" in row]
    assert len(rows) > 200
    assert [(raw, normalize_text(raw)) for raw, _ in rows] == rows
