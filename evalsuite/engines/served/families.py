"""The served model's families: the resolution modes each has and how it counts a page's vision
tokens (``model_family``: ``deepseek-ocr``, ``deepseek-ocr-2`` or ``none``).

Vision tokens come from the image size and mode: :func:`evalsuite.tokens.vision_tokens` for
DeepSeek-OCR, :func:`~evalsuite.engines.deepseek_ocr2.ocr2_image_tokens` for DeepSeek-OCR-2, none
for ``"none"``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evalsuite.engines.deepseek_ocr import INFER_MAX_CROPS
from evalsuite.engines.deepseek_ocr2 import OCR2_MODES, ocr2_image_tokens
from evalsuite.tokens import MODES, vision_tokens

PER_REQUEST = "per-request"
"""``mode`` value for a server that takes each request's mode (``evalsuite serve``)."""


@dataclass(frozen=True)
class ModelFamily:
    """What the served model's family fixes: its modes (None: any) and how a page's vision
    tokens are counted from its size and mode (None: not counted)."""

    modes: tuple[str, ...] | None
    count_vision_tokens: Callable[[int, int, str], Any] | None


def _infer_vision_tokens(width: int, height: int, mode: str) -> Any:
    """DeepSeek-OCR's vision tokens with ``infer()``'s tiling (up to 9 tiles), which evalsuite's
    vLLM plugin and ``evalsuite serve --engine deepseek-ocr`` both run."""
    return vision_tokens(width, height, mode, max_crops=INFER_MAX_CROPS)


MODEL_FAMILIES: dict[str, ModelFamily] = {
    "deepseek-ocr": ModelFamily(tuple(MODES), _infer_vision_tokens),
    "deepseek-ocr-2": ModelFamily(OCR2_MODES, ocr2_image_tokens),
    "none": ModelFamily(None, None),
}


def check_family(name: str) -> None:
    """ValueError naming the families when ``name`` is not one of :data:`MODEL_FAMILIES`."""
    if name not in MODEL_FAMILIES:
        raise ValueError(
            f"unknown model_family {name!r}; choose one of: {', '.join(MODEL_FAMILIES)}"
        )


def check_family_mode(name: str, mode: str) -> None:
    """ValueError naming family ``name``'s modes when ``mode`` is not one of them (a family
    without modes takes any)."""
    modes = MODEL_FAMILIES[name].modes
    if modes is not None and mode not in modes:
        raise ValueError(f"{name} has no mode {mode!r}; choose one of: {', '.join(modes)}")
