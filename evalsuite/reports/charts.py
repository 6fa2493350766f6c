"""What the dashboard plots, as plain data; :mod:`svg` and :mod:`plots` draw it.

- trend charts: one per benchmark x metric, a line per engine x parameter over the runs, the
  95% interval as a band, the golden value as a dashed line, regressions and improvements
  (see :mod:`evalsuite.reports.series`) marked;
- compression-precision curves: per engine x mode, samples' ``edit_precision`` against their
  ``compression_ratio`` (text tokens per vision token), as in DeepSeek-OCR's Fox figure;
- text-vs-vision bars: for every metric pair ``text_X`` / ``vision_X`` of a record, one group
  per engine x parameter (e.g. render configuration), one bar per condition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalsuite.reports.model import BenchmarkRecord
from evalsuite.reports.series import GoldenIndex, Point, SeriesKey, series_steps

COMPRESSION_METRIC = "compression_ratio"
PRECISION_METRIC = "edit_precision"
CONDITIONS = ("text", "vision")
MAX_X_LABELS = 9

ChartKind = Literal["line", "curve", "bars"]
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#b07aa1", "#edc948", "#9c755f", "#ff9da7", "#bab0ac",
)
"""Series colours (Tableau 10), shared by the SVG and PNG renderers; series i gets i mod 10."""
REGRESSED_COLOUR = "#c62828"
IMPROVED_COLOUR = "#2e7d32"


@dataclass(frozen=True)
class ChartPoint:
    """``x`` is a run index (line), a value (curve) or a group index (bars)."""

    x: float
    y: float
    low: float | None = None
    high: float | None = None
    label: str = ""
    flag: Literal["regressed", "improved"] | None = None


@dataclass(frozen=True)
class ChartSeries:
    label: str
    points: tuple[ChartPoint, ...]
    reference: float | None = None
    colour: str = ""

    def colour_at(self, index: int) -> str:
        """Its own colour, else the palette's ``index``-th."""
        return self.colour or PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Chart:
    kind: ChartKind
    chart_id: str
    title: str
    x_label: str
    y_label: str
    series: tuple[ChartSeries, ...]
    x_ticks: tuple[tuple[float, str], ...] = ()
    note: str = ""
    groups: tuple[str, ...] = field(default=())


def slug(*parts: str) -> str:
    """A lowercase id made of ``[a-z0-9-]`` from ``parts``."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-") or "chart"


def series_colours(labels: Sequence[str]) -> dict[str, str]:
    """A palette colour per distinct label, in sorted order: one engine x parameter keeps its
    colour across all charts of a benchmark."""
    distinct = sorted(set(labels))
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(distinct)}


def thin_ticks(
    ticks: Sequence[tuple[float, str]], most: int = MAX_X_LABELS
) -> list[tuple[float, str]]:
    """Every k-th tick (and the last) so that at most about ``most`` labels remain."""
    every = max(1, -(-len(ticks) // most))
    return [tick for i, tick in enumerate(ticks) if i % every == 0 or i == len(ticks) - 1]


def trend_charts(
    benchmark: str,
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    metrics: Sequence[str] | None = None,
    colours: Mapping[str, str] | None = None,
) -> list[Chart]:
    """One line chart per metric of ``benchmark`` (in ``metrics`` order when given, else sorted);
    x = the run's position among the runs that had the benchmark."""
    keys = [key for key in series if key.benchmark == benchmark]
    runs = sorted({(p.created_utc, p.run_id) for key in keys for p in series[key]})
    position = {run_id: index for index, (_, run_id) in enumerate(runs)}
    ticks = tuple((float(i), created[5:10]) for i, (created, _) in enumerate(runs))
    present = {key.metric for key in keys}
    ordered = [m for m in metrics if m in present] if metrics is not None else sorted(present)
    charts = []
    for metric in ordered:
        lines = []
        for key in (k for k in keys if k.metric == metric):
            steps = series_steps(key, series[key], golden)
            points = []
            for step in steps:
                summary = step.point.summary
                if summary.value is None:
                    continue
                flag = None
                if step.comparison is not None and step.comparison.regressed:
                    flag = "regressed"
                elif step.comparison is not None and step.comparison.improved:
                    flag = "improved"
                label = f"{step.point.run_id} · {(step.point.git_commit or '')[:7]} · n={summary.n}"
                points.append(ChartPoint(position[step.point.run_id], summary.value,
                                         summary.ci_low, summary.ci_high, label, flag))
            entry = golden.get((key.benchmark, key.engine, key.parameter, key.metric))
            colour = (colours or {}).get(key.label, "")
            reference = entry.value if entry else None
            lines.append(ChartSeries(key.label, tuple(points), reference, colour))
        last = series[next(k for k in keys if k.metric == metric)][-1].summary
        charts.append(Chart(
            "line", slug(benchmark, "trend", metric), metric, "run", metric, tuple(lines),
            ticks, note=f"{last.kind}, {last.direction} is better",
        ))
    return charts


def compression_curve(
    benchmark: str,
    records: Sequence[BenchmarkRecord],
    colours: Mapping[str, str] | None = None,
) -> Chart | None:
    """Edit precision against compression ratio, one curve per engine x mode; from the samples,
    else (history only) from the aggregates, one point per mode. None without both metrics."""
    lines = []
    for record in records:
        pairs = sorted(
            (float(s.scores[COMPRESSION_METRIC]), float(s.scores[PRECISION_METRIC]), s.sample_id)
            for s in record.samples
            if _is_number(s.scores.get(COMPRESSION_METRIC))
            and _is_number(s.scores.get(PRECISION_METRIC))
        )
        if pairs:
            points = tuple(ChartPoint(x, y, label=sample_id) for x, y, sample_id in pairs)
            label = f"{record.engine} {record.parameter}".strip()
            lines.append(ChartSeries(label, points, colour=(colours or {}).get(label, "")))
    from_samples = bool(lines)
    if not lines:
        by_engine: dict[str, list[ChartPoint]] = {}
        for record in records:
            x, y = record.metrics.get(COMPRESSION_METRIC), record.metrics.get(PRECISION_METRIC)
            if x and y and x.value is not None and y.value is not None:
                point = ChartPoint(x.value, y.value, y.ci_low, y.ci_high, record.parameter)
                by_engine.setdefault(record.engine, []).append(point)
        lines = [
            ChartSeries(engine, tuple(sorted(points, key=lambda p: p.x)))
            for engine, points in by_engine.items()
        ]
    if not lines:
        return None
    return Chart(
        "curve", slug(benchmark, "compression"), "precision vs compression",
        "compression ratio (text tokens / vision tokens)", "edit precision", tuple(lines),
        note="each point a page" if from_samples else "each point a mode; whiskers: 95% interval",
    )


def text_vision_bars(benchmark: str, records: Sequence[BenchmarkRecord]) -> list[Chart]:
    """One grouped bar chart per ``text_X``/``vision_X`` metric pair of the records."""
    stems = list(dict.fromkeys(
        name[len("text_"):]
        for record in records
        for name in record.metrics
        if name.startswith("text_") and f"vision_{name[len('text_'):]}" in record.metrics
    ))
    engines = {record.engine for record in records}
    charts = []
    for stem in stems:
        names = (f"text_{stem}", f"vision_{stem}")
        paired = [r for r in records if all(name in r.metrics for name in names)]
        groups = tuple(
            r.parameter if len(engines) == 1 else f"{r.parameter} ({r.engine})" for r in paired
        )
        bars = []
        for condition in CONDITIONS:
            points = []
            for index, record in enumerate(paired):
                summary = record.metrics[f"{condition}_{stem}"]
                if summary.value is not None:
                    points.append(ChartPoint(index, summary.value, summary.ci_low,
                                             summary.ci_high, f"{groups[index]}: n={summary.n}"))
            bars.append(ChartSeries(condition, tuple(points)))
        direction = paired[0].metrics[f"vision_{stem}"].direction
        charts.append(Chart(
            "bars", slug(benchmark, "text-vision", stem), f"{stem}: text vs vision",
            "configuration", stem, tuple(bars), groups=groups,
            note=f"{direction} is better; 95% whiskers",
        ))
    return charts


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
