"""One geometry for every chart: a :class:`~evalsuite.reports.charts.Chart` laid out as shapes in
pixels (:func:`layout`), which :mod:`svg` writes as markup for the dashboard and :mod:`plots`
rasterizes to PNG. Scales, ticks, bars, whiskers, markers, colors and line styles are decided
here once; the renderers know shapes, not chart kinds. No label is ever cut: x labels that do
not fit side by side are turned upright (the chart grows taller for them), long titles and
legend labels wrap.

Coordinates are SVG's: origin top left, y down, text anchored on its baseline.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from evalsuite.reports.charts import Chart, ChartPoint, ChartSeries
from evalsuite.textformat import significant

WIDTH, HEIGHT = 480, 280
LEFT, RIGHT, TOP, BOTTOM = 58, 18, 14, 46
CHAR_WIDTH = 6.7  # px per tick label character at 10.5 px (DejaVu Sans digits: 0.636 em)
TIGHT_CHAR_WIDTH = 5.8  # the same at 9 px
TITLE_CHAR_WIDTH = 6.6  # px per character of a title at 12 px (mixed text)
CAPTION_HEIGHT = 24  # the title band above the plot, with a caption
TITLE_LINE = 15  # each further line of a wrapped title
TICK_HEIGHT = 12  # px an upright x label needs beside the next one
LEGEND_ROW = 16  # one legend row below the plot, with a caption
LEGEND_COLUMNS = 3
LEGEND_KEY = 18  # a legend key and the gap to its label
MAX_X_LABELS = 9
DOT_RADIUS = 3.2
FLAG_RADIUS = 7.0
BACKGROUND = "#ffffff"
WHITE = "#ffffff"
MUTED = "#667085"  # the golden line's legend key, as the dashboard's
REGRESSED_COLOR = "#c62828"
IMPROVED_COLOR = "#2e7d32"


@dataclass(frozen=True)
class Style:
    """How a role is drawn: stroke width, opacity, dash pattern, font size (px), and its own
    color (else the shape's: the series color)."""

    stroke_width: float = 0.0
    opacity: float = 1.0
    dash: tuple[float, ...] = ()
    font_size: float = 0.0
    color: str = ""


STYLES: dict[str, Style] = {
    "grid": Style(stroke_width=1, color="#eef0f3"),
    "axis": Style(stroke_width=1, color="#98a2b3"),
    "tick": Style(font_size=10.5, color="#667085"),
    "tick tight": Style(font_size=9, color="#667085"),
    "axis-label": Style(font_size=11, color="#475467"),
    "title": Style(font_size=12, color="#1f2430"),
    "legend": Style(font_size=10, color="#475467"),
    "swatch": Style(),
    "line": Style(stroke_width=2),
    "interval": Style(stroke_width=1.1, opacity=0.6),
    "golden": Style(stroke_width=1.4, opacity=0.85, dash=(6, 4)),
    "dot": Style(stroke_width=1),
    "flag": Style(stroke_width=2),
    "bar": Style(opacity=0.92),
    "whisker": Style(stroke_width=1.2, color="#344054"),
}
"""Line and text styles per role (a shape's ``role`` is also its CSS class in the SVG)."""


def style_of(role: str) -> Style:
    """The style of ``role``; ``flag flag-regressed`` takes that of ``flag``."""
    return STYLES.get(role) or STYLES[role.split()[0]]


@dataclass(frozen=True)
class Line:
    x1: float
    y1: float
    x2: float
    y2: float
    role: str
    color: str = ""
    title: str = ""


@dataclass(frozen=True)
class Polyline:
    points: tuple[tuple[float, float], ...]
    role: str
    color: str


@dataclass(frozen=True)
class Polygon:
    points: tuple[tuple[float, float], ...]
    role: str
    color: str


@dataclass(frozen=True)
class Circle:
    """A filled dot (outlined in white) or, with ``filled`` False, a ring."""

    cx: float
    cy: float
    r: float
    role: str
    color: str
    filled: bool = True
    title: str = ""


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    width: float
    height: float
    role: str
    color: str
    title: str = ""


@dataclass(frozen=True)
class Text:
    """Text on its baseline at (x, y); ``rotate`` in degrees, counterclockwise, about (x, y)."""

    x: float
    y: float
    text: str
    role: str
    anchor: Literal["start", "middle", "end"] = "start"
    rotate: float = 0.0


Shape = Line | Polyline | Polygon | Circle | Rect | Text


@dataclass(frozen=True)
class Group:
    """Shapes drawn together: the axes, one series (``series`` its label), or the caption."""

    role: str
    shapes: tuple[Shape, ...]
    series: str | None = None


@dataclass(frozen=True)
class Drawing:
    width: float
    height: float
    groups: tuple[Group, ...]


class Frame:
    """Maps data to pixels inside the plot area, which starts ``top`` pixels down."""

    def __init__(
        self, x_range: tuple[float, float], y_ticks: Sequence[float], top: float = 0.0
    ) -> None:
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_ticks[0], y_ticks[-1]
        self.top = top
        self.extra = 0.0  # px below the plot for upright x labels, set by the axes

    def px(self, x: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return LEFT + (x - self.x0) / span * (WIDTH - LEFT - RIGHT)

    def py(self, y: float) -> float:
        """Pixel row of ``y``, clamped to the plot area (intervals may reach past the axis)."""
        span = (self.y1 - self.y0) or 1.0
        y = min(max(y, self.y0), self.y1)
        return self.top + HEIGHT - BOTTOM - (y - self.y0) / span * (HEIGHT - TOP - BOTTOM)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values (steps of 1, 2, 2.5 or 5 x 10^k) covering [low, high]."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"tick range must be finite, got {low}..{high}")
    if high - low < 1e-12:
        pad = abs(low) * 0.05 or 0.5
        low, high = low - pad, high + pad
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    start, end = math.floor(low / step + 1e-9) * step, math.ceil(high / step - 1e-9) * step
    return [start + i * step for i in range(round((end - start) / step) + 1)]


def tick_label(value: float, ticks: Sequence[float]) -> str:
    """``value`` with the fewest decimals that write the tick step exactly (2.5 -> 1)."""
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else 1.0
    decimals = next(d for d in range(10) if abs(step * 10**d - round(step * 10**d)) < 1e-6)
    return f"{value:.{decimals}f}"


def thin_ticks(
    ticks: Sequence[tuple[float, str]], most: int = MAX_X_LABELS
) -> list[tuple[float, str]]:
    """Every k-th tick and the last, so that at most about ``most`` labels remain; a k-th tick
    closer than k/2 to the last one gives way to it."""
    every = max(1, -(-len(ticks) // most))
    last = len(ticks) - 1
    return [tick for i, tick in enumerate(ticks)
            if i == last or (i % every == 0 and last - i >= every / 2)]


def layout(chart: Chart, *, caption: bool = False) -> Drawing:
    """The chart's shapes. With ``caption`` (a stand-alone image) the title goes above the plot
    and a legend below it; the dashboard writes both in HTML around the drawing instead."""
    title = _title(chart) if caption else []
    top = CAPTION_HEIGHT + TITLE_LINE * (len(title) - 1) if caption else 0.0
    y_ticks = nice_ticks(*_y_extent(chart))
    if chart.kind == "bars":
        frame = Frame((-0.5, len(chart.groups) - 0.5), y_ticks, top)
        series = _bars(chart, frame)
        x_ticks = [(float(i), group) for i, group in enumerate(chart.groups)]
    elif chart.kind == "curve":
        xs = [p.x for s in chart.series for p in s.points]
        x_values = nice_ticks(min(xs), max(xs))
        frame = Frame((x_values[0], x_values[-1]), y_ticks, top)
        series = _lines(chart, frame, whiskers=False)
        x_ticks = [(x, tick_label(x, x_values)) for x in x_values]
    else:
        last = max((t[0] for t in chart.x_ticks), default=0.0)
        frame = Frame((-0.4, last + 0.4) if last == 0 else (0.0, last), y_ticks, top)
        series = _lines(chart, frame, whiskers=True)
        x_ticks = thin_ticks(chart.x_ticks)
    groups = [_axes(frame, y_ticks, x_ticks, chart), *series]
    height = top + HEIGHT + frame.extra
    if caption:
        legend, rows = _legend(chart, height)
        groups.append(Group("caption", (*title, *legend)))
        height += rows * LEGEND_ROW + (6 if rows else 0)
    return Drawing(WIDTH, height, tuple(groups))


def _y_extent(chart: Chart) -> tuple[float, float]:
    """Range of values, intervals and golden lines, intervals clipped to the chart's
    ``value_range`` (a t interval of a score in [0, 1] can reach past it)."""
    low, high = chart.value_range
    centres = [p.y for s in chart.series for p in s.points]
    centres += [s.reference for s in chart.series if s.reference is not None]
    spans = [v for s in chart.series for p in s.points for v in (p.low, p.high) if v is not None]
    spans = [v if low is None else max(v, low) for v in spans]
    spans = [v if high is None else min(v, high) for v in spans]
    values = [v for v in centres + spans if math.isfinite(v)]
    if chart.kind == "bars":
        values.append(0.0)
    if not values:
        return 0.0, 1.0
    return min(values), max(values)


def _axes(
    frame: Frame, y_ticks: Sequence[float], x_ticks: Sequence[tuple[float, str]], chart: Chart
) -> Group:
    shapes: list[Shape] = []
    for y in y_ticks:
        py = frame.py(y)
        shapes.append(Line(LEFT, py, WIDTH - RIGHT, py, "grid"))
        shapes.append(Text(LEFT - 6, py + 3.5, tick_label(y, y_ticks), "tick", "end"))
    base = frame.top + HEIGHT - BOTTOM
    shapes.append(Line(LEFT, base, WIDTH - RIGHT, base, "axis"))
    spacing = WIDTH - LEFT - RIGHT  # one label has the whole width
    if len(x_ticks) > 1:
        spacing = frame.px(x_ticks[1][0]) - frame.px(x_ticks[0][0])
    longest = max((len(label) for _, label in x_ticks), default=0)
    # crowded: a smaller font; still crowded: upright labels, and the chart grows below
    role = "tick tight" if longest * CHAR_WIDTH > spacing else "tick"
    upright = longest * TIGHT_CHAR_WIDTH > spacing
    if upright:
        frame.extra = max(0.0, 6 + longest * TIGHT_CHAR_WIDTH + 22 - BOTTOM)
    for x, label in x_ticks:
        if upright:
            shapes.append(Text(frame.px(x) + 3.5, base + 6, label, role, "end", rotate=90))
        else:  # centred on its tick, but kept inside the drawing at both ends
            half = len(label) * (TIGHT_CHAR_WIDTH if role == "tick tight" else CHAR_WIDTH) / 2
            centre = min(max(frame.px(x), half + 2), WIDTH - half - 2)
            shapes.append(Text(centre, base + 15, label, role, "middle"))
    shapes.append(
        Text((LEFT + WIDTH - RIGHT) / 2, frame.top + HEIGHT - 8 + frame.extra, chart.x_label,
             "axis-label", "middle")
    )
    middle = frame.top + (TOP + HEIGHT - BOTTOM) / 2
    shapes.append(Text(13, middle, chart.y_label, "axis-label", "middle", rotate=90))
    return Group("axes", tuple(shapes))


def _lines(chart: Chart, frame: Frame, *, whiskers: bool) -> list[Group]:
    groups = []
    for index, series in enumerate(chart.series):
        color = series.color_at(index)
        shapes: list[Shape] = []
        if series.reference is not None:
            py = frame.py(series.reference)
            title = f"golden {series.label}: {significant(series.reference)}"
            shapes.append(Line(LEFT, py, WIDTH - RIGHT, py, "golden", color, title))
        if whiskers:
            shapes.extend(_whisker(point, frame, color) for point in series.points
                          if point.low is not None and point.high is not None)
        if len(series.points) > 1:
            points = tuple((frame.px(p.x), frame.py(p.y)) for p in series.points)
            shapes.append(Polyline(points, "line", color))
        for point in series.points:
            shapes.extend(_marker(point, series, frame, color))
        groups.append(Group("series", tuple(shapes), series.label))
    return groups


def _whisker(point: ChartPoint, frame: Frame, color: str) -> Line:
    """A thin vertical line over the point's interval (already clipped to the metric's range)."""
    x = frame.px(point.x)
    return Line(x, frame.py(point.low or 0.0), x, frame.py(point.high or 0.0), "interval", color)


def _marker(point: ChartPoint, series: ChartSeries, frame: Frame, color: str) -> list[Shape]:
    x, y = frame.px(point.x), frame.py(point.y)
    interval = (
        f" [{significant(point.low)}, {significant(point.high)}]"
        if point.low is not None and point.high is not None
        else ""
    )
    flag = f" · {point.flag}" if point.flag else ""
    title = f"{series.label}: {significant(point.y)}{interval}{flag}\n{point.label}".strip()
    shapes: list[Shape] = [Circle(x, y, DOT_RADIUS, "dot", color, title=title)]
    if point.flag:
        ring = REGRESSED_COLOR if point.flag == "regressed" else IMPROVED_COLOR
        shapes.append(
            Circle(x, y, FLAG_RADIUS, f"flag flag-{point.flag}", ring, filled=False, title=title)
        )
    return shapes


def _bars(chart: Chart, frame: Frame) -> list[Group]:
    count = max(1, len(chart.series))
    band = (frame.px(1) - frame.px(0)) * 0.72
    width = band / count
    zero = frame.py(max(frame.y0, 0.0))
    groups = []
    for index, series in enumerate(chart.series):
        color = series.color_at(index)
        shapes: list[Shape] = []
        for point in series.points:
            left = frame.px(point.x) - band / 2 + index * width
            top = frame.py(point.y)
            title = f"{series.label} · {point.label}: {significant(point.y)}"
            if point.low is not None and point.high is not None:
                title += f" [{significant(point.low)}, {significant(point.high)}]"
            shapes.append(
                Rect(left + 1, min(top, zero), max(width - 2, 1), abs(zero - top), "bar", color,
                     title)
            )
            if point.low is not None and point.high is not None:
                centre = left + width / 2
                shapes.append(
                    Line(centre, frame.py(point.low), centre, frame.py(point.high), "whisker")
                )
        groups.append(Group("series", tuple(shapes), series.label))
    return groups


def _title(chart: Chart) -> list[Text]:
    """The title and note, wrapped to the width: one line each."""
    full = f"{chart.title}  ({chart.note})" if chart.note else chart.title
    lines = wrap(full, int((WIDTH - 16) / TITLE_CHAR_WIDTH))
    return [Text(WIDTH / 2, CAPTION_HEIGHT - 8 + TITLE_LINE * i, line, "title", "middle")
            for i, line in enumerate(lines)]


def wrap(label: str, fits: int) -> list[str]:
    """``label`` in lines of at most ``fits`` characters, broken at spaces where it can be."""
    return textwrap.wrap(label, max(fits, 1), break_on_hyphens=False) or [label]


def _legend(chart: Chart, top: float) -> tuple[list[Shape], int]:
    """Keys below ``top`` (a swatch per series, then the golden line and the rings where the
    chart has them, as the dashboard's legend), in as many columns (at most
    :data:`LEGEND_COLUMNS`) as keep every label whole; returns the shapes and the row count."""
    keys = [("swatch", series.label, series.color_at(i)) for i, series in enumerate(chart.series)]
    if any(series.reference is not None for series in chart.series):
        keys.append(("golden", "golden", MUTED))
    if any(point.flag for series in chart.series for point in series.points):
        keys.append(("flag flag-regressed", "regressed", REGRESSED_COLOR))
        keys.append(("flag flag-improved", "improved", IMPROVED_COLOR))
    span = WIDTH - LEFT + 40

    def room(columns: int) -> int:  # characters of a label that fit in a column
        return int((span / columns - LEGEND_KEY - 4) / CHAR_WIDTH)

    longest = max((len(label) for _, label, _ in keys), default=0)
    columns = next((n for n in range(LEGEND_COLUMNS, 1, -1) if room(n) >= longest), 1)
    column_width, fits = span / columns, room(columns)
    shapes: list[Shape] = []
    rows = 0  # one column: a label too long for it wraps onto rows of its own
    for index, (role, label, color) in enumerate(keys):
        row, column = divmod(index, columns) if columns > 1 else (rows, 0)
        x = LEFT - 40 + column * column_width
        y = top + row * LEGEND_ROW + 10
        if role == "golden":
            shapes.append(Line(x, y - 3, x + 14, y - 3, role, color))
        elif role == "swatch":
            shapes.append(Rect(x, y - 8, 10, 10, role, color))
        else:
            shapes.append(Circle(x + 5, y - 3, 4.5, role, color, filled=False))
        lines = wrap(label, fits) if columns == 1 else [label]
        shapes.extend(Text(x + LEGEND_KEY, y + 1 + LEGEND_ROW * i, line, "legend")
                      for i, line in enumerate(lines))
        rows = max(rows, row + len(lines))
    return shapes, rows
