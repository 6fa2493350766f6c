"""Detection-box metrics, identical to Surya's ``benchmark/utils/metrics.py``, quirks included.

Boxes are ``[x1, y1, x2, y2]`` in pixels. Surya measures pixel coverage with per-pixel
Python sets; here the same integer pixels are counted by rectangle-union area arithmetic
(a sweep over compressed x coordinates), which gives the identical numbers far faster.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from numbers import Real

import numpy as np

from evalsuite.metrics._validation import require_box, require_boxes

Box = tuple[float, float, float, float]
PixelRect = tuple[int, int, int, int]


def _area(box: Box) -> float:
    return (box[2] - box[0]) * (box[3] - box[1])


def _intersection_area(a: Box, b: Box) -> float:
    """Float overlap area of two boxes; 0.0 when they are apart (touching gives 0 too)."""
    left, top = max(a[0], b[0]), max(a[1], b[1])
    right, bottom = min(a[2], b[2]), min(a[3], b[3])
    if right < left or bottom < top:
        return 0.0
    return (right - left) * (bottom - top)


def box_iou(a: Sequence[float], b: Sequence[float], *, a_only: bool = False) -> float:
    """Intersection over union of two boxes: ``I / (area(a) + (area(b) - I))``.

    With ``a_only`` the denominator is ``area(a)`` alone (the share of ``a`` covered by ``b``).
    Areas are exact float arithmetic (no pixel rounding); 0.0 when the denominator is 0.
    """
    box_a, box_b = require_box(a, "a"), require_box(b, "b")
    intersection = _intersection_area(box_a, box_b)
    union = _area(box_a)
    if not a_only:
        union += _area(box_b) - intersection
    if union == 0:
        return 0.0
    return intersection / union


def _pixel_rects(box: Box, others: Sequence[Box]) -> list[PixelRect]:
    """Surya's integer pixel block ``[int(left), int(right)) x [int(top), int(bottom))`` of
    ``box`` overlapping each other box (``int`` truncates toward zero); empty blocks dropped."""
    x1, y1, x2, y2 = box
    rects = []
    for ox1, oy1, ox2, oy2 in others:
        # Surya's "right < left or bottom < top", given that neither box is inverted
        if oy1 > y2 or oy2 < y1 or ox1 > x2 or ox2 < x1:
            continue
        left, right = int(max(x1, ox1)), int(min(x2, ox2))
        top, bottom = int(max(y1, oy1)), int(min(y2, oy2))
        if left < right and top < bottom:
            rects.append((left, top, right, bottom))
    return rects


def _interval_union_length(spans: list[tuple[int, int]]) -> int:
    """Total length of the union of half-open integer intervals ``[start, end)``."""
    total = 0
    run_start = run_end = None
    for start, end in sorted(spans):
        if run_end is None or start > run_end:
            if run_end is not None:
                total += run_end - run_start
            run_start, run_end = start, end
        elif end > run_end:
            run_end = end
    if run_end is not None:
        total += run_end - run_start
    return total


def _union_pixel_count(rects: list[PixelRect]) -> int:
    """Number of integer pixels in the union of non-empty pixel rectangles (exact ints)."""
    if len(rects) == 1:
        x0, y0, x1, y1 = rects[0]
        return (x1 - x0) * (y1 - y0)
    xs = sorted({x for rect in rects for x in (rect[0], rect[2])})
    total = 0
    for left, right in pairwise(xs):
        spans = [(y0, y1) for x0, y0, x1, y1 in rects if x0 <= left and right <= x1]
        total += (right - left) * _interval_union_length(spans)
    return total


def _pixel_coverage(box: Box, others: Sequence[Box], penalize_double: bool) -> float:
    area = _area(box)
    if area == 0:
        return 0.0
    covered = _union_pixel_count(_pixel_rects(box, others))
    # Surya's "double coverage" penalty counts every other box, overlapping or not.
    penalty = len(others) if penalize_double else 0
    return max(0, covered - penalty) / area


def _summed_coverage(box: Box, others: Sequence[Box]) -> float:
    """Surya's ``calculate_coverage_fast``: ``min(1, sum of float overlap areas / area(box))``.

    Overlaps are summed, not unioned; numpy is used as in Surya so float sums round alike.
    """
    box_arr, others_arr = np.array(box), np.array(others)
    area = (box_arr[2] - box_arr[0]) * (box_arr[3] - box_arr[1])
    if area == 0:
        return 0.0
    left = np.maximum(box_arr[0], others_arr[:, 0])
    top = np.maximum(box_arr[1], others_arr[:, 1])
    right = np.minimum(box_arr[2], others_arr[:, 2])
    bottom = np.minimum(box_arr[3], others_arr[:, 3])
    overlaps = np.maximum(0, right - left) * np.maximum(0, bottom - top)
    return float(min(1.0, np.sum(overlaps) / area))


def box_coverage(
    box: Sequence[float], others: Sequence[Sequence[float]], *, penalize_double: bool = False
) -> float:
    """Share of ``box``'s pixels covered by ``others`` (Surya's ``calculate_coverage``).

    ``coverage = max(0, |U| - penalty) / area(box)`` where ``U`` is the union over the other
    boxes of the integer pixels ``[int(l), int(r)) x [int(t), int(b))`` of each intersection,
    ``penalty = len(others)`` with ``penalize_double`` (every other box counts, as in Surya),
    else 0, and ``area(box)`` the float area; 0.0 when that area is 0. Integer boxes give a
    value in [0, 1]; fractional boxes can exceed 1 (pixel rounding vs float area, as in Surya).
    """
    box_checked, others_checked = require_box(box, "box"), require_boxes(others, "others")
    return _pixel_coverage(box_checked, others_checked, penalize_double)


def _require_threshold(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"threshold must be a real number, got {type(value).__name__}")
    if value != value:
        raise ValueError("threshold must not be NaN")
    return float(value)


def detection_precision_recall(
    preds: Sequence[Sequence[float]],
    refs: Sequence[Sequence[float]],
    *,
    threshold: float = 0.5,
    penalize_double: bool = True,
) -> dict[str, float]:
    """Surya's detection ``precision_recall``: shares of boxes covered more than ``threshold``.

    ``precision = #{p : cov(p, refs) > threshold} / |preds|`` and
    ``recall = #{r : cov(r, preds) > threshold} / |refs|``. With ``penalize_double`` the pred
    side uses :func:`box_coverage` with the penalty and the ref side without it; otherwise both
    use the summed float overlap ``min(1, Σ I / area)``. No refs gives 1 and 1, no preds 0 and 0.
    """
    pred_boxes, ref_boxes = require_boxes(preds, "preds"), require_boxes(refs, "refs")
    cutoff = _require_threshold(threshold)
    if not ref_boxes:
        return {"precision": 1.0, "recall": 1.0}
    if not pred_boxes:
        return {"precision": 0.0, "recall": 0.0}
    if penalize_double:
        pred_cov = [_pixel_coverage(p, ref_boxes, True) for p in pred_boxes]
        ref_cov = [_pixel_coverage(r, pred_boxes, False) for r in ref_boxes]
    else:
        pred_cov = [_summed_coverage(p, ref_boxes) for p in pred_boxes]
        ref_cov = [_summed_coverage(r, pred_boxes) for r in ref_boxes]
    return {
        "precision": sum(c > cutoff for c in pred_cov) / len(pred_cov),
        "recall": sum(c > cutoff for c in ref_cov) / len(ref_cov),
    }


def mean_coverage(preds: Sequence[Sequence[float]], refs: Sequence[Sequence[float]]) -> float:
    """Mean of :func:`box_coverage` (no penalty) of each ref by the preds, then each pred by the
    refs, summed in that order: ``(Σ_r cov(r, preds) + Σ_p cov(p, refs)) / (|refs| + |preds|)``.

    0.0 with no boxes at all. Surya returns ``{"coverage": value}``; this returns the value.
    """
    pred_boxes, ref_boxes = require_boxes(preds, "preds"), require_boxes(refs, "refs")
    coverages = [_pixel_coverage(r, pred_boxes, False) for r in ref_boxes]
    coverages += [_pixel_coverage(p, ref_boxes, False) for p in pred_boxes]
    if not coverages:
        return 0.0
    return sum(coverages) / len(coverages)
