"""Fox page OCR with vision-token compression (the DeepSeek-OCR paper's Fox table).

Per page and mode: edit precision, valid vision tokens, and the compression ratios
ground-truth tokens / valid vision tokens and output tokens / valid vision tokens; aggregated per
mode and per ground-truth token bin of 100. ``test_fox_pages`` runs Fox-layout data (the project's
fixture pages, and the real set under the data dir); ``test_fox_study_documents`` runs the
render study's documents, whose recorded real DeepSeek-OCR outputs replay through it.
"""

from __future__ import annotations

import pytest

from evalsuite.datasets.fox import load_fox_pages
from evalsuite.datasets.render_study import load_render_study
from evalsuite.engines import InferenceRequest
from evalsuite.prompts import FREE_OCR
from evalsuite.render import PRESETS
from evalsuite.runner import MetricSpec, Sample
from evalsuite.scoring import ocr_scores
from evalsuite.suite import BenchmarkSpec
from evalsuite.tokens import text_token_count

BENCHMARK = BenchmarkSpec(
    "fox",
    "Fox page OCR",
    cpu_engines=("tesseract", "tiny-deepseek-ocr-2", "replay"),
    default_modes=("tiny", "small", "base"),
)
pytestmark = pytest.mark.fox

SPECS = (
    MetricSpec("edit_precision", tolerance=0.02),
    MetricSpec("normalized_edit_distance", direction="lower", gate=False),
    MetricSpec("word_f1", tolerance=0.02),
    MetricSpec("valid_vision_tokens", gate=False),
    MetricSpec("gt_compression", gate=False),
    MetricSpec("output_compression", gate=False),
)
TOKEN_BIN = 100


def score(sample: Sample, result) -> dict:
    return ocr_scores(
        result.text,
        sample.reference,
        vision_tokens=result.vision_tokens,
        output_tokens=result.output_tokens,
        ground_truth_tokens=sample.details["gt_tokens"],
    )


def token_bin(gt_tokens: int) -> str:
    low = gt_tokens // TOKEN_BIN * TOKEN_BIN
    return f"{low}-{low + TOKEN_BIN}"


def run_and_bin(bench, samples, parameter_extra: str = "") -> None:
    # Aggregated per ground-truth token bin too, as the paper's Fox table.
    bench.evaluate(
        samples,
        score,
        SPECS,
        parameter=f"mode={bench.mode}{parameter_extra}",
        group_by=lambda s: token_bin(s.details["gt_tokens"]),
    )


def fox_samples(bench, suite, mode: str) -> list[Sample]:
    roots = [suite.fixture_path("fox")]
    if (real := suite.data_path("fox", "focus_benchmark_test")) is not None:
        roots.append(real)
    pages = [
        (page.page_id, page.image_path, page.text, page.gt_tokens)
        for root in roots
        for page in load_fox_pages(root)
    ]
    if (gt_only := suite.data_path("fox", "en_1_gt.txt")) is not None:
        # The real Fox page en_1 comes without its image: render its ground truth as a page.
        text = gt_only.read_text(encoding="utf-8")
        image = suite.render_text(text, PRESETS["size_small"], single_page=True).pages[0].image
        pages.append(("en_1_rendered", image, text, int(text_token_count(text))))
    return [
        Sample(
            page_id,
            InferenceRequest(
                image, FREE_OCR, mode, page_id, {"benchmark": "fox", "document": page_id}
            ),
            reference=text,
            details={"gt_tokens": gt_tokens},
        )
        for page_id, image, text, gt_tokens in bench.limit(pages)
    ]


def test_fox_pages(bench, suite, mode):
    samples = fox_samples(bench, suite, mode)
    bench.require_recordings(samples)
    run_and_bin(bench, samples)


def test_fox_study_documents(bench, suite, mode):
    directory = suite.data_path("render_docs")
    if directory is None:
        pytest.skip("render study documents absent: EVALSUITE_DATA has no render_docs/")
    study = load_render_study(directory)
    samples = []
    for name, text in bench.limit(sorted(study.documents.items())):
        page = suite.render_text(text, PRESETS["color_default"], single_page=True).pages[0]
        key = {"experiment": "compression", "document": name}
        samples.append(
            Sample(
                f"study/{name}",
                InferenceRequest(page.image, FREE_OCR, mode, f"study/{name}", key),
                reference=text,
                details={"gt_tokens": int(text_token_count(text))},
            )
        )
    bench.require_recordings(samples)
    run_and_bin(bench, samples, ",source=study")
