"""OmniDocBench v1.6's page splitting (:func:`md_tex_filter`) against the official
``md_tex_filter`` (opendatalab/OmniDocBench at 9dc1dec), and the whole v1.6 page step from the
predicted markdown.

Cases: ``v16_md_tex_filter_cases.json.gz`` (gen_v16_md_tex_filter_cases.py: 400 generated pages,
the output with its category and item key order); the recorded ``md_tex_filter`` stage and page
outputs of ``v16_page_cases.json.gz`` (400 generated pages; categories in order, item keys
sorted) and ``v16_cases.json.gz`` (the 54 constructed pages of ``cases.json.gz``; keys sorted).
Pages that hand a LaTeX table to LaTeXML (about 2 s a table): only :data:`LATEXML_PAGES` of
them per case file are checked (of the recorded pages, none other with a LaTeX table).
"""

from __future__ import annotations

import copy
import gzip
import json
import shutil
from functools import cache

import pytest

from evalsuite.metrics.omnidocbench.v1_6.extract import md_tex_filter
from evalsuite.metrics.omnidocbench.v1_6.page import match_extracted_page
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
LATEXML_PAGES = 2
"""How many pages holding LaTeX tables each case file contributes."""
LATEX_TABLE_OPENINGS = ("\\begin{tabular}", "\\begin{table}")

needs_latexml = pytest.mark.skipif(
    shutil.which("latexmlc") is None,
    reason="latexmlc (LaTeXML) is not on PATH: `apt install latexml`",
)


def _load(name: str) -> dict:
    return json.loads(gzip.decompress((FIXTURES / name).read_bytes()))


def _few_latex_pages(pages: list[dict]) -> list[dict]:
    """The pages without LaTeX tables and the first :data:`LATEXML_PAGES` with them."""
    with_latex = [page for page in pages
                  if any(opening in page["markdown"] for opening in LATEX_TABLE_OPENINGS)]
    left_out = {id(page) for page in with_latex[LATEXML_PAGES:]}
    return [page for page in pages if id(page) not in left_out]


def as_recorded(value: object, sort_keys: bool = False) -> object:
    """What the recorded JSON holds (lists for tuples; optionally with item keys sorted)."""
    return json.loads(json.dumps(value, sort_keys=sort_keys, ensure_ascii=False))


def key_orders(pairs: list) -> list:
    return [[category, [list(item) for item in items]] for category, items in pairs]


@cache
def recorded_pages() -> list[dict]:
    """Pages with ``markdown``, ``gt_page``, ``img_name``, ``extracted`` (the official
    ``md_tex_filter`` output, item keys sorted, as ``[category, items]`` pairs, or as a dict for
    the constructed pages whose category order was not recorded) and ``outputs``."""
    pages = [page | {"extracted": page["stages"]["md_tex_filter"]}
             for page in _load("v16_page_cases.json.gz")["pages"]]
    source = {case["id"]: case for case in _load("cases.json.gz")["cases"]}
    for page in _load("v16_cases.json.gz")["pages"]:
        case = source[page["id"]]
        pages.append(page | {"extracted": page["stages"]["md_tex_filter"],
                             "markdown": case["prediction_md"] or "",
                             "gt_page": case["gt_page"], "img_name": case["image_name"]})
    return _few_latex_pages(pages)


@needs_latexml
def test_generated_pages() -> None:
    """Categories and items equal, in the official order, item keys in the official order."""
    pages = _load("v16_md_tex_filter_cases.json.gz")["pages"]
    pages = [page for page in pages if not page["latexml"]] + [
        page for page in pages if page["latexml"]][:LATEXML_PAGES]
    assert len(pages) > 390
    differing = []
    for page in pages:
        found = as_recorded(list(md_tex_filter(page["markdown"]).items()))
        if found != page["output"] or key_orders(found) != key_orders(page["output"]):
            differing.append(page["id"])
    assert differing == []


@needs_latexml
def test_recorded_page_extractions() -> None:
    """The extraction stage recorded with the official page step (categories in order where
    recorded as pairs)."""
    differing = []
    for page in recorded_pages():
        found = md_tex_filter(page["markdown"])
        if isinstance(page["extracted"], dict):
            found_recorded = as_recorded(found, sort_keys=True)
        else:
            found_recorded = as_recorded(list(found.items()), sort_keys=True)
        if found_recorded != page["extracted"]:
            differing.append(page["id"])
    assert len(recorded_pages()) > 400
    assert differing == []


@needs_latexml
def test_whole_page_from_markdown() -> None:
    """``match_extracted_page`` on the suite's own extraction gives the official page
    outputs: the whole v1.6 page step from the predicted markdown."""
    differing = []
    for page in recorded_pages():
        found = match_extracted_page(copy.deepcopy(page["gt_page"]),
                                     md_tex_filter(page["markdown"]), page["img_name"])
        if as_recorded(found._asdict()) != page["outputs"]:
            differing.append(page["id"])
    assert differing == []


def test_missing_categories_are_absent() -> None:
    """Only categories with items appear (the official defaultdict's keys), in order of their
    first item's position."""
    found = md_tex_filter("$$x = 1$$\n\nsome text")
    assert list(found) == ["equation_isolated", "text_all"]
    assert md_tex_filter("") == {}
