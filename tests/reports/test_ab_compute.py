"""``evalsuite ab``'s computing side as data, without any output: how many samples were paired,
the order of the comparisons by evidence, which moved, and the samples that got worse most.
Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import pytest

from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.records.results import RunResults
from evalsuite.reports.ab_compute import AbReport, compare_runs


def _run(run_id: str, *records: BenchmarkRecord) -> RunResults:
    return RunResults(RunMetadata(run_id, "2026-01-01T00:00:00Z"), list(records))


def _accuracy(parameter: str, outcomes: list[bool]) -> BenchmarkRecord:
    samples = [SampleRecord(f"s{i:02d}", {"accuracy": ok}) for i, ok in enumerate(outcomes)]
    summary = MetricSummary(sum(outcomes) / len(outcomes), len(outcomes), kind="proportion")
    return BenchmarkRecord("bench", "m", parameter, {"accuracy": summary}, samples)


def _scores(parameter: str, scores: dict[str, list[float | None]]) -> BenchmarkRecord:
    """A record of mean metrics, ``score`` higher and ``errors`` lower is better; None: the
    sample has no score of that metric."""
    count = len(next(iter(scores.values())))
    samples = [
        SampleRecord(f"s{i}", {name: values[i] for name, values in scores.items()
                               if values[i] is not None}, prediction=f"text {i}")
        for i in range(count)
    ]
    metrics = {name: MetricSummary(0.5, count, direction="lower" if name == "errors" else "higher")
               for name in scores}
    return BenchmarkRecord("pages", "m", parameter, metrics, samples)


def _compare(base: list[BenchmarkRecord], cand: list[BenchmarkRecord], **kw: int) -> AbReport:
    return compare_runs(_run("a", *base), _run("b", *cand), **kw)


def test_paired_samples_count_each_record_pair_once_by_its_most_paired_metric() -> None:
    # p=1: score on 5 samples, errors on 3 of them -> 5; p=2: 2 samples -> 2; in all 7
    base = [_scores("p=1", {"score": [0.5] * 5, "errors": [0.1, None, 0.2, None, 0.3]}),
            _scores("p=2", {"score": [0.5, 0.25]})]
    cand = [_scores("p=1", {"score": [0.5] * 5, "errors": [0.1, 0.1, 0.2, 0.3, 0.3]}),
            _scores("p=2", {"score": [0.5, 0.25]})]
    report = _compare(base, cand)
    assert [(c.parameter, c.metric, c.test.n) for c in report.comparisons] == [
        ("p=1", "score", 5), ("p=1", "errors", 3), ("p=2", "score", 2)]
    assert report.paired_samples == 7


def test_comparisons_order_by_adjusted_p_then_by_the_move_in_the_bad_direction() -> None:
    """Four accuracy records of 20 samples (compared in parameter order):
    p=1: 10 wrong answers turn right (b=0, c=10), two-sided exact p = 2 * 2**-10 = 2/1024;
    p=2: unchanged, p = 1; p=3: 10 right turn wrong (b=10, c=0), p = 2/1024;
    p=4: one turns wrong and one right (b=1, c=1): delta 0, p = 1.
    Holm over 4: both small p become max(4p, 3p) = 8/1024; both p = 1 stay 1. Of the two
    8/1024, p=3 moved the bad way (worse by 0.5), p=1 the good way (-0.5): p=3 first. Of the
    two 1s, neither moved the bad way on average: their own order, p=2 then p=4."""
    right, wrong = [True] * 10, [False] * 10
    base = [_accuracy("p=1", wrong + right), _accuracy("p=2", right + wrong),
            _accuracy("p=3", right + right), _accuracy("p=4", [True, False, *right, *wrong[2:]])]
    cand = [_accuracy("p=1", right + right), _accuracy("p=2", right + wrong),
            _accuracy("p=3", wrong + right), _accuracy("p=4", [False, True, *right, *wrong[2:]])]
    report = _compare(base, cand)
    assert [c.parameter for c in report.comparisons] == ["p=1", "p=2", "p=3", "p=4"]
    assert [c.p_holm for c in report.comparisons] == pytest.approx([8 / 1024, 1, 8 / 1024, 1])
    assert [c.worse_by for c in report.comparisons] == pytest.approx([-0.5, 0, 0.5, 0])
    assert report.by_evidence() == [2, 0, 1, 3]
    # p=2 did not move at all; p=4 moved two samples though its mean did not
    assert [report.changed(i) for i in range(4)] == [True, False, True, True]
    assert [c.verdict for c in report.comparisons] == ["improved", "n.s.", "REGRESSED", "n.s."]


def test_worst_samples_take_each_samples_largest_bad_move_then_the_id() -> None:
    """score (higher is better) baseline -> candidate per sample:
    s0 1 -> 0.5 (worse by 0.5), s1 0.5 -> 0.5 (0), s2 0.25 -> 0.5 (better), s3 0.75 -> 0.5
    (0.25), s4 0.75 -> 0.25 (0.5); errors (lower is better): s3 0 -> 0.75 (worse by 0.75), the
    others unchanged. Per sample its largest: s3 0.75 (errors), s0 0.5, s4 0.5 (score; a tie,
    by id), and s1, s2 never got worse."""
    base = _scores("p=1", {"score": [1.0, 0.5, 0.25, 0.75, 0.75], "errors": [0.0] * 5})
    cand = _scores("p=1", {"score": [0.5, 0.5, 0.5, 0.5, 0.25],
                           "errors": [0.0, 0.0, 0.0, 0.75, 0.0]})
    worst = _compare([base], [cand], worst=10).worst
    assert [(w.sample_id, w.metric, w.worse_by, w.baseline_score, w.candidate_score)
            for w in worst] == [("s3", "errors", 0.75, 0.0, 0.75), ("s0", "score", 0.5, 1.0, 0.5),
                                ("s4", "score", 0.5, 0.75, 0.25)]
    assert {w.where for w in worst} == {"pages · m · fixtures · p=1"}
    assert (worst[0].baseline_text, worst[0].candidate_text) == ("text 3", "text 3")
    assert [w.sample_id for w in _compare([base], [cand], worst=2).worst] == ["s3", "s0"]
    assert _compare([base], [base]).worst == []
