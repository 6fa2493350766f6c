"""Text and markdown rendered into page images under controlled configurations.

``render_text`` and ``render_markdown`` return a :class:`RenderedDocument`: page images plus
the exact box and text of every drawn line (and every table cell), the ground truth of the
detection and recognition benchmarks. The same source and config give byte-identical PNGs for a
given Pillow version (its wheels bundle FreeType and zlib): fonts come from matplotlib's bundled
DejaVu files and Pillow's BASIC text layout is used.
"""

import functools

from PIL import Image

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


@functools.lru_cache(maxsize=512)
def cached_render_text(
    text: str, config: RenderConfig, *, single_page: bool = False
) -> RenderedDocument:
    """:func:`render_text`, computed once per process for each (text, config, single_page); the
    same document object comes back every time, so callers must not change its images."""
    return render_text(text, config, single_page=single_page)


def page_image(text: str, config: RenderConfig) -> Image.Image:
    """The whole of ``text`` rendered with ``config`` on one page (cached, do not mutate)."""
    return cached_render_text(text, config, single_page=True).pages[0].image


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
    "cached_render_text",
    "page_image",
    "preset",
    "render_markdown",
    "render_text",
]
