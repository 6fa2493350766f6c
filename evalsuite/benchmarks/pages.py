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
from evalsuite.datasets.pages import UserPage, load_user_pages, render_pdf_page
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
    ``render_dir`` as ``<page id>.png`` (what the engine saw)."""
    result = []
    for page in pages:
        image: Path = page.path
        if page.pdf_index is not None:
            render_dir.mkdir(parents=True, exist_ok=True)
            image = render_dir / f"{page.page_id.replace('#', '-')}.png"
            render_pdf_page(page.path, page.pdf_index, dpi).save(image)
        key = {"benchmark": "pages", "document": page.page_id}
        request = InferenceRequest(image, MARKDOWN, mode, page.page_id, key)
        details = {"file": page.path.name, "kind": page.kind}
        result.append(Sample(page.page_id, request, reference=page.ground_truth, details=details))
    return result


def score(sample: Sample, result: InferenceResult) -> dict[str, float | int | bool | None]:
    """FinixDocBench's page scores (a failed page raises), the page's overall, OCR scores."""
    page = finix.score(sample, result)
    return {
        "overall": aggregate_pages({sample.sample_id: page})["overall"],
        **page,
        **ocr_scores(result.text, sample.reference),
    }
