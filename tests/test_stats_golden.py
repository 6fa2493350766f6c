"""The statistics behind aggregates and gates, and the golden store."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from math import comb

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from evalsuite.errors import GoldenError
from evalsuite.golden import GoldenEntry, GoldenStore, diff_snapshots, gate_metric
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.stats import (
    binomial_cdf,
    binomial_sf,
    compare_mean,
    compare_proportion,
    mean_interval,
    normal_quantile,
    student_t_quantile,
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


probabilities = st.one_of(st.sampled_from([0.0, 1.0, 0.5, 0.05, 0.95]),
                          st.floats(0.0, 1.0, allow_nan=False))


@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(-2, n + 2), st.just(n))),
       probabilities)
@settings(max_examples=500, deadline=None)
def test_binomial_tails_are_scipy_stats_binom_to_the_bit(pair, p):
    k, n = pair
    assert binomial_cdf(k, n, p) == float(scipy_stats.binom.cdf(k, n, p))
    assert binomial_sf(k, n, p) == float(scipy_stats.binom.sf(k, n, p))


@given(st.floats(1e-12, 1 - 1e-12), st.integers(1, 10_000))
@settings(max_examples=300, deadline=None)
def test_quantiles_are_scipy_stats_to_the_bit(q, df):
    assert normal_quantile(q) == float(scipy_stats.norm.ppf(q))
    assert student_t_quantile(q, df) == float(scipy_stats.t.ppf(q, df))


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
    assert result.p_value == pytest.approx(float(binomial_lower_tail(10, 20, Fraction(95, 100))))


def binomial_lower_tail(k, n, p):
    """P(X <= k) for X ~ Binomial(n, p), summed exactly in fractions (an oracle independent of
    scipy, which the gate uses)."""
    return sum(comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k + 1))


@given(st.integers(1, 40).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.integers(1, 99))
@settings(max_examples=60, deadline=None)
def test_proportion_p_value_is_the_exact_binomial_tail(pair, percent):
    k, n = pair
    reference = percent / 100
    result = compare_proportion(reference, k / n, n, "higher")
    oracle = float(binomial_lower_tail(k, n, Fraction(percent, 100)))
    assert result.p_value == pytest.approx(oracle, rel=1e-9, abs=1e-15)
    assert result.regressed == (oracle < 0.05)


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


def _entry(engine="e", data="fixtures", parameter="p", metric="m", value=0.9, tolerance=0.01):
    return GoldenEntry(engine, data, parameter, metric, value, 10, "higher", tolerance, "mean",
                       "2026-01-01T00:00:00Z", "c0ffee")


def _record(value, samples=()):
    return BenchmarkRecord("fox", "e", "p", {"m": _summary(value)}, list(samples), data="fixtures")


def test_update_keeps_other_entries_and_describes_every_change(tmp_path):
    store = GoldenStore(tmp_path)
    before = store.snapshot()
    store.update("fox", [_entry("tesseract", metric="edit_precision")])
    store.update("fox", [_entry("tiny", data="quality@abc", metric="edit_precision")])
    golden = store.load("fox")
    assert set(golden.entries) == {
        ("tesseract", "fixtures", "p", "edit_precision"),
        ("tiny", "quality@abc", "p", "edit_precision"),
    }
    lines = diff_snapshots(before, store.snapshot())
    assert len(lines) == 2 and all(": new, value 0.9" in line for line in lines)
    changed = store.update("fox", [_entry("tesseract", metric="edit_precision", tolerance=0.05)])
    assert [c.describe() for c in changed] == [
        "fox [tesseract data=fixtures p] edit_precision: tolerance 0.01 -> 0.05"
    ]
    document = json.loads(store.path("fox").read_text())
    assert [e["engine"] for e in document["entries"]] == ["tesseract", "tiny"]
    assert store.update("fox", [_entry("tesseract", metric="edit_precision", tolerance=0.05)]) == []


def test_gate_messages_name_golden_current_delta_test_and_worst_samples():
    samples = [
        SampleRecord("bad", {"m": 0.1}, prediction="the cat", reference="the hat"),
        SampleRecord("broken", {"m": 0.0}, error="boom"),
    ]
    result = gate_metric("fox", _record(0.5, samples), "m", _entry())
    assert result.status == "regressed" and result.failed
    for part in (
        "fox [e data=fixtures p] m regressed (higher is better)",
        "golden  0.9 (n=10",
        "current 0.5 (n=10)",
        "delta   -0.4",
        "test    tolerance 0.01",
        "broken: failed: boom",
        "bad: m=0.1; expected the hat; got the cat",
    ):
        assert part in result.message, result.message
    assert gate_metric("fox", _record(0.895), "m", _entry()).status == "ok"
    assert gate_metric("fox", _record(0.95), "m", _entry()).status == "improved"
    missing = gate_metric("fox", _record(0.5), "m", None)
    assert missing.status == "no golden" and missing.failed


def test_obtained_entries_wait_beside_the_golden_file_until_accepted(tmp_path):
    store = GoldenStore(tmp_path)
    store.update("fox", [_entry("kept")])
    path = store.write_obtained("fox", [_entry("new", value=0.7)])
    assert path == tmp_path / "fox.obtained.json"
    assert set(store.load("fox").entries) == {("kept", "fixtures", "p", "m")}
    assert store.obtained_benchmarks() == ["fox"]
    changes = store.accept_obtained("fox")
    assert [c.new.engine for c in changes] == ["new"] and not path.exists()
    assert store.load("fox").entries[("new", "fixtures", "p", "m")].value == 0.7
    assert "kept" in {key[0] for key in store.load("fox").entries}


def test_an_update_drops_the_obtained_entries_it_supersedes(tmp_path):
    store = GoldenStore(tmp_path)
    path = store.write_obtained("fox", [_entry("a", value=0.5), _entry("b", value=0.6)])
    store.update("fox", [_entry("a", value=0.8)])  # --update-golden measured "a" again
    waiting = json.loads(path.read_text())["entries"]
    assert [(e["engine"], e["value"]) for e in waiting] == [("b", 0.6)]
    store.accept_obtained("fox")  # cannot bring back a's older 0.5
    values = {key[0]: entry.value for key, entry in store.load("fox").entries.items()}
    assert values == {"a": 0.8, "b": 0.6} and not path.exists()
    store.write_obtained("fox", [_entry("c")])
    store.update("fox", [_entry("c", value=0.7)])
    assert not path.exists() and store.obtained_benchmarks() == []


@pytest.mark.parametrize(
    ("document", "match"),
    [
        ("{not json", r"fox\.json is not valid JSON"),
        ('{"format": 1, "entries": []}', "has format 1"),
        ('{"format": 2, "entries": [{"engine": "e"}]}', r"entry 0: missing fields"),
        (
            '{"format": 2, "entries": [{"engine": "e", "data": "f", "parameter": "p", '
            '"metric": "m", "value": "high", "n": 1, "direction": "higher", "kind": "mean"}]}',
            r"entry 0: field 'value' must be a number",
        ),
    ],
)
def test_malformed_golden_file_names_the_file_and_entry(tmp_path, document, match):
    (tmp_path / "fox.json").write_text(document)
    before = (tmp_path / "fox.json").read_text()
    with pytest.raises(GoldenError, match=match):
        GoldenStore(tmp_path).load("fox")
    with pytest.raises(GoldenError):
        GoldenStore(tmp_path).update("fox", [_entry()])
    assert (tmp_path / "fox.json").read_text() == before  # never rewritten


def test_nan_free_intervals():
    assert all(math.isfinite(v) for v in wilson_interval(0, 1))
