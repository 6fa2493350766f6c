"""Inline SVG drawings of :class:`evalsuite.reports.charts.Chart` for the HTML pages.

Static markup, no script: hovering a point shows its ``<title>`` (run, commit, n or sample id).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from evalsuite.reports.charts import (
    IMPROVED_COLOUR,
    REGRESSED_COLOUR,
    Chart,
    ChartPoint,
    ChartSeries,
    thin_ticks,
)

WIDTH, HEIGHT = 480, 280
LEFT, RIGHT, TOP, BOTTOM = 58, 18, 14, 46
CHAR_WIDTH = 6.4  # px per tick label character at the page's 10.5 px font (digits are widest)
TIGHT_CHAR_WIDTH = 5.4  # the same at 9 px


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


class _Frame:
    """Maps data to pixels inside the plot area."""

    def __init__(self, x_range: tuple[float, float], y_ticks: Sequence[float]) -> None:
        self.x0, self.x1 = x_range
        self.y0, self.y1 = y_ticks[0], y_ticks[-1]

    def px(self, x: float) -> float:
        span = (self.x1 - self.x0) or 1.0
        return LEFT + (x - self.x0) / span * (WIDTH - LEFT - RIGHT)

    def py(self, y: float) -> float:
        """Pixel row of ``y``, clamped to the plot area (intervals may reach past the axis)."""
        span = (self.y1 - self.y0) or 1.0
        y = min(max(y, self.y0), self.y1)
        return HEIGHT - BOTTOM - (y - self.y0) / span * (HEIGHT - TOP - BOTTOM)


def render_svg(chart: Chart) -> str:
    """The chart as one ``<svg class="chart">`` element."""
    y_ticks = nice_ticks(*_y_extent(chart))
    if chart.kind == "bars":
        frame = _Frame((-0.5, len(chart.groups) - 0.5), y_ticks)
        body = _bars(chart, frame)
        x_ticks = [(float(i), group) for i, group in enumerate(chart.groups)]
    elif chart.kind == "curve":
        xs = [p.x for s in chart.series for p in s.points]
        x_values = nice_ticks(min(xs), max(xs))
        frame = _Frame((x_values[0], x_values[-1]), y_ticks)
        body = _lines(chart, frame, bands=False)
        x_ticks = [(x, tick_label(x, x_values)) for x in x_values]
    else:
        last = max((t[0] for t in chart.x_ticks), default=0.0)
        frame = _Frame((-0.4, last + 0.4) if last == 0 else (0.0, last), y_ticks)
        body = _lines(chart, frame, bands=True)
        x_ticks = thin_ticks(chart.x_ticks)
    parts = [
        f'<svg class="chart chart-{chart.kind}" id="{escape(chart.chart_id)}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(chart.title)}" '
        'xmlns="http://www.w3.org/2000/svg">',
        _axes(frame, y_ticks, x_ticks, chart),
        *body,
        "</svg>",
    ]
    return "".join(parts)


def _y_extent(chart: Chart) -> tuple[float, float]:
    """Range of values, intervals and golden lines; intervals stay within [0, 1] when every
    value does (a t interval of a score in [0, 1] can reach past it)."""
    centres = [p.y for s in chart.series for p in s.points]
    centres += [s.reference for s in chart.series if s.reference is not None]
    spans = [v for s in chart.series for p in s.points for v in (p.low, p.high) if v is not None]
    if centres and all(0.0 <= v <= 1.0 for v in centres):
        spans = [min(max(v, 0.0), 1.0) for v in spans]
    values = [v for v in centres + spans if math.isfinite(v)]
    if chart.kind == "bars":
        values.append(0.0)
    if not values:
        return 0.0, 1.0
    return min(values), max(values)


def _axes(
    frame: _Frame, y_ticks: Sequence[float], x_ticks: Sequence[tuple[float, str]], chart: Chart
) -> str:
    out = ['<g class="axes">']
    for y in y_ticks:
        py = frame.py(y)
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py:.1f}" y2="{py:.1f}"/>'
        )
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{py + 3.5:.1f}" text-anchor="end">'
                   f"{tick_label(y, y_ticks)}</text>")
    base = HEIGHT - BOTTOM
    out.append(f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{base}" y2="{base}"/>')
    spacing = (frame.px(x_ticks[1][0]) - frame.px(x_ticks[0][0])) if len(x_ticks) > 1 else 200
    longest = max((len(label) for _, label in x_ticks), default=0)
    tight = longest * CHAR_WIDTH > spacing  # crowded: a smaller font, then cut what still overlaps
    fits = max(3, int(spacing / (TIGHT_CHAR_WIDTH if tight else CHAR_WIDTH)))
    style = "tick tight" if tight else "tick"
    for x, label in x_ticks:
        text = label if len(label) <= fits else label[: fits - 1] + "…"
        out.append(f'<text class="{style}" x="{frame.px(x):.1f}" y="{base + 15}" '
                   f'text-anchor="middle"><title>{escape(label)}</title>{escape(text)}</text>')
    out.append(f'<text class="axis-label" x="{(LEFT + WIDTH - RIGHT) / 2:.1f}" '
               f'y="{HEIGHT - 8}" text-anchor="middle">{escape(chart.x_label)}</text>')
    middle = (TOP + HEIGHT - BOTTOM) / 2
    out.append(f'<text class="axis-label" transform="translate(13 {middle:.1f}) rotate(-90)" '
               f'text-anchor="middle">{escape(chart.y_label)}</text>')
    out.append("</g>")
    return "".join(out)


def _lines(chart: Chart, frame: _Frame, *, bands: bool) -> list[str]:
    out = []
    for index, series in enumerate(chart.series):
        colour = series.colour_at(index)
        out.append(f'<g class="series" data-series="{escape(series.label)}">')
        if series.reference is not None:
            py = frame.py(series.reference)
            out.append(
                f'<line class="golden" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{py:.1f}" '
                f'y2="{py:.1f}" stroke="{colour}"><title>golden {escape(series.label)}: '
                f"{series.reference:.4g}</title></line>"
            )
        if bands:
            out.append(_band(series.points, frame, colour))
        if len(series.points) > 1:
            path = " ".join(f"{frame.px(p.x):.1f},{frame.py(p.y):.1f}" for p in series.points)
            out.append(f'<polyline class="line" points="{path}" stroke="{colour}"/>')
        for point in series.points:
            out.append(_marker(point, series, frame, colour))
        out.append("</g>")
    return out


def _band(points: Sequence[ChartPoint], frame: _Frame, colour: str) -> str:
    spans = [(p.x, p.low, p.high) for p in points if p.low is not None and p.high is not None]
    if len(spans) < 2:
        return ""
    upper = [f"{frame.px(x):.1f},{frame.py(high):.1f}" for x, _, high in spans]
    lower = [f"{frame.px(x):.1f},{frame.py(low):.1f}" for x, low, _ in reversed(spans)]
    return f'<polygon class="band" points="{" ".join(upper + lower)}" fill="{colour}"/>'


def _marker(point: ChartPoint, series: ChartSeries, frame: _Frame, colour: str) -> str:
    x, y = frame.px(point.x), frame.py(point.y)
    interval = (
        f" [{point.low:.4g}, {point.high:.4g}]"
        if point.low is not None and point.high is not None
        else ""
    )
    flag = f" · {point.flag}" if point.flag else ""
    title = f"{series.label}: {point.y:.4g}{interval}{flag}\n{point.label}".strip()
    out = f'<circle class="dot" cx="{x:.1f}" cy="{y:.1f}" r="3.2" fill="{colour}">'
    out += f"<title>{escape(title)}</title></circle>"
    if point.flag:
        ring = REGRESSED_COLOUR if point.flag == "regressed" else IMPROVED_COLOUR
        out += (f'<circle class="flag flag-{point.flag}" cx="{x:.1f}" cy="{y:.1f}" r="7" '
                f'stroke="{ring}"><title>{escape(title)}</title></circle>')
    return out


def _bars(chart: Chart, frame: _Frame) -> list[str]:
    count = max(1, len(chart.series))
    band = (frame.px(1) - frame.px(0)) * 0.72
    width = band / count
    zero = frame.py(max(frame.y0, 0.0))
    out = []
    for index, series in enumerate(chart.series):
        colour = series.colour_at(index)
        out.append(f'<g class="series" data-series="{escape(series.label)}">')
        for point in series.points:
            left = frame.px(point.x) - band / 2 + index * width
            top = frame.py(point.y)
            title = f"{series.label} · {point.label}: {point.y:.4g}"
            if point.low is not None and point.high is not None:
                title += f" [{point.low:.4g}, {point.high:.4g}]"
            out.append(
                f'<rect class="bar" x="{left + 1:.1f}" y="{min(top, zero):.1f}" '
                f'width="{max(width - 2, 1):.1f}" height="{abs(zero - top):.1f}" fill="{colour}">'
                f"<title>{escape(title)}</title></rect>"
            )
            if point.low is not None and point.high is not None:
                centre = left + width / 2
                out.append(
                    f'<line class="whisker" x1="{centre:.1f}" x2="{centre:.1f}" '
                    f'y1="{frame.py(point.low):.1f}" y2="{frame.py(point.high):.1f}"/>'
                )
        out.append("</g>")
    return out
