"""olmOCR-2 (allenai/olmOCR-2-7B-1025), as olmocr's pipeline runs a page.

Settings from olmocr 0.4.27 (PyPI, = tag v0.4.27): ``build_no_anchoring_v4_yaml_prompt``
(olmocr/prompts/prompts.py) as the only text, sent BEFORE the page in one user message
(``build_page_query``, olmocr/pipeline.py); ``max_tokens`` 8,000; the temperature of attempt k
is ``TEMPERATURE_BY_ATTEMPT[min(k, 7)]`` over 8 attempts (``--max_page_retries``); an answer is
valid when ``finish_reason`` is ``stop`` and ``usage.total_tokens`` is at most 16,384; its YAML
front matter must parse (:mod:`evalsuite.models.convert.olmocr`). ``process_page``'s order of
attempts is :func:`olmocr_page`'s. The page's longest side is 1,288 px (``render_pdf_to_base64png``
renders PDF pages at that; an image olmocr first wraps into a PDF, which comes to the same size
up to poppler's rounding of a side to ⌈s⌉).

Deliberate deviations: where every attempt fails, olmocr falls back to the PDF's text layer
(``pdftotext``) and its olmOCR-bench runner writes an empty page; here the sample fails with
the reason, so that it is counted as a failure rather than scored as a blank page. A page given
as an image is resized to the 1,288 px side with Pillow's bicubic filter (poppler renders PDF
pages directly at that size). A PDF page is rendered by PDFium at olmocr's resolution
(1,288 · 72 / longest side in points dpi), not by poppler: the size is poppler's, the pixels
differ slightly.
"""

from __future__ import annotations

from typing import Any

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
from evalsuite.models.convert.olmocr import PageResponse, page_response
from evalsuite.models.resize import resized, side_dpi, side_scaled

OLMOCR = "olmocr 0.4.27 (PyPI; tag v0.4.27 1e139a5)"
LONGEST_SIDE = 1288
MAX_CONTEXT_TOKENS = 16384
TEMPERATURE_BY_ATTEMPT = (0.1, 0.1, 0.2, 0.3, 0.5, 0.8, 0.9, 1.0)
MAX_PAGE_RETRIES = 8
PROMPT_V4_YAML = (
    "Attached is one page of a document that you must process. Just return the plain text "
    "representation of this document as if you were reading it naturally. Convert equations "
    "to LateX and tables to HTML.\nIf there are any figures or charts, label them with the "
    "following markdown syntax ![Alt text describing the contents of the figure]"
    "(page_startx_starty_width_height.png)\nReturn your output as markdown, with a front "
    "matter section on top specifying values for the primary_language, is_rotation_valid, "
    "rotation_correction, is_table, and is_diagram parameters."
)
_TRANSPOSE = {
    90: Image.Transpose.ROTATE_90,
    180: Image.Transpose.ROTATE_180,
    270: Image.Transpose.ROTATE_270,
}


class NoValidAnswerError(ConversionError):
    """Every attempt of olmOCR's ladder failed (olmocr would fall back to the text layer)."""


def prepare_page(page: Image.Image) -> Image.Image:
    """The page at :data:`LONGEST_SIDE`, RGB."""
    return resized(page, side_scaled(*page.size, LONGEST_SIDE))


def rotated(page: Image.Image, rotation: int) -> Image.Image:
    """``build_page_query``'s re-render for ``image_rotation``: PIL's transpose by that many
    degrees counter-clockwise (the same page for 0)."""
    return page if rotation == 0 else page.transpose(_TRANSPOSE[rotation])


class _Attempt:
    """One ``try_single_page``: the parsed answer (None: the call or the parse failed)."""

    def __init__(self, completion: Completion | None, error: str | None, rotation: int) -> None:
        self.completion = completion
        self.rotation = rotation
        self.error = error
        self.response: PageResponse | None = None
        self.valid = False
        if completion is None:
            return
        try:
            self.response = page_response(completion.text)
        except ConversionError as exc:
            self.error = f"unparsable front matter: {exc}"
            return
        total = completion.usage.get("total_tokens") if completion.usage else None
        self.valid = completion.finish_reason == "stop" and not (
            isinstance(total, int) and total > MAX_CONTEXT_TOKENS
        )
        if not self.valid:
            self.error = (
                f"invalid answer (finish_reason {completion.finish_reason!r}, "
                f"total_tokens {total})"
            )

    @property
    def done(self) -> bool:
        return self.valid and self.response is not None and self.response.is_rotation_valid


async def olmocr_page(
    profile: ModelProfile,
    task: str,
    original: Image.Image,
    page: Image.Image,
    complete: Complete,
    *,
    max_page_retries: int = MAX_PAGE_RETRIES,
) -> Answer:
    """``process_page``: attempt 0 upright; if it parsed with ``is_rotation_valid`` false, the
    remaining attempts in turn at the cumulative correction (each still-rotated answer adds its
    own, mod 360), else the remaining attempts upright. The first valid, upright answer wins;
    after the last attempt, the last answer if it parsed and was valid. NoValidAnswerError
    otherwise (where olmocr falls back to ``pdftotext``). ``original`` is not used: olmocr
    renders the page once and only turns that rendering."""
    errors: list[str] = []
    rotation = 0

    async def attempt(number: int) -> _Attempt:
        temperature = TEMPERATURE_BY_ATTEMPT[min(number, len(TEMPERATURE_BY_ATTEMPT) - 1)]
        decoding = {**profile.decoding, "temperature": temperature}
        try:
            completion = await complete(rotated(page, rotation), decoding)
        except CallError as exc:
            result = _Attempt(None, str(exc), rotation)
        else:
            result = _Attempt(completion, None, rotation)
        if result.error is not None:
            errors.append(f"attempt {number} (rotation {rotation}): {result.error}")
        return result

    result = await attempt(0)
    calls = 1
    rotation_path = result.response is not None and not result.response.is_rotation_valid
    if rotation_path:
        rotation = result.response.rotation_correction % 360
    if not result.done:
        for number in range(1, max_page_retries):
            result = await attempt(number)
            calls += 1
            if result.done:
                break
            if rotation_path and result.response is not None:
                rotation = (rotation + result.response.rotation_correction) % 360
    if not (result.valid and result.response is not None):
        raise NoValidAnswerError(
            f"olmOCR-2 gave no valid answer in {calls} attempts ({'; '.join(errors)}); olmocr "
            "would fall back to the PDF's text layer"
        )
    assert result.completion is not None
    details: dict[str, Any] = {
        "attempts": calls,
        "rotation": result.rotation,
        "is_rotation_valid": result.response.is_rotation_valid,
        "primary_language": result.response.primary_language,
    }
    return Answer(result.response.natural_text or "", result.completion.text, calls, details)


OLMOCR_2 = register_model(
    ModelProfile(
        name="olmOCR-2",
        version=2,
        hf_ids=("allenai/olmOCR-2-7B-1025", "allenai/olmOCR-2-7B-1025-FP8"),
        sources={
            "prompts": f"{OLMOCR} olmocr/prompts/prompts.py:build_no_anchoring_v4_yaml_prompt",
            "message": f"{OLMOCR} olmocr/pipeline.py:build_page_query",
            "decoding": f"{OLMOCR} olmocr/pipeline.py:TEMPERATURE_BY_ATTEMPT, try_single_page "
            "(max_tokens 8000, valid: finish_reason stop and total_tokens <= 16384)",
            "retries": f"{OLMOCR} olmocr/pipeline.py:process_page (max_page_retries 8)",
            "image": f"{OLMOCR} olmocr/data/renderpdf.py:render_pdf_to_base64png "
            "(target_longest_image_dim 1288)",
            "converter": f"{OLMOCR} olmocr/train/front_matter.py:FrontMatterParser",
            "vllm": f"{OLMOCR} olmocr/pipeline.py:vllm_server_task "
            "(--limit-mm-per-prompt '{\"video\": 0}' --max-model-len 16384; vllm 0.11.2)",
        },
        tasks={PAGE_MARKDOWN: TaskPrompt(PROMPT_V4_YAML, image_first=False)},
        decoding={"max_tokens": 8000, "temperature": TEMPERATURE_BY_ATTEMPT[0]},
        vllm_flags=("--limit-mm-per-prompt", '{"video": 0}', "--max-model-len", "16384"),
        image_rule=f"longest side {LONGEST_SIDE} px, bicubic",
        prepare_image=prepare_page,
        pdf_rendering=PdfRendering(f"longest side {LONGEST_SIDE} px (PDFium)",
                                   side_dpi(LONGEST_SIDE)),
        converter="olmOCR front matter -> natural_text; temperature ladder, rotation retries",
        pipeline=olmocr_page,
        settings_from="olmocr 0.4.27 `build_page_query`, `process_page`, front matter parser",
        runs_here="page → markdown with the v4 YAML prompt, its temperature ladder and rotation "
        "retries (equal to `process_page` on 51 scripted scenarios)",
        left_out="the `pdftotext` fallback (the sample fails instead of scoring a blank page); "
        "images are resized to 1288 px; PDF pages are rendered by PDFium, not poppler",
    )
)
