"""OmniDocBench v1.6's formula helpers of ``md_tex_filter``
(:mod:`evalsuite.metrics.omnidocbench.v1_6.extract_formulas`).

Exactness: the official helpers of ``src/core/preprocess/extract.py`` at 9dc1dec (pylatexenc
2.10) on random formula lines, captions, display formulas (margin split switch off and on) and
HTML tables (``fixtures/omnidocbench/v16_extract_formula_cases.json.gz``, from
``gen_v16_extract_formula_cases.py``); items compared with their key order.
"""

from __future__ import annotations

import gzip
import json

from evalsuite.metrics.omnidocbench.v1_6.extract_formulas import (
    display_formula_items,
    formula_rescue_item,
    html_table_formula_rescue_items,
    latex_fragment_to_plain_text,
    strip_formula_wrappers,
)
from tests.support.paths import TEST_FIXTURES

FIXTURE = TEST_FIXTURES / "omnidocbench/v16_extract_formula_cases.json.gz"
CASES = json.loads(gzip.decompress(FIXTURE.read_bytes()))


def _ordered(items: list[dict]) -> list[list[tuple]]:
    return [list(item.items()) for item in items]


def test_strip_and_plain_text_equal_official() -> None:
    wrong = [(text, official) for text, official in CASES["strip"]
             if strip_formula_wrappers(text) != official]
    wrong += [(text, official) for text, official in CASES["plain"]
              if latex_fragment_to_plain_text(text) != official]
    assert wrong == []


def test_rescue_items_equal_official() -> None:
    wrong = []
    for (text, position, fine), official in CASES["rescue"]:
        ours = formula_rescue_item(text, position, fine)
        if _ordered([ours] if ours else []) != _ordered([official] if official else []):
            wrong.append((text, official, ours))
    assert wrong == []
    assert sum(official is not None for _, official in CASES["rescue"]) > 100


def test_table_rescue_items_equal_official() -> None:
    wrong = [(html, official) for (html, position), official in CASES["table"]
             if _ordered(html_table_formula_rescue_items(html, position)) != _ordered(official)]
    assert wrong == []
    assert sum(bool(official) for _, official in CASES["table"]) > 100


def test_display_formula_items_equal_official() -> None:
    wrong = []
    for (line, position, fine, split), official in CASES["display"]:
        ours = display_formula_items(line, position, fine, split_margin_text=split)
        if _ordered(ours) != _ordered(official):
            wrong.append((line, position, fine, split, official, ours))
    assert wrong == []
    kinds = {item.get("fine_category_type") for _, items in CASES["display"] for item in items}
    assert "equation_caption" in kinds
    assert sum(len(official) > 1 for _, official in CASES["display"]) > 100
