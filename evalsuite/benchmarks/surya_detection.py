"""Surya-style text-line detection: engine line boxes (tesseract's TSV lines; DeepSeek-OCR's
grounding output) against reference boxes; precision and recall at coverage 0.5 with
penalize_double, as Surya's detection benchmark scores them."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.datasets.fetch import HubRows
from evalsuite.datasets.surya import DetectionPage, load_detection
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.engines.grounding import parse_grounding
from evalsuite.metrics.boxes import detection_precision_recall
from evalsuite.models import TEXT_BOXES
from evalsuite.prompts import MARKDOWN
from evalsuite.render import PRESETS, cached_render_text
from evalsuite.runner import UNIT, MetricSpec, Sample

COVERAGE_THRESHOLD = 0.5
SYNTHETIC_PRESETS = ("font_sans", "font_serif", "size_large")


def synthetic_pages(location: Path) -> list[DetectionPage]:
    """A text file rendered with several presets; the reference boxes are the renderer's own
    line boxes."""
    text = location.read_text(encoding="utf-8")
    pages = []
    for name in SYNTHETIC_PRESETS:
        for index, page in enumerate(cached_render_text(text, PRESETS[name]).pages):
            boxes = [line.box for line in page.lines if line.text.strip()]
            pages.append(DetectionPage(f"{name}/{index}", page.image, boxes))
    return pages


METRICS = (
    MetricSpec("precision", bounds=UNIT, tolerance=0.03),
    MetricSpec("recall", bounds=UNIT, tolerance=0.03),
)

BENCHMARK = register(
    Benchmark(
        name="surya_detection",
        title="Surya text-line detection",
        description="Surya-style text-line detection",
        sources=(
            DataSource(
                "synthetic",
                "a text written for the project, rendered with three presets",
                synthetic_pages,
                fixtures=FIXTURES_DIR / "surya" / "synthetic_text.txt",
            ),
            DataSource(
                "fixtures",
                "two pages written for the project in Surya's detection layout",
                load_detection,
                fixtures=FIXTURES_DIR / "surya" / "detection",
            ),
            DataSource(
                "surya_detection",
                "Surya's detection benchmark pages (vikp/doclaynet_bench)",
                load_detection,
                folder="surya_detection",
                fetch=HubRows("vikp/doclaynet_bench", "8a8ec682062be414961f4f48876e0092abd38ae3"),
            ),
        ),
        cpu_engines=("tesseract",),
        default_modes=("base",),
        task=TEXT_BOXES,
        order=50,
        metrics=METRICS,
    )
)


def samples(items: Sequence[DetectionPage], mode: str) -> list[Sample]:
    """One sample per page; a page whose image could not be read fails with its error."""
    return [
        Sample(
            item.page_id,
            InferenceRequest(
                item.image, MARKDOWN, mode, item.page_id,
                {"benchmark": "surya_detection", "document": item.page_id},
            ),
            details={
                "reference_boxes": [list(b) for b in item.boxes],
                "size": item.image.size if item.image is not None else None,
            },
            error=item.error,
        )
        for item in items
    ]


def score(sample: Sample, result: InferenceResult) -> dict[str, float]:
    """Precision and recall of the engine's line boxes (its own, else those of its grounding
    markup) against the reference boxes."""
    width, height = sample.details["size"]
    if result.boxes is not None:
        predicted = [list(box) for box in result.boxes]
    else:
        predicted = [list(g.box) for g in parse_grounding(result.text, width, height)]
    return detection_precision_recall(
        predicted,
        sample.details["reference_boxes"],
        threshold=COVERAGE_THRESHOLD,
        penalize_double=True,
    )
