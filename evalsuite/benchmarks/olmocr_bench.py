"""olmOCR-bench: each PDF page is converted to markdown once, and every unit test of the page
(present, absent, order, table, baseline, math) is one sample, decided as olmocr 0.4.27's
``olmocr.bench`` decides it (:mod:`evalsuite.metrics.olmocr_tests`).

Metrics: ``pass_rate`` (share of tests passed), also gated per test file as
``pass_rate[<file>]`` (the official per-category scores; ``baseline`` holds each PDF's automatic
baseline test), and ``overall``, the official score, reported: the unweighted mean of the
per-file pass rates, computed as a weighted mean of the tests (weight ``1 / tests in its
file``), so a page that fails (an engine error) still counts all its tests as failed."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from types import MappingProxyType

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.datasets.fetch import HubFiles
from evalsuite.datasets.olmocr_bench import OlmocrBench, load_olmocr_bench
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.metrics.olmocr_bench import prediction_file_name
from evalsuite.metrics.olmocr_tests import OLMOCR_VERSION, parse_test
from evalsuite.prompts import MARKDOWN
from evalsuite.records.model import BenchmarkRecord
from evalsuite.runner import MetricSpec, Sample, SampleRecord, Scored

GATED_PER_FILE = ("pass_rate",)
DATASET_REVISION = "54a96a6fb6a2bd3b297e59869491db4d3625b711"
"""allenai/olmOCR-bench's newest commit found (its eval.yaml update; the test files last
changed in eaa8289, August 2025)."""
OVERALL_WEIGHT = "overall_weight"

METRICS = (
    MetricSpec("overall", weight=OVERALL_WEIGHT, bounds=(0.0, 1.0), gate=False),
    MetricSpec("pass_rate", kind="proportion", tolerance=0.03),
)

BENCHMARK = register(
    Benchmark(
        name="olmocr_bench",
        title="olmOCR-bench",
        description=f"olmOCR-bench unit tests per PDF page, decided as olmocr {OLMOCR_VERSION}",
        sources=(
            DataSource(
                "fixtures",
                "four PDF pages written for the project with tests of every type, in the "
                "published layout",
                load_olmocr_bench,
                fixtures=FIXTURES_DIR / "olmocr_bench" / "fixture",
            ),
            DataSource(
                "olmocr_bench",
                "olmOCR-bench (allenai/olmOCR-bench): bench_data/*.jsonl and bench_data/pdfs",
                load_olmocr_bench,
                folder="olmocr_bench",
                requires=("pdfs",),
                fetch=HubFiles(
                    "allenai/olmOCR-bench",
                    DATASET_REVISION,
                    patterns=("bench_data/*.jsonl", "bench_data/pdfs/*"),
                    subfolder="bench_data",
                ),
            ),
        ),
        cpu_engines=("tesseract", "tiny-deepseek-ocr-2"),
        default_modes=("base",),
        order=75,
        sample_caps=MappingProxyType({"tiny-deepseek-ocr-2": 12}),
        metrics=METRICS,
    )
)


def category(sample: SampleRecord) -> str:
    """The test's file (``headers_footers`` for ``headers_footers.jsonl``), or ``baseline``."""
    return sample.details["category"]


def samples(bench: OlmocrBench, mode: str) -> list[Sample]:
    """One sample per test; the tests of a page share its request (one model call per page)."""
    sizes = Counter(item.category for item in bench.tests)
    requests: dict[tuple[str, int], InferenceRequest] = {}
    result = []
    for item in sorted(bench.tests, key=lambda t: (t.test.pdf, t.test.page)):
        test = item.test
        page_id = f"{test.pdf}#{test.page}"
        if (test.pdf, test.page) not in requests:
            image = bench.page_image(test.pdf, test.page)
            key = {"benchmark": "olmocr_bench", "document": page_id}
            requests[(test.pdf, test.page)] = InferenceRequest(image, MARKDOWN, mode, page_id, key)
        details = {
            "category": Path(item.category).stem,
            "type": test.type,
            "page": page_id,
            OVERALL_WEIGHT: 1.0 / sizes[item.category],
        }
        reference = json.dumps(dict(item.line), ensure_ascii=False)  # reports show the test
        result.append(Sample(test.id, requests[(test.pdf, test.page)], reference, details))
    return result


def write_predictions(folder: Path, record: BenchmarkRecord) -> None:
    """Each page's markdown as ``<pdf less .pdf>_pg<page>_repeat1.md`` (olmOCR-bench's candidate
    naming), to re-score with ``evalsuite score olmocr-bench``; failed pages get no file."""
    for sample in record.samples:
        if sample.error is not None or sample.prediction is None:
            continue
        pdf, page = sample.details["page"].rsplit("#", 1)
        target = folder / prediction_file_name(pdf, page)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(sample.prediction, encoding="utf-8")


def score(sample: Sample, result: InferenceResult) -> Scored:
    """The test's official verdict on the page's markdown, its explanation when it failed."""
    verdict = parse_test(json.loads(sample.reference)).run(result.text)
    scores = {"pass_rate": verdict.passed, "overall": float(verdict.passed)}  # weight: details
    return Scored(scores, {"why": verdict.explanation} if not verdict.passed else {})
