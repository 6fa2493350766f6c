"""OmniDocBench v1.6's quick match of a page's text and formula lines (the matcher of MGAM).

Re-implements, on the lines ``get_gt_pred_lines`` keeps, what ``match_gt2pred_quick``
(``src/core/matching/match_quick.py`` of opendatalab/OmniDocBench at 9dc1dec, the v1.6 code,
run with ``configs/end2end.yaml``) does after its equation-array splits
(:mod:`.split`) and its position sort (inline formulas last), on lines normalised by kind
(display formulas: :func:`.normalize.normalize_formula`).
Ground truth keeps its lines; only the prediction side is searched for its granularity (runs of
consecutive predictions joined into one column, several lines found inside one prediction).

Two passes, rows of the second first:

1. *ignored categories* (:data:`..common.ground_truth.IGNORED_CATEGORIES`): each such line
   takes every prediction within normalised distance < 0.25 (a prediction may be taken by
   several lines); the line keeps the last one it took, the others are leftovers of this pass;
   those predictions leave the second pass;
2. *the rest*: v1.0's quick match (:mod:`..common.match.quick`, steps 1-4) on the remaining
   lines, with the changes of v1.5 (leftovers paired on *normalised* distances; a line left without
   prediction gets one row, not two) and of v1.6 (a run joins at most ``V16.max_run`` (160)
   predictions; a ground-truth display formula is never found inside a prediction, step 3:
   ``V16.formulas_found_in_text``).

In both passes a row without ground truth whose first prediction is an inline formula is
dropped.

Timeouts: v1.6 gives the run search ``quick_match_truncated_timeout_sec`` (300 s) and the whole
page match ``match_timeout_sec`` (420 s) of wall-clock time, then falls back to a chunked
Hungarian match. Which branch runs there depends on the machine; here the branch taken when
nothing times out is always taken, so scores do not depend on machine speed. How long the
official search runs cannot be told from the input without timing it, so no fallback is
predicted or recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalsuite.metrics.omnidocbench.common.ground_truth import IGNORED_CATEGORIES
from evalsuite.metrics.omnidocbench.common.match import (
    MASK_COST,
    Deadline,
    cost_matrix,
    distance_ratio,
    final_entries,
    group_by_prediction,
    merge_duplicates,
    quick_groups,
)
from evalsuite.metrics.omnidocbench.versions import V16

__all__ = ["MgamLine", "MgamRow", "match_lines"]


@dataclass(frozen=True)
class MgamLine:
    """One line the matcher reads: ``norm`` its normalised string (non-empty), ``category``
    the ground-truth category (``fine_category_type`` or ``category_type``; unused for
    predictions), ``inline`` whether the official code takes the line's item for an inline
    formula (``fine_category_type == "equation_inline"``; for predictions only)."""

    norm: str
    category: str = ""
    inline: bool = False


@dataclass(frozen=True)
class MgamRow:
    """One official row: indices into the line lists (``()`` for the official ``[""]``) and
    the matcher's ``edit`` (normalised edit distance, 1 for an unpaired or leftover row)."""

    gt_idx: tuple[int, ...]
    pred_idx: tuple[int, ...]
    edit: float


def match_lines(gt: Sequence[MgamLine], pred: Sequence[MgamLine]) -> list[MgamRow]:
    """v1.6 ``match_gt2pred_quick`` on kept lines (passes in the module docstring).

    Shortcuts as officially: without ground truth one row per prediction (none dropped),
    without predictions one row per line, one line each paired whatever the cost.

    """
    if not gt:
        return [MgamRow((), (j,), 1) for j in range(len(pred))]
    if not pred:
        return [MgamRow((i,), (), 1) for i in range(len(gt))]
    if len(gt) == 1 and len(pred) == 1:
        return [MgamRow((0,), (0,), distance_ratio(gt[0].norm, pred[0].norm))]
    ignored = [i for i, line in enumerate(gt) if line.category in IGNORED_CATEGORIES]
    ignored_rows, taken = _ignored_pass(gt, pred, ignored) if ignored else ([], [])
    left_out_gt, left_out_pred = set(ignored), set(taken)
    kept_gt = [i for i in range(len(gt)) if i not in left_out_gt]
    kept_pred = [j for j in range(len(pred)) if j not in left_out_pred]
    rows = _main_pass([gt[i] for i in kept_gt], [pred[j].norm for j in kept_pred])
    return [
        _mapped(row, kept_gt, kept_pred)
        for row in rows
        if row.gt_idx or not pred[kept_pred[row.pred_idx[0]]].inline
    ] + ignored_rows


def _mapped(row: MgamRow, gt_index: Sequence[int], pred_index: Sequence[int]) -> MgamRow:
    return MgamRow(
        tuple(gt_index[i] for i in row.gt_idx), tuple(pred_index[j] for j in row.pred_idx), row.edit
    )


def _ignored_pass(
    gt: Sequence[MgamLine], pred: Sequence[MgamLine], ignored: list[int]
) -> tuple[list[MgamRow], list[int]]:
    """Pass 1: (rows, with indices into the line lists; the predictions taken, one per pair).

    Each pair (line, prediction) costing < 0.25, in row-major order, is one "taken" prediction;
    the line is paired with the last of its own; the taken copies not kept are leftovers,
    paired to unpaired ignored lines as in :func:`_main_pass` (edit 1)."""
    norm_ignored = [gt[i].norm for i in ignored]
    pairs = np.argwhere(cost_matrix(norm_ignored, [line.norm for line in pred]) < MASK_COST)
    taken = [int(j) for j in pairs[:, 1]]
    last_taken = {int(a): k for k, a in enumerate(pairs[:, 0])}
    groups = group_by_prediction({a: [k] for a, k in last_taken.items()}, {})
    taken_norm = [pred[j].norm for j in taken]
    rows = _final_rows(groups, norm_ignored, taken_norm)
    return [
        _mapped(row, ignored, taken)
        for row in rows
        if row.gt_idx or not pred[taken[row.pred_idx[0]]].inline
    ], taken


def _main_pass(gt: Sequence[MgamLine], norm_pred: list[str]) -> list[MgamRow]:
    """Pass 2 on its own lines: v1.0's steps (:mod:`..common.match.quick`) with v1.6's changes."""
    groups = quick_groups([line.norm for line in gt], norm_pred, Deadline(None), V16,
                          [line.category for line in gt])
    return [MgamRow(*row) for row in groups]


def _final_rows(
    groups: dict[tuple[int, ...], list[int]], norm_gt: list[str], norm_pred: list[str]
) -> list[MgamRow]:
    """Step 4 of the quick match (``convert_final_matches``, ``merge_duplicates_add_unmatched``)
    as v1.5 and v1.6 do them alike: leftovers paired on normalised distances, no repeated row."""
    entries = final_entries(groups, norm_gt, norm_pred, V16)
    return [MgamRow(*row) for row in merge_duplicates(entries, len(norm_gt), V16)]
