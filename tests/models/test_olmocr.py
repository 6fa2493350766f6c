"""olmOCR-2's front-matter parsing against olmocr 0.4.27's own parser.

Cases (tests/fixtures/models/olmocr/olmocr2_frontmatter.json.gz, made by the generator beside them
with the unmodified ``FrontMatterParser`` and ``PageResponse``): 405 answers, hand-written edge
cases and seeded random ones. Where the official parser raised, the attempt must fail here too;
elsewhere every field must be equal in value and JSON type (``false`` is not ``0``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from evalsuite.models import CallError, Completion
from evalsuite.models.convert import ConversionError
from evalsuite.models.convert.olmocr import page_response
from evalsuite.models.olmocr import OLMOCR_2, NoValidAnswerError, olmocr_page
from evalsuite.models.resize import side_scaled
from tests.support.paths import TEST_FIXTURES

CASES = TEST_FIXTURES / "models" / "olmocr" / "olmocr2_frontmatter.json.gz"


@cache
def cases() -> list[dict[str, Any]]:
    with gzip.open(CASES, "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def _failed(output: Any) -> bool:
    return isinstance(output, dict) and "error" in output


def test_cases_hold_answers_that_parse_and_answers_that_fail() -> None:
    outcomes = [_failed(case["output"]) for case in cases()]
    assert len(outcomes) >= 400 and 100 <= outcomes.count(True) <= len(outcomes) - 100


def test_answers_parse_as_olmocr_parses_them() -> None:
    wrong = []
    for case in cases():
        try:
            found: Any = json.dumps(dataclasses.asdict(page_response(case["input"])))
        except ConversionError:
            found = "refused"
        expected = "refused" if _failed(case["output"]) else json.dumps(case["output"])
        if found != expected:
            wrong.append((case["input"][:200], expected, found))
    assert wrong == []


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        ("---\nprimary_language: en\nis_rotation_valid: true\nrotation_correction: 0\n"
         "is_table: false\nis_diagram: false\n---\nHello", "Hello"),
        ("---\nprimary_language: no\nis_rotation_valid: yes\nrotation_correction: '90'\n"
         "is_table: 'TRUE'\nis_diagram: off\n---\n", None),
    ],
)
def test_yaml_one_one_values_and_empty_pages(answer: str, text: str | None) -> None:
    assert page_response(answer).natural_text == text


RETRIES = CASES.parent / "olmocr2_retries.json.gz"
PAGE_QUERIES = CASES.parent / "olmocr2_page_query.json.gz"


def _load(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)["cases"]


def _dark_bbox(image: Image.Image) -> list[int] | None:
    box = image.convert("L").point(lambda v: 255 if v < 128 else 0).getbbox()
    return list(box) if box else None


@pytest.mark.parametrize(
    "case", _load(RETRIES),
    ids=lambda c: f"{c['input']['scenario']}-{c['input']['max_page_retries']}",
)
def test_attempt_ladder_equals_process_page(case: dict[str, Any]) -> None:
    """Scripted answers (olmocr's own process_page with a fake server): the same calls in the
    same order, with the same temperature, max_tokens and rotated page, and the same outcome;
    where olmocr fell back to pdftotext the sample fails here (a documented deviation)."""
    first = case["output"]["calls"][0]["image"]
    page = Image.new("RGB", (first["width"], first["height"]), "white")
    page.paste((0, 0, 0), tuple(first["dark_bbox"]))
    answers = list(case["input"]["server_answers"])
    calls: list[dict[str, Any]] = []

    async def complete(image: Image.Image, decoding: Mapping[str, Any]) -> Completion:
        calls.append({**decoding, "image": [image.width, image.height, _dark_bbox(image)]})
        status, body = answers.pop(0)
        if status != 200:
            raise CallError(f"HTTP {status}")
        payload = json.loads(body)
        choice = payload["choices"][0]
        return Completion(choice["message"]["content"], choice["finish_reason"], payload["usage"])

    run = olmocr_page(OLMOCR_2, "page_markdown", page, page, complete,
                      max_page_retries=case["input"]["max_page_retries"])
    expected = case["output"]["result"]
    if expected["is_fallback"]:
        with pytest.raises(NoValidAnswerError, match="no valid answer"):
            asyncio.run(run)
    else:
        answer = asyncio.run(run)
        assert answer.text == (expected["natural_text"] or "")
        assert answer.details["is_rotation_valid"] is expected["is_rotation_valid"]
        assert answer.details["primary_language"] == expected["primary_language"]
        assert answer.calls == len(case["output"]["calls"])
    assert calls == [
        {"max_tokens": call["max_tokens"], "temperature": call["temperature"],
         "image": [call["image"]["width"], call["image"]["height"], call["image"]["dark_bbox"]]}
        for call in case["output"]["calls"]
    ]


def test_page_query_message_and_longest_side_equal_build_page_query() -> None:
    """build_page_query's message: the v4 prompt as the only text, before the page; the page's
    longest side 1288 (poppler's ⌈⌉ of a float product gives 1289 for A5, not reproduced)."""
    checked = 0
    for case in _load(PAGE_QUERIES):
        given = case["input"]
        request = case["output"]["request"]
        (text, image), = [message["content"] for message in request["messages"]]
        assert request["messages"][0]["role"] == "user" and len(request["messages"]) == 1
        assert text == {"type": "text", "text": OLMOCR_2.task("page_markdown").user_text}
        assert not OLMOCR_2.task("page_markdown").image_first and image["type"] == "image_url"
        assert request["max_tokens"] == OLMOCR_2.decoding["max_tokens"]
        if given["image_rotation"] or given["page_rotate"] or given["mediabox_w_pt"] == 419.53:
            continue
        sides = (given["mediabox_w_pt"], given["mediabox_h_pt"])
        assert side_scaled(*sides, given["target_longest_image_dim"]) == (
            image["image"]["width"], image["image"]["height"]), given
        checked += 1
    assert checked >= 20
