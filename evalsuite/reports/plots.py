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

SCALE = 4  # supersampling factor
OUTPUT_SCALE = 2  # the PNG is twice the SVG's size, for sharp text
_ANCHORS = {"start": "ls", "middle": "ms", "end": "rs"}


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
    canvas = Image.new("RGBA", size, BACKGROUND)
    for group in drawing.groups:
        for shape in group.shapes:
            _draw(canvas, shape)
    final = (math.ceil(drawing.width * OUTPUT_SCALE), math.ceil(drawing.height * OUTPUT_SCALE))
    return canvas.convert("RGB").resize(final, Image.Resampling.LANCZOS)


def _rgba(color: str, opacity: float) -> tuple[int, int, int, int]:
    red, green, blue = ImageColor.getrgb(color)[:3]
    return red, green, blue, round(255 * opacity)


def _scaled(points: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(x * SCALE, y * SCALE) for x, y in points]


def _draw(canvas: Image.Image, shape: Shape) -> None:
    """Draw ``shape`` on ``canvas``; translucent shapes go through a layer of their own."""
    style = style_of(shape.role)
    opaque = style.opacity >= 1
    layer = canvas if opaque else Image.new("RGBA", canvas.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    color = style.color or getattr(shape, "color", "") or "#000000"
    ink = _rgba(color, 1.0)
    width = max(1, round(style.stroke_width * SCALE))
    if isinstance(shape, Line):
        _line(draw, [(shape.x1, shape.y1), (shape.x2, shape.y2)], ink, width, style.dash)
    elif isinstance(shape, Polyline):
        draw.line(_scaled(shape.points), fill=ink, width=width, joint="curve")
    elif isinstance(shape, Polygon):
        draw.polygon(_scaled(shape.points), fill=ink)
    elif isinstance(shape, Circle):
        box = [(shape.cx - shape.r) * SCALE, (shape.cy - shape.r) * SCALE,
               (shape.cx + shape.r) * SCALE, (shape.cy + shape.r) * SCALE]
        if shape.filled:
            draw.ellipse(box, fill=ink, outline=_rgba(WHITE, 1.0), width=width)
        else:
            draw.ellipse(box, outline=ink, width=width)
    elif isinstance(shape, Rect):
        draw.rectangle([shape.x * SCALE, shape.y * SCALE, (shape.x + shape.width) * SCALE,
                        (shape.y + shape.height) * SCALE], fill=ink)
    else:
        _text(layer, shape, ink)
    if not opaque:
        layer.putalpha(layer.getchannel("A").point(lambda a: round(a * style.opacity)))
        canvas.alpha_composite(layer)


def _line(
    draw: ImageDraw.ImageDraw,
    points: list[tuple[float, float]],
    ink: tuple[int, int, int, int],
    width: int,
    dash: tuple[float, ...],
) -> None:
    (x1, y1), (x2, y2) = _scaled(points)
    if not dash:
        draw.line([(x1, y1), (x2, y2)], fill=ink, width=width)
        return
    length = math.hypot(x2 - x1, y2 - y1) or 1.0
    position, index = 0.0, 0
    while position < length:
        step = dash[index % len(dash)] * SCALE
        if index % 2 == 0:
            end = min(position + step, length)
            draw.line([(x1 + (x2 - x1) * position / length, y1 + (y2 - y1) * position / length),
                       (x1 + (x2 - x1) * end / length, y1 + (y2 - y1) * end / length)],
                      fill=ink, width=width)
        position += step
        index += 1


def _text(layer: Image.Image, shape: Text, ink: tuple[int, int, int, int]) -> None:
    font = load_font("sans", round(style_of(shape.role).font_size * SCALE))
    anchor = _ANCHORS[shape.anchor]
    if not shape.rotate:
        ImageDraw.Draw(layer).text((shape.x * SCALE, shape.y * SCALE), shape.text, font=font,
                                   fill=ink, anchor=anchor)
        return
    left, top, right, bottom = font.getbbox(shape.text, anchor=anchor)
    label = Image.new("RGBA", (right - left, bottom - top), (0, 0, 0, 0))
    ImageDraw.Draw(label).text((-left, -top), shape.text, font=font, fill=ink, anchor=anchor)
    turned = label.rotate(shape.rotate, expand=True)
    # the anchor point (0, 0) of the text, after the turn, sits at (x, y)
    angle = math.radians(shape.rotate)
    ax, ay = -left - label.width / 2, -top - label.height / 2
    cos, sin = math.cos(angle), math.sin(angle)
    rx, ry = ax * cos + ay * sin, -ax * sin + ay * cos
    corner = (round(shape.x * SCALE - rx - turned.width / 2),
              round(shape.y * SCALE - ry - turned.height / 2))
    layer.alpha_composite(turned, dest=(max(0, corner[0]), max(0, corner[1])))
