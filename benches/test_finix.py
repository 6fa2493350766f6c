"""FinixDocBench markdown page parsing: pages are read (ground-truth ``.md`` with its image) or
rendered from their markdown, the engine converts each to markdown, the predictions are written
out, and the FinixDocBench evaluator scores text blocks, reading order and table TEDS."""

from __future__ import annotations

import pytest

from evalsuite.datasets.finix import load_finix_pages, load_pubtabnet_pages
from evalsuite.engines import InferenceRequest
from evalsuite.metrics.markdown import evaluate_page
from evalsuite.prompts import MARKDOWN
from evalsuite.render import PRESETS, render_markdown
from evalsuite.runner import MetricSpec, Sample
from evalsuite.suite import BenchmarkSpec

BENCHMARK = BenchmarkSpec(
    "finix",
    "FinixDocBench",
    cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
    default_modes=("base",),
)
pytestmark = pytest.mark.finix

SPECS = (
    MetricSpec("text_block_Edit_dist", direction="lower", tolerance=0.03),
    MetricSpec("reading_order_Edit_dist", direction="lower", tolerance=0.03),
    MetricSpec("table_TEDS", tolerance=3.0),
    MetricSpec("success", kind="proportion"),
)
PUBTABNET_PAGES = 8


def finix_pages(bench, suite):
    pages = list(load_finix_pages(suite.fixture_path("finix", "gt")))
    if (real := suite.data_path("finix", "gt")) is not None:
        pages += load_finix_pages(real)
    if (tables := suite.data_path("pubtabnet")) is not None:
        pages += load_pubtabnet_pages(tables, limit=PUBTABNET_PAGES)
    return bench.limit(pages)


def test_finix(bench, suite, mode):
    samples = []
    for page in finix_pages(bench, suite):
        if page.image_path is not None:
            image = page.image_path
        else:
            image = render_markdown(page.markdown, PRESETS["size_small"]).pages[0].image
        request = InferenceRequest(image, MARKDOWN, mode, page.name, {"benchmark": "finix"})
        samples.append(Sample(page.name, request, reference=page.markdown))
    bench.require_recordings(samples)

    def score(sample, result):
        page = evaluate_page(result.text, sample.reference)
        if page["status"] != "ok":
            raise ValueError(f"page scored as failed: {page['reason']}")
        return {
            "text_block_Edit_dist": page["text_block_Edit_dist"],
            "reading_order_Edit_dist": page["reading_order_Edit_dist"],
            "table_TEDS": page["table_TEDS"],
            "success": page["valid_prediction"],
        }

    record = bench.evaluate(samples, score, SPECS)
    # The predictions as .md files, for re-scoring with `python -m evalsuite.finix`.
    if suite.run_dir is not None:
        folder = suite.run_dir / "finix_predictions" / f"{bench.engine_name}-{mode}"
        folder.mkdir(parents=True, exist_ok=True)
        for sample in record.samples:
            (folder / f"{sample.sample_id}.md").write_text(sample.prediction or "", "utf-8")
