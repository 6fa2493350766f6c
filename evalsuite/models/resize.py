"""Image-size rules of the peer models: the side lengths a model's processor resizes a page to.

Qwen2-VL's ``smart_resize`` family: both sides a multiple of ``factor``, the pixel count inside
[``min_pixels``, ``max_pixels``], the aspect ratio kept as closely as that allows::

    h' = round(h/f)·f                       (w' likewise; Python's round: halves to even)
    h'·w' > max:  β = √(h·w/max),  h' = ⌊h/β/f⌋·f
    h'·w' < min:  β = √(min/(h·w)), h' = ⌈h·β/f⌉·f

The models' copies differ in small ways, held as data in :class:`SmartResize`: which steps clamp a
side to at least ``f``, whether the grown size is checked against ``max`` again, whether
``min <= max`` is asserted, and the defaults. Each rule is tested against its official function
(tests/fixtures/models/*/…smart_resize.json.gz).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from evalsuite.errors import EvalsuiteError

MAX_ASPECT_RATIO = 200
POINTS_PER_INCH = 72


class ImageSizeError(EvalsuiteError, ValueError):
    """A page size the model's resize rule refuses (too elongated, a side of 0, min > max)."""


@dataclass(frozen=True)
class SmartResize:
    """One model's ``smart_resize``: its defaults (``min_pixels``/``max_pixels`` as multiples of
    factor² where ``per_factor_squared``) and its clamps and checks."""

    source: str
    factor: int
    min_pixels: int
    max_pixels: int
    per_factor_squared: bool = False
    clamp_rounded: bool = True
    """h' = max(f, round(h/f)·f) rather than round(h/f)·f."""
    clamp_shrunk: bool = True
    """h' = max(f, ⌊h/β/f⌋·f) in the max branch."""
    recheck_after_growing: bool = False
    """The min branch's size, if above max, shrunk again with β = √(h'w'/max) (clamped)."""
    assert_min_le_max: bool = False

    def size(
        self,
        height: int,
        width: int,
        factor: int | None = None,
        min_pixels: int | None = None,
        max_pixels: int | None = None,
    ) -> tuple[int, int]:
        """(height, width) the rule gives; ImageSizeError where the official one raises."""
        f = factor or self.factor
        scale = f * f if self.per_factor_squared else 1
        low = self.min_pixels * scale if min_pixels is None else min_pixels
        high = self.max_pixels * scale if max_pixels is None else max_pixels
        if self.assert_min_le_max and not high >= low:
            raise ImageSizeError(f"max_pixels {high} is below min_pixels {low}")
        if min(height, width) == 0:
            raise ImageSizeError(f"a page of {width} x {height} pixels has no area")
        ratio = max(height, width) / min(height, width)
        if ratio > MAX_ASPECT_RATIO:
            raise ImageSizeError(
                f"absolute aspect ratio must be smaller than {MAX_ASPECT_RATIO}, got {ratio}")
        h = round(height / f) * f
        w = round(width / f) * f
        if self.clamp_rounded:
            h, w = max(f, h), max(f, w)
        if h * w > high:
            beta = math.sqrt(height * width / high)
            h, w = self._shrunk(height / beta, f), self._shrunk(width / beta, f)
        elif h * w < low:
            beta = math.sqrt(low / (height * width))
            h, w = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
            if self.recheck_after_growing and h * w > high:
                beta = math.sqrt(h * w / high)
                h, w = max(f, math.floor(h / beta / f) * f), max(f, math.floor(w / beta / f) * f)
        return h, w

    def _shrunk(self, side: float, f: int) -> int:
        floored = math.floor(side / f) * f
        return max(f, floored) if self.clamp_shrunk else floored


def side_scaled(width: int, height: int, target: int, side: str = "longest") -> tuple[int, int]:
    """(width, height) scaled so that the ``longest`` (or ``shortest``) side is ``target`` px,
    the other ⌈s·target/ref⌉, as poppler sizes a page rendered at ``target·72/ref`` dpi."""
    if side not in ("longest", "shortest"):
        raise ValueError(f"side must be 'longest' or 'shortest', got {side!r}")
    reference = max(width, height) if side == "longest" else min(width, height)
    width_is_reference = width == reference
    scale = target / reference
    return (
        target if width_is_reference else math.ceil(width * scale - 1e-9),
        target if not width_is_reference else math.ceil(height * scale - 1e-9),
    )


def side_dpi(target: int, side: str = "longest") -> Callable[[float, float], float]:
    """The resolution olmocr gives poppler (``pdftoppm -r``) to render a page so that its
    ``longest`` (or ``shortest``) side is ``target`` px: ``target · 72 / s`` dpi for that side s
    in points (``render_pdf_to_base64png``, ``render_pdf_to_base64png_min_short_size``)."""
    if side not in ("longest", "shortest"):
        raise ValueError(f"side must be 'longest' or 'shortest', got {side!r}")
    pick = max if side == "longest" else min

    def dpi(width_pt: float, height_pt: float) -> float:
        return target * POINTS_PER_INCH / pick(width_pt, height_pt)

    return dpi


def resized(page: Image.Image, size: tuple[int, int]) -> Image.Image:
    """``page`` in RGB at ``size`` (width, height), resampled with Pillow's bicubic filter (the
    same page when the size is already that)."""
    page = page.convert("RGB")
    return page if page.size == size else page.resize(size, Image.Resampling.BICUBIC)


DOTS_OCR = SmartResize(
    source="rednote-hilab/dots.ocr 36d7248 dots_ocr/utils/image_utils.py:smart_resize",
    factor=28, min_pixels=3136, max_pixels=11289600, recheck_after_growing=True)
QWEN_VL_UTILS = SmartResize(
    source="qwen-vl-utils 0.0.14 qwen_vl_utils/vision_process.py:smart_resize",
    factor=28, min_pixels=4, max_pixels=16384, per_factor_squared=True, clamp_shrunk=False,
    assert_min_le_max=True)
