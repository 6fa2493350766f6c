"""Detection-box metrics: hand-worked Surya examples, per-pixel oracles, properties, bad input."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.metrics import box_coverage, box_iou, detection_precision_recall, mean_coverage

# ---------------------------------------------------------------------------------------------
# Slow oracles: Surya's definitions taken literally, one pixel at a time.


def slow_coverage(box, others, penalize_double=False):
    """Surya's calculate_coverage: a set of integer pixels, one per (x, y)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    if area == 0:
        return 0.0
    pixels = set()
    for other in others:
        left, top = max(box[0], other[0]), max(box[1], other[1])
        right, bottom = min(box[2], other[2]), min(box[3], other[3])
        if left <= right and top <= bottom:
            for x in range(int(left), int(right)):
                for y in range(int(top), int(bottom)):
                    pixels.add((x, y))
    penalty = len(others) if penalize_double else 0
    return max(0, len(pixels) - penalty) / area


def slow_summed_coverage(box, others):
    """Surya's calculate_coverage_fast, summing float overlaps one by one (exact for < 8 terms)."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    if area == 0:
        return 0.0
    total = 0
    for other in others:
        width = max(0, min(box[2], other[2]) - max(box[0], other[0]))
        height = max(0, min(box[3], other[3]) - max(box[1], other[1]))
        total += width * height
    return min(1.0, total / area)


def slow_precision_recall(preds, refs, threshold, penalize_double):
    if not refs:
        return {"precision": 1.0, "recall": 1.0}
    if not preds:
        return {"precision": 0.0, "recall": 0.0}
    if penalize_double:
        pred_cov = [slow_coverage(p, refs, True) for p in preds]
        ref_cov = [slow_coverage(r, preds, False) for r in refs]
    else:
        pred_cov = [slow_summed_coverage(p, refs) for p in preds]
        ref_cov = [slow_summed_coverage(r, preds) for r in refs]
    hits = [c for c in pred_cov if c > threshold]
    ref_hits = [c for c in ref_cov if c > threshold]
    return {"precision": len(hits) / len(preds), "recall": len(ref_hits) / len(refs)}


# ---------------------------------------------------------------------------------------------
# Strategies: small coordinates so the per-pixel oracle stays cheap; equal coordinates give
# zero-area boxes, shared edges give touching boxes.

int_coord = st.integers(-4, 12)
float_coord = st.floats(-4, 12, allow_nan=False, allow_infinity=False)
quarter_coord = st.integers(-16, 48).map(lambda q: q / 4)  # lands on pixel edges and halves
any_coord = st.one_of(int_coord, float_coord, quarter_coord)


def boxes_from(coord):
    def build(xs_ys):
        (xa, xb), (ya, yb) = xs_ys
        return [min(xa, xb), min(ya, yb), max(xa, xb), max(ya, yb)]

    return st.tuples(st.tuples(coord, coord), st.tuples(coord, coord)).map(build)


int_box = boxes_from(int_coord)
any_box = boxes_from(any_coord)
int_or_any_box = st.one_of(int_box, any_box)
box_list = st.lists(int_or_any_box, max_size=7)

FAST = settings(max_examples=150, deadline=None)


# ---------------------------------------------------------------------------------------------
# Hand-worked examples.


@pytest.mark.parametrize(
    ("a", "b", "a_only", "expected"),
    [
        ([0, 0, 10, 10], [5, 5, 15, 15], False, 25 / 175),
        ([0, 0, 10, 10], [5, 5, 15, 15], True, 25 / 100),
        ([5, 5, 15, 15], [0, 0, 20, 20], True, 1.0),  # a inside b: all of a is covered
        ([0, 0, 20, 20], [5, 5, 15, 15], False, 100 / 400),
        ([0, 0, 1, 1], [1, 0, 2, 1], False, 0.0),  # touching
        ([0, 0, 1, 1], [3, 3, 4, 4], False, 0.0),  # apart
        ([0, 0, 0, 0], [0, 0, 0, 0], False, 0.0),  # empty union
        ([2, 2, 2, 9], [0, 0, 5, 5], True, 0.0),  # a has zero area
        ([0.5, 0, 1.5, 1], [0, 0, 1, 1], False, 0.5 / 1.5),  # floats are not pixel-rounded
        # Surya adds area(a) + (area(b) - I); (area(a) + area(b)) - I rounds an ulp higher here
        (
            [0, 0, 2.0, 2.4],
            [0.2, 0.1, 3.7, 2.9],
            False,
            (2.0 - 0.2) * (2.4 - 0.1) / (2.0 * 2.4 + ((3.7 - 0.2) * (2.9 - 0.1) - 1.8 * 2.3)),
        ),
    ],
)
def test_box_iou_examples(a, b, a_only, expected):
    assert box_iou(a, b, a_only=a_only) == expected


@pytest.mark.parametrize(
    ("box", "others", "penalize_double", "expected"),
    [
        ([0, 0, 10, 10], [[0, 0, 5, 10], [5, 0, 10, 10]], False, 1.0),
        ([0, 0, 10, 10], [[0, 0, 5, 10], [5, 0, 10, 10]], True, 0.98),  # 100 pixels - 2 boxes
        ([0, 0, 10, 10], [[0, 0, 6, 10], [4, 0, 10, 10]], False, 1.0),  # union, not sum (120)
        # every other box counts in the penalty, even one that does not touch the box
        ([0, 0, 10, 10], [[0, 0, 10, 10], [50, 50, 60, 60]], True, 0.98),
        ([0, 0, 10, 10], [[0, 0, 1, 1], [0, 0, 1, 1]], True, 0.0),  # 1 pixel - 2 floors at 0
        ([0, 0, 10, 10], [], False, 0.0),
        ([0, 0, 10, 10], [[-5, -5, 5, 5]], False, 0.25),
        ([0, 0, 10, 10], [[2.7, 0, 5.9, 10]], False, 0.3),  # int() corners: columns 2, 3, 4
        ([0, 0, 10, 10], [[10, 0, 20, 10]], False, 0.0),  # touching edge: no pixels
        ([3, 3, 3, 8], [[0, 0, 10, 10]], False, 0.0),  # zero-area box
        # int() truncates toward zero: columns -2..1, 4 pixels of a 5-wide box
        ([-2.5, 0, 2.5, 1], [[-2.5, 0, 2.5, 1]], False, 0.8),
        # 1 pixel over a float area of 0.2: coverage above 1, as in Surya
        ([0.9, 0, 1.1, 1], [[0, 0, 2, 1]], False, 1 / ((1.1 - 0.9) * 1)),
    ],
)
def test_box_coverage_examples(box, others, penalize_double, expected):
    assert box_coverage(box, others, penalize_double=penalize_double) == expected


REFS_TWO = [[0, 0, 10, 10], [20, 0, 30, 10]]


@pytest.mark.parametrize(
    ("preds", "refs", "kwargs", "expected"),
    [
        # pred covered (100 - 2) / 100; ref 0 covered fully, ref 1 not at all
        ([[0, 0, 10, 10]], REFS_TWO, {}, (1.0, 0.5)),
        (REFS_TWO, REFS_TWO, {}, (1.0, 1.0)),
        # two thin preds stacked on one ref: pixel union 30% vs summed overlap 60%
        ([[0, 0, 3, 10], [0, 0, 3, 10]], [[0, 0, 10, 10]], {}, (1.0, 0.0)),
        ([[0, 0, 3, 10], [0, 0, 3, 10]], [[0, 0, 10, 10]], {"penalize_double": False}, (1.0, 1.0)),
        # the threshold is strict: coverage 0.5 is not > 0.5
        ([[0, 0, 5, 10]], [[0, 0, 10, 10]], {}, (1.0, 0.0)),
        ([[0, 0, 5, 10]], [[0, 0, 10, 10]], {"threshold": 0.49}, (1.0, 1.0)),
        # penalty of 1 pixel on a 4-pixel pred: 3/4 passes 0.7 but not 0.8
        ([[0, 0, 2, 2]], [[0, 0, 2, 2]], {"threshold": 0.7}, (1.0, 1.0)),
        ([[0, 0, 2, 2]], [[0, 0, 2, 2]], {"threshold": 0.8}, (0.0, 1.0)),
        ([[0, 0, 2, 2]], [[0, 0, 2, 2]], {"threshold": 0.8, "penalize_double": False}, (1.0, 1.0)),
        # the summed overlap is capped at 1, so nothing passes a threshold of 1
        (
            [[0, 0, 10, 10], [0, 0, 10, 10]],
            [[0, 0, 10, 10]],
            {"threshold": 1.0, "penalize_double": False},
            (0.0, 0.0),
        ),
        ([[0, 0, 10, 10]], [], {}, (1.0, 1.0)),  # no refs
        ([], [], {}, (1.0, 1.0)),  # no refs wins over no preds
        ([], REFS_TWO, {}, (0.0, 0.0)),  # no preds
    ],
)
def test_detection_precision_recall_examples(preds, refs, kwargs, expected):
    result = detection_precision_recall(preds, refs, **kwargs)
    assert (result["precision"], result["recall"]) == expected
    assert set(result) == {"precision", "recall"}


@pytest.mark.parametrize(
    ("preds", "refs", "expected"),
    [
        ([[0, 0, 5, 10]], [[0, 0, 10, 10]], (0.5 + 1.0) / 2),
        ([[0, 0, 10, 10]], [[0, 0, 10, 10], [20, 0, 30, 10]], (1.0 + 0.0 + 1.0) / 3),
        ([], [[0, 0, 10, 10]], 0.0),
        ([], [], 0.0),
    ],
)
def test_mean_coverage_examples(preds, refs, expected):
    assert mean_coverage(preds, refs) == expected


def test_busy_page_matches_pixel_oracle():
    """A page of overlapping, jittered float lines: pixel unions of several rectangles."""
    refs = [[4 + i % 3, 6 * i, 60 + i % 5, 6 * i + 8] for i in range(12)]
    preds = [[x1 - 0.7, y1 + 1.3, x2 + 2.2, y2 - 0.4] for x1, y1, x2, y2 in refs]
    preds.append([0, 0, 70, 75])
    for penalize in (False, True):
        for box in preds:
            assert box_coverage(box, refs, penalize_double=penalize) == slow_coverage(
                box, refs, penalize
            )
    for threshold in (0.3, 0.5, 0.8, 0.95):
        assert detection_precision_recall(preds, refs, threshold=threshold) == (
            slow_precision_recall(preds, refs, threshold, True)
        )


# ---------------------------------------------------------------------------------------------
# Properties.


@FAST
@given(int_box, int_box, st.booleans())
def test_iou_range_and_integer_symmetry(a, b, a_only):
    value = box_iou(a, b, a_only=a_only)
    assert 0.0 <= value <= 1.0
    if not a_only:
        assert value == box_iou(b, a)


@FAST
@given(any_box, any_box, st.booleans())
def test_iou_range_and_float_symmetry(a, b, a_only):
    value = box_iou(a, b, a_only=a_only)
    assert 0.0 <= value <= 1.0
    if not a_only:  # a1 + (a2 - I) and a2 + (a1 - I) may round apart by an ulp
        assert math.isclose(value, box_iou(b, a), rel_tol=1e-12, abs_tol=0.0)


@FAST
@given(any_box)
def test_iou_with_itself_is_one_for_positive_area(a):
    positive = (a[2] - a[0]) * (a[3] - a[1]) > 0
    expected = 1.0 if positive else 0.0
    assert box_iou(a, a) == expected
    assert box_iou(a, a, a_only=True) == expected


@FAST
@given(int_box, st.lists(int_box, max_size=7), st.booleans())
def test_integer_coverage_in_unit_interval(box, others, penalize):
    assert 0.0 <= box_coverage(box, others, penalize_double=penalize) <= 1.0


@FAST
@given(int_or_any_box, box_list, st.booleans())
def test_coverage_equals_pixel_oracle(box, others, penalize):
    value = box_coverage(box, others, penalize_double=penalize)
    assert value == slow_coverage(box, others, penalize)
    assert value >= 0.0


@FAST
@given(int_or_any_box, box_list)
def test_penalty_never_raises_coverage(box, others):
    assert box_coverage(box, others, penalize_double=True) <= box_coverage(box, others)


@FAST
@given(box_list, box_list, st.sampled_from([0.0, 0.25, 0.5, 0.75, 0.99]), st.booleans())
def test_precision_recall_equals_oracle(preds, refs, threshold, penalize):
    result = detection_precision_recall(preds, refs, threshold=threshold, penalize_double=penalize)
    assert result == slow_precision_recall(preds, refs, threshold, penalize)
    assert 0.0 <= result["precision"] <= 1.0
    assert 0.0 <= result["recall"] <= 1.0


@FAST
@given(box_list, box_list)
def test_mean_coverage_equals_oracle(preds, refs):
    coverages = [slow_coverage(r, preds) for r in refs] + [slow_coverage(p, refs) for p in preds]
    expected = sum(coverages) / len(coverages) if coverages else 0.0
    assert mean_coverage(preds, refs) == expected


@FAST
@given(st.lists(int_box, min_size=1, max_size=7))
def test_identical_integer_boxes_score_perfect_without_penalty(boxes):
    positive = [b for b in boxes if (b[2] - b[0]) * (b[3] - b[1]) > 0]
    if positive:
        result = detection_precision_recall(positive, positive, penalize_double=False)
        assert result == {"precision": 1.0, "recall": 1.0}
        assert mean_coverage(positive, positive) == 1.0


# ---------------------------------------------------------------------------------------------
# Bad input.


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: box_iou(None, [0, 0, 1, 1]), TypeError, "a"),
        (lambda: box_iou([0, 0, 1, 1], b"\x00\x00\x01\x01"), TypeError, "b"),
        (lambda: box_iou([0, 0, 1], [0, 0, 1, 1]), TypeError, "a"),
        (lambda: box_iou([0, 0, 1, 1], [0, 0, "1", 1]), TypeError, "b"),
        (lambda: box_iou([0, 0, math.nan, 1], [0, 0, 1, 1]), ValueError, "a"),
        (lambda: box_iou([0, 0, 1, 1], [0, 0, math.inf, 1]), ValueError, "b"),
        (lambda: box_iou([5, 0, 1, 1], [0, 0, 1, 1]), ValueError, "a"),
        (lambda: box_coverage(None, []), TypeError, "box"),
        (lambda: box_coverage([0, 1, 1, 0], []), ValueError, "box"),
        (lambda: box_coverage([0, 0, 1, 1], None), TypeError, "others"),
        (
            lambda: box_coverage([0, 0, 1, 1], [[0, 0, 1, 1], [0, math.nan, 1, 1]]),
            ValueError,
            "others[1]",
        ),
        (lambda: detection_precision_recall(None, []), TypeError, "preds"),
        (lambda: detection_precision_recall([], b"refs"), TypeError, "refs"),
        (lambda: detection_precision_recall([[2, 0, 1, 1]], []), ValueError, "preds[0]"),
        (
            lambda: detection_precision_recall([], [[0, 0, 1, 1]], threshold=None),
            TypeError,
            "threshold",
        ),
        (
            lambda: detection_precision_recall([], [[0, 0, 1, 1]], threshold=math.nan),
            ValueError,
            "threshold",
        ),
        (lambda: mean_coverage([[0, 0, 1, 1]], [None]), TypeError, "refs[0]"),
        (lambda: mean_coverage([[0, 0, 1, math.nan]], []), ValueError, "preds[0]"),
    ],
)
def test_bad_input_names_the_argument(call, error, name):
    with pytest.raises(error, match=rf"^{re.escape(name)} "):
        call()


def test_perf_page_matches_per_pixel_baseline():
    """The perf module's page (30 lines of ~1,000 x 30 px): every coverage, both penalty modes."""
    from evalsuite.perf.boxes import baseline_coverage, detector_output, page_lines

    refs = page_lines(seed=7)
    preds = detector_output(refs, seed=8)
    for penalize in (False, True):
        for box, others in [(p, refs) for p in preds] + [(r, preds) for r in refs]:
            expected = baseline_coverage(box, others, penalize)
            assert box_coverage(box, others, penalize_double=penalize) == expected
