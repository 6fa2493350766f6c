"""dots.ocr (rednote-hilab/dots.ocr), as its parser runs OmniDocBench and olmOCR-bench.

Settings from rednote-hilab/dots.ocr at 36d7248 (``dots_ocr/parser.py``, ``model/inference.py``,
``dots_ocr/utils/``): one user message, the page first, then ``<|img|><|imgpad|><|endofimg|>``
and the prompt (the code adds that placeholder so that vLLM adds no newline); temperature 0.1,
top_p 1.0, ``max_completion_tokens`` 16,384 (the parser's defaults). A page image is prepared as
``get_image_by_fitz_doc`` does with the PIL image the parser holds: wrapped into a one-page PDF
at 96 dpi and rendered at 200 dpi, i.e. scaled by 200/96, or by 72/96 where a side would exceed
4,500 px; the size is MuPDF's (each side ⌈s·z⌉). Deliberate deviation: Pillow's bicubic filter
resamples, not MuPDF's, so the pixels differ slightly while the size is exact. A PDF page is
rendered as ``load_images_from_pdf`` renders it (``fitz_doc_to_image``: 200 dpi, or 72 dpi where
a side would exceed 4,500 px), by PDFium rather than MuPDF (same size, slightly other pixels),
and sent as it is (the parser's ``fitz_preprocess`` is for images only). The answer (layout
JSON) becomes markdown without page headers and footers, the ``_nohf.md`` the authors score
(:mod:`evalsuite.models.convert.dots_ocr`).
"""

from __future__ import annotations

import math

from PIL import Image

from evalsuite.models import (
    PAGE_MARKDOWN,
    PLAIN_TEXT,
    Answer,
    Complete,
    ModelProfile,
    PdfRendering,
    TaskPrompt,
    register_model,
)
from evalsuite.models.convert.dots_ocr import page_markdown
from evalsuite.models.resize import POINTS_PER_INCH, resized

COMMIT = "rednote-hilab/dots.ocr@36d7248878f181c6257dc1cbd799ae940970444f"
IMAGE_PREFIX = "<|img|><|imgpad|><|endofimg|>"
RENDER_DPI = 200
PIL_IMAGE_DPI = 96
"""The resolution PyMuPDF gives a PNG without dpi metadata (the parser's re-saved PIL image)."""
FALLBACK_DPI = 72
MAX_RENDERED_SIDE = 4500
PROMPT_LAYOUT_ALL_EN = (
    "Please output the layout information from the PDF image, including each layout element's "
    "bbox, its category, and the corresponding text content within the bbox.\n\n"
    "1. Bbox format: [x1, y1, x2, y2]\n\n"
    "2. Layout Categories: The possible categories are ['Caption', 'Footnote', 'Formula', "
    "'List-item', 'Page-footer', 'Page-header', 'Picture', 'Section-header', 'Table', 'Text', "
    "'Title'].\n\n"
    "3. Text Extraction & Formatting Rules:\n"
    "    - Picture: For the 'Picture' category, the text field should be omitted.\n"
    "    - Formula: Format its text as LaTeX.\n"
    "    - Table: Format its text as HTML.\n"
    "    - All Others (Text, Title, etc.): Format their text as Markdown.\n\n"
    "4. Constraints:\n"
    "    - The output text must be the original text from the image, with no translation.\n"
    "    - All layout elements must be sorted according to human reading order.\n\n"
    "5. Final Output: The entire output must be a single JSON object.\n"
)
PROMPT_OCR = "Extract the text content from this image."


def _mupdf_side(side: float, zoom: float) -> int:
    """A side of ``side`` units rendered by MuPDF at ``zoom``: ⌈s·z⌉ (it rounds the page
    rectangle outwards, with its 0.001 tolerance)."""
    return math.ceil(side * zoom - 1e-3)


def fitz_dpi(width_pt: float, height_pt: float) -> float:
    """The resolution ``fitz_doc_to_image`` renders a PDF page of that size (points) at: 200
    dpi, or 72 where a side of the 200-dpi rendering would exceed 4,500 px."""
    zoom = RENDER_DPI / POINTS_PER_INCH
    largest = max(_mupdf_side(side, zoom) for side in (width_pt, height_pt))
    return RENDER_DPI if largest <= MAX_RENDERED_SIDE else FALLBACK_DPI


def rendered_size(width: int, height: int) -> tuple[int, int]:
    """(width, height) ``get_image_by_fitz_doc`` renders a PIL page of ``width`` x ``height``
    at: the page wrapped into a PDF at 96 dpi, rendered at its :func:`fitz_dpi` (zoom 200/96,
    or 72/96 where a side would exceed 4,500 px)."""
    points = (side * POINTS_PER_INCH / PIL_IMAGE_DPI for side in (width, height))
    zoom = fitz_dpi(*points) / PIL_IMAGE_DPI
    return _mupdf_side(width, zoom), _mupdf_side(height, zoom)


def prepare_page(page: Image.Image) -> Image.Image:
    """The page as dots.ocr's parser sends it: RGB at :func:`rendered_size`."""
    return resized(page, rendered_size(*page.size))


async def parse_page(
    profile: ModelProfile, task: str, original: Image.Image, page: Image.Image,
    complete: Complete,
) -> Answer:
    """One call; a layout answer becomes markdown without headers and footers (salvaged text
    where the JSON is broken), its boxes mapped to the ``original`` page and its pictures cut
    from it, as the parser does; any other task's answer is the text as is."""
    completion = await complete(page, profile.decoding)
    if task != PAGE_MARKDOWN:
        return Answer(completion.text, completion.text)
    markdown, salvaged = page_markdown(completion.text, original, page.size)
    return Answer(markdown, completion.text, details={"salvaged": salvaged})


DOTS_OCR = register_model(
    ModelProfile(
        name="dots.ocr",
        version=2,
        hf_ids=("rednote-hilab/dots.ocr",),
        sources={
            "prompts": f"{COMMIT} dots_ocr/utils/prompts.py:dict_promptmode_to_prompt",
            "message": f"{COMMIT} dots_ocr/model/inference.py:inference_with_vllm",
            "decoding": f"{COMMIT} dots_ocr/parser.py:DotsOCRParser.__init__ (defaults)",
            "image": f"{COMMIT} dots_ocr/utils/image_utils.py:get_image_by_fitz_doc, "
            "doc_utils.py:fitz_doc_to_image, load_images_from_pdf (PDF pages, dpi 200)",
            "converter": f"{COMMIT} dots_ocr/utils/layout_utils.py:post_process_output, "
            "format_transformer.py:layoutjson2md (no_page_hf=True), output_cleaner.py",
            "vllm": f"{COMMIT} README.md (vllm serve ... --chat-template-content-format string "
            "--trust-remote-code)",
        },
        tasks={
            PAGE_MARKDOWN: TaskPrompt(PROMPT_LAYOUT_ALL_EN, prefix=IMAGE_PREFIX),
            PLAIN_TEXT: TaskPrompt(PROMPT_OCR, prefix=IMAGE_PREFIX),
        },
        decoding={"max_completion_tokens": 16384, "temperature": 0.1, "top_p": 1.0},
        max_tokens_field="max_completion_tokens",
        vllm_flags=("--trust-remote-code", "--chat-template-content-format", "string"),
        image_rule="x200/96 (x72/96 above 4500 px), bicubic",
        prepare_image=prepare_page,
        pdf_rendering=PdfRendering("200 dpi, 72 dpi above 4500 px (PDFium)", fitz_dpi),
        converter="dots.ocr layoutjson2md no_page_hf (salvage on broken JSON)",
        pipeline=parse_page,
        settings_from=f"{COMMIT[:-32]} parser, inference, prompts, layout JSON → markdown",
        runs_here="page → markdown (`prompt_layout_all_en`, no headers/footers) and plain text "
        "(`prompt_ocr`); request, page size and markdown equal its parser's on generated cases",
        left_out="the re-rendered page's pixels (same size, Pillow's bicubic filter, not "
        "MuPDF's); PDF pages rendered by PDFium, not MuPDF (same size)",
    )
)
