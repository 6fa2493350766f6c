"""One chart geometry, two renderers: the shapes land where the data says, the SVG writes each
shape once, and the PNG has the shapes' colors where the shapes are."""

from __future__ import annotations

import itertools
import math
import re

import pytest
from PIL import ImageColor

from evalsuite.reports.charts import Chart, ChartPoint, ChartSeries
from evalsuite.reports.geometry import (
    BOTTOM,
    CAPTION_HEIGHT,
    CHAR_WIDTH,
    HEIGHT,
    LEFT,
    REGRESSED_COLOR,
    RIGHT,
    TIGHT_CHAR_WIDTH,
    TITLE_LINE,
    TOP,
    WIDTH,
    Circle,
    Line,
    Polygon,
    Polyline,
    Rect,
    Text,
    layout,
    nice_ticks,
    style_of,
    thin_ticks,
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


def shapes(chart: Chart, kind: type, *, caption: bool = False) -> list:
    groups = layout(chart, caption=caption).groups
    return [s for g in groups for s in g.shapes if isinstance(s, kind)]


def test_bars_start_at_zero_and_their_heights_are_proportional_to_the_values():
    low, high = shapes(bars(), Rect)
    baseline = HEIGHT - BOTTOM
    assert low.y + low.height == pytest.approx(baseline) == high.y + high.height
    assert high.height / low.height == pytest.approx(0.8 / 0.2)


@pytest.mark.parametrize("caption", [False, True])
def test_the_ends_of_both_axes_are_the_edges_of_the_plot_area(caption):
    points = (ChartPoint(0, 0.0), ChartPoint(1, 0.5), ChartPoint(2, 1.0))
    chart = Chart("line", "ends", "Ends", "run", "score", (ChartSeries("s", points),),
                  x_ticks=((0, "a"), (1, "b"), (2, "c")))
    top = CAPTION_HEIGHT if caption else 0
    low, middle, high = [c for c in shapes(chart, Circle, caption=caption) if c.role == "dot"]
    assert (low.cx, low.cy) == pytest.approx((LEFT, top + HEIGHT - BOTTOM))
    assert (high.cx, high.cy) == pytest.approx((WIDTH - RIGHT, top + TOP))
    assert (middle.cx, middle.cy) == pytest.approx(((low.cx + high.cx) / 2, (low.cy + high.cy) / 2))
    (line,) = shapes(chart, Polyline, caption=caption)
    assert line.points == tuple((c.cx, c.cy) for c in (low, middle, high))


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


@pytest.mark.parametrize(
    ("low", "high"),
    [(0.0, 1.0), (0.93, 0.97), (-3.2, 41.0), (1e-5, 3e-5), (1200.0, 98000.0), (-7.0, -7.0)],
)
def test_nice_ticks_cover_the_range_in_equal_round_steps(low, high):
    ticks = nice_ticks(low, high)
    step = ticks[1] - ticks[0]
    assert ticks[0] - low <= 1e-9 * step and high - ticks[-1] <= 1e-9 * step  # rounding only
    assert 3 <= len(ticks) <= 11
    assert all(b - a == pytest.approx(step) for a, b in itertools.pairwise(ticks))
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(mantissa == pytest.approx(m) for m in (1, 2, 2.5, 5)), step
    if low < high:  # no whole step of padding at either end
        assert ticks[1] > low and ticks[-2] < high


def test_thinned_ticks_keep_the_first_and_last_and_about_nine():
    ticks = [(float(i), f"r{i}") for i in range(30)]
    kept = thin_ticks(ticks)
    assert kept[0] == ticks[0] and kept[-1] == ticks[-1] and len(kept) <= 10
    assert thin_ticks(ticks[:5]) == ticks[:5]


def test_the_caption_holds_the_title_and_a_key_per_series_golden_line_and_ring():
    (caption,) = [g for g in layout(trend(), caption=True).groups if g.role == "caption"]
    texts = [s.text for s in caption.shapes if isinstance(s, Text)]
    assert texts == ["Trend", "engine", "golden", "regressed", "improved"]
    assert [type(s) for s in caption.shapes if not isinstance(s, Text)] == [
        Rect, Line, Circle, Circle,
    ]
    assert all(g.role != "caption" for g in layout(trend()).groups)  # the page has its own
    long = Chart("bars", "long", "t" * 40, "", "y", bars().series, groups=("a", "b"),
                 note="n" * 60)
    titles = [s for g in layout(long, caption=True).groups for s in g.shapes
              if isinstance(s, Text) and s.role == "title"]
    assert len(titles) == 2 and titles[1].y > titles[0].y  # wrapped, never cut
    assert " ".join(t.text for t in titles) == "t" * 40 + " (" + "n" * 60 + ")"
    plot_top = min(s.y1 for s in shapes(long, Line, caption=True) if s.role == "grid")
    assert plot_top == pytest.approx(CAPTION_HEIGHT + TITLE_LINE + TOP)  # the plot moved down


def test_long_x_labels_stand_upright_whole_and_the_chart_grows_for_them():
    groups = tuple(f"config_{name}_low_contrast" for name in "abcde")
    chart = Chart("bars", "long", "t", "", "y", (ChartSeries("s", tuple(
        ChartPoint(i, 0.5) for i in range(5))),), groups=groups)
    labels = [t for t in shapes(chart, Text) if t.text in groups]
    assert [t.text for t in labels] == list(groups)
    assert all(t.rotate == 90 and t.anchor == "end" for t in labels)
    drawing = layout(chart)
    longest = max(len(g) for g in groups) * TIGHT_CHAR_WIDTH
    assert drawing.height >= HEIGHT - BOTTOM + longest  # the labels' whole length fits
    short = Chart("bars", "short", "t", "", "y", chart.series, groups=tuple("abcde"))
    assert all(t.rotate == 0 for t in shapes(short, Text) if t.text in "abcde")
    assert layout(short).height == HEIGHT


def test_x_labels_at_the_ends_stay_inside_the_drawing():
    points = (ChartPoint(0, 0.5), ChartPoint(1, 0.6))
    chart = Chart("line", "ends", "t", "run", "y", (ChartSeries("s", points),),
                  x_ticks=((0, "11-23 08:02"), (1, "11-23 10:02")))
    first, last = [t for t in shapes(chart, Text) if t.text.startswith("11-23")]
    assert first.anchor == last.anchor == "middle" and first.rotate == last.rotate == 0
    for label in (first, last):
        half = len(label.text) * CHAR_WIDTH / 2
        assert label.x - half >= 0 and label.x + half <= WIDTH


def test_legend_labels_wrap_instead_of_being_cut():
    label = "replay mode=small,config=color_low_contrast,condition=vision," * 2
    chart = Chart("bars", "legend", "t", "", "y", (ChartSeries(label, (ChartPoint(0, 0.5),)),),
                  groups=("a",))
    lines = [s.text for s in shapes(chart, Text, caption=True) if s.role == "legend"]
    assert len(lines) > 1 and " ".join(lines) == label.rstrip()


def test_intervals_are_whiskers_within_the_metric_range():
    points = (ChartPoint(0, 0.98, 0.9, 1.0), ChartPoint(1, 0.5, 0.0, 0.7))
    chart = Chart("line", "w", "t", "run", "y", (ChartSeries("s", points, color=BLUE),),
                  x_ticks=((0, "a"), (1, "b")), value_range=(0.0, 1.0))
    dots = [c for c in shapes(chart, Circle) if c.role == "dot"]
    whiskers = [line for line in shapes(chart, Line) if line.role == "interval"]
    assert [(w.x1, w.x2) for w in whiskers] == [(d.cx, d.cx) for d in dots]
    assert not shapes(chart, Polygon)  # no band
    grid = sorted(line.y1 for line in shapes(chart, Line) if line.role == "grid")
    assert min(w.y2 for w in whiskers) == pytest.approx(grid[0])  # 1.0 is the top tick
    assert max(w.y1 for w in whiskers) == pytest.approx(grid[-1])  # 0.0 the bottom one


def test_svg_escapes_labels_and_keeps_hover_titles():
    points = (ChartPoint(0, 0.4, label="run <1> & co"), ChartPoint(1, 0.6, label="run 2"))
    chart = Chart("line", "esc", 'a "quoted" <title>', "run", "y",
                  (ChartSeries("engine <b>", points),), x_ticks=((0, "x<y"), (1, "z")))
    svg = render_svg(chart)
    assert "<b>" not in svg and "<1>" not in svg and "x<y" not in svg
    assert 'data-series="engine &lt;b&gt;"' in svg
    assert 'aria-label="a &quot;quoted&quot; &lt;title&gt;"' in svg
    titles = re.findall(r'<circle class="dot"[^>]*><title>([^<]*)</title>', svg)
    assert titles == [
        "engine &lt;b&gt;: 0.4\nrun &lt;1&gt; &amp; co", "engine &lt;b&gt;: 0.6\nrun 2",
    ]


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


def _near(image, point: tuple[float, float], rgb: tuple[int, ...], tolerance: int = 12) -> bool:
    """Whether a pixel within 1 pixel of ``point`` (SVG units) is ``rgb``, give or take."""
    x, y = round(point[0] * OUTPUT_SCALE), round(point[1] * OUTPUT_SCALE)
    return any(
        all(abs(a - b) <= tolerance
            for a, b in zip(image.getpixel((x + dx, y + dy)), rgb, strict=True))
        for dx in (-1, 0, 1) for dy in (-1, 0, 1)
    )


def test_png_draws_the_lines_rings_and_dashes_where_the_geometry_puts_them():
    chart = trend()
    image = render_png(chart)
    blue = ImageColor.getrgb(BLUE)
    (line,) = shapes(chart, Polyline, caption=True)
    for (x1, y1), (x2, y2) in itertools.pairwise(line.points):
        assert _near(image, ((x1 + x2) / 2, (y1 + y2) / 2), blue)
        assert not _near(image, ((x1 + x2) / 2, (y1 + y2) / 2 + 30), blue)
    ring = next(c for c in shapes(chart, Circle, caption=True) if not c.filled)
    assert _near(image, (ring.cx + ring.r, ring.cy), ImageColor.getrgb(REGRESSED_COLOR))
    golden = next(s for s in shapes(chart, Line, caption=True) if s.role == "golden")
    on, off = style_of("golden").dash
    dash = _blend(BLUE, style_of("golden").opacity)
    assert _near(image, (golden.x1 + on / 2, golden.y1), dash)  # the first dash
    assert not _near(image, (golden.x1 + on + off / 2, golden.y1), dash)  # the first gap


def test_write_pngs_keeps_only_the_current_charts(tmp_path):
    (tmp_path / "gone.png").write_bytes(b"old")
    written = write_pngs([bars(), trend()], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bars.png", "trend.png"]
    assert [p.name for p in written] == ["bars.png", "trend.png"]
