"""API models: GPT-4o, GPT-5 and Gemini 2.5 Flash through their providers' OpenAI-compatible
chat-completions endpoints, as olmOCR-bench's runners ask them for a page.

Settings from olmocr 0.4.27 (PyPI; tag v0.4.27 1e139a5) ``olmocr/bench/runners/run_chatgpt.py``
and ``run_gemini.py``, with the prompt ``full_no_document_anchoring``
(``olmocr/bench/prompts.py:build_openai_silver_data_prompt_no_document_anchoring``), the one both
runners implement without the PDF's text layer (olmOCR-bench's "No Anchor" rows), and the answer
in the JSON schema ``page_response`` (``olmocr/prompts/prompts.py``). The page is sent at a
longest side of 2,048 px (``render_pdf_to_base64png(..., 2048)``; here a PDF page is rendered at
that size by PDFium, an image resized to it).

- GPT-4o (``gpt-4o-2024-08-06``, the runner's default): the text before the page in one user
  message, ``temperature`` 0.1, ``max_completion_tokens`` 20,000, ``response_format`` the strict
  JSON schema, ``safety_identifier`` "olmocr-bench-runner"; the answer must finish with
  ``stop`` and validate as ``PageResponse`` (:func:`json_page_response`).
- GPT-5: the same request without ``temperature``: GPT-5 models accept only their default
  (deliberate deviation; olmocr has no GPT-5 run of its own).
- Gemini 2.5 Flash: ``run_gemini``'s order (page, then text), ``temperature`` 0.1, ``top_p``
  1.0, 10,000 output tokens (allenai/olmocr main f7cfe4c; 0.4.27's 4,096 cuts off a thinking
  model's answers), its response schema (rotation_correction a string enum, no nullable
  field) as OpenAI-style JSON schema; its answer must finish with ``stop`` and is read as
  ``json.loads(text)["natural_text"]`` with nothing else checked (:func:`json_natural_text`).
  Deliberate deviations: sent to Google's OpenAI-compatible endpoint rather than through
  google-genai, so ``top_k`` 32 (no such field there) and the schema's ``property_ordering``
  are left out.

A refusal, or an answer that finished otherwise than ``stop`` or does not parse, fails the
sample (olmocr writes an empty page). Rate limits are the providers' lowest paid tier's and
prices their list prices, both as published in 2025 (``--requests-per-minute``,
``--tokens-per-minute``, ``--token-prices`` override them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PIL import Image

from evalsuite.models import (
    PAGE_MARKDOWN,
    Answer,
    Complete,
    ModelProfile,
    PdfRendering,
    Pipeline,
    RateLimits,
    TaskPrompt,
    TokenPrices,
    register_model,
)
from evalsuite.models.convert import ConversionError
from evalsuite.models.convert.olmocr import (
    FRONT_MATTER_FIELDS,
    json_natural_text,
    json_page_response,
)
from evalsuite.models.resize import resized, side_dpi, side_scaled

OLMOCR = "olmocr 0.4.27 (PyPI; tag v0.4.27 1e139a5)"
CHATGPT_RUNNER = f"{OLMOCR} olmocr/bench/runners/run_chatgpt.py:run_chatgpt"
GEMINI_RUNNER = f"{OLMOCR} olmocr/bench/runners/run_gemini.py:run_gemini"
LONGEST_SIDE = 2048
OPENAI_API = "https://api.openai.com/v1"
GEMINI_API = "https://generativelanguage.googleapis.com/v1beta/openai"
PROMPT_NO_ANCHOR = (
    "Below is the image of one page of a PDF document. Just return the plain text representation "
    "of this document as if you were reading it naturally.\nTurn equations into a LaTeX "
    "representation, and tables into markdown format. Remove the headers and footers, but keep "
    "references and footnotes.\nRead any natural handwriting.\nThis is likely one page out of "
    "several in the document, so be sure to preserve any sentences that come from the previous "
    "page, or continue onto the next page, exactly as they are.\nIf there is no text at all that "
    "you think you should read, you can output null.\nDo not hallucinate."
)
_DESCRIPTIONS = {
    "primary_language": "The primary language of the text using two-letter codes or null if "
    "there is no text at all that you think you should read.",
    "is_rotation_valid": "Is this page oriented correctly for reading? Answer only considering "
    "the textual content, do not factor in the rotation of any charts, tables, drawings, or "
    "figures.",
    "rotation_correction": "Indicates the degree of clockwise rotation needed if the page is "
    "not oriented correctly.",
    "is_table": "Indicates if the majority of the page content is in tabular format.",
    "is_diagram": "Indicates if the majority of the page content is a visual diagram.",
    "natural_text": "The natural text content extracted from the page.",
}
ANSWER_FIELDS = (*FRONT_MATTER_FIELDS, "natural_text")


def _described(properties: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: {**schema, "description": _DESCRIPTIONS[name]}
            for name, schema in properties.items()}


OPENAI_RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "page_response",
        "schema": {
            "type": "object",
            "properties": _described({
                "primary_language": {"type": ["string", "null"]},
                "is_rotation_valid": {"type": "boolean"},
                "rotation_correction": {"type": "integer", "enum": [0, 90, 180, 270],
                                        "default": 0},
                "is_table": {"type": "boolean"},
                "is_diagram": {"type": "boolean"},
                "natural_text": {"type": ["string", "null"]},
            }),
            "additionalProperties": False,
            "required": list(ANSWER_FIELDS),
        },
        "strict": True,
    },
}
"""``openai_response_format_schema()`` (olmocr/prompts/prompts.py)."""
GEMINI_RESPONSE_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "json_schema": {
        "name": "page_response",
        "schema": {
            "type": "object",
            "properties": {
                "primary_language": {"type": "string"},
                "is_rotation_valid": {"type": "boolean"},
                "rotation_correction": {"type": "string", "enum": ["0", "90", "180", "270"]},
                "is_table": {"type": "boolean"},
                "is_diagram": {"type": "boolean"},
                "natural_text": {"type": "string"},
            },
            "required": list(ANSWER_FIELDS),
        },
    },
}
"""``run_gemini``'s ``response_schema`` in JSON-schema words."""


def prepare_page(page: Image.Image) -> Image.Image:
    """The page at a longest side of :data:`LONGEST_SIDE`, RGB."""
    return resized(page, side_scaled(*page.size, LONGEST_SIDE))


PDF_RENDERING = PdfRendering(f"longest side {LONGEST_SIDE} px (PDFium)", side_dpi(LONGEST_SIDE))


def json_page(read: Callable[[str], str | None]) -> Pipeline:
    """One call; the answer must have finished with ``stop``; ``read`` turns its JSON into the
    page (a null page is an empty one: the model saw no text)."""

    async def pipeline(profile: ModelProfile, task: str, original: Image.Image,
                       page: Image.Image, complete: Complete) -> Answer:
        completion = await complete(page, profile.decoding)
        if completion.finish_reason != "stop":
            raise ConversionError(
                f"the answer finished with {completion.finish_reason!r}, not 'stop' "
                "(olmOCR-bench's "
                "runner refuses it)")
        return Answer(read(completion.text) or "", completion.text)

    return pipeline


def _strict_text(content: str) -> str | None:
    return json_page_response(content).natural_text


def _openai_profile(name: str, version: int, model_ids: tuple[str, ...],
                    decoding: dict[str, Any], limits: RateLimits, prices: TokenPrices,
                    deviation: str) -> ModelProfile:
    return ModelProfile(
        name=name,
        version=version,
        hf_ids=model_ids,
        sources={
            "prompts": f"{OLMOCR} olmocr/bench/prompts.py:"
            "build_openai_silver_data_prompt_no_document_anchoring",
            "message": f"{CHATGPT_RUNNER} (text, then the page; no system message)",
            "decoding": f"{CHATGPT_RUNNER} (max_completion_tokens 20000, response_format json, "
            "safety_identifier)" + deviation,
            "image": f"{OLMOCR} olmocr/data/renderpdf.py:render_pdf_to_base64png (2048)",
            "converter": f"{OLMOCR} olmocr/prompts/prompts.py:PageResponse, "
            "openai_response_format_schema",
        },
        tasks={PAGE_MARKDOWN: TaskPrompt(PROMPT_NO_ANCHOR, image_first=False)},
        decoding={**decoding, "max_completion_tokens": 20000,
                  "response_format": OPENAI_RESPONSE_FORMAT,
                  "safety_identifier": "olmocr-bench-runner"},
        max_tokens_field="max_completion_tokens",
        image_rule=f"longest side {LONGEST_SIDE} px, bicubic",
        prepare_image=prepare_page,
        pdf_rendering=PDF_RENDERING,
        converter="olmOCR-bench JSON page_response -> natural_text (strict)",
        pipeline=json_page(_strict_text),
        settings_from="olmocr 0.4.27 bench runner `run_chatgpt`, No Anchor prompt",
        runs_here="page → markdown through OpenAI's API (any OpenAI-compatible URL); request "
        "equal to the runner's",
        left_out="the anchored prompts (they need the PDF's text layer, shuffled at random "
        "above 4,000 characters); images are resized to 2048 px" + deviation,
        api_base=OPENAI_API,
        api_key_env="OPENAI_API_KEY",
        rate_limits=limits,
        token_prices=prices,
    )


GPT_4O = register_model(_openai_profile(
    "GPT-4o", 2, ("gpt-4o-2024-08-06",), {"temperature": 0.1},
    RateLimits(requests_per_minute=500, tokens_per_minute=30_000),
    TokenPrices(2.50, 10.00, "OpenAI list price of gpt-4o-2024-08-06, 2025"), ""))
GPT_5 = register_model(_openai_profile(
    "GPT-5", 2, ("gpt-5-2025-08-07", "gpt-5"), {},
    RateLimits(requests_per_minute=500, tokens_per_minute=500_000),
    TokenPrices(1.25, 10.00, "OpenAI list price of gpt-5, 2025"),
    "; no temperature (GPT-5 takes only its default)"))
GEMINI_2_5_FLASH = register_model(ModelProfile(
    name="Gemini-2.5-Flash",
    version=2,
    hf_ids=("gemini-2.5-flash", "models/gemini-2.5-flash"),
    sources={
        "prompts": f"{OLMOCR} olmocr/bench/prompts.py:"
        "build_openai_silver_data_prompt_no_document_anchoring",
        "message": f"{GEMINI_RUNNER} (the page, then the text)",
        "decoding": f"{GEMINI_RUNNER} (temperature 0.1, top_p 1.0, json response schema); "
        "allenai/olmocr f7cfe4c run_gemini.py (max_output_tokens 10000)",
        "image": f"{OLMOCR} olmocr/data/renderpdf.py:render_pdf_to_base64png (2048)",
        "converter": f"{GEMINI_RUNNER} (json.loads(text)['natural_text'])",
    },
    tasks={PAGE_MARKDOWN: TaskPrompt(PROMPT_NO_ANCHOR, image_first=True)},
    decoding={"temperature": 0.1, "top_p": 1.0, "max_tokens": 10000,
              "response_format": GEMINI_RESPONSE_FORMAT},
    image_rule=f"longest side {LONGEST_SIDE} px, bicubic",
    prepare_image=prepare_page,
    pdf_rendering=PDF_RENDERING,
    converter="olmOCR-bench JSON -> natural_text (unchecked, as run_gemini)",
    pipeline=json_page(json_natural_text),
    settings_from="olmocr 0.4.27 bench runner `run_gemini`, No Anchor prompt",
    runs_here="page → markdown through Gemini's OpenAI-compatible endpoint",
    left_out="top_k 32 and the schema's property_ordering (not in the OpenAI-compatible API); "
    "the anchored prompt; images are resized to 2048 px",
    api_base=GEMINI_API,
    api_key_env="GEMINI_API_KEY",
    rate_limits=RateLimits(requests_per_minute=1000, tokens_per_minute=1_000_000),
    token_prices=TokenPrices(0.30, 2.50, "Google list price of gemini-2.5-flash, 2025"),
))
