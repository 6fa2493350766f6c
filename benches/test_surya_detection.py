"""Surya-style text-line detection: engine line boxes (tesseract's TSV lines; DeepSeek-OCR's
grounding output) against reference boxes; precision and recall at coverage 0.5 with
penalize_double, as Surya's detection benchmark scores them."""

from __future__ import annotations

import pytest

from evalsuite.datasets.surya import load_detection
from evalsuite.engines import InferenceRequest
from evalsuite.engines.grounding import parse_grounding
from evalsuite.metrics.boxes import detection_precision_recall
from evalsuite.prompts import MARKDOWN
from evalsuite.render import PRESETS
from evalsuite.runner import MetricSpec, Sample
from evalsuite.suite import BenchmarkSpec

BENCHMARK = BenchmarkSpec(
    "surya_detection",
    "Surya text-line detection",
    cpu_engines=("tesseract",),
    default_modes=("base",),
)
pytestmark = pytest.mark.surya_detection

COVERAGE_THRESHOLD = 0.5
SPECS = (
    MetricSpec("precision", tolerance=0.03),
    MetricSpec("recall", tolerance=0.03),
)


def synthetic_pages(suite):
    """Rendered pages whose reference boxes are the renderer's own line boxes."""
    source = suite.fixture_path("surya", "synthetic_text.txt").read_text(encoding="utf-8")
    pages = []
    for name in ("font_sans", "font_serif", "size_large"):
        for index, page in enumerate(suite.render_text(source, PRESETS[name]).pages):
            boxes = [line.box for line in page.lines if line.text.strip()]
            pages.append((f"synthetic/{name}/{index}", page.image, boxes))
    return pages


def test_surya_detection(bench, suite, mode):
    pages = synthetic_pages(suite)
    for path in (suite.fixture_path("surya", "detection"), suite.data_path("surya_detection")):
        if path is not None:
            pages += [(f"hf/{p.page_id}", p.image, p.boxes) for p in load_detection(path)]
    samples = [
        Sample(
            page_id,
            InferenceRequest(image, MARKDOWN, mode, page_id, {"benchmark": "surya_detection"}),
            details={"reference_boxes": [list(b) for b in boxes], "size": image.size},
        )
        for page_id, image, boxes in bench.limit(pages)
    ]
    bench.require_recordings(samples)

    def score(sample, result):
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

    bench.evaluate(samples, score, SPECS)
