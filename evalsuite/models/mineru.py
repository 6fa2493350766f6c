"""MinerU2.5 (opendatalab/MinerU2.5-2509-1.2B), as mineru-vl-utils' ``MinerUClient`` runs a page
over HTTP (``two_step_extract``, http-client backend) and OmniDocBench's MinerU2.5 script writes it.
A PDF page is rendered as the MinerU application renders one (mineru 2.5.4
``pdf_reader.page_to_image``, PDFium as there: 200 dpi, lowered to a longest side of 3,500 px).

Version: mineru-vl-utils 0.1.22 (PyPI, 2026-01-22), the last 0.1.x release. The 2509 model is of
that line's era: OmniDocBench's script for it (tools/model_infer/MinerU2.5_img2md.py, added in
fb10230, 2025-10-21) ran a 0.1.x client, and 0.1.22 was the newest release when OmniDocBench
re-evaluated MinerU2.5 for v1.6. 2.x (2.0.7) targets MinerU2.5-Pro: it adds block types, image
analysis, table-image masking, text fixes and layout de-duplication the 2509 model was not made
for. Prompts, system message and decoding of the layout, text, table and equation calls are the
same in 0.1.14, 0.1.22 and 2.0.7.

The two steps, each call one system message ("You are a helpful assistant.") and one user message
with the image, then the prompt; decoding temperature 0, top_p 0.01, top_k 1, repetition penalty
1, ``no_repeat_ngram_size`` 100 through ``vllm_xargs`` (applied by the logits processor the server
is started with), ``skip_special_tokens`` false, no length field:

1. Layout: the page in RGB resized to exactly 1036 x 1036 (bicubic, aspect ratio not kept), prompt
   ``"\\nLayout Detection:"``, presence and frequency penalties 0.
2. Each block of the layout except images, lists and equation blocks: the block's box cut from
   the page as loaded (PIL's crop of the box times the page size), turned by its angle
   (counter-clockwise, expanded), then :func:`resized_by_need`; prompt and penalties by type:
   table ``"\\nTable Recognition:"`` 1.0/0.005, equation ``"\\nFormula Recognition:"`` 1.0/0.05,
   any other ``"\\nText Recognition:"`` 1.0/0.05. A crop under 1 px is skipped. The blocks'
   calls go out together (the client gathers them), their answers kept in the layout's order.

Every answer loses a trailing ``<|im_end|>``; a finish reason other than ``stop`` or ``length``
(a cut answer is kept) fails the page, as the client raises. The blocks then become the page as
:mod:`evalsuite.models.convert.mineru` describes, with ``handle_equation_block`` off: OmniDocBench's
script passes that (the client's default is on) and our benchmark is OmniDocBench's.

Dependency: the client's ``post_process`` and ``ContentBlock`` are called from the pinned package
(pure Python, no torch or vLLM); the layout parser, the images and the requests are ours, tested
against the unmodified package (tests/fixtures/models/mineru/).

Deliberate deviations: a layout answer with text but no block the parser reads fails the sample
(the client would return an empty page); an empty layout answer gives an empty page, noted as
``layout_blocks`` 0. OmniDocBench's script runs the client's in-process vLLM engine, which caps
each answer at the model's context length and batches pages step by step; over HTTP the request
has no length field (the server's own cap) and each page runs its steps by itself, as the
http-client backend does.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mineru_vl_utils.structs import ContentBlock
from PIL import Image

from evalsuite.models import (
    PAGE_MARKDOWN,
    Answer,
    CallError,
    Complete,
    Completion,
    ModelProfile,
    PdfRendering,
    TaskPrompt,
    register_model,
)
from evalsuite.models.convert import ConversionError
from evalsuite.models.convert.mineru import page_markdown, parse_layout, post_processed

MINERU_VL_UTILS = "mineru-vl-utils 0.1.22 (PyPI)"
OMNIDOCBENCH_SCRIPT = (
    "OmniDocBench 9dc1dec tools/model_infer/MinerU2.5_img2md.py (added fb10230)"
)
SYSTEM_PROMPT = "You are a helpful assistant."
LAYOUT_PROMPT = "\nLayout Detection:"
LAYOUT_SIZE = (1036, 1036)
RENDER_DPI = 200
MAX_RENDERED_SIDE = 3500
MINERU = "mineru 2.5.4 (PyPI)"
MIN_EDGE = 28
MAX_EDGE_RATIO = 50
NO_REPEAT_NGRAM_SIZE = 100
END_TOKEN = "<|im_end|>"
ACCEPTED_FINISH = ("stop", "length")
NOT_EXTRACTED = frozenset({"image", "list", "equation_block"})
"""Block types the client sends no call for (0.1.22's ``prepare_for_extract``)."""


def decoding(presence_penalty: float, frequency_penalty: float) -> dict[str, Any]:
    """The body fields ``HttpVlmClient.build_request_body`` sends for ``MinerUSamplingParams``
    with these penalties, in its order."""
    return {
        "temperature": 0.0,
        "top_p": 0.01,
        "top_k": 1,
        "presence_penalty": presence_penalty,
        "frequency_penalty": frequency_penalty,
        "repetition_penalty": 1.0,
        "vllm_xargs": {"no_repeat_ngram_size": NO_REPEAT_NGRAM_SIZE, "debug": False},
        "skip_special_tokens": False,
    }


@dataclass(frozen=True)
class BlockCall:
    """The message and decoding of one block type's call."""

    prompt: TaskPrompt
    decoding: Mapping[str, Any]


TEXT_CALL = BlockCall(TaskPrompt("\nText Recognition:", system=SYSTEM_PROMPT), decoding(1.0, 0.05))
BLOCK_CALLS = {
    "table": BlockCall(TaskPrompt("\nTable Recognition:", system=SYSTEM_PROMPT),
                       decoding(1.0, 0.005)),
    "equation": BlockCall(TaskPrompt("\nFormula Recognition:", system=SYSTEM_PROMPT),
                          decoding(1.0, 0.05)),
}
"""Per block type; any other type is sent as :data:`TEXT_CALL` (the client's ``[default]``)."""


def _call_settings(call: BlockCall) -> dict[str, Any]:
    prompt = call.prompt
    return {"system": prompt.system, "prompt": prompt.user_text, "decoding": dict(call.decoding)}


BLOCK_SETTINGS = {"blocks": {**{kind: _call_settings(call) for kind, call in BLOCK_CALLS.items()},
                             "[default]": _call_settings(TEXT_CALL)},
                  "not_extracted": sorted(NOT_EXTRACTED)}
"""The block calls as the profile's ``pipeline_settings`` (recorded, and pinned by its version)."""


class UnparsableLayoutError(ConversionError):
    """A layout answer in which no line is a block the client's parser reads."""


def rgb(image: Image.Image) -> Image.Image:
    """``get_rgb_image``: palette images through RGBA, any other mode but RGB converted."""
    if image.mode == "P":
        image = image.convert("RGBA")
    return image if image.mode == "RGB" else image.convert("RGB")


def layout_image(page: Image.Image) -> Image.Image:
    """``prepare_for_layout``: the page in RGB at exactly 1036 x 1036, bicubic."""
    return rgb(page).resize(LAYOUT_SIZE, Image.Resampling.BICUBIC)


def pdf_dpi(width_pt: float, height_pt: float) -> float:
    """MinerU's resolution for a PDF page of that size (points): :data:`RENDER_DPI`, lowered so
    that the longest side is at most :data:`MAX_RENDERED_SIDE` px."""
    longest = max(width_pt, height_pt)
    if longest * RENDER_DPI / 72 > MAX_RENDERED_SIDE:
        return MAX_RENDERED_SIDE * 72 / longest
    return RENDER_DPI


def resized_by_need(image: Image.Image) -> Image.Image:
    """``resize_by_need``: where long / short side > 50, the image centred on white with the short
    side ⌈long / 50⌉ (offset ⌊(new − old) / 2⌋); then, where the short side is under 28 px, both
    sides times s = 28 / short, each ⌈side · s⌉, bicubic."""
    width, height = image.size
    if max(width, height) / min(width, height) > MAX_EDGE_RATIO:
        if width > height:
            size = (width, math.ceil(width / MAX_EDGE_RATIO))
        else:
            size = (math.ceil(height / MAX_EDGE_RATIO), height)
        padded = Image.new(image.mode, size, (255, 255, 255))
        padded.paste(image, (int((size[0] - width) / 2), int((size[1] - height) / 2)))
        image = padded
    if min(image.size) < MIN_EDGE:
        scale = MIN_EDGE / min(image.size)
        image = image.resize((math.ceil(image.width * scale), math.ceil(image.height * scale)),
                             Image.Resampling.BICUBIC)
    return image


def block_calls(
    page: Image.Image, blocks: list[ContentBlock]
) -> list[tuple[int, Image.Image, BlockCall]]:
    """``prepare_for_extract``: for each block sent, its index, its image (cut from ``page`` in
    RGB, turned, :func:`resized_by_need`) and its call."""
    page = rgb(page)
    width, height = page.size
    calls = []
    for index, block in enumerate(blocks):
        if block.type in NOT_EXTRACTED:
            continue
        x1, y1, x2, y2 = block.bbox
        image = page.crop((x1 * width, y1 * height, x2 * width, y2 * height))
        if image.width < 1 or image.height < 1:
            continue
        if block.angle in (90, 180, 270):
            image = image.rotate(block.angle, expand=True)
        calls.append((index, resized_by_need(image), BLOCK_CALLS.get(block.type, TEXT_CALL)))
    return calls


def answer_text(completion: Completion) -> str:
    """``get_response_content``: the text without a trailing ``<|im_end|>``; CallError for a
    finish reason other than stop or length."""
    if completion.finish_reason not in ACCEPTED_FINISH:
        raise CallError(f"unexpected finish reason {completion.finish_reason!r} (MinerU's client "
                        "accepts stop and length only)")
    text = completion.text
    return text[: -len(END_TOKEN)] if text.endswith(END_TOKEN) else text


async def two_step_page(
    profile: ModelProfile, task: str, original: Image.Image, page: Image.Image,
    complete: Complete,
) -> Answer:
    """``two_step_extract`` then OmniDocBench's page: the layout of ``page`` (the 1036 x 1036
    image), one call per block cut from ``original``, all sent together, then the converted
    page. ``raw`` is the layout answer. CallError where any call failed, UnparsableLayoutError
    where the layout answer has text but no block."""
    layout = answer_text(await complete(page, profile.decoding))
    blocks = parse_layout(layout)
    details: dict[str, Any] = {"layout_blocks": len(blocks)}
    if not blocks and layout.strip():
        raise UnparsableLayoutError(
            f"{profile.name}'s layout answer has no block in its format: {layout[:200]!r}")
    calls = block_calls(original, blocks)
    completions = await asyncio.gather(
        *(complete(image, call.decoding, call.prompt) for _, image, call in calls),
        return_exceptions=True)
    for (index, _, _), completion in zip(calls, completions, strict=True):
        if isinstance(completion, BaseException):
            raise completion
        blocks[index].content = answer_text(completion)
    blocks, error = post_processed(blocks)
    details["blocks_sent"] = len(calls)
    if error is not None:
        details["post_process_error"] = error
    return Answer(page_markdown(blocks), layout, 1 + len(calls), details)


def _sources() -> dict[str, str]:
    client = f"{MINERU_VL_UTILS} mineru_vl_utils/mineru_client.py"
    http = f"{MINERU_VL_UTILS} mineru_vl_utils/vlm_client/http_client.py"
    return {
        "prompts": f"{client}:DEFAULT_PROMPTS",
        "system": f"{MINERU_VL_UTILS} mineru_vl_utils/vlm_client/base_client.py:"
        "DEFAULT_SYSTEM_PROMPT",
        "message": f"{http}:HttpVlmClient.build_request_body (image, then text)",
        "decoding": f"{client}:MinerUSamplingParams, DEFAULT_SAMPLING_PARAMS; "
        f"{http}:HttpVlmClient.build_request_body",
        "answer": f"{http}:HttpVlmClient.get_response_content (<|im_end|> cut, finish reasons; "
        "MinerUClient passes allow_truncated_content=True)",
        "pdf pages": f"{MINERU} mineru/utils/pdf_reader.py:page_to_image (dpi 200, "
        "max_width_or_height 3500)",
        "layout image": f"{client}:MinerUClientHelper.prepare_for_layout "
        "(layout_image_size (1036, 1036))",
        "block images": f"{client}:MinerUClientHelper.prepare_for_extract, resize_by_need "
        "(min_image_edge 28, max_image_edge_ratio 50)",
        "layout parser": f"{client}:MinerUClientHelper.parse_layout_output",
        "pipeline": f"{client}:MinerUClient.aio_two_step_extract (block calls gathered)",
        "converter": f"{MINERU_VL_UTILS} mineru_vl_utils/post_process/__init__.py:post_process "
        f"(handle_equation_block=False: {OMNIDOCBENCH_SCRIPT}); markdown: the same script's "
        "join of non-empty contents by a blank line",
        "vllm": f"{MINERU_VL_UTILS} README.md (Serving the Model: --logits-processors "
        "mineru_vl_utils:MinerULogitsProcessor, vllm>=0.10.1)",
        "checkpoint": f"{OMNIDOCBENCH_SCRIPT} MODEL_PATH",
    }


MINERU_2_5 = register_model(
    ModelProfile(
        name="MinerU2.5",
        version=2,
        hf_ids=("opendatalab/MinerU2.5-2509-1.2B",),
        sources=_sources(),
        tasks={PAGE_MARKDOWN: TaskPrompt(LAYOUT_PROMPT, system=SYSTEM_PROMPT)},
        decoding=decoding(0.0, 0.0),
        max_tokens_field="max_completion_tokens",
        vllm_flags=("--logits-processors", "mineru_vl_utils:MinerULogitsProcessor"),
        image_rule="layout: 1036 x 1036, bicubic, aspect not kept; blocks: cut from the page, "
        "padded to a side ratio <= 50, short side >= 28 px (bicubic)",
        prepare_image=layout_image,
        pdf_rendering=PdfRendering(
            f"{RENDER_DPI} dpi, longest side at most {MAX_RENDERED_SIDE} px (PDFium); then the "
            "layout image", pdf_dpi, layout_image),
        converter="mineru-vl-utils 0.1.22 two-step: layout, a call per block (table, formula, "
        "text prompts), post_process without equation-block merging, blocks joined by blank "
        "lines (OmniDocBench's script)",
        pipeline=two_step_page,
        pipeline_settings=BLOCK_SETTINGS,
        settings_from="mineru-vl-utils 0.1.22 `MinerUClient.two_step_extract` (http client); "
        "OmniDocBench's MinerU2.5 script",
        runs_here="page → markdown by layout then per-block calls; layout parsing, block images, "
        "request bodies and post-processing equal mineru-vl-utils 0.1.22's on generated cases",
        left_out="image analysis (none in 0.1.22: images are not sent and leave no text); the "
        "client's transport retries (the engine's own); an unparsable layout fails the sample "
        "instead of an empty page; the in-process engine's length cap (context length)",
    )
)
