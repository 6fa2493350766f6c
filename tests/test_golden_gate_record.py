"""Gating a whole record (evalsuite.golden.gate_record) against the repository's Fox goldens,
with the paper's per-token-bin entries, and the tolerance of new entries (tolerance_rule)."""

from __future__ import annotations

import statistics

import pytest

from evalsuite.benchmarks.fox import token_bin
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.golden import GoldenEntry, GoldenStore, gate_metric, gate_record, tolerance_rule
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.runner import MetricSpec, Sample, aggregate, aggregate_by, score_samples
from tests.support.paths import REPOSITORY as REPO

PAPER_DATA = "fox@d6c6f5202d61bf28c8cf9b7b777754dc9bbdc0e0"
PRECISION = MetricSpec("edit_precision", tolerance=0.03)


def fox_golden():
    return GoldenStore(REPO / "golden").load("fox")


def paper_value(golden, metric: str) -> GoldenEntry:
    return golden.entries[("deepseek-ocr", PAPER_DATA, "mode=tiny", metric)]


def record_of(scores_by_tokens: dict[int, list[float]]) -> BenchmarkRecord:
    """A Fox record of DeepSeek-OCR in tiny mode, with samples of the given ground-truth token
    counts and edit precisions, aggregated overall and per token bin."""
    samples = [
        SampleRecord(f"page{tokens}-{i}", {"edit_precision": value}, details={"gt_tokens": tokens})
        for tokens, values in scores_by_tokens.items()
        for i, value in enumerate(values)
    ]
    record = BenchmarkRecord(
        benchmark="fox",
        engine="deepseek-ocr",
        parameter="mode=tiny",
        data=PAPER_DATA,
        metrics=aggregate(samples, [PRECISION]),
        samples=samples,
    )
    record.metrics.update(aggregate_by(samples, token_bin, [PRECISION]))
    return record


def test_per_bin_goldens_gate_the_bins_they_cover_and_only_those():
    golden = fox_golden()
    at_600 = paper_value(golden, "edit_precision[600-700]").value
    at_700 = paper_value(golden, "edit_precision[700-800]")
    # 600-700 at the paper's value; 700-800 well below it (beyond the tolerance); 1300-1400 has
    # no paper value; overall the mean of all pages.
    low = at_700.value - at_700.tolerance - 0.1
    scores = {650: [at_600, at_600], 720: [low, low, low], 1350: [0.1]}
    record = record_of(scores)
    grouped = [name for name in record.metrics if "[" in name]
    assert grouped == ["edit_precision[1300-1400]", "edit_precision[600-700]",
                       "edit_precision[700-800]"]

    results = {
        result.metric: result
        for result in gate_record("fox", record, ["edit_precision"], golden, group_of=token_bin)
    }

    assert set(results) == {"edit_precision", "edit_precision[600-700]", "edit_precision[700-800]"}
    assert results["edit_precision[600-700]"].status == "ok"
    regressed = results["edit_precision[700-800]"]
    assert regressed.status == "regressed"
    assert regressed.current.value == pytest.approx(low)
    # its worst samples are the bin's own pages, scored on their edit precision
    worst = regressed.message.split("worst samples:")[1]
    assert worst.count("page720-") == 3 and "page650" not in worst and "page1350" not in worst
    overall = statistics.mean(v for values in scores.values() for v in values)
    assert results["edit_precision"].current.value == pytest.approx(overall)
    # the paper gives per-bin values only: the overall mean has no golden on this data
    assert ("deepseek-ocr", PAPER_DATA, "mode=tiny", "edit_precision") not in golden.entries
    assert results["edit_precision"].status == "no golden"

def test_a_required_metric_without_golden_fails_and_an_optional_one_is_left_out():
    golden = fox_golden()
    record = record_of({650: [0.9]})
    record.parameter = "mode=large"  # no golden for this mode
    results = gate_record("fox", record, ["edit_precision"], golden, group_of=token_bin)
    assert [(r.metric, r.status, r.failed) for r in results] == [
        ("edit_precision", "no golden", True)
    ]


def test_a_metric_no_sample_carries_is_not_measured_unless_a_golden_expects_it():
    record = record_of({650: [0.9]})
    record.parameter = "mode=large"  # no golden entry for this mode
    record.metrics["table_TEDS"] = MetricSummary(None, 0)
    unmeasured = gate_metric("fox", record, "table_TEDS", None)
    assert unmeasured.status == "not measured" and not unmeasured.failed
    expected = gate_metric("fox", record, "table_TEDS", entry(0.0))
    assert expected.status == "no samples" and expected.failed


def test_required_groups_are_gated_in_every_group_even_without_an_entry():
    golden = fox_golden()
    record = record_of({650: [0.9], 1350: [0.1]})
    record.parameter = "mode=large"  # no golden for this mode
    results = gate_record("fox", record, ["edit_precision"], golden, group_of=token_bin,
                          required_groups=["edit_precision"])
    assert [(r.metric, r.status) for r in results] == [
        ("edit_precision", "no golden"),
        ("edit_precision[1300-1400]", "no golden"),
        ("edit_precision[600-700]", "no golden"),
    ]


def test_a_failed_sample_keeps_the_weight_it_was_built_with():
    """An engine failure scores worst; with its weight from the sample's details it still
    counts in a weighted mean instead of vanishing from it."""
    spec = MetricSpec("share", weight="w")
    samples = [
        Sample(f"s{i}", InferenceRequest(None, "p", "m", f"s{i}"), details={"w": weight})
        for i, weight in enumerate((1.0, 3.0))
    ]
    results = [InferenceResult("fine"), InferenceResult("", error="engine crashed")]
    records = score_samples(samples, results, lambda sample, result: {"share": 1.0, "w": 1.0},
                            [spec])
    assert records[1].error == "engine crashed" and records[1].scores["w"] == 3.0
    assert aggregate(records, [spec])["share"].value == pytest.approx(1.0 / 4.0)


def entry(tolerance: float) -> GoldenEntry:
    return GoldenEntry(
        engine="e", data="fixtures", parameter="mode=small", metric="m", value=0.5, n=3,
        direction="higher", tolerance=tolerance, kind="mean", set_at="2026-01-01T00:00:00Z",
        commit="abc", source="measured",
    )


@pytest.mark.parametrize(
    ("exact", "override", "metric", "old", "expected"),
    [
        (False, 0.2, "word_f1", entry(0.07), 0.2),  # the user's --golden-tolerance wins
        (False, None, "word_f1", entry(0.07), 0.07),  # else an existing entry keeps its own
        (True, None, "word_f1", None, 0.0),  # a deterministic engine: exact goldens
        (False, None, "word_f1", None, 0.05),  # else the metric's tolerance
        (False, None, "word_f1[600-700]", None, 0.05),  # per group: its metric's
        (False, None, "unknown", None, 0.0),
    ],
)
def test_tolerance_of_new_entries(exact, override, metric, old, expected):
    rule = tolerance_rule({"word_f1": 0.05}, exact=exact, override=override)
    assert rule(metric, old) == expected
