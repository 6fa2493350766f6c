"""dots.ocr's answer conversion and resize rule against its unmodified official code.

Cases (tests/fixtures/models/dots_ocr/, made by the gen_*.py beside them from rednote-hilab/dots.ocr
36d7248 in a side environment): ``layoutjson2md`` on 415 cell lists, the whole answer-to-page step
(``post_process_output`` with its cleaner, then ``layoutjson2md`` with and without headers and
footers) on 345 answers, and ``smart_resize`` on 956 sizes. Where the official code raised, the
suite must refuse the sample (ConversionError / ImageSizeError), not write a page.
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from typing import Any

import pytest
from PIL import Image

from evalsuite.models.convert import ConversionError
from evalsuite.models.convert.dots_ocr import (
    cells_markdown,
    formula_markdown,
    page_cells,
    salvaged_markdown,
)
from evalsuite.models.dots_ocr import prepare_page, rendered_size
from evalsuite.models.resize import DOTS_OCR, QWEN_VL_UTILS, ImageSizeError, SmartResize
from tests.support.paths import TEST_FIXTURES

CASES = TEST_FIXTURES / "models" / "dots_ocr"


@cache
def cases(name: str) -> list[dict[str, Any]]:
    with gzip.open(CASES / f"dots_ocr_{name}.json.gz", "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def synthetic_page(width: int, height: int, seed: int) -> Image.Image:
    """The generators' page: pixel (x, y) = ((31x + 17y + s), (x² + 7y + 3s), x ^ y ^ s) mod 256."""
    data = bytes(
        value
        for y in range(height)
        for x in range(width)
        for value in ((31 * x + 17 * y + seed) % 256, (x * x + 7 * y + 3 * seed) % 256,
                      (x ^ y ^ seed) % 256)
    )
    return Image.frombytes("RGB", (width, height), data)


def origin_page(spec: dict[str, int]) -> Image.Image:
    if spec["width"] * spec["height"] <= 4096:
        return synthetic_page(spec["width"], spec["height"], spec["seed"])
    return Image.new("RGB", (spec["width"], spec["height"]), (255, 255, 255))


def test_cases_cover_errors_salvage_and_every_category() -> None:
    pages = cases("page")
    assert len(pages) >= 300 and len(cases("layoutjson2md")) >= 400
    assert sum(1 for c in pages if c["output"].get("filtered")) >= 100
    assert sum(1 for c in pages if c["output"].get("filtered") is False) >= 50
    assert any("error" in c["output"] for c in pages)
    categories = {cell.get("category") for c in cases("layoutjson2md")
                  for cell in c["input"]["cells"] if isinstance(cell, dict)}
    assert {"Picture", "Formula", "Table", "Page-header", "Page-footer", "Text"} <= categories


def test_layout_cells_become_the_official_markdown() -> None:
    wrong = []
    for case in cases("layoutjson2md"):
        given, expected = case["input"], case["output"]
        page = synthetic_page(**given["image"])
        try:
            found: Any = cells_markdown(page, given["cells"], text_key=given["text_key"],
                                        drop_page_header_footer=given["no_page_hf"])
        except ConversionError:
            found = "refused"
        if (found == "refused") != isinstance(expected, dict) or (
            found != "refused" and found != expected
        ):
            wrong.append((given["cells"], expected, found))
    assert wrong == []


def test_answers_become_the_official_page() -> None:
    wrong = []
    for case in cases("page"):
        given, expected = case["input"], case["output"]
        origin = origin_page(given["origin"])
        try:
            cells = page_cells(given["response"], origin.size, tuple(given["input_size"]),
                               given["min_pixels"], given["max_pixels"])
            if cells is None:
                try:
                    parsed = json.loads(given["response"])
                except (ValueError, RecursionError):
                    parsed = given["response"]
                found: Any = {"filtered": True, "md": salvaged_markdown(parsed)}
            else:
                found = {"filtered": False, "cells": cells,
                         "md": cells_markdown(origin, cells),
                         "md_nohf": cells_markdown(origin, cells, drop_page_header_footer=True)}
        except ConversionError:
            found = "refused"
        if "error" in expected or (expected["filtered"] and not isinstance(expected["md"], str)):
            ok = found == "refused"
        elif expected["filtered"]:
            ok = found == {"filtered": True, "md": expected["md"]}
        else:
            ok = found == {key: expected[key] for key in ("filtered", "cells", "md", "md_nohf")}
        if not ok:
            wrong.append((given["response"][:200], expected, found))
    assert wrong == []


@pytest.mark.parametrize(("rule", "name"), [(DOTS_OCR, "dots_ocr_smart_resize"),
                                           (QWEN_VL_UTILS, "qwen_vl_smart_resize")])
def test_smart_resize_equals_the_official_rule(rule: SmartResize, name: str) -> None:
    with gzip.open(CASES / f"{name}.json.gz", "rt", encoding="utf-8") as handle:
        resize_cases = json.load(handle)["cases"]
    assert len(resize_cases) >= 900
    wrong = []
    for case in resize_cases:
        given, expected = case["input"], case["output"]
        try:
            passed = {key: value for key, value in given.items() if value is not None}
            found: Any = list(rule.size(**passed))  # null: not passed
        except ImageSizeError:
            found = "refused"
        if (found == "refused") != isinstance(expected, dict) or (
            found != "refused" and found != expected
        ):
            wrong.append((given, expected, found))
    assert wrong == []


@pytest.mark.parametrize(
    ("text", "markdown"),
    [
        ("$$ x $$", "$$\nx\n$$"),
        (r"\[ a \]", "$$\na\n$$"),
        (r"\[ a \] \[ b \]", "$$\na \\] \\[ b\n$$"),
        ("$$", "$$\n\n$$"),
        (r"\(a+b\)", "$$\n\\(a+b\\)\n$$"),
        ("plain words", "plain words"),
        ("`\\frac{a}{b}`", "$$\n\\frac{a}{b}\n$$"),
    ],
)
def test_formula_quirks(text: str, markdown: str) -> None:
    assert formula_markdown(text) == markdown


def test_page_size_equals_get_image_by_fitz_doc_on_pil_pages() -> None:
    """The parser's PIL page, wrapped into a PDF and rendered at 200 dpi by PyMuPDF: the size
    dots.ocr sends, and prepare_page gives that size (x200/96, x72/96 above 4500 px)."""
    pil_cases = [c for c in cases("render_sizes")
                 if c["input"]["kind"] == "image" and c["input"]["passed_as"] == "pil"]
    assert len(pil_cases) >= 40
    for case in pil_cases:
        width, height = case["input"]["pixels"]
        assert list(rendered_size(width, height)) == case["output"]["rendered"], case["input"]
    width, height = pil_cases[0]["input"]["pixels"]
    prepared = prepare_page(Image.new("L", (width, height), 255))
    assert prepared.mode == "RGB" and list(prepared.size) == pil_cases[0]["output"]["rendered"]
