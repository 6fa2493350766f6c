"""MinerU2.5 against the unmodified mineru-vl-utils 0.1.22.

Cases (tests/fixtures/models/mineru/, made by the gen_mineru25_*.py beside them in a side
environment with the PyPI wheel): ``parse_layout_output`` on hand-written and random layout
answers, ``post_process`` with OmniDocBench's flags on generated pages, and the requests:
``prepare_for_layout``, ``resize_by_need``, ``prepare_for_extract`` (crop size and SHA-256 of its
RGB bytes) and ``HttpVlmClient.build_request_body``. Every comparison is ``==``.
"""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import importlib.metadata
import json
from collections.abc import Mapping
from functools import cache
from typing import Any

import numpy as np
import pytest
from mineru_vl_utils.structs import ContentBlock
from PIL import Image

from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.models import CallError, Completion, TaskPrompt, model_profile
from evalsuite.models.convert.mineru import page_markdown, parse_layout, post_processed
from evalsuite.models.mineru import (
    MINERU_2_5,
    UnparsableLayoutError,
    block_calls,
    layout_image,
    resized_by_need,
    two_step_page,
)
from tests.models.test_served import PeerServer, decoded, running
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "models" / "mineru"
VERSION = "0.1.22"


@cache
def cases(kind: str) -> list[dict[str, Any]]:
    with gzip.open(FIXTURES / f"mineru25_v{VERSION}_{kind}.json.gz", "rt", encoding="utf-8") as f:
        payload = json.load(f)
    assert payload["source"].startswith(f"mineru-vl-utils {VERSION} (PyPI)")
    return payload["cases"]


def request_cases(function: str) -> list[dict[str, Any]]:
    return [c for c in cases("requests") if c["input"]["function"] == function]


def pattern_page(width: int, height: int) -> Image.Image:
    """gen_mineru25_requests' page: black where x % 37 or y % 23 is 0, else (7x, 5y, 3(x + y))
    mod 256."""
    y, x = np.mgrid[0:height, 0:width].astype(np.int64)
    pixels = np.stack([(7 * x) % 256, (5 * y) % 256, (3 * (x + y)) % 256], axis=-1)
    pixels[(x % 37 == 0) | (y % 23 == 0)] = 0
    return Image.fromarray(pixels.astype(np.uint8), "RGB")


def described(image: Image.Image) -> dict[str, Any]:
    rgb = image.convert("RGB")
    return {"size": list(rgb.size), "mode": image.mode,
            "sha256": hashlib.sha256(rgb.tobytes()).hexdigest()}


def content_blocks(page: list[dict[str, Any]]) -> list[ContentBlock]:
    return [ContentBlock(b["type"], list(b["bbox"]), angle=b["angle"], content=b["content"])
            for b in page]


def test_the_installed_client_is_the_pinned_one() -> None:
    assert importlib.metadata.version("mineru-vl-utils") == VERSION


def test_layout_parsing_equals_parse_layout_output() -> None:
    wrong = [(c["input"], c["output"], parse_layout(c["input"]))
             for c in cases("layout_parse") if parse_layout(c["input"]) != c["output"]]
    assert len(cases("layout_parse")) == 334
    assert sum(len(c["output"]) > 1 for c in cases("layout_parse")) >= 200
    assert {b["angle"] for c in cases("layout_parse") for b in c["output"]} == {
        None, 0, 90, 180, 270}
    assert wrong == []


def test_layout_parsing_equals_the_installed_client_on_edge_lines() -> None:
    """Lines the cases lack, against the pinned client itself: text before or after a block on
    its line, a carriage return, other digits and spaces, a type made of several words."""
    from mineru_vl_utils.mineru_client import MinerUClientHelper

    helper = MinerUClientHelper(
        backend="http-client", prompts={}, sampling_params={}, layout_image_size=(1036, 1036),
        min_image_edge=28, max_image_edge_ratio=50, simple_post_process=False,
        handle_equation_block=True, abandon_list=False, abandon_paratext=False, debug=False)
    block = box(100, 100, 900, 200, "text")
    answers = [f"Note: {block}", f"{block} <|rotate_left|>", f"{block}\r", f" {block}",
               block.replace("100 100", "\u0661\u0660\u0660\u2003100"),
               block.replace("text", "text title"), block.replace("text", "TABLE"),
               f"{block}\r\n{block}",
               block.replace("<|rotate_up|>", "<|rotate_down|><|rotate_up|>")]
    assert [parse_layout(a) for a in answers] == [helper.parse_layout_output(a) for a in answers]
    assert parse_layout(f"Note: {block}") == []


def test_post_processing_and_page_equal_the_client_with_omnidocbench_flags() -> None:
    """``post_process`` with handle_equation_block off (OmniDocBench's script), then the
    script's page: the non-empty contents joined by a blank line."""
    compared = 0
    for case in cases("post_process"):
        official = case["output"]["omnidocbench_script"]
        if "error" in official:  # a block type 0.1.22 does not know: no ContentBlock at all
            assert official["error"] == "AssertionError"
            continue
        blocks, error = post_processed(content_blocks(case["input"]))
        assert error is None
        assert blocks == official["blocks"], case["input"]
        assert page_markdown(blocks) == "\n\n".join(
            b["content"] for b in official["blocks"] if b["content"])
        compared += 1
    assert compared == 265


def test_the_layout_image_equals_prepare_for_layout() -> None:
    for case in request_cases("MinerUClientHelper.prepare_for_layout"):
        width, height, mode = case["input"]["page"]
        page = pattern_page(width, height)
        page = page.convert("P") if mode == "P" else page.convert(mode)
        assert described(layout_image(page)) == case["output"], case["input"]
    assert len(request_cases("MinerUClientHelper.prepare_for_layout")) == 5


def test_resized_by_need_equals_resize_by_need() -> None:
    for case in request_cases("MinerUClientHelper.resize_by_need"):
        image = pattern_page(*case["input"]["image"])
        assert described(resized_by_need(image)) == case["output"], case["input"]
    assert len(request_cases("MinerUClientHelper.resize_by_need")) == 9


def body_fields(params: Mapping[str, Any]) -> dict[str, Any]:
    """``build_request_body``'s fields for MinerU's sampling params (checked on its own cases
    by test_request_bodies_equal_build_request_body)."""
    fields = {k: params[k] for k in ("temperature", "top_p", "top_k", "presence_penalty",
                                     "frequency_penalty", "repetition_penalty")}
    return {**fields, "vllm_xargs": {"no_repeat_ngram_size": params["no_repeat_ngram_size"],
                                     "debug": False}, "skip_special_tokens": False}


def test_block_calls_equal_prepare_for_extract() -> None:
    """Which blocks are sent, with which prompt and decoding, and the exact image of each (cut,
    turned, padded or enlarged): 65 pages, every angle, crops under a pixel."""
    sent = 0
    for case in request_cases("MinerUClientHelper.prepare_for_extract"):
        page = pattern_page(*case["input"]["page"])
        calls = block_calls(page, content_blocks(case["input"]["blocks"]))
        ours = [{"index": index, "prompt": call.prompt.user_text,
                 "decoding": dict(call.decoding), "image": described(image)}
                for index, image, call in calls]
        official = [{"index": p["index"], "prompt": p["prompt"],
                     "decoding": body_fields(p["params"]), "image": p["image"]}
                    for p in case["output"]["prepared"]]
        assert ours == official, case["input"]
        assert all(call.prompt.system == "You are a helpful assistant." and
                   call.prompt.image_first for _, _, call in calls)
        sent += len(calls)
    assert len(request_cases("MinerUClientHelper.prepare_for_extract")) == 65 and sent >= 150


LAYOUT_KEY = "[layout]"


def official_bodies() -> dict[str, dict[str, Any]]:
    """The client's body per prompt key (no priority)."""
    return {c["input"]["prompt_key"]: c["output"]
            for c in request_cases("HttpVlmClient.build_request_body")
            if c["input"]["priority"] is None}


def test_request_bodies_equal_build_request_body() -> None:
    """Through the engine against a fake server: the layout call and a call of each block
    prompt, their bodies equal the client's but for the image, which is the one the client
    prepares (the layout image, or the exact crop of prepare_for_extract's hand-written page)."""
    (extract,) = [c for c in request_cases("MinerUClientHelper.prepare_for_extract")
                  if [b["type"] for b in c["input"]["blocks"]]
                  == ["text", "table", "equation", "image", "list", "equation_block"]]
    layout = "\n".join(
        "<|box_start|>{} {} {} {}<|box_end|><|ref_start|>{}<|ref_end|><|rotate_up|>".format(
            *(round(v * 1000) for v in b["bbox"]), b["type"]) for b in extract["input"]["blocks"])
    replies = {"\nLayout Detection:": layout + "<|im_end|>", "\nText Recognition:": "Hello",
               "\nTable Recognition:": "<fcel>a<fcel>b<nl><fcel>1<fcel>2<nl><|im_end|>",
               "\nFormula Recognition:": "E=mc^2<|im_end|>"}
    server = PeerServer(frozenset(MINERU_2_5.decoding),
                        lambda body, image: (replies[body["messages"][1]["content"][1]["text"]],
                                             "stop"), MINERU_2_5.hf_ids)
    page = pattern_page(*extract["input"]["page"])
    with running(server):
        engine = create_engine("openai", api_base=server.api_base, model_profile="MinerU2.5")
        result = engine.infer(InferenceRequest(page, "x", "native", "p", task="page_markdown"))
    assert result.error is None, result.error
    assert result.text == ("Hello\n\n<table><tr><td>a</td><td>b</td></tr><tr><td>1</td>"
                           "<td>2</td></tr></table>\n\n\\[\nE=mc^2\n\\]")
    assert result.settings["raw_answer"] == layout
    assert result.settings["calls"] == 4 and result.settings["layout_blocks"] == 6
    bodies = official_bodies()
    keys = {"\nLayout Detection:": LAYOUT_KEY, "\nText Recognition:": "[default]",
            "\nTable Recognition:": "table", "\nFormula Recognition:": "equation"}
    images = {}
    assert server.bodies[0]["messages"][1]["content"][1]["text"] == "\nLayout Detection:"
    for body in server.bodies:
        key = keys[body["messages"][1]["content"][1]["text"]]
        official = bodies[key]
        assert {k: v for k, v in body.items() if k != "messages"} == {
            k: v for k, v in official.items() if k != "messages"}
        assert list(body) == list(official)
        (system, user), (official_system, official_user) = body["messages"], \
            official["messages"]
        assert system == official_system and user["role"] == official_user["role"]
        assert [p["type"] for p in user["content"]] == [p["type"] for p in official_user["content"]]
        assert user["content"][1] == official_user["content"][1]
        assert user["content"][0]["image_url"]["url"].startswith("data:image/png;base64,")
        images[key] = described(decoded(user["content"][0]["image_url"]["url"]))
    (layout_case,) = [c for c in request_cases("MinerUClientHelper.prepare_for_layout")
                      if c["input"]["page"] == [612, 792, "RGB"]]
    assert images.pop(LAYOUT_KEY) == {**layout_case["output"], "mode": "RGB"}
    prompts = {"\nText Recognition:": "[default]", "\nTable Recognition:": "table",
               "\nFormula Recognition:": "equation"}
    assert images == {prompts[p["prompt"]]: p["image"] for p in extract["output"]["prepared"]}


def scripted(layout: str, replies: Mapping[str, tuple[str, str | None]] | None = None,
             page: Image.Image | None = None) -> tuple[list[str], Any]:
    """The pipeline with a scripted ``complete``: the prompts sent, and the Answer (or the error
    raised). Block calls are held until all of them have started (they must be in flight
    together)."""
    replies = dict(replies or {})
    page = page or Image.new("RGB", (600, 800), "white")
    sent: list[str] = []

    async def run() -> Any:
        expected = len(block_calls(page, parse_layout(layout)))
        started = asyncio.Event()

        async def complete(image: Image.Image, decoding: Mapping[str, Any],
                           prompt: TaskPrompt | None = None) -> Completion:
            text = (prompt or MINERU_2_5.task("page_markdown")).user_text
            sent.append(text)
            if prompt is None:
                return Completion(layout, "stop", {})
            if len(sent) - 1 == expected:
                started.set()
            await asyncio.wait_for(started.wait(), 5)
            reply, finish = replies.get(text, ("words", "stop"))
            if finish == "error":
                raise CallError("HTTP 500: scripted")
            return Completion(reply, finish, {})

        return await two_step_page(MINERU_2_5, "page_markdown", page,
                                   layout_image(page), complete)

    try:
        return sent, asyncio.run(run())
    except (CallError, UnparsableLayoutError) as exc:
        return sent, exc


def box(x1: int, y1: int, x2: int, y2: int, kind: str, angle: str = "<|rotate_up|>") -> str:
    return f"<|box_start|>{x1} {y1} {x2} {y2}<|box_end|><|ref_start|>{kind}<|ref_end|>{angle}"


def test_blocks_go_out_together_and_come_back_in_layout_order() -> None:
    layout = "\n".join([box(100, 50, 900, 90, "title"), box(100, 100, 900, 400, "table"),
                        box(100, 420, 900, 460, "equation"), box(100, 470, 900, 600, "image"),
                        box(100, 620, 900, 700, "unknown"), box(450, 960, 550, 990, "page_number")])
    replies = {"\nTable Recognition:": ("<fcel>x<nl>", "length"),
               "\nFormula Recognition:": ("\\[a\\]<|im_end|>", "stop")}
    sent, answer = scripted(layout, replies)
    assert sent == ["\nLayout Detection:", "\nText Recognition:", "\nTable Recognition:",
                    "\nFormula Recognition:", "\nText Recognition:", "\nText Recognition:"]
    assert answer.text == "words\n\n<table><tr><td>x</td></tr></table>\n\n\\[a\\]\n\nwords\n\nwords"
    assert answer.raw == layout and answer.calls == 6
    assert answer.details == {"layout_blocks": 6, "blocks_sent": 5}


def test_a_layout_without_blocks_fails_and_an_empty_one_is_an_empty_page() -> None:
    sent, error = scripted("I cannot see a page.")
    assert isinstance(error, UnparsableLayoutError) and sent == ["\nLayout Detection:"]
    sent, answer = scripted("")
    assert answer.text == "" and answer.details == {"layout_blocks": 0, "blocks_sent": 0}


def test_a_failed_block_call_or_an_odd_finish_reason_fails_the_page() -> None:
    layout = "\n".join([box(100, 100, 900, 200, "text"), box(100, 300, 900, 500, "table")])
    sent, error = scripted(layout, {"\nTable Recognition:": ("", "error")})
    assert isinstance(error, CallError) and "scripted" in str(error) and len(sent) == 3
    sent, error = scripted(layout, {"\nText Recognition:": ("x", "content_filter")})
    assert isinstance(error, CallError) and "'content_filter'" in str(error)


def test_the_profile_is_registered_with_the_clients_settings() -> None:
    profile = model_profile("mineru2.5")
    assert profile is MINERU_2_5 and profile.hf_ids == ("opendatalab/MinerU2.5-2509-1.2B",)
    prompt = profile.task("page_markdown")
    layout = official_bodies()[LAYOUT_KEY]
    assert prompt.user_text == layout["messages"][1]["content"][1]["text"]
    assert prompt.system == layout["messages"][0]["content"] and prompt.image_first
    assert profile.vllm_flags == ("--logits-processors", "mineru_vl_utils:MinerULogitsProcessor")


@pytest.mark.parametrize("angle", [90, 180, 270])
def test_a_turned_block_is_sent_upright(angle: int) -> None:
    """A block the layout marks as turned is cut, then turned back counter-clockwise."""
    page = pattern_page(300, 400)
    token = {90: "<|rotate_right|>", 180: "<|rotate_down|>", 270: "<|rotate_left|>"}[angle]
    ((_, image, _),) = block_calls(page, parse_layout(box(100, 100, 500, 300, "text", token)))
    cut = page.crop((30, 40, 150, 120))
    assert image.tobytes() == cut.rotate(angle, expand=True).tobytes()
