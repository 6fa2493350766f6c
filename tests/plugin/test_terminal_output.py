"""What people read in the terminal: a failed gate's message, the end-of-run summary, the
golden-update diff. Numbers to 4 significant digits; full precision stays in the JSON."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from scipy import stats as scipy_stats

from evalsuite.benchmarks import quality
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.golden import (
    EntryChange,
    GoldenEntry,
    GoldenStore,
    entries_from_record,
    gate_metric,
    tolerance_rule,
)
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import BenchmarkRecord, MetricSummary
from evalsuite.records.results import RunResults
from evalsuite.reports.summary import summary_lines
from evalsuite.runner import Sample, score_samples
from evalsuite.stats import summarize_proportion
from evalsuite.textformat import significant
from tests.support.subprocess_runs import REPO, child_env, needs_tesseract, run_pytest

LONG_ANSWER = (
    "Having read the whole article twice, I believe the answer is C, because the narrator "
    "says so near the end of the second part."
)


def _quality_sample(number: int) -> Sample:
    sample_id = f"20001/q{number}"
    request = InferenceRequest(None, "Question: …", "small", sample_id,
                               {"benchmark": "quality", "condition": "text"})
    details = {"gold_index": 1, "n_options": 4, "context_tokens": 100}
    return Sample(sample_id, request, reference="the lighthouse keeper", details=details)


def test_a_failed_qa_gate_names_golden_delta_test_and_each_wrong_answer() -> None:
    """Seven of ten answers right against a golden 0.99: the message gives the golden, current,
    delta and n to 4 significant digits, the exact binomial test's p-value, and for the wrong
    answers the question id, gold option, parsed choice and the answer's first 80 characters."""
    samples = [_quality_sample(number) for number in range(10)]
    texts = ["B"] * 7 + [LONG_ANSWER] * 2 + ["no idea"]
    results = [InferenceResult(text) for text in texts]
    records = score_samples(samples, results, quality.score, quality.METRICS)
    accuracy = summarize_proportion([bool(r.scores["accuracy"]) for r in records])
    record = BenchmarkRecord("quality", "tiny", "mode=small,condition=text",
                             {"accuracy": accuracy}, records)
    entry = GoldenEntry("tiny", "fixtures", "mode=small,condition=text", "accuracy", 0.9923456,
                        40, "higher", 0.0, "proportion", "2026-01-01T00:00:00Z", "c0ffee")
    result = gate_metric("quality", record, "accuracy", entry)
    assert result.status == "regressed"
    message = result.message
    p_value = scipy_stats.binom.cdf(7, 10, 0.9923456)
    for part in (
        "golden  0.9923 (n=40",
        "current 0.7 (n=10)",
        "delta   -0.2923",
        f"test    one-sided exact binomial, n=10, alpha=0.05, p={p_value:.3g}",
        "20001/q8: accuracy=no, gold=B, parsed=C; expected the lighthouse keeper; got "
        + LONG_ANSWER[:79] + "…",
        "20001/q9: accuracy=no, gold=B, parsed=—; expected the lighthouse keeper; got no idea",
    ):
        assert part in message, message
    assert "0.9923456" not in message and "False" not in message
    assert "20001/q7" in message and "20001/q6" not in message  # right answers are not listed


def _fox_run() -> RunResults:
    """A Fox run shaped as golden/fox.json: every engine x data x mode it holds, with the
    per-token-bin gates of DeepSeek-OCR on the real Fox set (44-character data names)."""
    golden = GoldenStore(REPO / "golden").load("fox")
    records: dict[tuple[str, str, str], BenchmarkRecord] = {}
    for entry in golden.entries.values():
        record = records.setdefault(
            (entry.engine, entry.data, entry.parameter),
            BenchmarkRecord("fox", entry.engine, entry.parameter, data=entry.data,
                            params={"gates": {}}),
        )
        value = entry.value * 0.987654321
        record.metrics[entry.metric] = MetricSummary(value, entry.n, None, None, entry.kind,
                                                     entry.direction)
        record.params["gates"][entry.metric] = {
            "status": "regressed", "golden": entry.value, "delta": value - entry.value,
        }
    return RunResults(RunMetadata(run_id="r", created_utc="2026-01-01T00:00:00Z"),
                      list(records.values()))


@pytest.mark.parametrize("width", [100, 80])
def test_the_fox_summary_fits_the_terminal(width: int) -> None:
    run = _fox_run()
    lines = summary_lines(run, width=width)
    assert max(len(line) for line in lines) <= width
    headers = [line.split() for line in lines if line.split()[:1] == ["metric"]]
    assert headers and all(
        h == ["metric", "value", "golden", "delta", "status", "n"] for h in headers
    )
    names = [index for index, line in enumerate(lines) if line.startswith("  deepseek-ocr · fox@")]
    assert len(names) == 2  # small and tiny mode, each named once, then its errors
    assert all("· errors 0" in lines[index] + lines[index + 1] for index in names)
    entries = GoldenStore(REPO / "golden").load("fox").entries
    [bin_entry] = [e for e in entries.values()
                   if e.metric == "edit_precision[1200-1300]" and e.parameter == "mode=small"]
    row = next(line.split() for line in lines if "[1200-1300]" in line)  # mode=small comes first
    value = bin_entry.value * 0.987654321
    assert row[1:6] == [f"{value:.4g}", significant(bin_entry.value),
                        significant(value - bin_entry.value, signed=True), "REGRESSED",
                        str(bin_entry.n)]


def test_a_wide_terminal_gets_one_table_per_benchmark() -> None:
    lines = summary_lines(_fox_run(), width=250)
    assert lines[1].split() == ["engine", "data", "parameter", "metric", "value", "golden",
                                "delta", "status", "n", "errors"]
    assert max(len(line) for line in lines) <= 250


def test_an_update_keeps_the_tolerance_and_names_every_changed_field(tmp_path: Path) -> None:
    """Re-measuring an entry of tolerance 0 with a metric whose own tolerance is 0.02 keeps 0;
    the diff names value, n and kind; only --golden-tolerance changes the tolerance."""
    store = GoldenStore(tmp_path)
    old = GoldenEntry("tesseract", "fixtures", "mode=native", "word_f1", 0.5, 3, "higher", 0.0,
                      "proportion", "2026-01-01T00:00:00Z", "c0ffee")
    store.update("fox", [old])
    record = BenchmarkRecord("fox", "tesseract", "mode=native",
                             {"word_f1": MetricSummary(0.987654321, 8, None, None, "mean",
                                                       "higher")})

    def update(override: float | None) -> list[str]:
        rule = tolerance_rule({"word_f1": 0.02}, exact=False, override=override)
        entries = entries_from_record(record, ["word_f1"], tolerance=rule,
                                      existing=store.load("fox"), commit="abc")
        return [change.describe() for change in store.update("fox", entries)]

    assert update(None) == [
        "fox [tesseract data=fixtures mode=native] word_f1: value 0.5 -> 0.9877, n 3 -> 8, "
        "kind proportion -> mean"
    ]
    stored = json.loads(store.path("fox").read_text())["entries"][0]
    assert stored["tolerance"] == 0.0 and stored["value"] == 0.987654321  # full precision
    assert update(None) == []
    assert update(0.05) == [
        "fox [tesseract data=fixtures mode=native] word_f1: tolerance 0 -> 0.05"
    ]


def test_a_new_entry_lists_all_its_fields() -> None:
    new = GoldenEntry("e", "fixtures", "p", "m", 0.123456, 7, "lower", 0.0, "mean", "", "")
    assert EntryChange("fox", None, new).describe() == (
        "fox [e data=fixtures p] m: new, value 0.1235, n 7, tolerance 0, kind mean"
    )


def _pytest(*args: str, columns: int) -> subprocess.CompletedProcess[str]:
    return run_pytest(
        "benches/test_fox.py::test_fox_pages", "--engine", "tesseract", "-p", "no:cacheprovider",
        *args, env=child_env(COLUMNS=str(columns)),
    )


def _section(out: str, title: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if f" {title} " in line and "====" in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("====")),
               len(lines))
    return lines[start + 1:end]


@needs_tesseract
def test_a_run_prints_a_summary_within_columns_and_the_golden_diff(tmp_path: Path) -> None:
    """Under COLUMNS=70 the summary wraps to 70 columns and ends with the absolute path of
    results.json (not wrapped: it is there to be copied); --update-golden rewrites a stale
    entry of tolerance 0, keeps the 0, and its diff says what changed; --golden-tolerance then
    changes the tolerance.
    Slow (~28 s here): two child pytest runs of the Fox pages on tesseract; the summary and the
    golden diff are what a real run prints, and the second run changes what the first wrote."""
    golden = tmp_path / "golden"
    golden.mkdir()
    fox = json.loads((REPO / "golden" / "fox.json").read_text())
    for entry in fox["entries"]:
        if (entry["engine"], entry["data"]) == ("tesseract", "fixtures"):
            entry["tolerance"] = 0.0
            if entry["metric"] == "edit_precision":
                entry["value"] = 0.5
    (golden / "fox.json").write_text(json.dumps(fox))
    common = ["--golden-dir", str(golden), "--report-dir", str(tmp_path / "reports")]

    done = _pytest("--update-golden", *common, columns=70)
    assert done.returncode == 0, done.stdout[-3000:]
    summary = _section(done.stdout, "evalsuite summary")
    assert max(len(line) for line in summary[:-1]) <= 70, "\n".join(summary)
    assert "  tesseract · fixtures · mode=native · errors 0" in summary
    results = Path(summary[-1].removeprefix("results: "))
    assert results.is_absolute() and results.name == "results.json" and results.is_file()
    [change] = _section(done.stdout, "golden updates")
    assert change.startswith("fox [tesseract data=fixtures mode=native] edit_precision: ")
    assert change.endswith("value 0.5 -> 0.9892")
    entries = GoldenStore(golden).load("fox").entries
    assert entries[("tesseract", "fixtures", "mode=native", "edit_precision")].tolerance == 0.0

    again = _pytest("--update-golden", "--golden-tolerance", "0.01", *common, columns=70)
    assert again.returncode == 0, again.stdout[-3000:]
    changes = _section(again.stdout, "golden updates")
    assert len(changes) == 4 and all(line.endswith("tolerance 0 -> 0.01") for line in changes)


def test_explained_failures_are_listed_with_why_and_page() -> None:
    from evalsuite.records.model import SampleRecord

    samples = [
        SampleRecord(f"t{n}", {"pass_rate": n % 5 == 0}, details={
            "page": f"doc.pdf#{n}",
            **({} if n % 5 == 0 else {"explain": {"why": f"No match found for item {n}"}}),
        })
        for n in range(25)
    ]
    record = BenchmarkRecord("olmocr_bench", "tesseract", "mode=native", data="fixtures",
                             samples=samples, params={"gates": {}})
    lines = summary_lines(RunResults(RunMetadata(run_id="r", created_utc="2026-01-01T00:00:00Z"),
                                     [record]), width=100)
    start = lines.index("  tesseract · fixtures · mode=native: 20 of 25 failed:")
    assert lines[start + 1] == "    t1 (doc.pdf#1): No match found for item 1"
    assert lines[start + 10] == "    t12 (doc.pdf#12): No match found for item 12"
    assert lines[start + 11] == "    … 10 more in results.json and the dashboard"
