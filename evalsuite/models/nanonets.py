"""Nanonets-OCR2 (nanonets/Nanonets-OCR2-3B), as olmOCR-bench's runner that produced its
published olmOCR-bench figure runs it.

Settings from olmocr 0.4.27 ``olmocr/bench/runners/run_nanonetsocr_2.py:run_server`` (the model
card's prompt): a system message "You are a helpful assistant.", then one user message with the
page before the prompt; temperature 0.0, ``max_tokens`` 4,096, one request; the page rendered so
that its SHORTEST side is 1,280 px (``render_pdf_to_base64png_min_short_size``). Nanonets ships
no converter: the answer (with its ``<page_number>``, ``<watermark>`` and ``<img>`` tags) is the
page, as in that runner. Deliberate deviation: a page given as an image is resized to that size
with Pillow's bicubic filter (olmocr renders the PDF page at it with poppler); a PDF page is
rendered at that size by PDFium, not poppler.
"""

from __future__ import annotations

from PIL import Image

from evalsuite.models import PAGE_MARKDOWN, ModelProfile, PdfRendering, TaskPrompt, register_model
from evalsuite.models.resize import resized, side_dpi, side_scaled

RUNNER = "olmocr 0.4.27 olmocr/bench/runners/run_nanonetsocr_2.py:run_server"
SHORTEST_SIDE = 1280
PROMPT = (
    "Extract the text from the above document as if you were reading it naturally. Return the "
    "tables in html format. Return the equations in LaTeX representation. If there is an image "
    "in the document and image caption is not present, add a small description of the image "
    "inside the <img></img> tag; otherwise, add the image caption inside <img></img>. "
    "Watermarks should be wrapped in brackets. Ex: <watermark>OFFICIAL COPY</watermark>. Page "
    "numbers should be wrapped in brackets. Ex: <page_number>14</page_number> or "
    "<page_number>9/22</page_number>. Prefer using ☐ and ☑ for check boxes."
)


def prepare_page(page: Image.Image) -> Image.Image:
    """The page with its shortest side :data:`SHORTEST_SIDE`, RGB."""
    return resized(page, side_scaled(*page.size, SHORTEST_SIDE, side="shortest"))


NANONETS_OCR2 = register_model(
    ModelProfile(
        name="Nanonets-OCR2",
        version=2,
        hf_ids=("nanonets/Nanonets-OCR2-3B", "nanonets/Nanonets-OCR2-1.5B-exp"),
        sources={
            "prompts": f"{RUNNER} (prompt; = the model card's)",
            "message": f"{RUNNER} (system message, image, then text)",
            "decoding": f"{RUNNER} (temperature 0.0, max_tokens 4096)",
            "image": "olmocr 0.4.27 olmocr/data/renderpdf.py:render_pdf_to_base64png_min_short_size"
            " (page_dimensions 1280)",
            "converter": f"{RUNNER} (the answer as it is)",
        },
        tasks={PAGE_MARKDOWN: TaskPrompt(PROMPT, system="You are a helpful assistant.")},
        decoding={"temperature": 0.0, "max_tokens": 4096},
        image_rule=f"shortest side {SHORTEST_SIDE} px, bicubic",
        prepare_image=prepare_page,
        pdf_rendering=PdfRendering(f"shortest side {SHORTEST_SIDE} px (PDFium)",
                                   side_dpi(SHORTEST_SIDE, side="shortest")),
        converter="none (the answer is the page, tags and all)",
        settings_from="olmocr 0.4.27 bench runner `run_nanonetsocr_2` (its published "
        "olmOCR-bench route)",
        runs_here="page → markdown; request equal to the runner's on 73 generated cases",
        left_out="no converter exists upstream (tags stay in the page); images are resized to "
        "1280 px; PDF pages are rendered by PDFium, not poppler",
    )
)
