"""Plain text to page images: ``render_text``."""

from __future__ import annotations

from evalsuite.render.config import RenderConfig
from evalsuite.render.document import RenderedDocument
from evalsuite.render.fonts import load_font
from evalsuite.render.layout import (
    Band,
    Run,
    blank_band,
    check_render_args,
    paginate,
    paint,
    text_band,
    wrap_indented,
)

TAB_SIZE = 4
"""Tabs become spaces up to the next multiple of this many columns."""


def render_text(
    text: str, config: RenderConfig | None = None, *, single_page: bool = False
) -> RenderedDocument:
    """Render ``text`` as word-wrapped lines on pages of ``config`` (default ``RenderConfig()``).

    Every source line starts a new rendered line; a line wider than the space between the
    margins wraps at whitespace (a word wider than that is split between characters) and its
    continuation lines keep its indentation. Blank lines keep their height; runs of spaces inside
    a line are kept. Baselines are ``config.line_pitch_px`` apart, the first line's ascender at
    the top margin. With ``single_page`` the result is one page as tall as the text needs
    (for long documents); otherwise a new page starts when the next line would cross the bottom
    margin. The layout metadata holds each drawn line's text and exact ink box.
    """
    config = RenderConfig() if config is None else config
    normalised = check_render_args(text, "text", config, single_page)
    font = load_font(config.font, config.size_px)
    left, _, right, _ = config.margins
    width = config.page_width - left - right
    pitch = config.line_pitch_px
    bands: list[Band] = []
    for line in normalised.split("\n"):
        pieces = wrap_indented(line.expandtabs(TAB_SIZE), font, width)
        if not pieces:
            bands.append(blank_band(pitch))
        bands.extend(
            text_band([Run(left + indent, piece, font)], "text", pitch) for indent, piece in pieces
        )
    return paint(paginate(bands, config, single_page=single_page), config, text)
