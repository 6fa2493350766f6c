"""How a page is rendered: font, size, colors, page geometry, and the seed study's presets.

Units: ``size`` is in typographic points and becomes pixels through ``dpi``
(``size_px = size * dpi / 72``); page size and margins are in pixels. The default ``dpi`` of 72
makes one point one pixel, so ``size_medium`` draws a 20 px font as the seed study
(galah92/deepseek-ocr-eval, ``experiment/render_documents.py``) did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

RGB = tuple[int, int, int]

FONT_FAMILIES: tuple[str, ...] = ("mono", "serif", "sans")
"""mono = DejaVu Sans Mono, serif = DejaVu Serif, sans = DejaVu Sans (matplotlib's copies)."""

NAMED_SIZES: dict[str, float] = {"small": 14.0, "medium": 20.0, "large": 28.0}
"""Font sizes of the seed study, in points."""


def _require_int(value: Any, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"RenderConfig.{name} must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"RenderConfig.{name} must be >= {minimum}, got {value}")
    return value


def _require_positive(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"RenderConfig.{name} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"RenderConfig.{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _normalise_size(size: Any) -> float:
    if isinstance(size, str):
        if size not in NAMED_SIZES:
            raise ValueError(
                f"RenderConfig.size must be a number of points or one of {list(NAMED_SIZES)}, "
                f"got {size!r}"
            )
        return NAMED_SIZES[size]
    return _require_positive(size, "size")


def _require_rgb(value: Any, name: str) -> RGB:
    if not isinstance(value, (tuple, list)) or not all(
        isinstance(c, int) and not isinstance(c, bool) for c in value
    ):
        raise TypeError(f"RenderConfig.colors {name} must be an (R, G, B) of ints, got {value!r}")
    if len(value) != 3:
        raise ValueError(f"RenderConfig.colors {name} must have 3 channels, got {value!r}")
    if not all(0 <= c <= 255 for c in value):
        raise ValueError(f"RenderConfig.colors {name} must have channels in 0..255, got {value!r}")
    return (value[0], value[1], value[2])


def _normalise_colors(colors: Any) -> str | ColorScheme:
    if isinstance(colors, ColorScheme):
        return colors
    if isinstance(colors, str):
        if colors not in COLOR_SCHEMES:
            raise ValueError(
                f"RenderConfig.colors must be one of {list(COLOR_SCHEMES)} or a "
                f"(foreground, background) RGB pair, got {colors!r}"
            )
        return colors
    if not isinstance(colors, (tuple, list)):
        raise TypeError(
            "RenderConfig.colors must be a scheme name, a ColorScheme or a (foreground, "
            f"background) RGB pair, got {type(colors).__name__}"
        )
    if len(colors) != 2:
        raise ValueError(
            f"RenderConfig.colors must be a (foreground, background) RGB pair, got {colors!r}"
        )
    return ColorScheme(foreground=colors[0], background=colors[1])


def _normalise_margins(margins: Any) -> tuple[int, int, int, int]:
    if isinstance(margins, int) and not isinstance(margins, bool):
        margins = (margins,) * 4
    if not isinstance(margins, (tuple, list)):
        raise TypeError(
            "RenderConfig.margins must be an int or (left, top, right, bottom), "
            f"got {type(margins).__name__}"
        )
    if len(margins) != 4:
        raise ValueError(
            f"RenderConfig.margins must have 4 values (left, top, right, bottom), got {margins!r}"
        )
    for side, value in zip(("left", "top", "right", "bottom"), margins, strict=True):
        _require_int(value, f"margins {side}", minimum=0)
    return (margins[0], margins[1], margins[2], margins[3])


@dataclass(frozen=True)
class ColorScheme:
    """A text color drawn on a background color, each an (R, G, B) triple of 0-255 ints."""

    foreground: RGB
    background: RGB

    def __post_init__(self) -> None:
        object.__setattr__(self, "foreground", _require_rgb(self.foreground, "foreground"))
        object.__setattr__(self, "background", _require_rgb(self.background, "background"))


COLOR_SCHEMES: dict[str, ColorScheme] = {
    # The seed study's pairs: white/black, then #d4d4d4 on #1e1e1e, #5c4b37 on #f4ecd8,
    # #1a365d on #e8f4fc and #606060 on #e0e0e0.
    "default": ColorScheme(foreground=(0, 0, 0), background=(255, 255, 255)),
    "dark": ColorScheme(foreground=(212, 212, 212), background=(30, 30, 30)),
    "sepia": ColorScheme(foreground=(92, 75, 55), background=(244, 236, 216)),
    "blue": ColorScheme(foreground=(26, 54, 93), background=(232, 244, 252)),
    "low_contrast": ColorScheme(foreground=(96, 96, 96), background=(224, 224, 224)),
}


@dataclass(frozen=True)
class RenderConfig:
    """Everything that decides what a rendered page looks like.

    Args:
        font: font family, one of ``FONT_FAMILIES``.
        size: font size in points, or ``"small"`` (14), ``"medium"`` (20), ``"large"`` (28);
            stored as the number.
        colors: a name in ``COLOR_SCHEMES``, a :class:`ColorScheme`, or a pair
            ``(foreground_rgb, background_rgb)`` (stored as a ColorScheme).
        page_width, page_height: page size in pixels. The default 1024 x 1024 is DeepSeek-OCR's
            base-mode input, so a page is neither padded nor resized in that mode.
        margins: ``(left, top, right, bottom)`` in pixels; one int sets all four. 40 px as in
            the seed study.
        line_spacing: distance between baselines as a multiple of the font size in pixels
            (1.2 gives 24 px at 20 px, the seed study's ``font_size + 4``).
        dpi: pixels per inch used to turn points into pixels.
    """

    font: str = "mono"
    size: float | str = 20.0
    colors: str | ColorScheme | tuple[RGB, RGB] = "default"
    page_width: int = 1024
    page_height: int = 1024
    margins: int | tuple[int, int, int, int] = (40, 40, 40, 40)
    line_spacing: float = 1.2
    dpi: float = 72.0

    def __post_init__(self) -> None:
        if not isinstance(self.font, str):
            raise TypeError(f"RenderConfig.font must be str, got {type(self.font).__name__}")
        if self.font not in FONT_FAMILIES:
            raise ValueError(
                f"RenderConfig.font must be one of {list(FONT_FAMILIES)}, got {self.font!r}"
            )
        object.__setattr__(self, "size", _normalise_size(self.size))
        object.__setattr__(self, "colors", _normalise_colors(self.colors))
        for name in ("page_width", "page_height"):
            _require_int(getattr(self, name), name, minimum=1)
        object.__setattr__(self, "margins", _normalise_margins(self.margins))
        left, top, right, bottom = self.margins
        if left + right >= self.page_width:
            raise ValueError(
                f"RenderConfig.margins leave no width: left {left} + right {right} px "
                f">= page_width {self.page_width} px"
            )
        if top + bottom >= self.page_height:
            raise ValueError(
                f"RenderConfig.margins leave no height: top {top} + bottom {bottom} px "
                f">= page_height {self.page_height} px"
            )
        _require_positive(self.line_spacing, "line_spacing")
        _require_positive(self.dpi, "dpi")
        if self.size_px < 1:
            raise ValueError(
                f"RenderConfig.size {self.size} pt at dpi {self.dpi} is {self.size_px:g} px; "
                "need at least 1 px"
            )

    @property
    def size_px(self) -> float:
        """Font size in pixels: ``size * dpi / 72``."""
        return float(self.size) * self.dpi / 72.0

    @property
    def line_pitch_px(self) -> int:
        """Baseline-to-baseline distance of body text, px: ``round(size_px * line_spacing)``."""
        return max(1, round(self.size_px * self.line_spacing))

    @property
    def scheme(self) -> ColorScheme:
        """The colors, resolved from a scheme name where one was given."""
        return COLOR_SCHEMES[self.colors] if isinstance(self.colors, str) else self.colors

    def replace(self, **changes: Any) -> RenderConfig:
        """A copy with some fields changed (validated like a new config)."""
        return replace(self, **changes)


PRESETS: dict[str, RenderConfig] = {
    # The seed study's configurations: each differs from RenderConfig() in one factor.
    "font_mono": RenderConfig(font="mono"),
    "font_serif": RenderConfig(font="serif"),
    "font_sans": RenderConfig(font="sans"),
    "size_small": RenderConfig(size="small"),
    "size_medium": RenderConfig(size="medium"),
    "size_large": RenderConfig(size="large"),
    "color_default": RenderConfig(colors="default"),
    "color_dark": RenderConfig(colors="dark"),
    "color_sepia": RenderConfig(colors="sepia"),
    "color_blue": RenderConfig(colors="blue"),
    "color_low_contrast": RenderConfig(colors="low_contrast"),
}


def preset(name: str) -> RenderConfig:
    """The named configuration of the seed study; ValueError listing the valid names otherwise."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(f"preset name must be one of {sorted(PRESETS)}, got {name!r}")
    return PRESETS[name]
