"""Text and markdown rendered into page images under controlled configurations.

``render_text`` and ``render_markdown`` return a :class:`RenderedDocument`: page images plus
the exact box and text of every drawn line (and every table cell), the ground truth of the
detection and recognition benchmarks. The same source and config give byte-identical PNGs for a
given Pillow version (its wheels bundle FreeType and zlib): fonts come from matplotlib's bundled
DejaVu files and Pillow's BASIC text layout is used.
"""

from evalsuite.render.config import (
    COLOR_SCHEMES,
    FONT_FAMILIES,
    NAMED_SIZES,
    PRESETS,
    ColorScheme,
    RenderConfig,
    preset,
)
from evalsuite.render.document import (
    Box,
    RenderedCell,
    RenderedDocument,
    RenderedLine,
    RenderedPage,
)
from evalsuite.render.markdown import render_markdown
from evalsuite.render.text import render_text

__all__ = [
    "COLOR_SCHEMES",
    "FONT_FAMILIES",
    "NAMED_SIZES",
    "PRESETS",
    "Box",
    "ColorScheme",
    "RenderConfig",
    "RenderedCell",
    "RenderedDocument",
    "RenderedLine",
    "RenderedPage",
    "preset",
    "render_markdown",
    "render_text",
]
