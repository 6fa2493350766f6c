"""What the dashboard plots, as plain data; :mod:`geometry` lays it out, :mod:`svg` and
:mod:`plots` draw that.

It reads the records as the benchmarks write them: ``parameter`` is ``key=value`` pairs joined
by commas (``mode=small,config=font_mono,condition=vision``) and a metric aggregated per group
is named ``metric[group]`` (``edit_precision[600-700]``).

- trend charts: one per benchmark x metric (groups left out), a line per engine x data x
  parameter over the runs, the 95% interval as a band, the golden value as a dashed line,
  regressions and improvements (see :mod:`evalsuite.reports.series`) marked;
- compression-precision curves: per engine x data x mode, each page's ``edit_precision`` against its
  compression ratio (ground-truth text tokens per vision token), as DeepSeek-OCR's Fox figure;
- text-vs-vision bars: records that differ only in ``condition=text`` / ``condition=vision``
  side by side, one chart per metric both have;
- group bars: ``metric[group]`` aggregates (e.g. per ground-truth token bin, as the paper's Fox
  table), one bar per engine x data x parameter.

Records of the same engine and parameter on different data (``fixtures``, ``fox@<revision>``)
are kept apart; labels name the data only where it differs between the series of a chart.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalsuite.records.model import BenchmarkRecord
from evalsuite.reports.series import (
    GoldenIndex,
    Point,
    SeriesKey,
    better_note,
    series_label,
    series_steps,
)

COMPRESSION_METRICS = ("gt_compression", "compression_ratio")
"""Sample scores taken as the compression ratio, the first one present."""
PRECISION_METRIC = "edit_precision"
CONDITION = "condition"
CONDITIONS = ("text", "vision")
_GROUPED = re.compile(r"^(?P<metric>[^\[\]]+)\[(?P<group>[^\[\]]+)\]$")

ChartKind = Literal["line", "curve", "bars"]
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#b07aa1", "#edc948", "#9c755f", "#ff9da7", "#bab0ac",
)
"""Series colors (Tableau 10), the same on the dashboard and in the PNGs; series i gets i mod 10."""


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
    color: str = ""

    def color_at(self, index: int) -> str:
        """Its own color, else the palette's ``index``-th."""
        return self.color or PALETTE[index % len(PALETTE)]


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


def series_colors(labels: Sequence[str]) -> dict[str, str]:
    """A palette color per distinct label, in sorted order: one engine x data x parameter
    (:func:`evalsuite.reports.series.series_label`) keeps its color across all charts of a
    benchmark."""
    distinct = sorted(set(labels))
    return {label: PALETTE[i % len(PALETTE)] for i, label in enumerate(distinct)}


def trend_charts(
    benchmark: str,
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    metrics: Sequence[str] | None = None,
    colors: Mapping[str, str] | None = None,
) -> list[Chart]:
    """One line chart per metric of ``benchmark`` (in ``metrics`` order when given, else sorted);
    x = the run's position among the runs that had the benchmark."""
    keys = [
        key for key in series
        if key.benchmark == benchmark and split_grouped(key.metric)[1] is None
    ]
    runs = sorted({(p.created_utc, p.run_id) for key in keys for p in series[key]})
    position = {run_id: index for index, (_, run_id) in enumerate(runs)}
    ticks = tuple((float(i), created[5:10]) for i, (created, _) in enumerate(runs))
    present = {key.metric for key in keys}
    ordered = [m for m in metrics if m in present] if metrics is not None else sorted(present)
    charts = []
    for metric in ordered:
        lines = []
        shown = [k for k in keys if k.metric == metric]
        names = labels_with_data([(k.engine, k.data, k.parameter) for k in shown])
        for key, name in zip(shown, names, strict=True):
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
            entry = golden.get(key.golden_key)
            color = (colors or {}).get(key.label, "")
            reference = entry.value if entry else None
            lines.append(ChartSeries(name, tuple(points), reference, color))
        last = series[next(k for k in keys if k.metric == metric)][-1].summary
        charts.append(Chart(
            "line", slug(benchmark, "trend", metric), metric, "run", metric, tuple(lines),
            ticks, note=f"{last.kind}, {better_note(last.direction)}",
        ))
    return charts


def parse_parameter(parameter: str) -> dict[str, str]:
    """``"mode=small,config=x"`` -> ``{"mode": "small", "config": "x"}``; a part without ``=``
    is kept under its own text as key and value."""
    pairs = {}
    for part in filter(None, (p.strip() for p in parameter.split(","))):
        key, _, value = part.partition("=")
        pairs[key] = value if _ else part
    return pairs


def split_grouped(metric: str) -> tuple[str, str | None]:
    """``"edit_precision[600-700]"`` -> ``("edit_precision", "600-700")``; plain names -> None."""
    match = _GROUPED.match(metric)
    return (match["metric"], match["group"]) if match else (metric, None)


def compression_curve(
    benchmark: str,
    records: Sequence[BenchmarkRecord],
    colors: Mapping[str, str] | None = None,
) -> Chart | None:
    """Edit precision against compression ratio, one curve per engine x data x mode, from the
    pages; else (history only) from the aggregates, one point per record. None without both."""
    several_data = len({record.data for record in records}) > 1
    pages: dict[str, dict[float, list[tuple[float, str]]]] = {}
    color_of: dict[str, str] = {}
    for record in records:
        mode = record.params.get("mode") or parse_parameter(record.parameter).get("mode", "")
        label = f"{record.engine} mode={mode}" if mode else record.engine
        if several_data:
            label += f" · {record.data}"
        if not color_of.get(label):  # the color of the series whose parameter is the mode
            color_of[label] = (colors or {}).get(
                series_label(record.engine, record.data, f"mode={mode}" if mode else ""), ""
            )
        for sample in record.samples:
            x = _first_number(sample.scores, COMPRESSION_METRICS)
            y = sample.scores.get(PRECISION_METRIC)
            if x is not None and _is_number(y):
                at_x = pages.setdefault(label, {}).setdefault(round(x, 6), [])
                at_x.append((float(y), sample.sample_id))
    by_mode = {
        label: [
            ChartPoint(x, math.fsum(y for y, _ in found) / len(found),
                       label=", ".join(sample_id for _, sample_id in found[:4])
                       + (f" (+{len(found) - 4})" if len(found) > 4 else ""))
            for x, found in at_x.items()
        ]
        for label, at_x in pages.items()
    }
    note = "a point per page (or mean of equal ratios)"
    if not by_mode:
        note = "each point a record; whiskers: 95% interval"
        for record in records:
            xs = [record.metrics.get(name) for name in COMPRESSION_METRICS]
            x = next((m for m in xs if m is not None and m.value is not None), None)
            y = record.metrics.get(PRECISION_METRIC)
            if x is not None and y is not None and y.value is not None:
                label = f"{record.engine} · {record.data}" if several_data else record.engine
                point = ChartPoint(x.value, y.value, y.ci_low, y.ci_high, record.parameter)
                by_mode.setdefault(label, []).append(point)
    if not by_mode:
        return None
    lines = tuple(
        ChartSeries(label, tuple(sorted(points, key=lambda p: p.x)),
                    color=color_of.get(label, ""))
        for label, points in sorted(by_mode.items())
    )
    return Chart(
        "curve", slug(benchmark, "compression"), "precision vs compression",
        "compression (text tokens / vision tokens)", "edit precision", lines, note=note,
    )


def text_vision_bars(benchmark: str, records: Sequence[BenchmarkRecord]) -> list[Chart]:
    """For records that differ only in their condition (text or vision), one grouped bar chart
    per metric that both conditions have (and that is not zero everywhere); a group per
    engine x data x rest of the parameter."""
    pairs: dict[tuple[str, str, str], dict[str, BenchmarkRecord]] = {}
    for record in records:
        parsed = parse_parameter(record.parameter)
        condition = parsed.pop(CONDITION, None)
        if condition in CONDITIONS:
            rest = ",".join(f"{k}={v}" if k != v else k for k, v in parsed.items())
            pairs.setdefault((record.engine, record.data, rest), {})[condition] = record
    complete = {key: both for key, both in pairs.items() if len(both) == len(CONDITIONS)}
    if not complete:
        return []
    groups = labels_with_data(list(complete))
    metrics = [
        name
        for name in dict.fromkeys(n for both in complete.values() for n in both["text"].metrics)
        if split_grouped(name)[1] is None
        and all(name in both[c].metrics for both in complete.values() for c in CONDITIONS)
    ]
    charts = []
    for metric in metrics:
        bars = []
        for condition in CONDITIONS:
            points = []
            for index, both in enumerate(complete.values()):
                summary = both[condition].metrics[metric]
                if summary.value is not None:
                    points.append(ChartPoint(index, summary.value, summary.ci_low,
                                             summary.ci_high, f"{groups[index]}: n={summary.n}"))
            bars.append(ChartSeries(condition, tuple(points)))
        if not all(bar.points for bar in bars) or _all_zero(bars):
            continue  # one condition lacks it, or there is no bar to draw
        direction = next(iter(complete.values()))["vision"].metrics[metric].direction
        charts.append(Chart(
            "bars", slug(benchmark, "text-vision", metric), f"{metric}: text vs vision",
            "", metric, tuple(bars), groups=tuple(groups),
            note=better_note(direction),
        ))
    return charts


def group_bars(
    benchmark: str,
    records: Sequence[BenchmarkRecord],
    colors: Mapping[str, str] | None = None,
) -> list[Chart]:
    """One bar chart per metric aggregated per group (``metric[group]``): groups along x, a bar
    per engine x data x parameter. A metric that is zero everywhere (say, no empty output anywhere)
    has no bar to draw and gets no chart."""
    grouped: dict[str, dict[str, None]] = {}
    for record in records:
        for name in record.metrics:
            metric, group = split_grouped(name)
            if group is not None:
                grouped.setdefault(metric, {})[group] = None
    names = labels_with_data([(r.engine, r.data, r.parameter) for r in records])
    charts = []
    for metric, group_set in grouped.items():
        groups = sorted(group_set, key=_natural)
        bars = []
        for record, name in zip(records, names, strict=True):
            points = []
            for index, group in enumerate(groups):
                summary = record.metrics.get(f"{metric}[{group}]")
                if summary is not None and summary.value is not None:
                    points.append(ChartPoint(index, summary.value, summary.ci_low,
                                             summary.ci_high, f"{group}: n={summary.n}"))
            if points:
                full = series_label(record.engine, record.data, record.parameter)
                color = (colors or {}).get(full, "")
                bars.append(ChartSeries(name, tuple(points), color=color))
        if _all_zero(bars):
            continue
        direction = next(
            s.direction for r in records for n, s in r.metrics.items()
            if split_grouped(n)[0] == metric
        )
        charts.append(Chart(
            "bars", slug(benchmark, "groups", metric), f"{metric} per group", "group", metric,
            tuple(bars), groups=tuple(groups), note=better_note(direction),
        ))
    return charts


def labels_with_data(keys: Sequence[tuple[str, str, str]]) -> list[str]:
    """:func:`compact_labels` of (engine, data, parameter) keys; the data joins the parameter as
    a ``data=...`` part only when it differs between the keys."""
    several = len({data for _, data, _ in keys}) > 1
    return compact_labels([
        (engine, ",".join(filter(None, (parameter, f"data={data}"))) if several else parameter)
        for engine, data, parameter in keys
    ])


def compact_labels(keys: Sequence[tuple[str, str]]) -> list[str]:
    """Labels of (engine, parameter) keys showing only what differs between them: the engine
    when engines differ, then the values of the parameter's varying ``key=value`` parts joined
    by `` · `` (``mode=small,config=x,condition=text`` -> ``x · text``)."""
    engines = {engine for engine, _ in keys}
    parsed = [parse_parameter(parameter) for _, parameter in keys]
    varying = [k for k in dict.fromkeys(k for p in parsed for k in p)
               if len({p.get(k) for p in parsed}) > 1]
    labels = []
    for (engine, parameter), params in zip(keys, parsed, strict=True):
        shown = " · ".join(params[k] for k in varying if k in params)
        if len(engines) > 1 or not shown:
            shown = f"{engine} {shown or parameter}".strip()
        labels.append(shown)
    return labels


def _all_zero(series: Sequence[ChartSeries]) -> bool:
    return all(point.y == 0 for s in series for point in s.points)


def _natural(text: str) -> tuple[float, str]:
    """Sort ``600-700`` before ``1000-1100``: by the leading number, then the text."""
    match = re.match(r"\d+(\.\d+)?", text)
    return (float(match.group()) if match else math.inf, text)


def _first_number(scores: Mapping[str, object], names: Sequence[str]) -> float | None:
    for name in names:
        value = scores.get(name)
        if _is_number(value):
            return float(value)
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
