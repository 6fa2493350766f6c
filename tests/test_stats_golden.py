"""The statistics behind aggregates and gates, and the golden store."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evalsuite.golden import GoldenStore, check_metric, diff_snapshots, snapshot
from evalsuite.reports.model import MetricSummary, SampleRecord
from evalsuite.stats import (
    compare_mean,
    compare_proportion,
    mean_interval,
    summarize_weighted_mean,
    wilson_interval,
)


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=100, deadline=None)
def test_wilson_interval_contains_the_share(pair):
    successes, n = pair
    low, high = wilson_interval(successes, n)
    assert 0.0 <= low <= high <= 1.0
    if n:
        assert low - 1e-12 <= successes / n <= high + 1e-12


def test_wilson_interval_known_value():
    # 8/10 at 95%: centre (0.8 + 1.9208/10)/1.38415 = 0.71672, half-width 0.22323.
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4901625, abs=1e-6)
    assert high == pytest.approx(0.9433178, abs=1e-6)


def test_mean_interval_matches_scipy_t_interval():
    values = [0.91, 0.87, 0.95, 0.80, 0.99]
    mean = sum(values) / len(values)
    expected = scipy_stats.t.interval(
        0.95, len(values) - 1, loc=mean, scale=scipy_stats.sem(values)
    )
    assert mean_interval(values) == pytest.approx(expected)


def test_proportion_gate_needs_significance():
    # 18/20 against a golden 0.95: P(X <= 18 | 20, 0.95) = 0.264 -> not significant.
    assert not compare_proportion(0.95, 0.90, 20, "higher").regressed
    # 10/20 against 0.95: overwhelming evidence of a drop.
    result = compare_proportion(0.95, 0.50, 20, "higher")
    assert result.regressed
    assert result.p_value == pytest.approx(scipy_stats.binom.cdf(10, 20, 0.95))


def test_proportion_gate_lower_is_better():
    assert compare_proportion(0.0, 0.2, 20, "lower").regressed  # 4 empties where none were
    assert not compare_proportion(0.1, 0.15, 20, "lower").regressed
    assert compare_proportion(0.5, 0.0, 20, "lower").improved


def test_mean_gate_uses_tolerance():
    assert not compare_mean(0.90, 0.885, "higher", tolerance=0.02).regressed
    assert compare_mean(0.90, 0.87, "higher", tolerance=0.02).regressed
    assert compare_mean(0.10, 0.13, "lower", tolerance=0.02).regressed


def test_weighted_mean():
    summary = summarize_weighted_mean([1.0, 0.0], [3.0, 1.0])
    assert summary.value == pytest.approx(0.75)
    with pytest.raises(ValueError, match="weights"):
        summarize_weighted_mean([1.0], [1.0, 2.0])


def _summary(value, n=10, kind="mean"):
    return MetricSummary(value, n, None, None, kind, "higher")


def test_update_keeps_other_entries_and_reports_changes(tmp_path):
    store = GoldenStore(tmp_path)
    before = snapshot(store)
    store.update(
        "fox",
        [("tesseract", "mode=native", "edit_precision", _summary(0.9))],
        tolerance={"edit_precision": 0.02},
        commit="abc",
    )
    store.update(
        "fox", [("tiny", "mode=small", "edit_precision", _summary(0.1))], tolerance={}, commit="abc"
    )
    golden = store.load("fox")
    assert set(golden.entries) == {
        ("tesseract", "mode=native", "edit_precision"),
        ("tiny", "mode=small", "edit_precision"),
    }
    lines = diff_snapshots(before, snapshot(store))
    assert len(lines) == 2 and all("(new)" in line for line in lines)
    document = json.loads(store.path("fox").read_text())
    assert [e["engine"] for e in document["entries"]] == ["tesseract", "tiny"]


def test_gate_messages(tmp_path):
    store = GoldenStore(tmp_path)
    store.update("fox", [("e", "p", "m", _summary(0.9))], tolerance={"m": 0.01}, commit="c0ffee")
    entry = store.load("fox").entries[("e", "p", "m")]
    samples = [SampleRecord("bad", {"m": 0.1}), SampleRecord("broken", {"m": 0.0}, error="boom")]
    outcome = check_metric(
        entry,
        _summary(0.5),
        benchmark="fox",
        engine="e",
        parameter="p",
        metric="m",
        samples=samples,
    )
    assert not outcome.passed
    for part in (
        "golden  0.9000",
        "current 0.5000",
        "delta   -0.4000",
        "n=10",
        "tolerance",
        "broken: error: boom",
        "bad: m=0.1",
    ):
        assert part in outcome.message
    missing = check_metric(
        None,
        _summary(0.5),
        benchmark="fox",
        engine="e",
        parameter="p",
        metric="m",
        update_command="pytest x --update-golden",
    )
    assert not missing.passed and "pytest x --update-golden" in missing.message
    assert check_metric(
        entry, _summary(0.895), benchmark="fox", engine="e", parameter="p", metric="m"
    ).passed


def test_malformed_golden_file_is_reported(tmp_path):
    (tmp_path / "fox.json").write_text("{not json")
    from evalsuite.errors import GoldenError

    with pytest.raises(GoldenError, match=r"fox\.json"):
        GoldenStore(tmp_path).load("fox")


def test_nan_free_intervals():
    assert all(math.isfinite(v) for v in wilson_interval(0, 1))
