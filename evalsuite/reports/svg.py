"""Inline SVG of a chart for the HTML pages: the shapes of :func:`evalsuite.reports.geometry.layout`
written as markup, each with its role as CSS class and its style as attributes.

Static markup, no script: hovering a point shows its ``<title>`` (run, commit, n or sample id).
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from evalsuite.reports.charts import Chart
from evalsuite.reports.geometry import (
    WHITE,
    Circle,
    Group,
    Line,
    Polygon,
    Polyline,
    Rect,
    Shape,
    Text,
    layout,
    style_of,
)


def render_svg(chart: Chart) -> str:
    """The chart as one ``<svg class="chart">`` element."""
    drawing = layout(chart)
    parts = [
        f'<svg class="chart chart-{chart.kind}" id="{escape(chart.chart_id)}" '
        f'data-series-count="{len(chart.series)}" '
        f'viewBox="0 0 {drawing.width:g} {drawing.height:g}" role="img" '
        f'aria-label="{escape(chart.title)}" xmlns="http://www.w3.org/2000/svg">',
        *(_group(group) for group in drawing.groups),
        "</svg>",
    ]
    return "".join(parts)


def _group(group: Group) -> str:
    series = "" if group.series is None else f' data-series="{escape(group.series)}"'
    return f'<g class="{group.role}"{series}>{"".join(map(_shape, group.shapes))}</g>'


def _points(points: Sequence[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in points)


def _title(title: str) -> str:
    return f"<title>{escape(title)}</title>" if title else ""


def _stroke(role: str, color: str) -> str:
    style = style_of(role)
    out = f' stroke="{style.color or color}" stroke-width="{style.stroke_width:g}"'
    if style.dash:
        out += f' stroke-dasharray="{" ".join(f"{d:g}" for d in style.dash)}"'
    if style.opacity != 1:
        out += f' opacity="{style.opacity:g}"'
    return out


def _fill(role: str, color: str) -> str:
    style = style_of(role)
    out = f' fill="{style.color or color}"'
    return out + (f' opacity="{style.opacity:g}"' if style.opacity != 1 else "")


def _shape(shape: Shape) -> str:
    if isinstance(shape, Line):
        return (
            f'<line class="{shape.role}" x1="{shape.x1:.1f}" y1="{shape.y1:.1f}" '
            f'x2="{shape.x2:.1f}" y2="{shape.y2:.1f}"{_stroke(shape.role, shape.color)}>'
            f"{_title(shape.title)}</line>"
        )
    if isinstance(shape, Polyline):
        return (
            f'<polyline class="{shape.role}" points="{_points(shape.points)}" fill="none"'
            f'{_stroke(shape.role, shape.color)} stroke-linejoin="round"/>'
        )
    if isinstance(shape, Polygon):
        return (
            f'<polygon class="{shape.role}" points="{_points(shape.points)}"'
            f"{_fill(shape.role, shape.color)}/>"
        )
    if isinstance(shape, Circle):
        paint = (
            f'{_fill(shape.role, shape.color)} stroke="{WHITE}" '
            f'stroke-width="{style_of(shape.role).stroke_width:g}"'
            if shape.filled
            else f' fill="none"{_stroke(shape.role, shape.color)}'
        )
        return (
            f'<circle class="{shape.role}" cx="{shape.cx:.1f}" cy="{shape.cy:.1f}" '
            f'r="{shape.r:g}"{paint}>{_title(shape.title)}</circle>'
        )
    if isinstance(shape, Rect):
        return (
            f'<rect class="{shape.role}" x="{shape.x:.1f}" y="{shape.y:.1f}" '
            f'width="{shape.width:.1f}" height="{shape.height:.1f}"'
            f"{_fill(shape.role, shape.color)}>{_title(shape.title)}</rect>"
        )
    return _text(shape)


def _text(shape: Text) -> str:
    style = style_of(shape.role)
    place = (
        f'transform="translate({shape.x:.1f} {shape.y:.1f}) rotate({-shape.rotate:g})"'
        if shape.rotate
        else f'x="{shape.x:.1f}" y="{shape.y:.1f}"'
    )
    return (
        f'<text class="{shape.role}" {place} text-anchor="{shape.anchor}" '
        f'font-size="{style.font_size:g}" fill="{style.color}">{escape(shape.text)}</text>'
    )
