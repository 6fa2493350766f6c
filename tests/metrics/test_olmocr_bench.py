"""The olmocr_bench benchmark end to end on its fixtures with Tesseract: its per-file and overall
scores equal what ``evalsuite score olmocr-bench`` computes from the markdown files the run
writes, and a failed test's official explanation reaches the gate message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalsuite.benchmarks.olmocr_bench import GATED_PER_FILE
from evalsuite.datasets.olmocr_bench import load_olmocr_bench
from evalsuite.metrics.olmocr_bench import score_predictions
from evalsuite.records.results import read_results
from tests.support.faults import bench_env
from tests.support.paths import TEST_FIXTURES
from tests.support.subprocess_runs import needs_tesseract, run_pytest

FIXTURE = TEST_FIXTURES / "olmocr_bench" / "fixture"

pytestmark = [pytest.mark.browser, pytest.mark.slow, needs_tesseract]


def test_benchmark_scores_equal_the_score_command_on_its_own_predictions(tmp_path: Path) -> None:
    reports, golden = tmp_path / "reports", tmp_path / "golden"
    done = run_pytest("benches/test_olmocr_bench.py", "--engine", "tesseract", "--update-golden",
                      "--golden-dir", golden, "--report-dir", reports, env=bench_env())
    assert done.returncode == 0, done.stdout[-3000:]
    (results,) = reports.glob("*/results.json")
    (record,) = read_results(results).records
    predictions = results.parent / "olmocr_bench_predictions" / "tesseract-native-fixtures"
    bench = load_olmocr_bench(FIXTURE)
    scores = score_predictions(bench.tests, bench.pdfs, predictions)
    assert scores.errors == []
    assert record.metrics["overall"].value == pytest.approx(scores.overall, abs=1e-12)
    for name, rate in scores.per_category.items():
        metric = f"{GATED_PER_FILE[0]}[{Path(name).stem}]"
        assert record.metrics[metric].value == pytest.approx(rate), metric
    assert {o.id for o in scores.outcomes} == {s.sample_id for s in record.samples}
    # every file is gated: its entry was written
    entries = json.loads((golden / "olmocr_bench.json").read_text())["entries"]
    written = {entry["metric"] for entry in entries}
    assert {f"pass_rate[{Path(name).stem}]" for name in scores.per_category} <= written

    # a golden the engine falls short of: the file regresses, naming its failed tests and why
    data = json.loads((golden / "olmocr_bench.json").read_text())
    for entry in data["entries"]:
        if entry["metric"] == "pass_rate[table_tests]":
            entry["value"], entry["tolerance"] = 1.0, 0.0
    (golden / "olmocr_bench.json").write_text(json.dumps(data))
    again = run_pytest("benches/test_olmocr_bench.py", "--engine", "tesseract", "--golden-dir",
                       golden, "--report-dir", reports, env=bench_env())
    assert again.returncode == 1, again.stdout[-3000:]
    assert "pass_rate[table_tests]" in again.stdout
    assert "why=No tables found in the content" in again.stdout
