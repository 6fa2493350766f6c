"""PNG versions of the dashboard's charts, for CI artifacts: the shapes of
:func:`evalsuite.reports.geometry.layout` (with the title and legend) rasterized with Pillow,
drawn at :data:`SCALE` times the size and reduced, for smooth edges."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageColor, ImageDraw

from evalsuite.render.fonts import load_font
from evalsuite.reports.charts import Chart
from evalsuite.reports.geometry import (
    BACKGROUND,
    WHITE,
    Circle,
    Line,
    Polygon,
    Polyline,
    Rect,
    Shape,
    Text,
    layout,
    style_of,
)

SCALE = 4  # drawing scale, reduced to OUTPUT_SCALE: 2 x 2 samples per pixel
OUTPUT_SCALE = 2  # the PNG is twice the SVG's size, for sharp text
_ANCHORS = {"start": "ls", "middle": "ms", "end": "rs"}
Ink = tuple[int, int, int, int]


def write_pngs(charts: Sequence[Chart], folder: str | Path) -> list[Path]:
    """One ``<chart_id>.png`` per chart in ``folder`` (created when missing); PNGs of charts that
    are gone are removed, so the folder shows the current dashboard only. Returns the paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in charts:
        path = folder / f"{chart.chart_id}.png"
        render_png(chart).save(path, optimize=True)
        written.append(path)
    for stale in set(folder.glob("*.png")) - set(written):
        stale.unlink()
    return written


def render_png(chart: Chart) -> Image.Image:
    """The chart with its title and legend as an RGB image."""
    drawing = layout(chart, caption=True)
    size = (math.ceil(drawing.width * SCALE), math.ceil(drawing.height * SCALE))
    canvas = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(canvas, "RGBA")  # translucent ink is blended into what is below
    for group in drawing.groups:
        for shape in group.shapes:
            _draw(draw, shape)
    return canvas.reduce(SCALE // OUTPUT_SCALE)


def _rgba(color: str, opacity: float = 1.0) -> Ink:
    red, green, blue = ImageColor.getrgb(color)[:3]
    return red, green, blue, round(255 * opacity)


def _scaled(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(x * SCALE, y * SCALE) for x, y in points]


def _draw(draw: ImageDraw.ImageDraw, shape: Shape) -> None:
    style = style_of(shape.role)
    if isinstance(shape, Text):
        _text(draw, shape, _rgba(style.color))  # text is opaque, as in the SVG
        return
    ink = _rgba(style.color or shape.color, style.opacity)
    width = max(1, round(style.stroke_width * SCALE))
    if isinstance(shape, Line):
        _line(draw, _scaled([(shape.x1, shape.y1), (shape.x2, shape.y2)]), ink, width, style.dash)
    elif isinstance(shape, Polyline):
        draw.line(_scaled(shape.points), fill=ink, width=width, joint="curve")
    elif isinstance(shape, Polygon):
        draw.polygon(_scaled(shape.points), fill=ink)
    elif isinstance(shape, Circle):
        box = [(shape.cx - shape.r) * SCALE, (shape.cy - shape.r) * SCALE,
               (shape.cx + shape.r) * SCALE, (shape.cy + shape.r) * SCALE]
        if shape.filled:
            draw.ellipse(box, fill=ink, outline=_rgba(WHITE), width=width)
        else:
            draw.ellipse(box, outline=ink, width=width)
    elif isinstance(shape, Rect):
        draw.rectangle([shape.x * SCALE, shape.y * SCALE, (shape.x + shape.width) * SCALE,
                        (shape.y + shape.height) * SCALE], fill=ink)


def _line(
    draw: ImageDraw.ImageDraw,
    ends: list[tuple[float, float]],
    ink: Ink,
    width: int,
    dash: tuple[float, ...],
) -> None:
    """A straight line, solid or in ``dash`` pattern (on, off, ... in unscaled pixels)."""
    (x1, y1), (x2, y2) = ends
    if not dash:
        draw.line(ends, fill=ink, width=width)
        return
    length = math.hypot(x2 - x1, y2 - y1) or 1.0

    def at(position: float) -> tuple[float, float]:
        return x1 + (x2 - x1) * position / length, y1 + (y2 - y1) * position / length

    position, index = 0.0, 0
    while position < length:
        step = dash[index % len(dash)] * SCALE
        if index % 2 == 0:
            draw.line([at(position), at(min(position + step, length))], fill=ink, width=width)
        position += step
        index += 1


def _text(draw: ImageDraw.ImageDraw, shape: Text, ink: Ink) -> None:
    font = load_font("sans", round(style_of(shape.role).font_size * SCALE))
    anchor = _ANCHORS[shape.anchor]
    if not shape.rotate:
        draw.text((shape.x * SCALE, shape.y * SCALE), shape.text, font=font, fill=ink,
                  anchor=anchor)
        return
    left, top, right, bottom = font.getbbox(shape.text, anchor=anchor)
    mask = Image.new("L", (right - left, bottom - top), 0)
    ImageDraw.Draw(mask).text((-left, -top), shape.text, font=font, fill=255, anchor=anchor)
    turned = mask.rotate(shape.rotate, expand=True)
    # the text's anchor, at (-left, -top) of the mask, lands on (x, y) after the turn
    angle = math.radians(shape.rotate)
    ax, ay = -left - mask.width / 2, -top - mask.height / 2
    cos, sin = math.cos(angle), math.sin(angle)
    rx, ry = ax * cos + ay * sin, -ax * sin + ay * cos
    corner = (round(shape.x * SCALE - rx - turned.width / 2),
              round(shape.y * SCALE - ry - turned.height / 2))
    draw.bitmap(corner, turned, fill=ink)
