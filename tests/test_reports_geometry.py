"""One chart geometry, two renderers: the shapes land where the data says, the SVG writes each
shape once, and the PNG has the shapes' colors where the shapes are."""

from __future__ import annotations

import re

import pytest
from PIL import ImageColor

from evalsuite.reports.charts import Chart, ChartPoint, ChartSeries
from evalsuite.reports.geometry import (
    BOTTOM,
    HEIGHT,
    TOP,
    Circle,
    Line,
    Polygon,
    Polyline,
    Rect,
    Text,
    layout,
    style_of,
)
from evalsuite.reports.plots import OUTPUT_SCALE, render_png, write_pngs
from evalsuite.reports.svg import render_svg

BLUE = "#1f77b4"


def bars() -> Chart:
    points = (ChartPoint(0, 0.2, label="a"), ChartPoint(1, 0.8, label="b"))
    return Chart("bars", "bars", "Bars", "group", "score",
                 (ChartSeries("engine", points, color=BLUE),), groups=("a", "b"))


def trend() -> Chart:
    points = tuple(
        ChartPoint(i, y, y - 0.05, y + 0.05, label=f"run {i}", flag="regressed" if i == 2 else None)
        for i, y in enumerate((0.9, 0.8, 0.5))
    )
    return Chart("line", "trend", "Trend", "run", "score",
                 (ChartSeries("engine", points, reference=0.85, color=BLUE),),
                 x_ticks=((0, "r0"), (1, "r1"), (2, "r2")))


def shapes(chart: Chart, kind: type) -> list:
    return [s for g in layout(chart).groups for s in g.shapes if isinstance(s, kind)]


def test_bars_start_at_zero_and_their_heights_are_proportional_to_the_values():
    low, high = shapes(bars(), Rect)
    baseline = HEIGHT - BOTTOM
    assert low.y + low.height == pytest.approx(baseline) == high.y + high.height
    assert high.height / low.height == pytest.approx(0.8 / 0.2)


def test_line_points_are_placed_on_the_value_scale():
    dots = [c for c in shapes(trend(), Circle) if c.role == "dot"]
    ticks = [t for t in shapes(trend(), Text) if t.role == "tick" and t.anchor == "end"]
    top_tick, bottom_tick = float(ticks[-1].text), float(ticks[0].text)
    scale = (HEIGHT - TOP - BOTTOM) / (top_tick - bottom_tick)
    for dot, value in zip(dots, (0.9, 0.8, 0.5), strict=True):
        assert dot.cy == pytest.approx(HEIGHT - BOTTOM - (value - bottom_tick) * scale)
    assert dots[0].cx < dots[1].cx < dots[2].cx
    (ring,) = [c for c in shapes(trend(), Circle) if not c.filled]
    assert (ring.cx, ring.cy) == (dots[2].cx, dots[2].cy) and "regressed" in ring.role
    (golden,) = [line for line in shapes(trend(), Line) if line.role == "golden"]
    assert golden.y1 == pytest.approx(HEIGHT - BOTTOM - (0.85 - bottom_tick) * scale)


@pytest.mark.parametrize("make", [bars, trend])
def test_svg_writes_every_shape_once(make):
    chart = make()
    svg = render_svg(chart)
    for kind, tag in ((Line, "line"), (Polyline, "polyline"), (Polygon, "polygon"),
                      (Circle, "circle"), (Rect, "rect"), (Text, "text")):
        assert len(re.findall(rf"<{tag}\b", svg)) == len(shapes(chart, kind)), tag


def _blend(color: str, opacity: float) -> tuple[int, int, int]:
    rgb = ImageColor.getrgb(color)[:3]
    return tuple(round(c * opacity + 255 * (1 - opacity)) for c in rgb)


def test_png_has_the_shapes_colors_where_the_geometry_puts_them():
    chart = bars()
    image = render_png(chart)
    caption = layout(chart, caption=True)
    rects = [s for g in caption.groups for s in g.shapes
             if isinstance(s, Rect) and s.role == "bar"]
    assert image.size == (round(caption.width * OUTPUT_SCALE), round(caption.height * OUTPUT_SCALE))
    expected = _blend(BLUE, style_of("bar").opacity)
    for rect in rects:
        centre = (round((rect.x + rect.width / 2) * OUTPUT_SCALE),
                  round((rect.y + rect.height / 2) * OUTPUT_SCALE))
        assert all(abs(a - b) <= 3 for a, b in zip(image.getpixel(centre), expected, strict=True))
    gap = (round((rects[0].x + rects[0].width + 4) * OUTPUT_SCALE),
           round((rects[0].y + rects[0].height - 2) * OUTPUT_SCALE))
    assert image.getpixel(gap) == (255, 255, 255)


def test_write_pngs_keeps_only_the_current_charts(tmp_path):
    (tmp_path / "gone.png").write_bytes(b"old")
    written = write_pngs([bars(), trend()], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bars.png", "trend.png"]
    assert [p.name for p in written] == ["bars.png", "trend.png"]
