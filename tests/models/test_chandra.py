"""Chandra 1 and 2 against the unmodified chandra-ocr 0.1.8 and 0.2.0.

Cases (tests/fixtures/models/chandra/, made by gen_chandra_cases.py beside them in side
environments with the PyPI wheels): ``parse_markdown`` and ``parse_html`` on generated and
damaged layout HTML, ``detect_repeat_token`` (plain, 50 characters cut, and the retry test),
``scale_to_fit``'s size, and ``generate_vllm``'s requests and result with a recording fake
OpenAI client and scripted replies. Every comparison is ``==`` (JSON numbers with their type).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gzip
import json
from collections.abc import Iterator, Mapping
from functools import cache
from typing import Any

import pytest
from aiohttp import web
from PIL import Image

from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.models import CallError, Completion, ModelProfile, model_profile
from evalsuite.models.chandra import (
    CHANDRA,
    CHANDRA_2,
    RELEASE_1,
    RELEASE_2,
    ChandraRelease,
    loaded_size,
)
from evalsuite.models.convert.chandra import (
    detect_repeat_token,
    page_html,
    page_markdown,
    repeats,
)
from tests.models.test_served import decoded
from tests.support.fake_servers import chat_app, serving
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "models" / "chandra"
VERSIONS = {"0.1.8": (CHANDRA, RELEASE_1), "0.2.0": (CHANDRA_2, RELEASE_2)}


@cache
def cases(version: str, kind: str) -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / f"chandra-{version}_{kind}.json.gz", "rt", encoding="utf-8") as f:
        payload = json.load(f)
    assert payload["source"].startswith(f"chandra-ocr {version} (PyPI wheel)")
    return payload["cases"]


@pytest.mark.parametrize("version", VERSIONS)
def test_page_html_and_markdown_equal_parse_html_and_parse_markdown(version: str) -> None:
    rules = VERSIONS[version][1].output
    wrong = []
    for case in cases(version, "markdown"):
        given = case["input"]
        flags = (given["include_headers_footers"], given["include_images"])
        found = {"html": page_html(given["html"], rules, *flags),
                 "markdown": page_markdown(given["html"], rules, *flags)}
        if found != case["output"]:
            wrong.append((given, case["output"], found))
    assert len(cases(version, "markdown")) == 354 and wrong == []


def test_the_versions_differ_where_the_cases_say() -> None:
    """Blank pages and hallucinated images: kept by 0.1.8, dropped by 0.2.0."""
    blank = '<div data-label="Blank-Page"><p>ignored?</p></div>'
    image = '<div data-label="Text"><p>x <img alt="halluc"> y</p></div>'
    for html in (blank, image):
        (old,) = [c for c in cases("0.1.8", "markdown") if c["input"]["html"] == html
                  and not c["input"]["include_headers_footers"]]
        (new,) = [c for c in cases("0.2.0", "markdown") if c["input"]["html"] == html
                  and not c["input"]["include_headers_footers"]]
        assert old["output"] != new["output"]


@pytest.mark.parametrize("version", VERSIONS)
def test_repeat_detection_equals_detect_repeat_token(version: str) -> None:
    rules = VERSIONS[version][1].output
    wrong = []
    for case in cases(version, "repeat"):
        text = case["input"]["text"]
        found = {"detect": detect_repeat_token(text, rules),
                 "detect_cut_from_end_50": detect_repeat_token(text, rules, cut_from_end=50),
                 "retry_on_repeat": repeats(text, rules)}
        if found != case["output"]:
            wrong.append((text[:120], case["output"], found))
    retried = sum(case["output"]["retry_on_repeat"] for case in cases(version, "repeat"))
    assert len(cases(version, "repeat")) == 307 and 20 <= retried <= 287
    assert wrong == []


@pytest.mark.parametrize("version", VERSIONS)
def test_page_size_equals_scale_to_fit(version: str) -> None:
    fitted = VERSIONS[version][1].fitted_size
    wrong = []
    for case in cases(version, "scale"):
        size = (case["input"]["width"], case["input"]["height"])
        found = {"size": list(fitted(*size)), "resized": fitted(*size) != size}
        if found != case["output"]:
            wrong.append((size, case["output"], found))
    assert len(cases(version, "scale")) == 269 and wrong == []


def test_load_image_scales_the_shorter_side_to_1536() -> None:
    """input.py's ``load_image`` (no official case: its file reading is not run): a side under
    1536 px scales both by 1536 / shorter side, truncated; larger images stay as they are."""
    assert loaded_size(800, 1000) == (1536, 1920)
    assert loaded_size(1000, 3000) == (1536, 4608)
    assert loaded_size(1535, 4000) == (1536, int(4000 * 1536 / 1535)) == (1536, 4002)
    assert loaded_size(2000, 1200) == (int(2000 * 1536 / 1200), 1536) == (2560, 1536)
    assert loaded_size(1536, 1536) == (1536, 1536) and loaded_size(2550, 3300) == (2550, 3300)
    page = RELEASE_2.prepare_page(Image.new("L", (800, 1000), 255))
    assert page.mode == "RGB" and page.size == RELEASE_2.fitted_size(1536, 1920) == (1540, 1932)


def _requests(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [call["request"] for call in case["output"]["calls"] if "request" in call]


def _wire(decoding: Mapping[str, Any]) -> str:
    """The decoding fields as JSON: 0 and 0.0 differ, as on the wire."""
    return json.dumps({k: decoding[k] for k in ("max_tokens", "temperature", "top_p")})


def _layout_cases(version: str) -> list[dict[str, Any]]:
    return [c for c in cases(version, "request")
            if c["input"]["prompt_type"] == "ocr_layout" and c["input"]["prompt"] is None]


def _scripted(
    release: ChandraRelease, profile: ModelProfile, case: dict[str, Any]
) -> tuple[list[str], Any]:
    """``release``'s pipeline over the case's scripted replies: the decoding of every call as
    JSON, and the Answer (or the CallError raised)."""
    replies = list(case["input"]["replies"])
    sent: list[str] = []

    async def complete(image: Image.Image, decoding: Mapping[str, Any]) -> Completion:
        sent.append(_wire(decoding))
        reply = replies.pop(0) if replies else "done"
        if isinstance(reply, dict):
            raise CallError("HTTP 500: scripted server error")
        return Completion(reply, "stop", {"completion_tokens": len(reply)})

    page = Image.new("RGB", tuple(case["input"]["image_size"]), "white")
    run = release.page(profile, "page_markdown", page, page, complete,
                       **{k: v for k, v in case["input"]["kwargs"].items() if k == "max_retries"})
    try:
        return sent, asyncio.run(run)
    except CallError as exc:
        return sent, exc


@pytest.mark.parametrize("version", VERSIONS)
def test_retries_equal_generate_vllm(version: str) -> None:
    """Each scripted scenario: the same calls with the same max_tokens, temperature (0.1.8:
    0 then 0.3; 0.2.0: 0.0, 0.2, 0.4, 0.6000000000000001, 0.8…) and top_p (0.1 then 0.95), the
    same answer kept; where chandra-ocr returns an error result the sample fails here. Decoding
    arguments (temperature, top_p, max_output_tokens) stand in for the profile's decoding."""
    profile, release = VERSIONS[version]
    compared = 0
    for case in _layout_cases(version):
        kwargs = case["input"]["kwargs"]
        ignored = version == "0.1.8" and "max_output_tokens" in kwargs
        if "max_failure_retries" in kwargs or ignored:
            continue  # no CLI option sends it / 0.1.8 ignores it (the module docstring)
        decoding = dict(profile.decoding)
        decoding.update({k: v for k, v in kwargs.items() if k in ("temperature", "top_p")})
        if "max_output_tokens" in kwargs:
            decoding["max_tokens"] = kwargs["max_output_tokens"]
        sent, outcome = _scripted(release, dataclasses.replace(profile, decoding=decoding), case)
        assert sent == [_wire(request) for request in _requests(case)], case["input"]
        official = case["output"]["result"]
        if official["error"]:
            assert isinstance(outcome, CallError) and "scripted server error" in str(outcome)
        else:
            assert outcome.raw == official["raw"] and outcome.calls == len(sent)
            assert outcome.text == page_markdown(official["raw"], release.output)
        compared += 1
    assert compared == {"0.1.8": 11, "0.2.0": 13}[version]


@contextlib.contextmanager
def chandra_server(
    root: str, replies: list[Any], bodies: list[dict[str, Any]]
) -> Iterator[str]:
    """An OpenAI-compatible server that serves ``root`` as ``chandra`` (as Datalab's launcher
    does) and answers each POST with the next reply (a dict: HTTP 400, which the engine does
    not retry)."""

    async def models(_: web.Request) -> web.Response:
        return web.json_response({"data": [{"id": "chandra", "root": root}]})

    async def completions(request: web.Request) -> web.Response:
        bodies.append(await request.json())
        reply = replies.pop(0) if replies else "done"
        if isinstance(reply, dict):
            return web.json_response({"error": {"message": "scripted error"}}, status=400)
        return web.json_response({
            "choices": [{"message": {"content": reply}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": len(reply),
                      "total_tokens": 10 + len(reply)}})

    with serving(chat_app(models, completions)) as api_base:
        yield api_base


@pytest.mark.parametrize("version", VERSIONS)
def test_engine_sends_generate_vllms_requests(version: str) -> None:
    """Through the served engine and HTTP: per call the same body as ``generate_vllm`` (model
    ``chandra``, one user message of the page then the ``ocr_layout`` text, max_tokens,
    temperature, top_p, nothing else), the page at ``scale_to_fit`` of ``load_image``'s size
    (equal to the request's for a page that ``load_image`` keeps), the same page markdown."""
    profile, release = VERSIONS[version]
    checked = 0
    for case in _layout_cases(version):
        if case["input"]["kwargs"]:
            continue
        bodies: list[dict[str, Any]] = []
        size = tuple(case["input"]["image_size"])
        replies = list(case["input"]["replies"])
        with chandra_server(profile.hf_ids[0], replies, bodies) as api_base:
            engine = create_engine("openai", api_base=api_base, model_profile=profile.name)
            result = engine.infer(InferenceRequest(Image.new("RGB", size, "white"), "unused",
                                                   "native", "p", task="page_markdown"))
        official = _requests(case)
        assert len(bodies) == len(official)
        for body, request in zip(bodies, official, strict=True):
            assert set(body) == set(request) and body["model"] == request["model"] == "chandra"
            assert _wire(body) == _wire(request)
            (message,) = body["messages"]
            (official_message,) = request["messages"]
            assert message["role"] == official_message["role"] == "user"
            image, text = message["content"]
            official_image, official_text = official_message["content"]
            assert text == official_text and image["type"] == official_image["type"]
            sent = decoded(image["image_url"]["url"]).size
            assert sent == release.fitted_size(*loaded_size(*size))
            if loaded_size(*size) == size:
                assert list(sent) == official_image["image_url"]["url"]["size"]
                checked += 1
        if case["output"]["result"]["error"]:
            assert result.failed and "CallError" in str(result.error)
        else:
            assert result.error is None, result.error
            assert result.text == page_markdown(case["output"]["result"]["raw"], release.output)
            assert result.settings["calls"] == len(official)
    assert checked == 1


def test_profiles_name_their_checkpoints_and_the_served_name() -> None:
    for name, hf_id in (("chandra", "datalab-to/chandra"),
                        ("CHANDRA-2", "datalab-to/chandra-ocr-2")):
        profile = model_profile(name)
        assert profile.hf_ids == (hf_id, "chandra")
        assert profile.vllm_flags[-2:] == ("--served-model-name", "chandra")
        prompt = profile.task("page_markdown")
        assert prompt.image_first and prompt.system is None and prompt.prefix == ""
    assert CHANDRA.decoding == {"max_tokens": 8192, "temperature": 0, "top_p": 0.1}
    assert CHANDRA_2.decoding == {"max_tokens": 12384, "temperature": 0.0, "top_p": 0.1}
