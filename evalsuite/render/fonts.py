"""The DejaVu fonts bundled with matplotlib, loaded for PIL with a fixed layout engine.

matplotlib ships the same DejaVu files on every platform, so renders do not depend on the fonts
a machine has installed. The files are found through matplotlib's package folder
(``mpl-data/fonts/ttf``, what ``matplotlib.get_data_path()`` points at) without importing
matplotlib. Pillow's BASIC layout is forced because Raqm, where present, may shape differently.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from PIL import ImageFont

_FONT_FILES: dict[tuple[str, bool], str] = {
    ("mono", False): "DejaVuSansMono.ttf",
    ("mono", True): "DejaVuSansMono-Bold.ttf",
    ("serif", False): "DejaVuSerif.ttf",
    ("serif", True): "DejaVuSerif-Bold.ttf",
    ("sans", False): "DejaVuSans.ttf",
    ("sans", True): "DejaVuSans-Bold.ttf",
}


@functools.cache
def font_dir() -> Path:
    """matplotlib's bundled TrueType folder, ``<matplotlib>/mpl-data/fonts/ttf``."""
    spec = importlib.util.find_spec("matplotlib")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("matplotlib is not installed; it provides the DejaVu fonts")
    return Path(next(iter(spec.submodule_search_locations))) / "mpl-data" / "fonts" / "ttf"


def font_path(family: str, *, bold: bool = False) -> Path:
    """Path of the DejaVu file for ``family`` (mono, serif, sans), regular or bold."""
    try:
        name = _FONT_FILES[(family, bold)]
    except KeyError:
        raise ValueError(f"family must be one of mono, serif, sans, got {family!r}") from None
    path = font_dir() / name
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing from matplotlib's bundled fonts")
    return path


@functools.lru_cache(maxsize=64)
def load_font(family: str, size_px: float, *, bold: bool = False) -> ImageFont.FreeTypeFont:
    """The font at ``size_px`` pixels (em size), with Pillow's BASIC layout."""
    return ImageFont.truetype(
        str(font_path(family, bold=bold)), size_px, layout_engine=ImageFont.Layout.BASIC
    )
