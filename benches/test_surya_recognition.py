"""Surya-style text-line recognition: each reference line is cropped, read by the engine, and
scored with ``overlap_score_exact``; aggregated as Σ weighted scores / Σ weights overall and per
language, after Surya's text normalisation."""

from __future__ import annotations

import pytest

from evalsuite.datasets.surya import load_recognition
from evalsuite.engines import InferenceRequest
from evalsuite.metrics.recognition import normalize_recognition_text
from evalsuite.metrics.text import overlap_score_exact
from evalsuite.prompts import FREE_OCR
from evalsuite.render import PRESETS
from evalsuite.runner import MetricSpec, Sample
from evalsuite.suite import BenchmarkSpec

BENCHMARK = BenchmarkSpec(
    "surya_recognition",
    "Surya text-line recognition",
    cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
    default_modes=("tiny",),
)
pytestmark = pytest.mark.surya_recognition

CROP_PADDING = 4  # pixels around each line, so ascenders and descenders are not cut
SPECS = (MetricSpec("line_score", weight="line_weight", tolerance=0.03),)


def line_pages(suite):
    """(page id, image, boxes, texts, language) from rendered pages and the dataset layouts."""
    source = suite.fixture_path("surya", "synthetic_text.txt").read_text(encoding="utf-8")
    pages = []
    for index, page in enumerate(suite.render_text(source, PRESETS["size_medium"]).pages):
        lines = [line for line in page.lines if line.text.strip()]
        boxes = [line.box for line in lines]
        pages.append((f"synthetic/{index}", page.image, boxes, [x.text for x in lines], "en"))
    for path in (suite.fixture_path("surya", "recognition"), suite.data_path("surya_recognition")):
        if path is not None:
            pages += [
                (f"hf/{p.page_id}", p.image, p.boxes, p.texts, p.language)
                for p in load_recognition(path)
            ]
    return pages


def crop(image, box):
    x1, y1, x2, y2 = box
    return image.crop(
        (
            max(0, int(x1) - CROP_PADDING),
            max(0, int(y1) - CROP_PADDING),
            min(image.width, int(x2) + CROP_PADDING),
            min(image.height, int(y2) + CROP_PADDING),
        )
    )


def test_surya_recognition(bench, suite, mode):
    samples = []
    for page_id, image, boxes, texts, language in line_pages(suite):
        for index, (box, text) in enumerate(zip(boxes, texts, strict=True)):
            sample_id = f"{page_id}/line{index:03d}"
            request = InferenceRequest(
                crop(image, box), FREE_OCR, mode, sample_id, {"benchmark": "surya_recognition"}
            )
            samples.append(
                Sample(sample_id, request, reference=text, details={"language": language})
            )
    samples = bench.limit(samples)
    bench.require_recordings(samples)

    def score(sample, result):
        prediction = normalize_recognition_text(result.text.strip())
        reference = normalize_recognition_text(sample.reference)
        (weighted,), (weight,) = overlap_score_exact([prediction], [reference])
        return {"line_score": weighted / weight, "line_weight": weight}

    bench.evaluate(samples, score, SPECS, group_by=lambda s: s.details["language"])
