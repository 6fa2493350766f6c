"""olmOCR-bench: each PDF page is converted to markdown once, and every unit test of the page
(present, absent, order, table, baseline, math) is one sample, decided as olmocr 0.4.27's
``olmocr.bench`` decides it (:mod:`evalsuite.metrics.olmocr_tests`).

Metrics: ``pass_rate`` (share of tests passed), also gated per test file as
``pass_rate[<file>]`` (the official per-category scores; ``baseline`` holds each PDF's automatic
baseline test), and ``overall``, the official score, reported: the unweighted mean of the
per-file pass rates, computed as a weighted mean of the tests (weight ``1 / tests in its
file``), so a page that fails (an engine error) still counts all its tests as failed.

With ``repeats`` N > 1 (olmOCR-bench's ``--repeats``) each page is converted N times, each
conversion its own request (:attr:`~evalsuite.engines.base.InferenceRequest.repeat`), and a test
passes when more than half of its repeats pass, as the official scorer decides (1 of 2 fails).
The pages' markdown is written as ``_repeat<r>.md``; the sample's prediction and output health
are its first repeat's; the record's parameter says ``repeats=N`` (its own golden series).
A model whose runner renders PDF pages its own way (a profile's ``pdf_rendering``) gets each
page rendered so, from the request's ``pdf_page``; every other engine the 2,048 px rendering.
Deliberate deviation: a repeat the engine failed fails the test's sample with its error (the
official runner writes an empty file for it and scores that)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType

from evalsuite.benchmarks import FIXTURES_DIR, Benchmark, DataSource, register
from evalsuite.datasets.fetch import HubFiles
from evalsuite.datasets.olmocr_bench import OlmocrBench, load_olmocr_bench
from evalsuite.engines.base import InferenceRequest, InferenceResult, PdfPage
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
REPEATS = "repeats"
"""The settings key holding each repeat's text of a page converted several times."""

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


def samples(bench: OlmocrBench, mode: str, repeats: int = 1) -> list[Sample]:
    """One sample per test; the tests of a page share its requests (one model call per page
    and repeat)."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    sizes = Counter(item.category for item in bench.tests)
    requests: dict[tuple[str, int], tuple[InferenceRequest, ...]] = {}
    result = []
    for item in sorted(bench.tests, key=lambda t: (t.test.pdf, t.test.page)):
        test = item.test
        page_id = f"{test.pdf}#{test.page}"
        if (test.pdf, test.page) not in requests:
            image = bench.page_image(test.pdf, test.page)
            source = PdfPage(bench.root / "pdfs" / test.pdf, test.page - 1)
            key = {"benchmark": "olmocr_bench", "document": page_id}
            requests[(test.pdf, test.page)] = tuple(
                InferenceRequest(image, MARKDOWN, mode, page_id,
                                 key if repeats == 1 else {**key, "repeat": repeat},
                                 repeat=repeat, pdf_page=source)
                for repeat in range(1, repeats + 1))
        details = {
            "category": Path(item.category).stem,
            "type": test.type,
            "page": page_id,
            OVERALL_WEIGHT: 1.0 / sizes[item.category],
        }
        reference = json.dumps(dict(item.line), ensure_ascii=False)  # reports show the test
        first, *others = requests[(test.pdf, test.page)]
        result.append(Sample(test.id, first, reference, details, extra_requests=tuple(others),
                             combine=repeated if others else None))
    return result


def parameter(mode: str, repeats: int) -> str:
    """The record's parameter: ``mode=<mode>``, with ``,repeats=<N>`` for N > 1 (a majority of
    N repeats is another measurement: another golden series)."""
    return f"mode={mode}" + (f",repeats={repeats}" if repeats > 1 else "")


def repeated(parts: Sequence[InferenceResult]) -> InferenceResult:
    """A page's repeats as one result: the first's text, settings and counts, every repeat's
    text in ``settings["repeats"]``; failed with the first failing repeat's error."""
    failed = next(((n, p) for n, p in enumerate(parts, 1) if p.error is not None), None)
    first = parts[0]
    return replace(
        first,
        error=None if failed is None else f"repeat {failed[0]}: {failed[1].error}",
        settings={**first.settings, REPEATS: [part.text for part in parts]},
    )


def write_predictions(folder: Path, record: BenchmarkRecord) -> None:
    """Each page's markdown as ``<pdf less .pdf>_pg<page>_repeat<r>.md`` (olmOCR-bench's
    candidate naming), to re-score with ``evalsuite score olmocr-bench``; failed pages get no
    file."""
    for sample in record.samples:
        if sample.error is not None or sample.prediction is None:
            continue
        pdf, page = sample.details["page"].rsplit("#", 1)
        texts = (sample.details.get("settings") or {}).get(REPEATS) or [sample.prediction]
        for repeat, text in enumerate(texts, 1):
            target = folder / prediction_file_name(pdf, page, repeat)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")


def score(sample: Sample, result: InferenceResult) -> Scored:
    """The test's official verdict on the page's markdown, its explanation when it failed;
    with repeats, passed when more than half of them pass, explained by the first failing."""
    test = parse_test(json.loads(sample.reference))
    verdicts = [test.run(text) for text in result.settings.get(REPEATS) or [result.text]]
    passed = sum(verdict.passed for verdict in verdicts) / len(verdicts) > 0.5
    scores = {"pass_rate": passed, "overall": float(passed)}  # weight: details
    failing = next((verdict for verdict in verdicts if not verdict.passed), None)
    return Scored(scores, {"why": failing.explanation} if not passed and failing else {})
