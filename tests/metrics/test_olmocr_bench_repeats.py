"""olmOCR-bench's ``--repeats N``: each page converted N times, each (test, repeat) a sample,
scores equal to the official scorer's on the N candidate files per page."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from evalsuite.benchmarks import olmocr_bench
from evalsuite.datasets.olmocr_bench import load_olmocr_bench
from evalsuite.metrics.olmocr_bench import score_predictions
from evalsuite.models.nanonets import NANONETS_OCR2
from evalsuite.records.results import read_results
from tests.models.test_served import MARKDOWN_ANSWER, PeerServer, running
from tests.support.faults import bench_env
from tests.support.paths import TEST_FIXTURES
from tests.support.subprocess_runs import run_pytest

FIXTURE = TEST_FIXTURES / "olmocr_bench" / "fixture"


def test_each_repeat_is_a_call_of_its_own() -> None:
    from evalsuite.engines import create_engine
    from evalsuite.request_cache import request_key

    bench = load_olmocr_bench(FIXTURE)
    once, thrice = olmocr_bench.samples(bench, "native"), olmocr_bench.samples(bench, "native", 3)
    assert [s.sample_id for s in thrice] == [s.sample_id for s in once]
    engine = create_engine("tesseract")
    for single, repeated in zip(once, thrice, strict=True):
        assert single.extra_requests == () and single.combine is None
        requests = (repeated.request, *repeated.extra_requests)
        assert [r.repeat for r in requests] == [1, 2, 3]
        assert [r.key.get("repeat") for r in requests] == [1, 2, 3]
        keys = {request_key("t", engine, r) for r in requests}
        assert len(keys) == 3 and request_key("t", engine, single.request) in keys
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        olmocr_bench.samples(bench, "native", 0)


def test_repeats_convert_each_page_n_times_and_score_as_olmocr_bench(tmp_path: Path) -> None:
    """Every page answered well on one call and badly on the other: the run's overall equals the
    official scorer's on the two candidate files of each page (a test passing 1 of 2 repeats
    fails), below the good answers' alone."""
    calls: Counter[bytes] = Counter()

    def answer(body: dict[str, Any], page: Image.Image) -> tuple[str, str]:
        key = page.tobytes()[:4096] + bytes(str(page.size), "ascii")
        calls[key] += 1
        return (MARKDOWN_ANSWER if calls[key] % 2 else "Nothing to read."), "stop"

    server = PeerServer(frozenset(NANONETS_OCR2.decoding), answer, NANONETS_OCR2.hf_ids[:1])
    reports = tmp_path / "reports"
    with running(server):
        run = run_pytest("benches", "-m", "olmocr_bench", "--model", "Nanonets-OCR2",
                         "--api-base", server.api_base, "--repeats", "2", "--report-dir", reports,
                         "--golden-dir", tmp_path / "golden", "--update-golden", env=bench_env())
    assert run.returncode == 0, run.stdout[-3000:]
    bench = load_olmocr_bench(FIXTURE)
    pages = {(item.test.pdf, item.test.page) for item in bench.tests}
    assert len(server.bodies) == 2 * len(pages) and set(calls.values()) == {2}
    results = next(reports.glob("*/results.json"))
    (record,) = read_results(results).records
    assert len(record.samples) == len(bench.tests)
    assert record.parameter == "mode=native,repeats=2"  # a golden series of its own
    predictions = next((results.parent / "olmocr_bench_predictions").iterdir())
    assert len(list(predictions.rglob("*_repeat2.md"))) == len(pages)
    official = score_predictions(bench.tests, bench.pdfs, predictions)
    assert official.errors == []
    assert record.metrics["overall"].value == pytest.approx(official.overall, abs=1e-12)
    good = score_predictions(bench.tests, bench.pdfs, _only(predictions, MARKDOWN_ANSWER, tmp_path))
    assert official.overall < good.overall


def _only(predictions: Path, text: str, tmp_path: Path) -> Path:
    """A candidate folder holding, for each page, only its files whose text is ``text``."""
    folder = tmp_path / "only"
    for path in predictions.rglob("*.md"):
        if path.read_text(encoding="utf-8") == text:
            target = folder / path.relative_to(predictions)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    return folder
