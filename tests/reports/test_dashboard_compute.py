"""The dashboard's computing side as data, without HTML: ranking order, ties, medals and
published rows (:func:`rank_rows`, :func:`rankings`), the metric order and the drill-down's
samples. Every expected value is worked out by hand from the inputs."""

from __future__ import annotations

from evalsuite.golden import GoldenEntry
from evalsuite.records.history import HistoryEntry
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.records.results import RunMetadata
from evalsuite.reports.dashboard_compute import (
    Ranking,
    Row,
    drill_samples,
    metric_order,
    rank_rows,
    rankings,
)
from evalsuite.reports.series import Point, SeriesKey
from evalsuite.runner import MetricSpec


def _row(engine: str, published: bool = False, data: str = "d", **values: float | None) -> Row:
    """A row whose metrics are proportions (range [0, 1]); a None value: the row has the metric
    without a value."""
    summaries = {name: MetricSummary(value, 10, kind="proportion")
                 for name, value in values.items()}
    golden = {name: _entry(engine, data, name, value or 0.0)
              for name, value in values.items() if published}
    return Row(engine, data, "mode=x", summaries, model=None, when="", golden=golden)


def _entry(engine: str, data: str, metric: str, value: float) -> GoldenEntry:
    return GoldenEntry(engine, data, "mode=x", metric, value, 0, "higher", 0.02, "mean",
                       "2025-07-30T00:00:00Z", "c0ffee", "paper")


def _table(ranking: Ranking) -> list[tuple[str, int | None, int | None]]:
    """(engine, rank, medal) per row, in rank order."""
    return [(p.row.engine, p.rank, p.medal) for p in ranking.rows]


def test_higher_is_better_ranks_ties_by_printed_value_and_medals_by_place() -> None:
    # Descending: e 0.90001 (prints 0.9), a 0.9, b 0.9 tie at rank 1; c 0.8 is 4th, d 0.7 5th,
    # f 0.4 6th; g has no value: last, unranked. Medals by place 1, 1, 1, 4: three golds and
    # none for c (the tie took the silver and bronze); f is below the floor 0.5 anyway.
    rows = [_row("a", score=0.9), _row("b", score=0.9), _row("c", score=0.8),
            _row("d", score=0.7), _row("e", score=0.90001), _row("f", score=0.4),
            _row("g", score=None)]
    ranking = rank_rows("d", "", rows, ["score"], {})
    assert _table(ranking) == [("e", 1, 1), ("a", 1, 1), ("b", 1, 1), ("c", 4, None),
                               ("d", 5, None), ("f", 6, None), ("g", None, None)]
    assert (ranking.headline, ranking.direction) == ("score", "higher")

    # a and b tie for gold, c takes bronze (place 3), d 0.55 is 4th: no medal
    rows = [_row("a", score=0.9), _row("b", score=0.9), _row("c", score=0.8),
            _row("d", score=0.55)]
    assert _table(rank_rows("d", "", rows, ["score"], {})) == [
        ("a", 1, 1), ("b", 1, 1), ("c", 3, 3), ("d", 4, None)]


def test_published_rows_take_a_place_but_medals_go_by_the_measured_rows() -> None:
    # Order: P1 0.95, m1 0.9, P2 0.9 (ties with m1), m2 0.8, m3 0.3. Ranks 1, 2, 2, 4, 5.
    # Among the measured rows m1, m2, m3 are 1st, 2nd, 3rd: gold, silver, and m3 is below 0.5.
    rows = [_row("m1", score=0.9), _row("P1", True, score=0.95), _row("P2", True, score=0.9),
            _row("m2", score=0.8), _row("m3", score=0.3)]
    ranking = rank_rows("d", "", rows, ["score"], {})
    assert _table(ranking) == [("P1", 1, None), ("m1", 2, 1), ("P2", 2, None), ("m2", 4, 2),
                               ("m3", 5, None)]
    assert ranking.published and not ranking.only_published


def test_lower_is_better_medals_need_the_lower_half_of_the_declared_range() -> None:
    # errors in [0, 10], lower is better: a 1 and b 4 are in the lower half (share 0.1, 0.4),
    # c 6 is not (0.6): gold, silver, no bronze.
    spec = MetricSpec("errors", direction="lower", bounds=(0.0, 10.0))
    rows = [_row("c", errors=6.0), _row("a", errors=1.0), _row("b", errors=4.0)]
    ranking = rank_rows("d", "", rows, ["errors"], {"errors": spec})
    assert _table(ranking) == [("a", 1, 1), ("b", 2, 2), ("c", 3, None)]
    assert ranking.direction == "lower" and ranking.directions == {"errors": "lower"}


def test_a_lone_row_a_descriptive_headline_and_a_health_metric_at_zero() -> None:
    # one row: ranked, but a medal needs someone to beat
    assert _table(rank_rows("d", "", [_row("a", score=0.99)], ["score"], {})) == [("a", 1, None)]
    # a descriptive headline ranks nothing: every row unranked, in the given order
    tokens = MetricSpec("tokens", direction=None, gate=False)
    rows = [_row("a", tokens=64.0), _row("b", tokens=100.0)]
    ranking = rank_rows("d", "", rows, ["tokens"], {"tokens": tokens})
    assert _table(ranking) == [("a", None, None), ("b", None, None)]
    assert ranking.direction is None
    # empty_output_rate 0 everywhere is no column and not the headline; edit_precision ranks
    rows = [_row("a", empty_output_rate=0.0, score=0.6),
            _row("b", empty_output_rate=0.0, score=0.7)]
    ranking = rank_rows("d", "", rows, ["empty_output_rate", "score"], {})
    assert (ranking.zero, ranking.metrics, ranking.headline) == (
        ("empty_output_rate",), ("score",), "score")
    assert _table(ranking) == [("b", 1, 1), ("a", 2, 2)]


def _point(run: int, value: float) -> Point:
    summary = MetricSummary(value, 100, value - 0.01, value + 0.01)
    return Point(f"run{run}", f"2026-01-0{run + 1}T06:00:00Z", None, summary)


def test_rankings_split_by_data_and_measure_and_keep_unused_published_data_apart() -> None:
    """fixtures/mode=small: a (0.9 then 0.2: regressed), b (0.5 twice); fixtures with the
    vision condition: a table of its own; study@1: c alone. The golden file: a paper's figure
    on fixtures/mode=small ranks beside a and b; two on data no run used (one of a metric the
    runs do not measure) form the tables elsewhere, 2 rows."""
    key = SeriesKey("fox", "a", "fixtures", "mode=small", "edit_precision")
    series = {
        key: [_point(0, 0.9), _point(1, 0.2)],
        SeriesKey("fox", "b", "fixtures", "mode=small", "edit_precision"):
            [_point(0, 0.5), _point(1, 0.5)],
        SeriesKey("fox", "a", "fixtures", "mode=small,condition=vision", "edit_precision"):
            [_point(1, 0.7)],
        SeriesKey("fox", "c", "study@1", "mode=small", "edit_precision"): [_point(1, 0.6)],
        SeriesKey("fox", "c", "study@1", "mode=small", "edit_precision[0-10]"): [_point(1, 1.0)],
    }

    def published(engine: str, data: str, metric: str, value: float) -> tuple:
        entry = GoldenEntry(engine, data, "mode=small", metric, value, 0, "higher", 0.02,
                            "mean", "2025-07-30T00:00:00Z", "c0ffee", "paper")
        return ("fox", engine, data, "mode=small", metric), entry

    golden = dict([published("dots.ocr (published)", "fixtures", "edit_precision", 0.8),
                   published("dots.ocr (published)", "old", "edit_precision", 0.85),
                   published("got (published)", "old", "reading_order", 0.5)])
    details = {"dots.ocr": {"engine": "served", "model_profile": {"name": "DOTS.ocr"}}}
    runs = [HistoryEntry(RunMetadata("run1", "2026-01-02T06:00:00Z", engine_details=details),
                         [])]
    specs = {"edit_precision": MetricSpec("edit_precision", bounds=(0.0, 1.0))}
    result = rankings("fox", series, ["edit_precision"], specs, {}, runs)
    assert [(r.data, r.measure) for r in result.tables] == [
        ("fixtures", ""), ("fixtures", "condition=vision"), ("study@1", "")]
    assert (result.elsewhere, result.elsewhere_rows) == ([], 0)
    (a, b) = result.tables[0].rows
    assert (a.row.engine, a.row.regressed, b.row.engine, b.row.regressed) == (
        "b", (), "a", ("edit_precision",))  # a's newest 0.2 ranks below b's 0.5
    assert (a.row.when, a.row.run_id) == ("2026-01-02T06:00:00Z", "run1")

    result = rankings("fox", series, ["edit_precision"], specs, golden, runs)
    assert _table(result.tables[0]) == [("dots.ocr (published)", 1, None), ("b", 2, 1),
                                        ("a", 3, None)]  # a: 0.2 is below the floor
    assert result.tables[0].rows[0].row.model == "DOTS.ocr"  # spelled as the run's profile
    assert [(r.data, r.metrics) for r in result.elsewhere] == [("old", ("edit_precision",))]
    assert result.elsewhere_rows == 2  # got's reading_order row is counted, not shown
    assert _table(result.elsewhere[0]) == [("dots.ocr (published)", 1, None)]
    assert result.elsewhere[0].only_published


def test_metric_order_puts_the_newest_run_first_and_drops_per_group_aggregates() -> None:
    summary = MetricSummary(0.5, 1)
    records = [BenchmarkRecord("fox", "a", "p", {"b_metric": summary, "a_metric[x]": summary,
                                                 "a_metric": summary})]
    series = {SeriesKey("fox", "a", "d", "p", name): [] for name in ("old", "a_metric", "z[1]")}
    assert metric_order(records, series) == ["b_metric", "a_metric", "old"]


def test_drill_samples_take_the_worst_records_and_samples_first() -> None:
    """r_good (aggregate 0.9) and r_bad (0.4), higher is better: r_bad first. In each, failed
    samples first, then by score ascending, then those without a numeric score; samples without
    both texts are left out unless they failed; two per record."""
    def sample(sample_id: str, score: object, error: str | None = None,
               reference: str | None = "ref") -> SampleRecord:
        return SampleRecord(sample_id, {"score": score}, error=error, prediction="pred",
                            reference=reference)

    good = BenchmarkRecord("fox", "good", "p", {"score": MetricSummary(0.9, 3)}, [
        sample("g1", 0.9), sample("g2", 0.3), sample("g3", 0.1, reference=None)])
    bad = BenchmarkRecord("fox", "bad", "p", {"score": MetricSummary(0.4, 4)}, [
        sample("b1", 0.8), sample("b2", "n/a"), sample("b3", 0.5, error="timeout"),
        sample("b4", 0.2)])
    picked = drill_samples([good, bad], "score", 2)
    assert [(r.engine, s.sample_id) for r, s in picked] == [
        ("bad", "b3"), ("bad", "b4"), ("good", "g2"), ("good", "g1")]
    assert [s.sample_id for _, s in drill_samples([bad], "score", 9)] == ["b3", "b4", "b1", "b2"]
