"""Your own pages: a folder of page images and PDFs with ground truth (``--pages-dir``, layout in
:mod:`evalsuite.datasets.pages`), converted to markdown by each engine and scored with the
FinixDocBench page metrics and the OCR metrics.

Per page: ``text_block_Edit_dist``, ``reading_order_Edit_dist`` and ``table_TEDS`` (None on a
page without a ground-truth table) as FinixDocBench scores them
(:func:`evalsuite.metrics.markdown.evaluate_page`); ``overall`` = the page's FinixDocBench overall,
((1 − text)·100 + (1 − order)·100 [+ TEDS]) / (2 or 3), averaged over pages; ``edit_precision``,
``word_f1`` and ``crr`` of the output against the ground truth as text
(:func:`evalsuite.benchmarks.scoring.ocr_scores`). Goldens: ``golden/pages-<dataset name>.json``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalsuite.benchmarks import Benchmark, DataSource, finix, register
from evalsuite.benchmarks.scoring import ocr_scores
from evalsuite.datasets.pages import (
    UserPage,
    load_user_pages,
    render_pdf_page,
    unmatched_ground_truth,
)
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.metrics.markdown import aggregate_pages
from evalsuite.prompts import MARKDOWN
from evalsuite.runner import UNIT, MetricSpec, Sample

PAGES_OPTION = "--pages-dir"
METRICS = (
    MetricSpec("overall", bounds=(0.0, 100.0), tolerance=2.0),
    MetricSpec("text_block_Edit_dist", bounds=UNIT, direction="lower", tolerance=0.03),
    MetricSpec("reading_order_Edit_dist", bounds=UNIT, direction="lower", tolerance=0.03),
    MetricSpec("table_TEDS", bounds=(0.0, 100.0), tolerance=3.0),
    MetricSpec("edit_precision", bounds=UNIT, tolerance=0.02),
    MetricSpec("word_f1", bounds=UNIT, tolerance=0.02),
    MetricSpec("crr", bounds=(None, 1.0), tolerance=0.02),  # 1 - distance / length: can go < 0
)

BENCHMARK = register(
    Benchmark(
        name="pages",
        title="Your own pages",
        description="your own pages (--pages-dir): markdown page metrics and OCR metrics",
        sources=(
            DataSource(
                "pages",
                "your page images and PDFs with <stem>.md / <stem>.txt ground truth",
                load_user_pages,
                option=PAGES_OPTION,
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
        default_modes=("base",),
        order=80,
        metrics=METRICS,
    )
)


def samples(
    pages: Sequence[UserPage], mode: str, *, dpi: float, render_dir: Path
) -> list[Sample]:
    """One markdown-conversion request per page; PDF pages are rendered at ``dpi`` into
    ``render_dir`` as ``<page id>.png`` (what the engine saw). A PDF document with one ground
    truth is one sample whose further pages ride as its extra requests (outputs joined)."""
    result = []
    for page in pages:
        key = {"benchmark": "pages", "document": page.page_id}
        requests = [
            InferenceRequest(image, MARKDOWN, mode, page.page_id,
                             {**key, "page": number} if page.document_pages > 1 else key)
            for number, image in enumerate(_page_images(page, dpi, render_dir), start=1)
        ]
        details = {"file": page.path.name, "kind": page.kind}
        if page.document_pages > 1:
            details["pages"] = page.document_pages
        result.append(Sample(page.page_id, requests[0], reference=page.ground_truth,
                             details=details, extra_requests=tuple(requests[1:])))
    return result


def notes(pages: Sequence[UserPage], folder: Path) -> list[str]:
    """What the summary should say about how the folder was read: PDFs scored as one
    document, ground-truth files without a page (see :func:`unmatched_ground_truth`)."""
    said = [
        f"{page.path.name}: {page.document_pages} pages, one ground truth without form feeds: "
        "read page by page and scored as one document (outputs joined in page order)"
        for page in pages if page.document_pages > 1
    ]
    unmatched = unmatched_ground_truth(folder)
    if unmatched:
        said.append(f"{', '.join(unmatched)}: ground truth without a page file of the same "
                    "name, not scored (--pages-strict makes this an error)")
    return said


def _page_images(page: UserPage, dpi: float, render_dir: Path) -> list[Path]:
    if page.pdf_index is None:
        return [page.path]
    render_dir.mkdir(parents=True, exist_ok=True)
    images = []
    for index in range(page.pdf_index, page.pdf_index + page.document_pages):
        name = page.page_id if page.document_pages == 1 else f"{page.page_id}#p{index + 1}"
        image = render_dir / f"{name.replace('#', '-')}.png"
        render_pdf_page(page.path, index, dpi).save(image)
        images.append(image)
    return images


def score(sample: Sample, result: InferenceResult) -> dict[str, float | int | bool | None]:
    """FinixDocBench's page scores (a failed page raises), the page's overall, OCR scores."""
    page = finix.score(sample, result)
    return {
        "overall": aggregate_pages({sample.sample_id: page})["overall"],
        **page,
        **ocr_scores(result.text, sample.reference),
    }
