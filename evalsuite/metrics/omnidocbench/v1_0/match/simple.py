"""OmniDocBench v1.0's simple match, ``match_gt2pred_simple`` (``utils/match.py`` of
opendatalab/OmniDocBench at 895837f): one Hungarian assignment, quirks included."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.omnidocbench.common.extract import PredictedElement
from evalsuite.metrics.omnidocbench.common.match.rows import (
    Deadline,
    GtItem,
    LineType,
    MatchedRow,
    MatchError,
    cost_matrix,
    gt_pred_lines,
    matched_row,
)
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = ["match_simple"]


def match_simple(
    gt_items: Sequence[GtItem],
    pred_items: Sequence[PredictedElement],
    line_type: LineType | None,
    img_id: str,
    rules: Rules = V10,
) -> list[MatchedRow]:
    """v1.0 ``match_gt2pred_simple``: one Hungarian assignment on the normalised-distance matrix
    (``line_type`` None: lines normalised by kind, as v1.5's hybrid fallback does; formulas by
    ``rules``).

    Rows: one per ground-truth line in order (edit = its cost, or 1 with an empty prediction when
    unassigned), then one row joining every unassigned prediction (``gt_idx ("",)``, edit 1).
    Quirks: a pair with the prediction of index 0 gets ``pred_category_type`` and
    ``pred_position`` ``""`` (``if pred_idx`` is falsy for 0); without ground truth all
    predictions form one row; without either, the official code raises (:class:`MatchError`).
    """
    lines = gt_pred_lines(gt_items, pred_items, line_type, Deadline(None), rules)
    n_gt, n_pred = len(lines.norm_gt), len(lines.norm_pred)
    if not n_gt:
        if not n_pred:
            raise MatchError("no ground-truth and no predicted line: v1.0 raises IndexError here")
        return [matched_row(lines, (), range(n_pred), 1, img_id)]
    if not n_pred:
        return [matched_row(lines, (i,), (), 1, img_id) for i in range(n_gt)]
    cost = cost_matrix(lines.norm_gt, lines.norm_pred)
    rows, cols = linear_sum_assignment(cost)
    assigned = dict(zip(rows.tolist(), cols.tolist(), strict=True))
    matched: list[MatchedRow] = []
    for i in range(n_gt):
        j = assigned.get(i)
        if j is None:
            matched.append(matched_row(lines, (i,), (), 1, img_id))
        elif j == 0:
            row = matched_row(lines, (i,), (j,), float(cost[i, j]), img_id)
            matched.append(replace(row, pred_category_type="", pred_position=""))
        else:
            matched.append(matched_row(lines, (i,), (j,), float(cost[i, j]), img_id))
    taken = set(assigned.values())
    leftover = [j for j in range(n_pred) if j not in taken]
    if leftover:
        matched.append(matched_row(lines, (), leftover, 1, img_id))
    return matched
