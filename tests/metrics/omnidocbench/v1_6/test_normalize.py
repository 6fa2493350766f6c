"""OmniDocBench v1.6's formula normalisation (:mod:`evalsuite.metrics.omnidocbench.v1_6.normalize`).

Exactness: the official ``normalized_formula`` at 9dc1dec on 1,287 inputs (quirks, the v1.0
normalisation cases' formulas, the constructed pages' formulas, random token strings) and every
formula line the official page step normalised on the 54 constructed pages
(``fixtures/omnidocbench/v16_cases.json.gz``). Laws: idempotence of the delimiter strip, no
whitespace or upper case in the result.
"""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsuite.metrics.omnidocbench.v1_6.normalize import (
    normalize_formula,
    replace_circled,
    strip_formula_delimiters,
    strip_formula_tags,
)
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "omnidocbench/v16_cases.json.gz"
DATA = json.loads(gzip.decompress(FIXTURE.read_bytes()))
FORMULAS = DATA["formula_normalisation"]
PAGE_FORMULAS = sorted({
    (raw, norm)
    for page in DATA["pages"]
    for call in page["quick_match_calls"]
    for raw, norm, category in zip(
        call["gt_lines"], call["norm_gt"], call["gt_category"], strict=True
    )
    if category == "equation_isolated"
})


@pytest.mark.parametrize(("text", "expected"), FORMULAS)
def test_normalize_formula_equals_official(text: str, expected: str) -> None:
    assert normalize_formula(text) == expected


@pytest.mark.parametrize(("text", "expected"), PAGE_FORMULAS)
def test_page_formula_lines_equal_official(text: str, expected: str) -> None:
    assert normalize_formula(text) == expected


def test_quirks() -> None:
    assert normalize_formula("\\mathbfcal{A}") == "cala"  # \mathbf deleted before \mathbfcal
    assert normalize_formula("x \\tag{open") == "x{open"  # an unclosed tag loses \tag only
    assert replace_circled("\\textcircled{ 3 }\u2461\u24d0\u24b6") == "32aA"
    assert strip_formula_tags("a\\tag * {1}b\\tagx{c}") == "ab\\tagx{c}"


_FORMULA = st.text(alphabet="ab{}$\\[]() ^_+\n", max_size=16)


@given(_FORMULA)
def test_delimiter_strip_is_idempotent(text: str) -> None:
    once = strip_formula_delimiters(text)
    assert strip_formula_delimiters(once) == once


@given(_FORMULA)
def test_result_has_no_whitespace_or_upper_case(text: str) -> None:
    result = normalize_formula(text.upper())
    assert result == result.lower()
    assert not any(char.isspace() for char in result)
