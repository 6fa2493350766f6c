"""Fox page OCR with vision-token compression (the DeepSeek-OCR paper's Fox table, Table 2).

Per page and mode: edit precision, word F1, valid vision tokens, and the compression ratios
ground-truth tokens / valid vision tokens and output tokens / valid vision tokens; aggregated per
mode and per ground-truth token bin of 100 (tokens counted with DeepSeek-OCR's tokenizer, as the
paper counts them). Sources: the project's fixture pages, the real Fox English pages, Fox page
en_1's ground truth rendered as a page, and the render study's documents (whose recorded real
DeepSeek-OCR outputs replay through this benchmark).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.benchmarks.scoring import ocr_scores
from evalsuite.datasets.fetch import HubFiles
from evalsuite.datasets.fox import load_fox_pages
from evalsuite.datasets.render_study import RENDER_STUDY_FETCH, load_render_study
from evalsuite.engines.base import ImageInput, InferenceRequest, InferenceResult
from evalsuite.models import PLAIN_TEXT
from evalsuite.prompts import FREE_OCR
from evalsuite.records.model import SampleRecord
from evalsuite.render import PRESETS, page_image
from evalsuite.runner import UNIT, MetricSpec, Sample
from evalsuite.tokens import text_token_count

TOKEN_BIN = 100


@dataclass(frozen=True)
class FoxItem:
    """One page to read: its id, image, ground-truth text and replay key fields."""

    page_id: str
    image: ImageInput
    text: str
    key: Mapping[str, Any] = field(default_factory=dict)


def fox_pages(location: Path) -> list[FoxItem]:
    """The English pages of a Fox-layout folder (``focus_benchmark_test/en_page_ocr.json``)."""
    return [
        FoxItem(page.page_id, page.image_path, page.text, {"document": page.page_id})
        for page in load_fox_pages(location)
    ]


def rendered_ground_truth(location: Path) -> list[FoxItem]:
    """A ground-truth text file rendered as one page (Fox en_1 comes without its image)."""
    text = location.read_text(encoding="utf-8")
    page_id = location.stem.removesuffix("_gt")
    return [FoxItem(page_id, page_image(text, PRESETS["size_small"]), text, {"document": page_id})]


def study_documents(location: Path) -> list[FoxItem]:
    """The render study's documents, rendered with its default preset as the study did; keyed
    as its recorded compression runs (``experiment=compression``)."""
    study = load_render_study(location)
    return [
        FoxItem(
            name,
            page_image(text, PRESETS["color_default"]),
            text,
            {"experiment": "compression", "document": name},
        )
        for name, text in sorted(study.documents.items())
    ]


METRICS = (
    MetricSpec("edit_precision", bounds=UNIT, tolerance=0.02),
    MetricSpec("normalized_edit_distance", bounds=UNIT, direction="lower", gate=False),
    MetricSpec("word_f1", bounds=UNIT, tolerance=0.02),
    MetricSpec("valid_vision_tokens", direction=None, gate=False),
    MetricSpec("gt_compression", direction=None, gate=False),
    MetricSpec("output_compression", direction=None, gate=False),
)

BENCHMARK = register(
    Benchmark(
        name="fox",
        title="Fox page OCR",
        description="Fox page OCR with vision-token compression",
        sources=(
            DataSource(
                "fixtures",
                "three pages written for the project",
                fox_pages,
                fixtures=FIXTURES_DIR / "fox",
            ),
            DataSource(
                "fox",
                "the English pages of the Fox benchmark (ucaslcl/Fox)",
                fox_pages,
                folder="fox",
                requires=("focus_benchmark_test/en_page_ocr.json",),
                fetch=HubFiles(
                    "ucaslcl/Fox_benchmark_data",
                    "d6c6f5202d61bf28c8cf9b7b777754dc9bbdc0e0",
                    patterns=("focus_benchmark_test.zip",),
                ),
            ),
            DataSource(
                "fox_en_1",
                "Fox page en_1's ground truth, rendered as a page (its image is not included); "
                "put galah92/deepseek-ocr-eval@a014a91e's fox_en_1_gt.txt there",
                rendered_ground_truth,
                folder="fox/en_1_gt.txt",
            ),
            DataSource(
                "study",
                "the render study's four documents (galah92/deepseek-ocr-eval), rendered",
                study_documents,
                folder="render_docs",
                requires=("questions.json",),
                fetch=RENDER_STUDY_FETCH,
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2", "replay"),
        default_modes=("tiny", "small", "base", "large", "gundam"),
        task=PLAIN_TEXT,
        order=10,
        metrics=METRICS,
    )
)


def samples(items: Sequence[FoxItem], mode: str) -> list[Sample]:
    """One Free OCR request per page; the ground truth's DeepSeek-OCR token count rides along."""
    return [
        Sample(
            item.page_id,
            InferenceRequest(item.image, FREE_OCR, mode, item.page_id, item.key),
            reference=item.text,
            details={"gt_tokens": int(text_token_count(item.text))},
        )
        for item in items
    ]


def score(sample: Sample, result: InferenceResult) -> dict[str, float | int | None]:
    return ocr_scores(
        result.text,
        sample.reference,
        valid_vision_tokens=result.valid_vision_tokens,
        output_tokens=result.output_tokens,
        ground_truth_tokens=sample.details["gt_tokens"],
    )


def token_bin(sample: SampleRecord) -> str:
    """The paper's bins of 100 ground-truth tokens: ``600-700``, ``700-800``, …"""
    low = sample.details["gt_tokens"] // TOKEN_BIN * TOKEN_BIN
    return f"{low}-{low + TOKEN_BIN}"
