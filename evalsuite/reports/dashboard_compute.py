"""The computing side of ``evalsuite report`` (:mod:`evalsuite.reports.dashboard`), with no
HTML: per benchmark what its section shows (:class:`BenchmarkView`), the rankings above all:
like with like (one table per data source x measure), ties sharing a rank (values that print
the same), medals only on the better side of :data:`MEDAL_FLOOR` and only for measured rows,
published figures beside the runs (see :func:`rankings`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evalsuite.benchmarks import Benchmark, load_declarations
from evalsuite.golden import GoldenEntry
from evalsuite.models import available_models
from evalsuite.records.history import HistoryEntry
from evalsuite.records.model import (
    BenchmarkRecord,
    Direction,
    MetricKind,
    MetricSummary,
    SampleRecord,
)
from evalsuite.reports.charts import (
    HEALTH_METRICS,
    Chart,
    FlatMetric,
    compression_curve,
    group_bars,
    measure_of,
    metric_traits,
    split_grouped,
    split_series,
    text_vision_bars,
    trend_charts,
)
from evalsuite.reports.series import (
    PUBLISHED_SOURCES,
    PUBLISHED_SUFFIX,
    GoldenIndex,
    Point,
    SeriesKey,
    Step,
    model_text,
    newest_regressions,
    profile_of,
    series_steps,
)
from evalsuite.runner import MetricSpec
from evalsuite.textformat import significant

MEDAL_FLOOR = 0.5
"""Where in a metric's range medals stop, as a share of the range: a higher-is-better score in
[0, 1] needs at least 0.5 for a medal, a lower-is-better one at most 0.5. A headline metric
without a direction or a bounded range gives no medals."""
MEDAL_PLACES = 3
"""Places that win a medal: gold, silver, bronze (as :data:`evalsuite.reports.html.MEDALS`)."""

RowKey = tuple[str, str, str]  # engine, data, parameter
TableKey = tuple[str, str]  # data, measure


@dataclass(frozen=True)
class Row:
    """A ranking's row: the latest values of one engine x data x parameter of the runs
    (measured), or the golden entries of a published figure (``golden`` not empty)."""

    engine: str
    data: str
    parameter: str
    values: Mapping[str, MetricSummary]
    model: str | None
    """The model: a measured row's (:func:`model_text` of its newest run), a published figure's
    name as the runs or the model registry spell it."""
    when: str
    """A measured row's newest run's start; a published figure's newest date ("": none)."""
    run_id: str = ""
    """A measured row's newest run."""
    details: Mapping[str, Any] | None = None
    """A measured row's engine details in its newest run."""
    regressed: tuple[str, ...] = ()
    """The metrics of a measured row that regressed against the run before."""
    golden: Mapping[str, GoldenEntry] = field(default_factory=dict)
    """A published figure's entries, by metric."""

    @property
    def published(self) -> bool:
        return bool(self.golden)

    @property
    def profiled(self) -> bool:
        """A measured row whose engine ran a peer model profile."""
        return profile_of(self.details) is not None

    @property
    def table(self) -> TableKey:
        return self.data, measure_of(self.parameter)


@dataclass(frozen=True)
class Placed:
    """A row in rank order: its rank (None: unranked; equal ranks tie) and its medal: 1 gold,
    2 silver, 3 bronze by its place among the measured rows, None for none."""

    row: Row
    rank: int | None
    medal: int | None


@dataclass(frozen=True)
class Ranking:
    """One table: the rows of one data source x measure in rank order by ``headline``."""

    data: str
    measure: str
    headline: str
    direction: str | None
    """The headline's better direction; None: a descriptive headline ranks nothing."""
    metrics: tuple[str, ...]
    """The metric columns, headline first."""
    directions: Mapping[str, str | None]
    """Each column's better direction."""
    zero: tuple[str, ...]
    """Health metrics 0 in every row: not a column."""
    rows: tuple[Placed, ...]
    only_published: bool

    @property
    def published(self) -> bool:
        return any(placed.row.published for placed in self.rows)

    @property
    def with_model(self) -> bool:
        """Whether a model says more than the engine label in some row."""
        return any(p.row.profiled or p.row.model not in (p.row.engine, None) for p in self.rows)


@dataclass(frozen=True)
class Rankings:
    """A benchmark's rankings: where runs measured (:attr:`tables`), and published figures on
    data no run used (:attr:`elsewhere`, ``elsewhere_rows`` of them, shown or not)."""

    tables: list[Ranking]
    elsewhere: list[Ranking]
    elsewhere_rows: int


@dataclass(frozen=True)
class BenchmarkView:
    """What a benchmark's section shows: its runs (oldest first), the newest run's regressions,
    rankings, trend charts and lines of metrics that stayed flat, study charts, and the samples
    of the drill-down (with the headline metric that picked them)."""

    benchmark: str
    title: str
    runs: list[HistoryEntry]
    regressions: list[tuple[SeriesKey, Step]]
    rankings: Rankings
    trends: list[Chart]
    flat: list[FlatMetric]
    studies: list[Chart]
    headline: str | None
    drill: list[tuple[BenchmarkRecord, SampleRecord]]

    @property
    def charts(self) -> list[Chart]:
        return [*self.trends, *self.studies]


def benchmark_view(
    benchmark: str,
    entries: Sequence[HistoryEntry],
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    records: Sequence[BenchmarkRecord],
    max_samples: int,
) -> BenchmarkView:
    """``benchmark``'s section of the history ``entries`` (oldest first), ``records`` the newest
    run's."""
    runs = [e for e in entries if any(r.benchmark == benchmark for r in e.records)]
    own = {key: points for key, points in series.items() if key.benchmark == benchmark}
    metrics = metric_order(records, own)
    specs = benchmark_specs(benchmark)
    run_keys = [(e.metadata.created_utc, e.metadata.run_id, e.metadata.run_name) for e in runs]
    trends, flat = trend_charts(benchmark, own, golden, metrics, specs, run_keys)
    curve = compression_curve(benchmark, records)
    studies = [
        chart
        for study in [*([curve] if curve else []), *text_vision_bars(benchmark, records, specs),
                      *group_bars(benchmark, records, specs)]
        for chart in split_series(study)
    ]
    headline = metrics[0] if metrics else None
    return BenchmarkView(
        benchmark, benchmark_title(benchmark), runs,
        newest_regressions(own, runs[-1].metadata.run_id, golden),
        rankings(benchmark, own, metrics, specs, golden, runs), trends, flat, studies, headline,
        drill_samples(records, headline, max_samples),
    )


def benchmark_title(benchmark: str) -> str:
    """The benchmark's declared title; its name when the registry does not know it."""
    return next((b.title for b in load_declarations() if b.name == benchmark), benchmark)


def benchmarks(entries: Sequence[HistoryEntry]) -> list[str]:
    """The benchmarks of the history in the registry's order (a benchmark the registry does not
    know, e.g. declared in a user's folder, after them by name)."""
    names = {record.benchmark for entry in entries for record in entry.records}
    known = [b.name for b in load_declarations() if b.name in names]
    return known + sorted(names - set(known))


def benchmark_specs(benchmark: str) -> dict[str, MetricSpec]:
    """The benchmark's metric specs by name (none for a benchmark the registry does not know)."""
    declared: Benchmark | None = next(
        (b for b in load_declarations() if b.name == benchmark), None
    )
    if declared is None:
        return {}
    names = {m.name for m in declared.metrics} | set(HEALTH_METRICS)
    return {name: spec for name in names if (spec := declared.metric_spec(name)) is not None}


def metric_order(
    records: Sequence[BenchmarkRecord], series: Mapping[SeriesKey, Sequence[Point]]
) -> list[str]:
    """The newest run's metric order (headline first), then metrics only older runs had;
    per-group aggregates (``metric[group]``) left out."""
    newest = [name for record in records for name in record.metrics]
    names = dict.fromkeys([*newest, *(key.metric for key in series)])
    return [name for name in names if split_grouped(name)[1] is None]


def rankings(
    benchmark: str,
    series: Mapping[SeriesKey, Sequence[Point]],
    metrics: Sequence[str],
    specs: Mapping[str, MetricSpec],
    golden: GoldenIndex,
    runs: Sequence[HistoryEntry] = (),
) -> Rankings:
    """One ranking per data source x measure: only rows measured alike are compared.

    Published figures (golden entries whose source is not ``measured``: a paper's, a
    leaderboard's, recorded outputs') rank in the table of their data and measure beside the
    runs, so ``dots.ocr (published)`` stands next to ``dots.ocr`` as measured here. They take a
    place in the order but no medal: nobody reproduced them here, with this suite's prompts,
    images and scorer, and a medal says "best of what we ran". Published figures on data that
    no run of the history used are kept out of these rankings (they compare with nothing
    measured): they are ranked apart, on the metrics the runs measure where they share some
    (:func:`compact_metrics`)."""
    details = {entry.metadata.run_id: entry.metadata.engine_details for entry in runs}
    names = {str(profile["name"]).lower(): str(profile["name"])
             for by_engine in details.values() for engine_details in by_engine.values()
             if (profile := profile_of(engine_details)) is not None}
    tables: dict[TableKey, list[Row]] = {}
    for row in measured_rows(series, golden, details):
        tables.setdefault(row.table, []).append(row)
    elsewhere: dict[TableKey, list[Row]] = {}
    for row in published_rows(benchmark, golden, names):
        (tables if row.table in tables else elsewhere).setdefault(row.table, []).append(row)
    return Rankings(
        [rank_rows(data, measure, rows, metrics, specs)
         for (data, measure), rows in tables.items()],
        [rank_rows(data, measure, rows, compact_metrics(metrics, rows), specs)
         for (data, measure), rows in elsewhere.items()],
        sum(len(rows) for rows in elsewhere.values()),
    )


def compact_metrics(metrics: Sequence[str], rows: Sequence[Row]) -> list[str]:
    """The columns of a table of published figures only: the metrics the runs measure, so it
    reads as the rankings above it; the figures' own (by name) where they share none."""
    common = [metric for metric in metrics if any(metric in row.values for row in rows)]
    return common or sorted({metric for row in rows for metric in row.values})


def measured_rows(
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    details: Mapping[str, Mapping[str, Mapping[str, Any]]],
) -> list[Row]:
    """The latest value of each engine x data x parameter's metrics (per-group aggregates left
    out), whether it regressed against the run before, and the model of its newest run
    (``details``: each run's engine details by run id)."""
    latest: dict[RowKey, dict[str, Point]] = {}
    regressed: dict[RowKey, list[str]] = {}
    for key, points in series.items():
        if split_grouped(key.metric)[1] is not None:
            continue
        row = (key.engine, key.data, key.parameter)
        latest.setdefault(row, {})[key.metric] = points[-1]
        last = series_steps(key, points[-2:], golden)[-1]
        if last.comparison is not None and last.comparison.regressed:
            regressed.setdefault(row, []).append(key.metric)
    rows = []
    for (engine, data, parameter), points in sorted(latest.items()):
        newest = max(points.values(), key=lambda p: p.created_utc)
        engine_details = details.get(newest.run_id, {}).get(engine)
        rows.append(Row(
            engine, data, parameter,
            values={metric: point.summary for metric, point in points.items()},
            model=model_text(engine_details) or None, when=newest.created_utc,
            run_id=newest.run_id, details=engine_details,
            regressed=tuple(regressed.get((engine, data, parameter), ())),
        ))
    return rows


def published_rows(benchmark: str, golden: GoldenIndex, names: Mapping[str, str]) -> list[Row]:
    """A row per engine x data x parameter of ``benchmark``'s published golden entries (per-group
    aggregates left out): their values and n (0: no count published), the newest publication
    date, and the model: ``dots.ocr (published)`` names ``dots.ocr``, spelled as the runs'
    profiles spell it (``names``: by lower-case name) or as the model registry does
    (``paddleocr-vl (published)``: ``PaddleOCR-VL``)."""
    grouped: dict[RowKey, dict[str, GoldenEntry]] = {}
    for (bench, engine, data, parameter, metric), entry in sorted(golden.items()):
        published = entry.source in PUBLISHED_SOURCES
        if bench == benchmark and published and split_grouped(metric)[1] is None:
            grouped.setdefault((engine, data, parameter), {})[metric] = entry
    if grouped:  # the registry's spelling of each model, the runs' where they differ
        names = {name.lower(): name for name in available_models()} | dict(names)
    rows = []
    for (engine, data, parameter), entries in grouped.items():
        dates = sorted(entry.set_at for entry in entries.values() if entry.set_at)
        model = engine.removesuffix(PUBLISHED_SUFFIX)
        rows.append(Row(
            engine, data, parameter,
            values={metric: MetricSummary(entry.value, entry.n, kind=_kind(entry.kind),
                                          direction=_direction(entry.direction))
                    for metric, entry in entries.items()},
            model=names.get(model.lower(), model), when=dates[-1] if dates else "",
            golden=entries,
        ))
    return rows


def _kind(kind: str) -> MetricKind:
    return "proportion" if kind == "proportion" else "mean"


def _direction(direction: str | None) -> Direction | None:
    return "higher" if direction == "higher" else "lower" if direction == "lower" else None


def rank_rows(
    data: str,
    measure: str,
    rows: Sequence[Row],
    metrics: Sequence[str],
    specs: Mapping[str, MetricSpec],
) -> Ranking:
    """``rows`` (of ``data`` and ``measure``) ranked by the first metric of ``metrics`` that a
    measured row has (the headline; any row's among published figures only); a metric without a
    direction ranks nothing, rows without the headline come last, unranked. Values that print
    the same tie. Rows without any of the metrics are left out. Medals go to measured rows only,
    by their place among the measured rows, on the better side of :data:`MEDAL_FLOOR` of the
    headline's range, and only where there is more than one row."""
    only_published = all(row.published for row in rows)
    counted = [row for row in rows if only_published or not row.published]
    present = [m for m in metrics if any(m in row.values for row in counted)]
    rows = [row for row in rows if any(m in row.values for m in present)]  # no row of dashes
    zero = [m for m in present if m in HEALTH_METRICS and all(
        row.values[m].value == 0 for row in rows if m in row.values)]
    shown = [m for m in present if m not in zero]
    headline = shown[0] if shown else present[0]
    direction, bounds = metric_traits(headline, _any_summary(counted, headline), specs)

    def value(row: Row) -> float | None:
        summary = row.values.get(headline)
        return None if summary is None else summary.value

    order = sorted(rows, key=lambda row: (
        value(row) is None or direction is None,
        0.0 if value(row) is None or direction is None
        else -value(row) if direction == "higher" else value(row),
    ))
    placed: list[Placed] = []
    measured: list[tuple[float, int]] = []  # (value, place) of the ranked measured rows so far
    for index, row in enumerate(order):
        rank = place = None
        if value(row) is not None and direction is not None:
            previous = order[index - 1] if index else None
            ties = previous is not None and placed[-1].rank is not None and (
                significant(value(previous)) == significant(value(row)))
            rank = placed[-1].rank if ties else index + 1
            if not row.published:  # medals go by the place among the measured rows
                tied = measured and significant(measured[-1][0]) == significant(value(row))
                place = measured[-1][1] if tied else len(measured) + 1
                measured.append((value(row), place))
        medal = place if (place is not None and place <= MEDAL_PLACES and len(order) > 1
                          and _above_floor(value(row), direction, bounds)) else None
        placed.append(Placed(row, rank, medal))
    directions = {m: metric_traits(m, _any_summary(rows, m), specs)[0] for m in shown}
    return Ranking(data, measure, headline, direction, tuple(shown), directions, tuple(zero),
                   tuple(placed), only_published)


def _any_summary(rows: Sequence[Row], metric: str) -> MetricSummary:
    return next(row.values[metric] for row in rows if metric in row.values)


def _above_floor(
    value: float | None, direction: str | None, bounds: tuple[float | None, float | None]
) -> bool:
    """Whether ``value`` is on the better side of :data:`MEDAL_FLOOR` in its range."""
    low, high = bounds
    if value is None or direction is None or low is None or high is None:
        return False
    share = (value - low) / (high - low)
    return share >= MEDAL_FLOOR if direction == "higher" else share <= 1 - MEDAL_FLOOR


def drill_samples(
    records: Sequence[BenchmarkRecord], headline: str | None, max_samples: int
) -> list[tuple[BenchmarkRecord, SampleRecord]]:
    """The worst ``max_samples`` samples with texts of each record (failed ones first, then by
    ``headline``), the records whose headline aggregate is worst first."""
    picked = []
    for record in sorted(records, key=lambda r: _record_badness(r, headline)):
        direction = record.metrics[headline].direction if headline in record.metrics else "higher"
        shown = [s for s in record.samples if s.error or (s.prediction is not None
                                                          and s.reference is not None)]
        shown.sort(key=lambda s: _badness(s, headline, direction))
        picked += [(record, sample) for sample in shown[:max_samples]]
    return picked


def _record_badness(record: BenchmarkRecord, headline: str | None) -> tuple[int, float]:
    """Records whose headline aggregate is worst come first; those without it last."""
    summary = record.metrics.get(headline) if headline else None
    if summary is None or summary.value is None:
        return (1, 0.0)
    return (0, summary.value if summary.direction == "higher" else -summary.value)


def _badness(sample: SampleRecord, headline: str | None, direction: str) -> tuple[int, float, str]:
    if sample.error:
        return (0, 0.0, sample.sample_id)
    score = sample.scores.get(headline) if headline else None
    if not isinstance(score, (int, float)):  # bools sort as 0 and 1
        return (2, 0.0, sample.sample_id)
    return (1, float(score) if direction == "higher" else -float(score), sample.sample_id)
