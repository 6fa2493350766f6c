"""Surya-style text-line recognition: each reference line is cropped, read by the engine, and
scored with ``overlap_score_exact``; aggregated as Σ weighted scores / Σ weights overall and per
language, after Surya's text normalisation."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from PIL import Image

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.datasets.fetch import HubRows
from evalsuite.datasets.surya import RecognitionPage, load_recognition
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.metrics.boxes import Box
from evalsuite.metrics.recognition import normalize_recognition_text
from evalsuite.metrics.text import overlap_score_exact
from evalsuite.models import LINE_TEXT
from evalsuite.prompts import FREE_OCR
from evalsuite.records.model import SampleRecord
from evalsuite.render import PRESETS, cached_render_text
from evalsuite.runner import UNIT, MetricSpec, Sample

CROP_PADDING = 4  # pixels around each line, so ascenders and descenders are not cut


def synthetic_pages(location: Path) -> list[RecognitionPage]:
    """A text file rendered with the size_medium preset; each drawn line is a reference."""
    text = location.read_text(encoding="utf-8")
    pages = []
    for index, page in enumerate(cached_render_text(text, PRESETS["size_medium"]).pages):
        lines = [line for line in page.lines if line.text.strip()]
        pages.append(
            RecognitionPage(
                str(index), page.image, [x.box for x in lines], [x.text for x in lines], "en"
            )
        )
    return pages


METRICS = (MetricSpec("line_score", bounds=UNIT, weight="line_weight", tolerance=0.03),)

BENCHMARK = register(
    Benchmark(
        name="surya_recognition",
        title="Surya text-line recognition",
        description="Surya-style text-line recognition",
        sources=(
            DataSource(
                "synthetic",
                "a text written for the project, rendered; one sample per line",
                synthetic_pages,
                fixtures=FIXTURES_DIR / "surya" / "synthetic_text.txt",
            ),
            DataSource(
                "fixtures",
                "pages written for the project in Surya's recognition layout",
                load_recognition,
                fixtures=FIXTURES_DIR / "surya" / "recognition",
            ),
            DataSource(
                "surya_recognition",
                "Surya's recognition benchmark pages (vikp/rec_bench)",
                load_recognition,
                folder="surya_recognition",
                # unpinned: only the short commit 85fa454 of the last upload could be found
                fetch=HubRows("vikp/rec_bench", "main"),
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
        default_modes=("tiny",),
        task=LINE_TEXT,
        order=60,
        metrics=METRICS,
    )
)


def crop(image: Image.Image, box: Box) -> Image.Image:
    x1, y1, x2, y2 = box
    return image.crop(
        (
            max(0, int(x1) - CROP_PADDING),
            max(0, int(y1) - CROP_PADDING),
            min(image.width, int(x2) + CROP_PADDING),
            min(image.height, int(y2) + CROP_PADDING),
        )
    )


def samples(pages: Sequence[RecognitionPage], mode: str) -> list[Sample]:
    """One request per reference line: the line cropped with a few pixels of margin; the lines
    of a page whose image could not be read fail with its error."""
    result = []
    for page in pages:
        for index, (box, text) in enumerate(zip(page.boxes, page.texts, strict=True)):
            sample_id = f"{page.page_id}/line{index:03d}"
            key = {"benchmark": "surya_recognition", "document": sample_id}
            image = crop(page.image, box) if page.image is not None else None
            request = InferenceRequest(image, FREE_OCR, mode, sample_id, key)
            # the line's weight is known before the engine answers: a failed line counts
            weight = math.sqrt(len(normalize_recognition_text(text)))
            details = {"language": page.language, "line_weight": weight}
            result.append(Sample(sample_id, request, text, details, error=page.error))
    return result


def score(sample: Sample, result: InferenceResult) -> dict[str, float]:
    prediction = normalize_recognition_text(result.text.strip())
    reference = normalize_recognition_text(sample.reference)
    (weighted,), (weight,) = overlap_score_exact([prediction], [reference])
    return {"line_score": weighted / weight, "line_weight": weight}


def language(sample: SampleRecord) -> str:
    return sample.details["language"]
