"""v1.6 quick match rows (v1_6.quick) == the official ``match_gt2pred_quick`` rows recorded by
tests/fixtures/omnidocbench/gen_v16_cases.py (random calls and the page step's calls)."""

from __future__ import annotations

import gzip
import json

import pytest

from evalsuite.metrics.omnidocbench.v1_6.quick import (
    match_quick,
    match_simple,
    sort_predictions,
    split_gt_items,
    split_pred_items,
)
from tests.support.paths import TEST_FIXTURES

CASES = json.loads(gzip.decompress(
    (TEST_FIXTURES / "omnidocbench/v16_cases.json.gz").read_bytes()))
CALLS = [(case["id"], case) for case in CASES["cases"]] + [
    (f"page{p}-call{k}", call)
    for p, page in enumerate(CASES["pages"])
    for k, call in enumerate(page["quick_match_calls"])
]


def _jsonable(rows: list[dict]) -> list[dict]:
    return json.loads(json.dumps(rows))


@pytest.mark.parametrize(("case_id", "call"), CALLS, ids=[case_id for case_id, _ in CALLS])
def test_rows_equal_official(case_id: str, call: dict) -> None:
    img = call["rows"][0]["img_id"] if call["rows"] else case_id
    rows = match_quick(call["gt_items"], call["pred_items"], "text_all", img,
                       call["split_pred_formula"])
    assert _jsonable(rows) == call["rows"]


@pytest.mark.parametrize(("case_id", "call"), CALLS, ids=[case_id for case_id, _ in CALLS])
def test_matcher_items_equal_official(case_id: str, call: dict) -> None:
    preds = sort_predictions(call["pred_items"])
    if call["split_pred_formula"]:
        preds = split_pred_items(preds)
    assert _jsonable(split_gt_items(call["gt_items"])) == call["matcher_gt_items"]
    assert _jsonable(preds) == call["matcher_pred_items"]


def test_inputs_left_unchanged() -> None:
    call = next(c for _, c in CALLS if any(
        i.get("category_type") == "equation_isolated" for i in c["pred_items"]))
    gt, pred = json.dumps(call["gt_items"]), json.dumps(call["pred_items"])
    match_quick(call["gt_items"], call["pred_items"], "text_all", "x.jpg")
    assert (json.dumps(call["gt_items"]), json.dumps(call["pred_items"])) == (gt, pred)


SIMPLE_FILE = TEST_FIXTURES / "omnidocbench/v16_simple_cases.json.gz"
SIMPLE = json.loads(gzip.decompress(SIMPLE_FILE.read_bytes()))["cases"]


@pytest.mark.parametrize("case", SIMPLE, ids=[case["id"] for case in SIMPLE])
def test_simple_rows_equal_official(case: dict) -> None:
    rows, _ = match_simple(case["gt_items"], case["pred_items"], "html_table",
                           case["rows"][0]["img_id"] if case["rows"] else "x.jpg")
    assert _jsonable(rows) == case["rows"]
