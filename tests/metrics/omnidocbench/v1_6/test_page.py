"""OmniDocBench v1.6's page step (evalsuite.metrics.omnidocbench.v1_6.page) against the official
page step (``End2EndDataset.process_get_matched_elements`` at 9dc1dec): each step on the inputs
the official one was given, the page's glue with the other modules' steps replayed from the
record, and whole pages with the suite's own steps.

Cases: ``v16_page_cases.json.gz`` (gen_v16_page_cases.py, 400 generated pages with every
stage recorded, and 1000 inputs of the local text-span fallback alone) and the ``pages`` of
``v16_cases.json.gz`` (gen_v16_cases.py, the 54 constructed pages; their quick-match calls,
local-fallback results and outputs).
"""

from __future__ import annotations

import copy
import gzip
import json
from functools import cache
from typing import Any

import pytest

from evalsuite.metrics.omnidocbench.common.ground_truth import IGNORED_CATEGORIES
from evalsuite.metrics.omnidocbench.v1_6.page import (
    PageSteps,
    adapt_cross_category_norm,
    local_text_span_fallback,
    match_extracted_page,
    page_elements,
    reading_order,
    sorted_by_order,
    table_candidates,
    without_categories,
)
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
MIXED = ("text_block", "title", "code_txt", "code_txt_caption", "reference", "equation_caption",
         "figure_caption", "figure_footnote", "table_caption", "table_footnote", "code_algorithm",
         "code_algorithm_caption", "header", "footer", "page_footnote", "page_number",
         "equation_isolated")
TABLE_LIKE = ("html_table", "latex_table", "md2html_table", "formula_rescue")


def _load(name: str) -> dict:
    return json.loads(gzip.decompress((FIXTURES / name).read_bytes()))


@cache
def generated_pages() -> dict[str, dict]:
    """The generated pages, ``md_tex_filter``'s output (recorded as pairs) as a dict in its
    order."""
    pages = {}
    for page in _load("v16_page_cases.json.gz")["pages"]:
        page["stages"]["md_tex_filter"] = dict(page["stages"]["md_tex_filter"])
        pages[page["id"]] = page
    return pages


@cache
def constructed_pages() -> dict[str, dict]:
    """The 54 constructed pages: the v1.6 page record joined with its ground truth and
    prediction from cases.json.gz."""
    source = {case["id"]: case for case in _load("cases.json.gz")["cases"]}
    pages = {}
    for page in _load("v16_cases.json.gz")["pages"]:
        case = source[page["id"]]
        extracted = page["stages"]["md_tex_filter"]  # recorded with sorted keys: reorder
        ordered = sorted(extracted, key=lambda category: extracted[category][0]["position"][0])
        page["stages"]["md_tex_filter"] = {category: extracted[category] for category in ordered}
        pages[page["id"]] = page | {"gt_page": case["gt_page"],
                                    "markdown": case["prediction_md"],  # None: no prediction file
                                    "img_name": case["image_name"]}
    return pages


GENERATED = sorted(generated_pages())
CONSTRUCTED = sorted(constructed_pages())


def plain(value: Any) -> Any:
    """What the recorded JSON holds: lists for tuples and ranges, Python scalars for numpy's."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, range)):
        return [plain(item) for item in value]
    if hasattr(value, "item"):
        return value.item()
    return value


def pred_mix(extracted: dict) -> list[dict]:
    return [item for category, items in extracted.items() if category not in TABLE_LIKE
            for item in items]


# --- each step on the official step's inputs ----------------------------------------------------


@pytest.mark.parametrize("page_id", GENERATED)
def test_ground_truth_elements_and_mix(page_id: str) -> None:
    page = generated_pages()[page_id]
    elements = page_elements(copy.deepcopy(page["gt_page"]))
    assert plain(elements) == page["stages"]["get_page_elements"]
    mix = [item for category in MIXED for item in elements.get(category) or []]
    assert sorted_by_order(mix) == page["stages"]["gt_mix"]


@pytest.mark.parametrize("page_id", GENERATED)
def test_cross_category_norm(page_id: str) -> None:
    stages = generated_pages()[page_id]["stages"]
    rows = copy.deepcopy(stages["quick_match"]["rows"])
    assert [adapt_cross_category_norm(row) for row in rows] == stages.get("cross_norm", [])


@pytest.mark.parametrize("page_id", GENERATED)
def test_local_text_span_fallback(page_id: str) -> None:
    stages = generated_pages()[page_id]["stages"]
    recorded = stages["local_fallback"]
    assert pred_mix(stages["md_tex_filter"]) == recorded["pred_mix"]
    assert recorded["match"] == stages.get("cross_norm", [])
    given = copy.deepcopy(recorded["match"])
    assert local_text_span_fallback(given, recorded["pred_mix"]) == recorded["result"]
    assert given == recorded["match"], "the rows given are copied, not changed"


@pytest.mark.parametrize("page_id", CONSTRUCTED)
def test_local_text_span_fallback_constructed(page_id: str) -> None:
    """The 54 pages: quick rows → cross-category norm → local fallback, as recorded."""
    page = constructed_pages()[page_id]
    mix = pred_mix(page["stages"]["md_tex_filter"])
    assert mix == page["quick_match_calls"][0]["pred_items"], "categories reordered rightly"
    rows = [adapt_cross_category_norm(row)
            for row in copy.deepcopy(page["quick_match_calls"][0]["rows"])]
    found = local_text_span_fallback(rows, mix)
    assert found == page["stages"]["_maybe_apply_local_text_span_fallback"]


@cache
def fallback_cases() -> list[dict]:
    return _load("v16_page_cases.json.gz")["fallback_cases"]


@pytest.mark.parametrize("number", range(0, 1000, 50))
def test_local_text_span_fallback_alone(number: int) -> None:
    """Rows and predictions built for the step's limits (search window, run lengths, ties,
    owned positions), 50 cases a test."""
    for case in fallback_cases()[number : number + 50]:
        assert local_text_span_fallback(copy.deepcopy(case["rows"]), case["pred_mix"]) == (
            case["result"])


def test_local_fallback_reached() -> None:
    """The generated pages reach the branches the step exists for (else the cases test little)."""
    stages = [page["stages"] for page in generated_pages().values()]
    changed = [s for s in stages if s["local_fallback"]["result"] != s["local_fallback"]["match"]]
    rescored = [s for s in stages if s.get("cross_norm", []) != s["quick_match"]["rows"]]
    assert len(changed) >= 5 and len(rescored) >= 50
    assert len(fallback_cases()) == 1000
    assert sum(case["result"] != case["rows"] for case in fallback_cases()) >= 100


@pytest.mark.parametrize(
    "page_id", [key for key in GENERATED if "table_candidates" in generated_pages()[key]["stages"]]
)
def test_table_candidates(page_id: str) -> None:
    stages = generated_pages()[page_id]["stages"]
    extracted = stages["md_tex_filter"]
    recorded = stages["table_candidates"]
    converted = recorded[len(extracted.get("html_table") or []):]
    by_latex = {item["content"]: done["content"]
                for item, done in zip(extracted.get("latex_table") or [], converted, strict=True)}
    assert table_candidates(extracted, by_latex.__getitem__) == recorded


@pytest.mark.parametrize("page_id", GENERATED)
def test_ignored_rows_and_reading_order(page_id: str) -> None:
    page = generated_pages()[page_id]
    outputs = page["outputs"]
    rows = page["stages"]["local_fallback"]["result"]
    text = [row for row in rows if row.get("gt_category_type") in MIXED[:-1]]
    assert without_categories(text, IGNORED_CATEGORIES) == outputs["text_block"]
    ordered = outputs["text_block"] + outputs["display_formula"] + outputs["html_table"]
    if ordered:
        assert reading_order(ordered, page["img_name"]) == outputs["reading_order"]
    else:
        assert outputs["reading_order"] == []


# --- the page's glue, the other modules' steps replayed -----------------------------------------


def replayed_steps(stages: dict) -> PageSteps:
    """Steps that check they get the official step's arguments and return its recorded result."""

    def quick_match(gt_items, pred_items, line_type, img_name):
        call = stages["quick_match"]
        assert (gt_items, pred_items, line_type) == (
            call["gt_items"], call["pred_items"], call["line_type"])
        return copy.deepcopy(call["rows"])

    def simple_match(gt_items, pred_items, line_type, img_name):
        call = stages["table_match"]
        assert (gt_items, pred_items, line_type) == (
            call["gt_items"], call["pred_items"], call["line_type"])
        return copy.deepcopy(call["rows"]), None

    def latex_table_to_html(latex):
        extracted = stages["md_tex_filter"]
        html_count = len(extracted.get("html_table") or [])
        for item, done in zip(extracted["latex_table"], stages["table_candidates"][html_count:],
                              strict=True):
            if item["content"] == latex:
                return done["content"]
        raise AssertionError(f"table not recorded: {latex!r}")

    def formula_pool(pred_dataset):
        return copy.deepcopy(stages["formula_pool"])

    def formula_candidates(gt_formula, pred_formula, current, img_name):
        call = stages["formula_candidates"]
        assert (gt_formula, pred_formula, current) == (
            call["gt_formula"], call["pred_formula"], call["current"])
        return copy.deepcopy(call["result"])

    def formula_surrogates(matches):
        call = stages["formula_surrogates"]
        assert matches == call["matches"]
        return copy.deepcopy(call["result"])

    return PageSteps(quick_match, simple_match, latex_table_to_html, formula_pool,
                     formula_candidates, formula_surrogates)


@pytest.mark.parametrize("page_id", GENERATED)
def test_page_glue_with_recorded_steps(page_id: str) -> None:
    page = generated_pages()[page_id]
    stages = page["stages"]
    found = match_extracted_page(copy.deepcopy(page["gt_page"]),
                                 copy.deepcopy(stages["md_tex_filter"]), page["img_name"],
                                 replayed_steps(stages))
    assert plain(found._asdict()) == page["outputs"]


# --- whole pages with the suite's own steps -----------------------------------------------------

def all_pages() -> dict[str, dict]:
    return generated_pages() | constructed_pages()


def recorded_extraction(page: dict) -> dict:
    return page["stages"]["md_tex_filter"]


@pytest.mark.parametrize("page_id", GENERATED + CONSTRUCTED)
def test_whole_page(page_id: str) -> None:
    """The page step with the suite's own quick match, table conversion and formula steps, from
    the official extraction's output (from the markdown through the suite's own extraction:
    tests/metrics/omnidocbench/v1_6/test_extract.py)."""
    page = all_pages()[page_id]
    found = match_extracted_page(copy.deepcopy(page["gt_page"]),
                                 copy.deepcopy(recorded_extraction(page)), page["img_name"])
    assert plain(found._asdict()) == page["outputs"]
