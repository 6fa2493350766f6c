"""OmniDocBench v1.6's display-formula step (v1_6.formula_pool, v1_6.formula_match,
v1_6.cdm_variants) against the official code: ``v16_formula_cases.json.gz``
(gen_v16_formula_cases.py; the candidate search also replayed on the recorded official
quick-match calls, so that it is checked apart from v1_6.quick), the formula stage of the 54
constructed pages in ``v16_cases.json.gz`` and of the random pages in
``v16_page_cases.json.gz``."""

from __future__ import annotations

import copy
import gzip
import json
import math
from collections import Counter

import pytest

from evalsuite.metrics.omnidocbench.v1_6.formula_match import (
    attach_formula_cdm_surrogates,
    match_display_formula_candidates,
)
from evalsuite.metrics.omnidocbench.v1_6.formula_pool import (
    build_formula_candidate_pool,
    normalize_logic_brace_formula,
)
from evalsuite.metrics.omnidocbench.v1_6.normalize import normalize_formula
from evalsuite.metrics.omnidocbench.v1_6.split import split_formula
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
CASES = json.loads(gzip.decompress((FIXTURES / "v16_formula_cases.json.gz").read_bytes()))
PAGES = CASES["pages"]
CONSTRUCTED = json.loads(gzip.decompress((FIXTURES / "v16_cases.json.gz").read_bytes()))["pages"]
GT_PAGES = {case["id"]: case["gt_page"] for case in json.loads(
    gzip.decompress((FIXTURES / "cases.json.gz").read_bytes()))["cases"]}
RANDOM_PAGES = [page for page in json.loads(gzip.decompress(
    (FIXTURES / "v16_page_cases.json.gz").read_bytes()))["pages"]
    if "formula_candidates" in page["stages"]]


def _json(value):
    return json.loads(json.dumps(value))


def _replay(calls: list[dict]):
    """A quick match answering the recorded official calls, in order, checking the arguments."""
    pending = iter(copy.deepcopy(calls))

    def quick_match(gt_items, pred_items, line_type, img_name, split_pred_formula=True):
        call = next(pending)
        assert _json([gt_items, pred_items, line_type, split_pred_formula]) == [
            call["gt_items"], call["pred_items"], call["line_type"], call["split_pred_formula"]]
        return call["rows"]

    return quick_match, pending


@pytest.mark.parametrize("page", PAGES, ids=[page["img_name"] for page in PAGES])
def test_pool(page):
    assert _json(build_formula_candidate_pool(copy.deepcopy(page["pred_dataset"]))) == page["pool"]


@pytest.mark.parametrize("page", PAGES, ids=[page["img_name"] for page in PAGES])
def test_candidates_with_recorded_quick_match(page):
    quick_match, pending = _replay(page["quick_calls"])
    rows = match_display_formula_candidates(
        copy.deepcopy(page["gt_formula"]), copy.deepcopy(page["pool"]),
        copy.deepcopy(page["current"]), page["img_name"], quick_match=quick_match)
    assert next(pending, None) is None  # every official call was made
    assert _json(rows) == page["result"]


@pytest.mark.parametrize("page", PAGES, ids=[page["img_name"] for page in PAGES])
def test_candidates_with_suite_quick_match(page):
    pytest.importorskip("evalsuite.metrics.omnidocbench.v1_6.quick")
    rows = match_display_formula_candidates(
        copy.deepcopy(page["gt_formula"]), copy.deepcopy(page["pool"]),
        copy.deepcopy(page["current"]), page["img_name"])
    assert _json(rows) == page["result"]


@pytest.mark.parametrize("page", PAGES, ids=[page["img_name"] for page in PAGES])
def test_surrogates_of_page_rows(page):
    assert _json(attach_formula_cdm_surrogates(copy.deepcopy(page["result"]))) == page["surrogates"]


@pytest.mark.parametrize("case", CASES["surrogates"])
def test_surrogates(case):
    assert _json(attach_formula_cdm_surrogates(copy.deepcopy(case["matches"]))) == case["result"]


@pytest.mark.parametrize(("formula", "expected"), CASES["logic_brace"])
def test_logic_brace(formula, expected):
    assert normalize_logic_brace_formula(formula) == expected


def _constructed_inputs(page: dict) -> tuple[list, list, list]:
    """(ground-truth formulas, pool, current rows) of a constructed page, from its ground truth
    and the recorded stages before the formula step."""
    from evalsuite.metrics.omnidocbench.v1_6.page import page_elements, sorted_by_order

    gt_formula = sorted_by_order(
        page_elements(GT_PAGES[page["id"]]).get("equation_isolated") or [])
    pool = build_formula_candidate_pool(page["stages"]["md_tex_filter"])
    current = [row for row in page["stages"].get("_maybe_apply_local_text_span_fallback", [])
               if row.get("gt_category_type") == "equation_isolated" and row["gt_idx"] != [""]]
    return gt_formula, pool, current


@pytest.mark.parametrize("page", CONSTRUCTED, ids=[page["id"] for page in CONSTRUCTED])
def test_constructed_pages(page):
    pytest.importorskip("evalsuite.metrics.omnidocbench.v1_6.quick")
    gt_formula, pool, current = _constructed_inputs(page)
    if not gt_formula and not pool:  # the page step skips the formula step
        assert "_match_display_formula_candidates" not in page["stages"]
        return
    rows = match_display_formula_candidates(gt_formula, pool, current, page["id"] + ".jpg")
    assert _json(rows) == page["stages"]["_match_display_formula_candidates"]
    assert _json(attach_formula_cdm_surrogates(rows)) == page["outputs"]["display_formula"]


@pytest.mark.parametrize("page", RANDOM_PAGES, ids=[page["img_name"] for page in RANDOM_PAGES])
def test_random_pages_pool_and_surrogates(page):
    stages = page["stages"]
    pool = build_formula_candidate_pool(dict(stages["md_tex_filter"]))
    assert _json(pool) == stages["formula_pool"]
    surrogates = stages["formula_surrogates"]
    assert _json(attach_formula_cdm_surrogates(surrogates["matches"])) == surrogates["result"]


@pytest.mark.parametrize("page", RANDOM_PAGES, ids=[page["img_name"] for page in RANDOM_PAGES])
def test_random_pages_candidates(page):
    pytest.importorskip("evalsuite.metrics.omnidocbench.v1_6.quick")
    args = copy.deepcopy(page["stages"]["formula_candidates"])
    rows = match_display_formula_candidates(args["gt_formula"], args["pred_formula"],
                                            args["current"], page["img_name"])
    assert _json(rows) == page["stages"]["formula_candidates"]["result"]


def _row_counts(formula: str) -> int:
    found = split_formula(formula)
    return len(found.rows) if found else 1


def test_cases_reach_the_branches():
    """The generated pages choose every main candidate kind, make every kind, and the side
    cases (surrogates, logic braces) change something often enough."""
    chosen = Counter(page["chosen"] for page in PAGES)
    for name in ("current_match", "quick_unsplit", "hungarian_unsplit", "dp_unsplit",
                 "split_hungarian", "split_dp", "logic_norm_quick_unsplit",
                 "logic_norm_split_hungarian"):
        assert chosen[name] >= 1, name
    made = {name for page in PAGES for name in page["candidates"]}
    kinds = ("quick_unsplit", "hungarian_unsplit", "dp_unsplit", "dp_unsplit_allow_gaps",
             "split_hungarian", "split_dp", "split_dp_allow_gaps")
    assert {"current_match", *kinds, *("logic_norm_" + kind for kind in kinds)} <= made
    rows = [row for page in PAGES for row in page["result"]]
    assert any(len(row["pred_idx"]) >= 2 for row in rows)  # one formula from several
    assert any(row["pred_idx"] == [""] for row in rows)  # a formula left unmatched
    assert any(len(call["gt_items"]) > 1 for page in PAGES for call in page["quick_calls"])
    surrogate_keys = Counter(key for case in CASES["surrogates"] for row in case["result"]
                             for key in row if key in ("pred_cdm", "pred_cdm_alt"))
    assert surrogate_keys["pred_cdm"] >= 10 and surrogate_keys["pred_cdm_alt"] >= 10
    assert any(row.get("pred_cdm_alt") for page in PAGES for row in page["surrogates"])
    assert sum(formula != expected for formula, expected in CASES["logic_brace"]) >= 10
    # the inputs: predictions too long to cut, too many cuts (> 128), rescued predictions,
    # ground-truth formulas that normalise to nothing, count gaps of 3 and more
    counts = [[_row_counts(item["content"]) for item in page["pool"]] for page in PAGES]
    assert any(count > 8 for page in counts for count in page)
    assert any(math.prod(2 ** (c - 1) for c in page if 1 < c <= 8) > 128 for page in counts)
    assert any(item.get("fine_category_type") == "formula_rescue"
               for page in PAGES for item in page["pool"])
    assert any(not normalize_formula(item["latex"])
               for page in PAGES for item in page["gt_formula"])
    assert any(abs(len(page["gt_formula"]) - len(page["pool"])) >= 3 for page in PAGES)
