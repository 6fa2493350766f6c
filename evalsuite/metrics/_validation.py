"""Input checks shared by the metric functions: fail early with the argument's name."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def require_str(value: Any, name: str) -> str:
    """Return ``value`` if it is a ``str``; raise TypeError naming ``name`` otherwise."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str, got {type(value).__name__}")
    return value


def require_sequence(value: Any, name: str) -> Sequence[Any]:
    """Accept a ``str`` or a list/tuple (e.g. of words); reject None, bytes and other types."""
    if isinstance(value, (bytes, bytearray)) or not isinstance(value, (str, list, tuple)):
        raise TypeError(f"{name} must be str or a list/tuple, got {type(value).__name__}")
    return value


def require_str_list(value: Any, name: str) -> list[str]:
    """Return ``value`` as a list of ``str``; raise TypeError naming ``name`` otherwise."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{name} must be a list of str, got {type(value).__name__}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise TypeError(f"{name}[{index}] must be str, got {type(item).__name__}")
    return list(value)


def require_box(value: Any, name: str) -> tuple[float, float, float, float]:
    """Return ``[x1, y1, x2, y2]`` as a tuple of floats; finite, with x1 <= x2 and y1 <= y2."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 4:
        raise TypeError(f"{name} must be a box [x1, y1, x2, y2], got {value!r}")
    coords = []
    for item in value:
        if isinstance(item, bool) or not isinstance(item, (int, float)):
            raise TypeError(f"{name} must hold 4 numbers, got {value!r}")
        if not math.isfinite(item):
            raise ValueError(f"{name} has a non-finite coordinate: {value!r}")
        coords.append(item)
    x1, y1, x2, y2 = coords
    if x2 < x1 or y2 < y1:
        raise ValueError(f"{name} is inverted (need x1 <= x2 and y1 <= y2): {value!r}")
    return x1, y1, x2, y2


def require_boxes(value: Any, name: str) -> list[tuple[float, float, float, float]]:
    """Validate a list of boxes, naming the offending index."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a list of boxes, got {type(value).__name__}")
    return [require_box(box, f"{name}[{index}]") for index, box in enumerate(value)]
