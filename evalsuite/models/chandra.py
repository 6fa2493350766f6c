"""Chandra 1 (datalab-to/chandra) and Chandra 2 (datalab-to/chandra-ocr-2), as Datalab's own
``chandra`` CLI runs a page on its vLLM server (``--method vllm``, the route olmOCR-bench's
``scripts/run_chandra_benchmark.sh`` takes).

Settings from chandra-ocr 0.1.8 (Chandra 1's last release on PyPI) and 0.2.0 (Chandra 2), wheels
from PyPI: the ``ocr_layout`` prompt (``chandra/prompts.py``) as the only text, AFTER the page in
one user message, no system message (``chandra/model/vllm.py:generate_vllm``); temperature 0
(Chandra 1 sends the int ``0``), top_p 0.1, ``max_tokens`` 8,192 (Chandra 1) or 12,384 (Chandra
2). The page as ``chandra/input.py:load_image`` loads an image (a side under 1,536 px: scaled so
that the shorter side is 1,536, int() of each side, Lanczos) and ``model/util.py:scale_to_fit``
sends it (:func:`fitted_size_1`, :func:`fitted_size_2`). An answer that ends in a repeat
(:func:`~evalsuite.models.convert.chandra.repeats`) or a failed call is retried up to 6 times
(``MAX_VLLM_RETRIES``) with top_p 0.95 and temperature 0.3 (Chandra 1) or min(T₀ + 0.2·k, 0.8) for
retry k (Chandra 2); the last answer is kept even if it still repeats. The answer becomes the
page as ``parse_markdown`` makes it with the CLI's defaults: headers and footers left out, images
kept as ``![alt](<md5>_<n>_img.webp)`` (:mod:`evalsuite.models.convert.chandra`). A PDF page is
rendered as ``load_pdf_images`` renders it, by PDFium as there (:func:`pdf_dpi`), and then only
``scale_to_fit`` applies.

Deliberate deviations: where the last call fails, Chandra returns an empty page (``raw`` ""); here
the sample fails with the calls' errors (CallError), and where ``parse_markdown`` catches a failed
conversion and returns "", the sample fails too (ConversionError), so that neither is scored as a
blank page. Chandra 2 sleeps 2·k s before retry k after a failed call; the served engine's own
back-off replaces that sleep. ``--max-new-tokens`` sets ``max_tokens`` of every call, where
chandra-ocr 0.1.8 always sends 8,192 (it ignores its ``max_output_tokens``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from evalsuite.models import (
    PAGE_MARKDOWN,
    Answer,
    CallError,
    Complete,
    ModelProfile,
    PdfRendering,
    TaskPrompt,
    register_model,
)
from evalsuite.models.convert.chandra import (
    OUTPUT_1,
    OUTPUT_2,
    OutputRules,
    page_markdown,
    repeats,
)

CHANDRA_OCR_1 = "chandra-ocr 0.1.8 (PyPI)"
CHANDRA_OCR_2 = "chandra-ocr 0.2.0 (PyPI)"
SERVED_NAME = "chandra"
"""``settings.VLLM_MODEL_NAME``: the name Datalab's launcher serves either model under."""
MIN_IMAGE_DIM = 1536
MIN_PDF_IMAGE_DIM = 1024
IMAGE_DPI = 192
MAX_PIXELS = 3072 * 2048
MIN_PIXELS_1 = 28 * 28
MIN_PIXELS_2 = 1792 * 28
GRID = 28
MAX_RETRIES = 6
RETRY_TOP_P = 0.95
OCR_LAYOUT_PROMPT_1 = (
    "OCR this image to HTML, arranged as layout blocks.  Each layout block should be a div "
    "with the data-bbox attribute representing the bounding box of the block in [x0, y0, x1, "
    "y1] format.  Bboxes are normalized 0-1024. The data-label attribute is the label for the "
    "block.\n"
    "\n"
    "Use the following labels:\n"
    "- Caption\n"
    "- Footnote\n"
    "- Equation-Block\n"
    "- List-Group\n"
    "- Page-Header\n"
    "- Page-Footer\n"
    "- Image\n"
    "- Section-Header\n"
    "- Table\n"
    "- Text\n"
    "- Complex-Block\n"
    "- Code-Block\n"
    "- Form\n"
    "- Table-Of-Contents\n"
    "- Figure\n"
    "\n"
    "Only use these tags ['math', 'br', 'i', 'b', 'u', 'del', 'sup', 'sub', 'table', 'tr', "
    "'td', 'p', 'th', 'div', 'pre', 'h1', 'h2', 'h3', 'h4', 'h5', 'ul', 'ol', 'li', 'input', "
    "'a', 'span', 'img', 'hr', 'tbody', 'small', 'caption', 'strong', 'thead', 'big', 'code'], "
    "and these attributes ['class', 'colspan', 'rowspan', 'display', 'checked', 'type', "
    "'border', 'value', 'style', 'href', 'alt', 'align'].\n"
    "\n"
    "Guidelines:\n"
    "* Inline math: Surround math with <math>...</math> tags. Math expressions should be "
    "rendered in KaTeX-compatible LaTeX. Use display for block math.\n"
    "* Tables: Use colspan and rowspan attributes to match table structure.\n"
    "* Formatting: Maintain consistent formatting with the image, including spacing, "
    "indentation, subscripts/superscripts, and special characters.\n"
    "* Images: Include a description of any images in the alt attribute of an <img> tag. Do "
    "not fill out the src property.\n"
    "* Forms: Mark checkboxes and radio buttons properly.\n"
    "* Text: join lines together properly into paragraphs using <p>...</p> tags.  Use <br> "
    "tags for line breaks within paragraphs, but only when absolutely necessary to maintain "
    "meaning.\n"
    "* Use the simplest possible HTML structure that accurately represents the content of the "
    "block.\n"
    "* Make sure the text is accurate and easy for a human to read and interpret.  Reading "
    "order should be correct and natural."
)
OCR_LAYOUT_PROMPT_2 = (
    "OCR this image to HTML, arranged as layout blocks.  Each layout block should be a div "
    "with the data-bbox attribute representing the bounding box of the block in x0 y0 x1 y1 "
    "format.  Bboxes are normalized 0-1000. The data-label attribute is the label for the "
    "block.\n"
    "\n"
    "Use the following labels:\n"
    "- Caption\n"
    "- Footnote\n"
    "- Equation-Block\n"
    "- List-Group\n"
    "- Page-Header\n"
    "- Page-Footer\n"
    "- Image\n"
    "- Section-Header\n"
    "- Table\n"
    "- Text\n"
    "- Complex-Block\n"
    "- Code-Block\n"
    "- Form\n"
    "- Table-Of-Contents\n"
    "- Figure\n"
    "- Chemical-Block\n"
    "- Diagram\n"
    "- Bibliography\n"
    "- Blank-Page\n"
    "\n"
    "Only use these tags ['math', 'br', 'i', 'b', 'u', 'del', 'sup', 'sub', 'table', 'tr', "
    "'td', 'p', 'th', 'div', 'pre', 'h1', 'h2', 'h3', 'h4', 'h5', 'ul', 'ol', 'li', 'input', "
    "'a', 'span', 'img', 'hr', 'tbody', 'small', 'caption', 'strong', 'thead', 'big', 'code', "
    "'chem'], and these attributes ['class', 'colspan', 'rowspan', 'display', 'checked', "
    "'type', 'border', 'value', 'style', 'href', 'alt', 'align', 'data-bbox', 'data-label'].\n"
    "\n"
    "Guidelines:\n"
    "* Inline math: Surround math with <math>...</math> tags. Math expressions should be "
    "rendered in KaTeX-compatible LaTeX. Use display for block math.\n"
    "* Tables: Use colspan and rowspan attributes to match table structure.\n"
    "* Formatting: Maintain consistent formatting with the image, including spacing, "
    "indentation, subscripts/superscripts, and special characters.\n"
    "* Images: Include a description of any images in the alt attribute of an <img> tag. Do "
    "not fill out the src property. Describe in detail inside the div tag. Also convert charts "
    "to high fidelity data, and convert diagrams to mermaid.\n"
    "* Forms: Mark checkboxes and radio buttons properly.\n"
    "* Text: join lines together properly into paragraphs using <p>...</p> tags.  Use <br> "
    "tags for line breaks within paragraphs, but only when absolutely necessary to maintain "
    "meaning.\n"
    "* Chemistry: Use <chem>...</chem> tags for chemical formulas with reactive SMILES.\n"
    "* Lists: Preserve indents and proper list markers.\n"
    "* Use the simplest possible HTML structure that accurately represents the content of the "
    "block.\n"
    "* Make sure the text is accurate and easy for a human to read and interpret.  Reading "
    "order should be correct and natural."
)


def loaded_size(width: int, height: int) -> tuple[int, int]:
    """``load_image``'s size for an image: where a side is under :data:`MIN_IMAGE_DIM`, both
    sides times s = 1536 / shorter side, truncated; else the size as it is."""
    if width < MIN_IMAGE_DIM or height < MIN_IMAGE_DIM:
        scale = MIN_IMAGE_DIM / min(width, height)
        return int(width * scale), int(height * scale)
    return width, height


def fitted_size_1(width: int, height: int) -> tuple[int, int]:
    """chandra-ocr 0.1.8 ``scale_to_fit``: with p = w·h and s = (bound / p)^½, above
    :data:`MAX_PIXELS` ⌊w·s⌋ × ⌊h·s⌋, below :data:`MIN_PIXELS_1` ⌈w·s⌉ × ⌈h·s⌉, else unchanged
    (a side of 0 too)."""
    pixels = width * height
    if width == 0 or height == 0 or MIN_PIXELS_1 <= pixels <= MAX_PIXELS:
        return width, height
    if pixels > MAX_PIXELS:
        scale = (MAX_PIXELS / pixels) ** 0.5
        return math.floor(width * scale), math.floor(height * scale)
    scale = (MIN_PIXELS_1 / pixels) ** 0.5
    return math.ceil(width * scale), math.ceil(height * scale)


def fitted_size_2(width: int, height: int) -> tuple[int, int]:
    """chandra-ocr 0.2.0 ``scale_to_fit``: sides in blocks of :data:`GRID` px, n = max(1,
    round(side·s / 28)) with s = (bound / p)^½ outside [:data:`MIN_PIXELS_2`, :data:`MAX_PIXELS`]
    (1 inside; Python's round); while the blocks exceed MAX_PIXELS, one block less on the side
    whose loss changes the ratio w/h less (the height on a tie; a side of one block is kept).
    A side of 0 or less: unchanged."""
    if width <= 0 or height <= 0:
        return width, height
    ratio, pixels = width / height, width * height
    scale = 1.0
    if pixels > MAX_PIXELS:
        scale = (MAX_PIXELS / pixels) ** 0.5
    elif pixels < MIN_PIXELS_2:
        scale = (MIN_PIXELS_2 / pixels) ** 0.5
    across = max(1, round(width * scale / GRID))
    down = max(1, round(height * scale / GRID))
    while across * down * GRID * GRID > MAX_PIXELS and (across, down) != (1, 1):
        narrower = abs((across - 1) / down - ratio) if across > 1 else math.inf
        shorter = abs(across / (down - 1) - ratio) if down > 1 else math.inf
        if narrower < shorter:
            across -= 1
        else:
            down -= 1
    return across * GRID, down * GRID


def pdf_dpi(width_pt: float, height_pt: float) -> float:
    """``load_pdf_images``' resolution for a page of that size (points): enough for a short side
    of :data:`MIN_PDF_IMAGE_DIM` px, at least :data:`IMAGE_DPI` dpi."""
    return max(MIN_PDF_IMAGE_DIM / min(width_pt, height_pt) * 72, IMAGE_DPI)


def _lanczos(page: Image.Image, size: tuple[int, int]) -> Image.Image:
    return page if page.size == size else page.resize(size, Image.Resampling.LANCZOS)


@dataclass(frozen=True)
class ChandraRelease:
    """What one chandra-ocr release does with a page: its ``scale_to_fit``, the temperature of
    retry k given the first call's, and the answer's rules (:class:`OutputRules`)."""

    output: OutputRules
    fitted_size: Callable[[int, int], tuple[int, int]]
    retry_temperature: Callable[[float, int], float]

    def prepare_page(self, page: Image.Image) -> Image.Image:
        """The page in RGB as ``load_image`` loads an image, then as ``scale_to_fit`` sends it
        (Lanczos both times)."""
        return self.fitted_page(_lanczos(page.convert("RGB"), loaded_size(*page.size)))

    def fitted_page(self, page: Image.Image) -> Image.Image:
        """The page as ``scale_to_fit`` sends it (Lanczos): what follows a PDF page's
        rendering."""
        return _lanczos(page.convert("RGB"), self.fitted_size(*page.size))

    @property
    def pdf_rendering(self) -> PdfRendering:
        return PdfRendering(f"max({MIN_PDF_IMAGE_DIM} px short side, {IMAGE_DPI} dpi) "
                            "(PDFium), then scale_to_fit", pdf_dpi, self.fitted_page)

    async def page(
        self, profile: ModelProfile, task: str, original: Image.Image, page: Image.Image,
        complete: Complete, *, max_retries: int = MAX_RETRIES,
    ) -> Answer:
        """``generate_vllm``'s ``process_item`` then ``parse_markdown``: a call with the
        profile's decoding, then while fewer than ``max_retries`` retries were made and the
        answer repeats or the call failed, retry k with :attr:`retry_temperature` and top_p
        0.95; the last answer is the page. CallError where the last call failed. ``original``
        is not used (the page's images are named, not cut out)."""
        first = profile.decoding["temperature"]
        errors: list[str] = []

        async def attempt(retry: int) -> tuple[str, bool]:
            decoding = dict(profile.decoding)
            if retry:
                decoding.update(temperature=self.retry_temperature(first, retry),
                                top_p=RETRY_TOP_P)
            try:
                return (await complete(page, decoding)).text, False
            except CallError as exc:
                errors.append(f"call {retry + 1}: {exc}")
                return "", True

        answer, failed = await attempt(0)
        retries = 0
        while True:
            repeated = repeats(answer, self.output)
            if retries >= max_retries or not (repeated or failed):
                break
            retries += 1
            answer, failed = await attempt(retries)
        if failed:
            raise CallError(f"{profile.name}'s last of {retries + 1} calls failed "
                            f"({'; '.join(errors)}); chandra-ocr would return an empty page")
        details = {"attempts": retries + 1, "repeated": repeated}
        return Answer(page_markdown(answer, self.output), answer, retries + 1, details)


RELEASE_1 = ChandraRelease(OUTPUT_1, fitted_size_1, lambda first, retry: 0.3)
RELEASE_2 = ChandraRelease(OUTPUT_2, fitted_size_2,
                           lambda first, retry: min(first + 0.2 * retry, 0.8))


def _sources(package: str, launcher: str) -> dict[str, str]:
    return {
        "prompts": f"{package} chandra/prompts.py:PROMPT_MAPPING['ocr_layout'] (the CLI's "
        "prompt_type, scripts/cli.py:main)",
        "message": f"{package} chandra/model/vllm.py:generate_vllm._generate (image, then text)",
        "decoding": f"{package} chandra/model/vllm.py:generate_vllm, settings.py:MAX_OUTPUT_TOKENS",
        "retries": f"{package} chandra/model/vllm.py:generate_vllm.process_item, "
        "model/util.py:detect_repeat_token, settings.py:MAX_VLLM_RETRIES",
        "image": f"{package} chandra/input.py:load_image (MIN_IMAGE_DIM 1536), "
        "model/util.py:scale_to_fit, input.py:load_pdf_images (MIN_PDF_IMAGE_DIM 1024, "
        "IMAGE_DPI 192)",
        "converter": f"{package} chandra/output.py:parse_markdown, parse_html (CLI defaults: "
        "no headers/footers, images included)",
        "vllm": f"{package} chandra/scripts/vllm.py:main ({launcher})",
        "checkpoint": f"{package} chandra/settings.py:MODEL_CHECKPOINT, VLLM_MODEL_NAME",
    }


_LEFT_OUT = (
    "PDF form fields are not flattened before rendering (`load_pdf_images` flattens them); "
    "a failed last call or conversion fails the sample "
    "instead of an empty page; no layout blocks or image crops"
)

CHANDRA = register_model(
    ModelProfile(
        name="Chandra",
        version=2,
        hf_ids=("datalab-to/chandra", SERVED_NAME),
        sources=_sources(CHANDRA_OCR_1, "docker vllm/vllm-openai:latest, "
                         "VLLM_ATTENTION_BACKEND=TORCH_SDPA"),
        tasks={PAGE_MARKDOWN: TaskPrompt(OCR_LAYOUT_PROMPT_1)},
        decoding={"max_tokens": 8192, "temperature": 0, "top_p": 0.1},
        vllm_flags=("--no-enforce-eager", "--max-num-seqs", "32", "--dtype", "bfloat16",
                    "--max-model-len", "32768", "--max_num_batched_tokens", "65536",
                    "--gpu-memory-utilization", ".9", "--served-model-name", SERVED_NAME),
        image_rule="short side >= 1536 px, then 784 to 6291456 px (floor/ceil), Lanczos",
        prepare_image=RELEASE_1.prepare_page,
        pdf_rendering=RELEASE_1.pdf_rendering,
        converter="chandra-ocr 0.1.8 parse_markdown (layout divs -> markdownify 1.1.0, no "
        "headers/footers); retries on repeats of the markdown at temperature 0.3",
        pipeline=RELEASE_1.page,
        settings_from="chandra-ocr 0.1.8 CLI: `generate_vllm`, `load_image`, `scale_to_fit`, "
        "`parse_markdown`",
        runs_here="page → markdown with the `ocr_layout` prompt and its repeat retries; markdown, "
        "repeat test, page size and request equal chandra-ocr 0.1.8's on generated cases",
        left_out=_LEFT_OUT + "; the container's VLLM_ATTENTION_BACKEND=TORCH_SDPA",
    )
)

CHANDRA_2 = register_model(
    ModelProfile(
        name="Chandra-2",
        version=2,
        hf_ids=("datalab-to/chandra-ocr-2", SERVED_NAME),
        sources=_sources(CHANDRA_OCR_2, "docker vllm/vllm-openai:v0.17.0, --gpu h100 defaults, "
                         "no --mtp"),
        tasks={PAGE_MARKDOWN: TaskPrompt(OCR_LAYOUT_PROMPT_2)},
        decoding={"max_tokens": 12384, "temperature": 0.0, "top_p": 0.1},
        vllm_flags=("--no-enforce-eager", "--max-num-seqs", "64", "--dtype", "bfloat16",
                    "--max-model-len", "18000", "--max_num_batched_tokens", "8192",
                    "--gpu-memory-utilization", ".85", "--enable-prefix-caching",
                    "--mm-processor-kwargs", '{"min_pixels": 3136, "max_pixels": 6291456}',
                    "--served-model-name", SERVED_NAME),
        image_rule="short side >= 1536 px, then sides multiples of 28 within 50176 to 6291456 "
        "px, Lanczos",
        prepare_image=RELEASE_2.prepare_page,
        pdf_rendering=RELEASE_2.pdf_rendering,
        converter="chandra-ocr 0.2.0 parse_markdown (layout divs -> markdownify 1.1.0, no "
        "headers/footers, no blank pages); retries on repeats at rising temperature",
        pipeline=RELEASE_2.page,
        settings_from="chandra-ocr 0.2.0 CLI: `generate_vllm`, `load_image`, `scale_to_fit`, "
        "`parse_markdown`",
        runs_here="page → markdown with the `ocr_layout` prompt and its repeat retries; markdown, "
        "repeat test, page size and request equal chandra-ocr 0.2.0's on generated cases",
        left_out=_LEFT_OUT + "; the 2·k s sleep before retrying a failed call (the engine "
        "backs off itself)",
    )
)
