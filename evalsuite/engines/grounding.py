"""DeepSeek-OCR grounding output: ``<|ref|>label<|/ref|><|det|>[[x1, y1, x2, y2], ...]<|/det|>``.

With a ``<|grounding|>`` prompt DeepSeek-OCR tags each layout element with a label (``title``,
``text``, ``table``, ``image``, ...) and its boxes on a 0–999 grid. This module follows the
post-processing of DeepSeek-OCR's own code (``re_match``, ``draw_bounding_boxes`` and the
``save_results`` branch of ``infer`` in ``modeling_deepseekocr.py``, the same in its vLLM
``run_dpsk_ocr_image.py``):

- grid to pixels: ``int(x / 999 * width)`` and ``int(y / 999 * height)`` (divide by 999, then
  truncate toward zero), so grid 999 maps to the full width;
- text: every ``image`` element becomes ``![](images/N.jpg)\\n`` (N counting image elements from
  0); every other element, its label included, is deleted; once at least one non-image element was
  deleted, ``\\coloneqq`` becomes ``:=`` and ``\\eqqcolon`` becomes ``=:``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

GRID_MAX = 999
"""The largest grid coordinate; DeepSeek-OCR divides by this (not 1000) to get a fraction."""

_ELEMENT = re.compile(r"(<\|ref\|>(.*?)<\|/ref\|><\|det\|>(.*?)<\|/det\|>)", re.DOTALL)
_IMAGE_TAG = "<|ref|>image<|/ref|>"


@dataclass(frozen=True)
class GroundedBox:
    """One box of a grounded element: its ref label and ``(x1, y1, x2, y2)`` in image pixels."""

    label: str
    box: tuple[int, int, int, int]


def parse_grounding(text: str, width: int, height: int) -> list[GroundedBox]:
    """Labelled pixel boxes of every ``<|ref|>…<|/ref|><|det|>…<|/det|>`` element, in text order.

    Each grid coordinate ``c`` becomes ``int(c / 999 * size)`` pixels (``size`` = ``width`` for
    x, ``height`` for y). As in DeepSeek-OCR's ``draw_bounding_boxes``, an element whose box list
    is not a Python literal is skipped, and reading an element stops at its first entry that is
    not four numbers (entries before it are kept). Boxes are not reordered or clipped.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    _require_size(width, "width")
    _require_size(height, "height")
    boxes: list[GroundedBox] = []
    for _, label, det in _ELEMENT.findall(text):
        try:
            entries = ast.literal_eval(det)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if not isinstance(entries, (list, tuple)):
            continue
        for entry in entries:
            box = _pixel_box(entry, width, height)
            if box is None:
                break
            boxes.append(GroundedBox(label, box))
    return boxes


def strip_grounding(text: str) -> str:
    """DeepSeek-OCR's cleaned text (its ``result.mmd``) from a raw grounding output.

    Image elements become ``![](images/N.jpg)\\n``; all other elements are removed with their
    labels; ``\\coloneqq``/``\\eqqcolon`` are rewritten to ``:=``/``=:`` only when some non-image
    element was removed (the reference applies them inside that loop). Text without markup is
    returned unchanged.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be str, got {type(text).__name__}")
    elements = [whole for whole, _, _ in _ELEMENT.findall(text)]
    images = [element for element in elements if _IMAGE_TAG in element]
    others = [element for element in elements if _IMAGE_TAG not in element]
    for index, element in enumerate(images):
        text = text.replace(element, f"![](images/{index}.jpg)\n")
    for element in others:
        text = text.replace(element, "").replace("\\coloneqq", ":=").replace("\\eqqcolon", "=:")
    return text


def _pixel_box(entry: object, width: int, height: int) -> tuple[int, int, int, int] | None:
    """``entry`` mapped from the grid to pixels, or None where it is not four finite numbers."""
    if not isinstance(entry, (list, tuple)) or len(entry) != 4:
        return None
    if not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in entry):
        return None
    x1, y1, x2, y2 = entry
    try:
        return (
            int(x1 / GRID_MAX * width),
            int(y1 / GRID_MAX * height),
            int(x2 / GRID_MAX * width),
            int(y2 / GRID_MAX * height),
        )
    except (OverflowError, ValueError):  # inf, nan, or an int too large for a float
        return None


def _require_size(value: object, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int number of pixels, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
