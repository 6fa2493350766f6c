"""Speed case: ``detection_precision_recall(penalize_double=True)`` on a page of 30 text lines
vs per-pixel sets, the way Surya's benchmark counts covered pixels."""

from __future__ import annotations

import random

from evalsuite.metrics.boxes import detection_precision_recall
from evalsuite.perf import PerfCase

LINES = 30
LINE_WIDTH, LINE_HEIGHT, LINE_PITCH = 1_000, 30, 34


def page_lines(seed: int) -> list[list[float]]:
    """Reference boxes of ``LINES`` lines about 1,000 x 30 px, 4 px apart, ragged right edge."""
    rng = random.Random(seed)
    boxes = []
    for i in range(LINES):
        left, top = 60 + rng.randint(0, 8), 80 + i * LINE_PITCH
        boxes.append([left, top, left + LINE_WIDTH - rng.randint(0, 120), top + LINE_HEIGHT])
    return boxes


def jittered(boxes: list[list[float]], seed: int, pixels: float = 6.0) -> list[list[float]]:
    """Each box with every edge moved by up to ``pixels`` (floats): neighbours may overlap."""
    rng = random.Random(seed)
    return [
        [
            x1 + rng.uniform(-pixels, pixels),
            y1 + rng.uniform(-pixels, pixels),
            x2 + rng.uniform(-pixels, pixels),
            y2 + rng.uniform(-pixels, pixels),
        ]
        for x1, y1, x2, y2 in boxes
    ]


def baseline_coverage(box, others, penalize_double: bool) -> float:
    """BASELINE: Surya's coverage as one Python set of (x, y) pixels, unioned box by box."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    if area == 0:
        return 0.0
    covered: set[tuple[int, int]] = set()
    for other in others:
        left, top = max(box[0], other[0]), max(box[1], other[1])
        right, bottom = min(box[2], other[2]), min(box[3], other[3])
        if right < left or bottom < top:
            continue
        covered |= {
            (x, y) for x in range(int(left), int(right)) for y in range(int(top), int(bottom))
        }
    penalty = len(others) if penalize_double else 0
    return max(0, len(covered) - penalty) / area


def baseline_precision_recall(preds, refs, threshold: float = 0.5) -> dict[str, float]:
    """BASELINE: Surya's ``precision_recall(penalize_double=True)`` over per-pixel sets."""
    if not refs:
        return {"precision": 1.0, "recall": 1.0}
    if not preds:
        return {"precision": 0.0, "recall": 0.0}
    pred_hits = sum(baseline_coverage(p, refs, True) > threshold for p in preds)
    ref_hits = sum(baseline_coverage(r, preds, False) > threshold for r in refs)
    return {"precision": pred_hits / len(preds), "recall": ref_hits / len(refs)}


def detector_output(refs: list[list[float]], seed: int) -> list[list[float]]:
    """Jittered refs with two lines missed and one spurious box in the margin, so that
    precision and recall are both below 1."""
    kept = [box for i, box in enumerate(refs) if i not in (3, 17)]
    return [*jittered(kept, seed), [1_150.0, 200.0, 1_400.0, 230.0]]


_REFS = page_lines(seed=7)
_PREDS = detector_output(_REFS, seed=8)

CASES = [
    PerfCase(
        name="detection P/R, 30 lines of ~1,000x30 px",
        baseline=lambda: baseline_precision_recall(_PREDS, _REFS),
        fast=lambda: detection_precision_recall(_PREDS, _REFS, penalize_double=True),
        required_ratio=100,
    ),
]
