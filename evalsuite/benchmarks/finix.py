"""FinixDocBench markdown page parsing: pages are read (ground-truth ``.md`` with its image) or
rendered from their markdown, the engine converts each to markdown, and the FinixDocBench
evaluator scores text blocks, reading order and table TEDS."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.datasets.fetch import HubFiles
from evalsuite.datasets.finix import FinixPage, load_finix_pages, load_pubtabnet_pages
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.metrics.markdown import evaluate_page
from evalsuite.prompts import MARKDOWN
from evalsuite.render import PRESETS, render_markdown
from evalsuite.runner import UNIT, MetricSpec, Sample

PUBTABNET_PAGES = 8
FINIX_TRACK = "track1_finixdigital_242_insurance_terms"


def pubtabnet_pages(location: Path) -> list[FinixPage]:
    return load_pubtabnet_pages(location, limit=PUBTABNET_PAGES)


METRICS = (
    MetricSpec("text_block_Edit_dist", bounds=UNIT, direction="lower", tolerance=0.03),
    MetricSpec("reading_order_Edit_dist", bounds=UNIT, direction="lower", tolerance=0.03),
    MetricSpec("table_TEDS", bounds=(0.0, 100.0), tolerance=3.0),
    MetricSpec("success", kind="proportion"),
)

BENCHMARK = register(
    Benchmark(
        name="finix",
        title="FinixDocBench",
        description="FinixDocBench markdown page parsing",
        sources=(
            DataSource(
                "fixtures",
                "five markdown pages written for the project, rendered",
                load_finix_pages,
                fixtures=FIXTURES_DIR / "finix" / "gt",
            ),
            DataSource(
                "finix",
                "FinixDocBench's FinixDigital track (inclusionAI/FinixDocBench): mds/ ground-truth "
                "pages, images/ their page images",
                load_finix_pages,
                folder="finix",
                requires=("mds",),
                # unpinned: only the short commit 6191402 of the last upload could be found
                fetch=HubFiles(
                    "inclusionAI/FinixDocBench",
                    "main",
                    patterns=(f"{FINIX_TRACK}/mds/*", f"{FINIX_TRACK}/images/*"),
                    subfolder=FINIX_TRACK,
                ),
            ),
            DataSource(
                "pubtabnet",
                "PubTabNet table images, each scored as a one-table page",
                pubtabnet_pages,
                folder="pubtabnet",
                requires=("PubTabNet_Examples.jsonl",),
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
        default_modes=("base",),
        order=70,
        metrics=METRICS,
    )
)


def samples(pages: Sequence[FinixPage], mode: str) -> list[Sample]:
    """Each page's image (rendered from its markdown when it has none), converted to markdown."""
    result = []
    for page in pages:
        if page.image_path is not None:
            image = page.image_path
        else:
            image = render_markdown(page.markdown, PRESETS["size_small"]).pages[0].image
        key = {"benchmark": "finix", "document": page.name}
        request = InferenceRequest(image, MARKDOWN, mode, page.name, key)
        result.append(Sample(page.name, request, reference=page.markdown))
    return result


def score(sample: Sample, result: InferenceResult) -> dict[str, float | bool | None]:
    page = evaluate_page(result.text, sample.reference)
    if page["status"] != "ok":
        raise ValueError(f"page scored as failed: {page['reason']}")
    return {
        "text_block_Edit_dist": page["text_block_Edit_dist"],
        "reading_order_Edit_dist": page["reading_order_Edit_dist"],
        "table_TEDS": page["table_TEDS"],
        "success": page["valid_prediction"],
    }


def write_predictions(folder: Path, predictions: dict[str, str]) -> None:
    """The predictions as ``<page>.md`` files, for re-scoring with ``python -m evalsuite.finix``."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in predictions.items():
        (folder / f"{name}.md").write_text(text, "utf-8")
