"""What the dashboard plots, as plain data; :mod:`geometry` lays it out, :mod:`svg` and
:mod:`plots` draw that.

It reads the records as the benchmarks write them: ``parameter`` is ``key=value`` pairs joined
by commas (``mode=small,config=font_mono,condition=vision``) and a metric aggregated per group
is named ``metric[group]`` (``edit_precision[600-700]``).

- trend charts: small multiples, one per benchmark x metric x panel (groups left out). A panel
  is one engine x data x measure (:func:`measure_of`), cut into parts of at most
  :data:`MAX_SERIES` series; a line per parameter over the last :data:`MAX_RUNS_DRAWN` runs (the
  older ones summarised in one line), each value's 95% interval as a whisker clipped to the
  metric's range, the golden value as a dashed line, regressions and improvements (see
  :mod:`evalsuite.reports.series`) marked. A health metric that is 0 in every run gets no chart,
  one line of text instead (:class:`FlatMetric`);
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
from dataclasses import dataclass, field, replace
from typing import Literal

from evalsuite.records.model import BenchmarkRecord, MetricSummary
from evalsuite.reports.series import (
    GoldenIndex,
    Point,
    SeriesKey,
    Step,
    better_note,
    series_steps,
)
from evalsuite.runner import OUTPUT_HEALTH, MetricSpec

COMPRESSION_METRICS = ("gt_compression", "compression_ratio")
"""Sample scores taken as the compression ratio, the first one present."""
PRECISION_METRIC = "edit_precision"
CONDITION = "condition"
CONDITIONS = ("text", "vision")
_GROUPED = re.compile(r"^(?P<metric>[^\[\]]+)\[(?P<group>[^\[\]]+)\]$")

MEASURE_KEYS = ("condition",)
"""Parameter parts that change what is measured (the context given as text or as an image):
records that differ in them are drawn in separate panels and ranked in separate tables."""
HEALTH_METRICS = tuple(spec.name for spec in OUTPUT_HEALTH)
"""The output-health shares every benchmark reports (:data:`evalsuite.runner.OUTPUT_HEALTH`)."""
MAX_SERIES = 6
"""Most series drawn in one chart; more are split into small multiples."""
MAX_RUNS_DRAWN = 30
"""Runs drawn per trend chart: the newest ones; older runs are summarised in one line. This keeps
the page's size independent of the history's length (see :mod:`evalsuite.reports.dashboard`)."""

ChartKind = Literal["line", "curve", "bars"]
PALETTE = (
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
    "#b07aa1", "#edc948", "#9c755f", "#ff9da7", "#bab0ac",
)
"""Series colors (Tableau 10), the same on the dashboard and in the PNGs. In a trend panel the
i-th parameter (sorted) gets color i, so a series has the same color in every metric's chart;
a chart never shows two series in one color (:func:`distinct_colors`)."""


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
    value_range: tuple[float | None, float | None] = (None, None)
    older: str = ""


@dataclass(frozen=True)
class FlatMetric:
    """A health metric that is 0 in every drawn run of a benchmark: said in one line."""

    metric: str
    runs: int

    @property
    def text(self) -> str:
        return f"{self.metric}: 0 in all {self.runs} runs"


Bounds = tuple[float | None, float | None]


def slug(*parts: str) -> str:
    """A lowercase id made of ``[a-z0-9-]`` from ``parts``."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-") or "chart"


def measure_of(parameter: str) -> str:
    """The :data:`MEASURE_KEYS` parts of ``parameter`` (``"condition=text"``; "" for none)."""
    parsed = parse_parameter(parameter)
    return ",".join(f"{key}={parsed[key]}" for key in MEASURE_KEYS if key in parsed)


def clip(value: float | None, bounds: Bounds) -> float | None:
    """``value`` inside ``bounds`` (None sides are open)."""
    low, high = bounds
    if value is None:
        return None
    if low is not None:
        value = max(value, low)
    return value if high is None else min(value, high)


def run_labels(runs: Sequence[tuple[str, str, str | None]]) -> list[str]:
    """Distinct x labels of (created_utc, run_id, run_name) runs: a run's name (``--run-name``)
    is always shown when it has one; alone when every run has a distinct name, else followed by
    ``MM-DD``, by ``MM-DD HH:MM`` where days repeat, by the run id where even minutes repeat."""

    def label(created: str, run_id: str, name: str | None, when: slice | str | None) -> str:
        if when is None:
            stamp = ""
        elif isinstance(when, slice):
            stamp = created[when].replace("T", " ")
        else:
            stamp = run_id
        return " ".join(part for part in (name, stamp) if part)

    every_named = all(name for _, _, name in runs)
    steps: list[slice | str | None] = [slice(5, 10), slice(5, 16), "id"]
    for when in ([None] if every_named else []) + steps:
        labels = [label(created, run_id, name, when) for created, run_id, name in runs]
        if len(set(labels)) == len(labels):
            return labels
    return [run_id for _, run_id, _ in runs]


def panel_colors(keys: Sequence[SeriesKey]) -> dict[SeriesKey, tuple[str, str]]:
    """Per series key (metric ignored): its panel's title and its color. A panel is one engine x
    data x measure, cut into parts of at most :data:`MAX_SERIES` parameters (sorted); the data
    is named only when the benchmark has several."""
    several_data = len({key.data for key in keys}) > 1
    members: dict[tuple[str, str, str], list[str]] = {}
    for key in keys:
        panel = (key.engine, key.data, measure_of(key.parameter))
        members.setdefault(panel, [])
        if key.parameter not in members[panel]:
            members[panel].append(key.parameter)
    assigned: dict[tuple[str, str, str], tuple[str, str]] = {}
    for (engine, data, measure), parameters in members.items():
        parameters.sort()
        parts = -(-len(parameters) // MAX_SERIES)
        size = -(-len(parameters) // parts)
        for index, parameter in enumerate(parameters):
            title = " · ".join(filter(None, (engine, measure, f"data={data}" if several_data
                                             else "")))
            if parts > 1:
                title += f" ({index // size + 1}/{parts})"
            assigned[(engine, data, parameter)] = (title, PALETTE[index % size])
    return {key: assigned[(key.engine, key.data, key.parameter)] for key in keys}


def trend_charts(
    benchmark: str,
    series: Mapping[SeriesKey, Sequence[Point]],
    golden: GoldenIndex,
    metrics: Sequence[str] | None = None,
    specs: Mapping[str, MetricSpec] | None = None,
    runs: Sequence[tuple[str, str, str | None]] | None = None,
) -> tuple[list[Chart], list[FlatMetric]]:
    """Small multiples per metric of ``benchmark`` (in ``metrics`` order when given, else
    sorted), and the health metrics that are 0 in every run instead of their charts. x = the
    run's position among the last :data:`MAX_RUNS_DRAWN` of ``runs`` ((created_utc, run_id,
    run_name), oldest first; default: the runs of the series). Directions and ranges come from
    ``specs`` (the benchmark's metric specs), else from the records."""
    specs = specs or {}
    keys = [
        key for key in series
        if key.benchmark == benchmark and split_grouped(key.metric)[1] is None
    ]
    if runs is None:
        runs = sorted({(p.created_utc, p.run_id, None) for key in keys for p in series[key]})
    drawn = list(runs[-MAX_RUNS_DRAWN:])
    position = {run_id: index for index, (_, run_id, _) in enumerate(drawn)}
    ticks = tuple((float(i), label) for i, label in enumerate(run_labels(drawn)))
    older = ""
    if len(runs) > len(drawn):
        hidden = len(runs) - len(drawn)
        older = (f"{hidden:,} older runs not drawn ({runs[0][0][:10]} to "
                 f"{runs[hidden - 1][0][:10]}); the table ranks the newest values")
    panels = panel_colors(keys)
    present = {key.metric for key in keys}
    ordered = [m for m in metrics if m in present] if metrics is not None else sorted(present)
    charts: list[Chart] = []
    flat: list[FlatMetric] = []
    for metric in ordered:
        shown = [k for k in keys if k.metric == metric]
        recent = {k: [p for p in series[k] if p.run_id in position] for k in shown}
        if metric in HEALTH_METRICS and all(
            p.summary.value == 0 for points in recent.values() for p in points
        ):
            flat.append(FlatMetric(metric, len(drawn)))
            continue
        last = series[shown[0]][-1].summary
        direction, bounds = metric_traits(metric, last, specs)
        by_panel: dict[str, list[SeriesKey]] = {}
        for key in shown:
            by_panel.setdefault(panels[key][0], []).append(key)
        for title, members in by_panel.items():
            names = compact_labels([(k.engine, k.parameter) for k in members])
            lines = []
            for key, name in zip(members, names, strict=True):
                # the point before the window too, so the first drawn one is compared
                points = series[key][-(len(recent[key]) + 1):] if recent[key] else []
                steps = series_steps(key, points, golden)
                lines.append(ChartSeries(
                    name, tuple(_trend_points(steps, position, bounds)),
                    golden[key.golden_key].value if key.golden_key in golden else None,
                    panels[key][1],
                ))
            if not any(line.points for line in lines):
                continue
            charts.append(Chart(
                "line", slug(benchmark, "trend", metric, title), f"{metric} · {title}", "run",
                metric, tuple(lines), ticks, note=f"{last.kind}, {better_note(direction)}",
                value_range=bounds, older=older,
            ))
    return charts, flat


def metric_traits(
    metric: str, summary: MetricSummary, specs: Mapping[str, MetricSpec] | None
) -> tuple[str | None, Bounds]:
    """The better direction and value range of ``metric``: from its spec when ``specs`` has it
    (``metric[group]`` takes the metric's), else from ``summary`` (a proportion is in [0, 1],
    a mean unbounded)."""
    spec = (specs or {}).get(split_grouped(metric)[0])
    if spec is not None:
        return spec.direction, spec.value_range
    return summary.direction, (0.0, 1.0) if summary.kind == "proportion" else (None, None)


def _trend_points(
    steps: Sequence[Step], position: Mapping[str, int], bounds: Bounds
) -> list[ChartPoint]:
    """The drawn points of ``steps`` with their intervals clipped to ``bounds`` and their flags."""
    points = []
    for step in steps:
        summary = step.point.summary
        if summary.value is None or step.point.run_id not in position:
            continue
        flag: Literal["regressed", "improved"] | None = None
        if step.comparison is not None and step.comparison.regressed:
            flag = "regressed"
        elif step.comparison is not None and step.comparison.improved:
            flag = "improved"
        label = f"{step.point.run_id} · {(step.point.git_commit or '')[:7]} · n={summary.n}"
        points.append(ChartPoint(position[step.point.run_id], summary.value,
                                 clip(summary.ci_low, bounds), clip(summary.ci_high, bounds),
                                 label, flag))
    return points


def distinct_colors(chart: Chart) -> Chart:
    """``chart`` with each series in a color of its own: a series whose color an earlier one
    already has takes the first palette color not yet used."""
    used: set[str] = set()
    recolored = []
    for index, line in enumerate(chart.series):
        color = line.color_at(index)
        if color in used:
            color = next((c for c in PALETTE if c not in used), color)
        used.add(color)
        recolored.append(replace(line, color=color))
    return replace(chart, series=tuple(recolored))


def split_series(chart: Chart) -> list[Chart]:
    """``chart`` as small multiples of at most :data:`MAX_SERIES` series each, colors distinct."""
    count = len(chart.series)
    if count <= MAX_SERIES:
        return [distinct_colors(chart)]
    parts = -(-count // MAX_SERIES)
    size = -(-count // parts)
    return [
        distinct_colors(replace(
            chart, chart_id=f"{chart.chart_id}-{part + 1}",
            title=f"{chart.title} ({part + 1}/{parts})",
            series=chart.series[part * size:(part + 1) * size],
        ))
        for part in range(parts)
    ]


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


def compression_curve(benchmark: str, records: Sequence[BenchmarkRecord]) -> Chart | None:
    """Edit precision against compression ratio, one curve per engine x data x mode, from the
    pages; else (history only) from the aggregates, one point per record. None without both."""
    several_data = len({record.data for record in records}) > 1
    pages: dict[str, dict[float, list[tuple[float, str]]]] = {}
    for record in records:
        mode = record.params.get("mode") or parse_parameter(record.parameter).get("mode", "")
        label = f"{record.engine} mode={mode}" if mode else record.engine
        if several_data:
            label += f" · {record.data}"
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
        ChartSeries(label, tuple(sorted(points, key=lambda p: p.x)))
        for label, points in sorted(by_mode.items())
    )
    return Chart(
        "curve", slug(benchmark, "compression"), "precision vs compression",
        "compression (text tokens / vision tokens)", "edit precision", lines, note=note,
        value_range=(0.0, 1.0),
    )


def text_vision_bars(
    benchmark: str,
    records: Sequence[BenchmarkRecord],
    specs: Mapping[str, MetricSpec] | None = None,
) -> list[Chart]:
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
        direction, bounds = metric_traits(
            metric, next(iter(complete.values()))["vision"].metrics[metric], specs
        )
        bars = []
        for condition in CONDITIONS:
            points = []
            for index, both in enumerate(complete.values()):
                summary = both[condition].metrics[metric]
                if summary.value is not None:
                    points.append(ChartPoint(index, summary.value, clip(summary.ci_low, bounds),
                                             clip(summary.ci_high, bounds),
                                             f"{groups[index]}: n={summary.n}"))
            bars.append(ChartSeries(condition, tuple(points)))
        if not all(bar.points for bar in bars) or _all_zero(bars):
            continue  # one condition lacks it, or there is no bar to draw
        charts.append(Chart(
            "bars", slug(benchmark, "text-vision", metric), f"{metric}: text vs vision",
            "", metric, tuple(bars), groups=tuple(groups),
            note=better_note(direction), value_range=bounds,
        ))
    return charts


def group_bars(
    benchmark: str,
    records: Sequence[BenchmarkRecord],
    specs: Mapping[str, MetricSpec] | None = None,
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
        direction, bounds = metric_traits(metric, next(
            s for r in records for n, s in r.metrics.items() if split_grouped(n)[0] == metric
        ), specs)
        bars = []
        for record, name in zip(records, names, strict=True):
            points = []
            for index, group in enumerate(groups):
                summary = record.metrics.get(f"{metric}[{group}]")
                if summary is not None and summary.value is not None:
                    points.append(ChartPoint(index, summary.value, clip(summary.ci_low, bounds),
                                             clip(summary.ci_high, bounds),
                                             f"{group}: n={summary.n}"))
            if points:
                bars.append(ChartSeries(name, tuple(points)))
        if _all_zero(bars):
            continue
        charts.append(Chart(
            "bars", slug(benchmark, "groups", metric), f"{metric} per group", "group", metric,
            tuple(bars), groups=tuple(groups), note=better_note(direction), value_range=bounds,
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
