"""DeepSeek's reference preprocessing of a page: the views its ``infer()`` feeds the encoder.

What DeepSeek-OCR's Hugging Face ``model.infer(tokenizer, prompt, image_file, base_size,
image_size, crop_mode)`` builds from an upright RGB page (``modeling_deepseekocr.py``), for each
resolution mode of :data:`evalsuite.tokens.MODES`:

- crop modes (``gundam``): when the page is wider or taller than 640 px (a constant, not
  ``image_size``), local tiles: the page resized (PIL's default, bicubic) to ``cols·640 x
  rows·640`` and cut row by row into ``640 x 640`` tiles, the grid from
  :func:`evalsuite.tokens.tile_grid` with ``infer()``'s ``dynamic_preprocess`` defaults (2 to
  9 tiles). The global view: the page scaled to fit ``base_size`` and padded to a square with
  grey ``(127, 127, 127)`` (``ImageOps.pad``, bicubic, centred).
- other modes: ``image_size <= 640`` (tiny, small; DeepSeek-OCR-2: ``<= 768``) first
  *stretches* the page to ``image_size`` square; then every non-crop mode pads to
  ``image_size`` square as above (so base and large keep the page's aspect ratio, tiny and
  small do not).

Each view becomes ``(x / 255 - 0.5) / 0.5`` per channel, CHW, float32 (torchvision's
``ToTensor`` and ``Normalize``, computed the same way; DeepSeek then casts to bfloat16).

The image-token ids of a view, with ``q(s) = ceil((s // 16) / 4)``: the global view ``q·(q + 1)
+ 1`` (a newline token per row, a view separator) and, with tiles, ``(q_t·cols + 1)·(q_t·rows)``.
DeepSeek-OCR-2 (:data:`OCR2_LAYOUT`) has no newline tokens: ``q² + 1`` and ``q_t²·cols·rows``,
768-px tiles (2 to 6) and a 1024-px global view.

This module is the suite's in-process reference: evalsuite's vLLM plugin
(:mod:`evalsuite.vllm_plugin`) preprocesses with it, and the tests check it against cases
produced by running DeepSeek's own code (``tests/fixtures/deepseek_reference``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from PIL import Image, ImageOps

from evalsuite.engines.deepseek_ocr import INFER_MAX_CROPS
from evalsuite.engines.deepseek_ocr2 import OCR2_VIEWS as OCR2_VIEW_SETTINGS
from evalsuite.tokens import DOWNSAMPLE_RATIO, MODES, PATCH_SIZE, tile_grid

MEAN = 0.5
STD = 0.5
PAD_COLOUR = (int(MEAN * 255),) * 3  # DeepSeek's tuple(int(x * 255) for x in mean): 127


@dataclass(frozen=True)
class ViewSettings:
    """One mode of one model family: the global view's edge, the tile edge, whether to tile,
    the tile-count limits, the largest ``image_size`` a non-crop mode stretches the page to
    (``stretch_limit``: 640, DeepSeek-OCR-2 768), and whether image tokens carry a newline per
    row (DeepSeek-OCR) or not (DeepSeek-OCR-2)."""

    base_size: int
    image_size: int
    crop_mode: bool
    min_crops: int = 2
    max_crops: int = 9
    stretch_limit: int = 640
    newlines: bool = True

    @property
    def global_size(self) -> int:
        """Edge of the global view: ``base_size`` in crop modes, else ``image_size``."""
        return self.base_size if self.crop_mode else self.image_size


DEEPSEEK_OCR_VIEWS: dict[str, ViewSettings] = {
    name: ViewSettings(mode.base_size, mode.image_size, mode.crop_mode, max_crops=INFER_MAX_CROPS)
    for name, mode in MODES.items()
}
"""DeepSeek-OCR's modes (:data:`evalsuite.tokens.MODES`) as ``infer()`` runs them: tiles up to
9, its ``dynamic_preprocess`` defaults."""
OCR2_VIEWS: dict[str, ViewSettings] = {
    name: ViewSettings(
        view.size,
        view.tile_size,
        view.crop_to_patches,
        view.min_patches,
        view.max_patches,
        stretch_limit=OCR2_VIEW_SETTINGS["default"].tile_size,
        newlines=False,
    )
    for name, view in OCR2_VIEW_SETTINGS.items()
}
"""DeepSeek-OCR-2's modes (:data:`evalsuite.engines.deepseek_ocr2.OCR2_VIEWS`): 768-px tiles,
2 to 6, and no newline tokens."""
FAMILY_VIEWS: dict[str, dict[str, ViewSettings]] = {
    "deepseek-ocr": DEEPSEEK_OCR_VIEWS,
    "deepseek-ocr-2": OCR2_VIEWS,
}


def tile_edge(family: str) -> int:
    """The edge of every tile ``family`` makes, px (DeepSeek-OCR 640, DeepSeek-OCR-2 768): its
    crop modes share one, which is what lets tiles of requests in different modes be batched
    without padding. ValueError for an unknown family or one whose crop modes disagree."""
    views = FAMILY_VIEWS.get(family)
    if views is None:
        raise ValueError(
            f"unknown model family {family!r}; choose one of: {', '.join(FAMILY_VIEWS)}"
        )
    edges = {settings.image_size for settings in views.values() if settings.crop_mode}
    if len(edges) != 1:
        raise ValueError(f"{family}'s crop modes do not share one tile edge: {sorted(edges)}")
    return edges.pop()


@dataclass(frozen=True)
class PageViews:
    """The views of one page: the global view, the tiles in row-major order (empty when
    untiled), the tile grid ``(cols, rows)`` (``(1, 1)`` untiled) and the image-token count."""

    global_view: Image.Image
    tiles: tuple[Image.Image, ...]
    grid: tuple[int, int]
    image_tokens: int


def view_settings(family: str, mode: str) -> ViewSettings:
    """The settings of ``mode`` in ``family``; ValueError naming the family's modes."""
    try:
        views = FAMILY_VIEWS[family]
    except KeyError:
        raise ValueError(
            f"unknown model family {family!r}; choose one of: {', '.join(FAMILY_VIEWS)}"
        ) from None
    try:
        return views[mode]
    except KeyError:
        raise ValueError(
            f"{family} has no mode {mode!r}; choose one of: {', '.join(views)}"
        ) from None


def crop_grid(width: int, height: int, settings: ViewSettings) -> tuple[int, int]:
    """The ``(cols, rows)`` tiles of a ``width`` x ``height`` page: ``(1, 1)`` outside crop
    modes and for pages within the tile edge on both sides (:func:`evalsuite.tokens.tile_grid`;
    ``infer()`` compares with a constant 640 / 768, which is the tile edge of its crop mode)."""
    if not settings.crop_mode:
        return 1, 1
    return tile_grid(
        width,
        height,
        min_crops=settings.min_crops,
        max_crops=settings.max_crops,
        tile=settings.image_size,
    )


def image_token_count(width: int, height: int, settings: ViewSettings) -> int:
    """Image-token ids DeepSeek's prompt holds for a ``width`` x ``height`` page (module doc)."""
    cols, rows = crop_grid(width, height, settings)
    side = _queries(settings.global_size)
    count = side * (side + settings.newlines) + 1
    if cols * rows > 1:
        tile_side = _queries(settings.image_size)
        count += (tile_side * cols + settings.newlines) * (tile_side * rows)
    return count


def page_views(page: Image.Image, settings: ViewSettings) -> PageViews:
    """The views ``infer()`` builds from ``page`` (an upright RGB image), as PIL images."""
    if page.mode != "RGB":
        raise ValueError(f"page must be an RGB image (DeepSeek loads pages so), got {page.mode}")
    width, height = page.size
    grid = crop_grid(width, height, settings)
    tiles = _tiles(page, grid, settings.image_size) if grid != (1, 1) else ()
    scaled = page
    if not settings.crop_mode and settings.image_size <= settings.stretch_limit:
        scaled = page.resize((settings.image_size, settings.image_size))
    size = settings.global_size
    global_view = ImageOps.pad(scaled, (size, size), color=PAD_COLOUR)
    return PageViews(global_view, tiles, grid, image_token_count(width, height, settings))


def normalized(view: Image.Image) -> np.ndarray:
    """A view as the encoder reads it: ``(x / 255 - 0.5) / 0.5``, shape (3, H, W), float32,
    each step rounded to float32 as torchvision's ``ToTensor`` and ``Normalize`` round it."""
    pixels = np.asarray(view, dtype=np.uint8).astype(np.float32) / np.float32(255)
    scaled = (pixels - np.float32(MEAN)) / np.float32(STD)
    return np.ascontiguousarray(scaled.transpose(2, 0, 1))


def _tiles(page: Image.Image, grid: tuple[int, int], tile: int) -> tuple[Image.Image, ...]:
    cols, rows = grid
    resized = page.resize((cols * tile, rows * tile))
    return tuple(
        resized.crop((col * tile, row * tile, (col + 1) * tile, (row + 1) * tile))
        for row in range(rows)
        for col in range(cols)
    )


def _queries(size: int) -> int:
    return math.ceil((size // PATCH_SIZE) / DOWNSAMPLE_RATIO)
