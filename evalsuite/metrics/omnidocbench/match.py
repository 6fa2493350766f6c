"""Matching predicted elements to ground-truth elements, as OmniDocBench v1.0 does.

Re-implements ``match_gt2pred_quick`` (``utils/match_quick.py``) and ``match_gt2pred_simple``,
``get_gt_pred_lines``, ``compute_edit_distance_matrix_new`` (``utils/match.py``) of
opendatalab/OmniDocBench at 895837f (the v1.0 evaluation code), row for row, quirks included.

Costs are normalised edit distances ``Levenshtein(a, b) / max(len(a), len(b))`` of the
normalised strings (:func:`.normalize.normalize_text` for text, :func:`.normalize.normalize_formula`
for formulas, the raw strings for tables). The quick match:

1. pairs with cost < 0.25 are "masked"; each unmasked ground-truth line gets its best run of
   consecutive unmasked predictions (a prediction split in several, :func:`_grow_span`),
   overlapping runs are resolved (:func:`_resolve_overlaps`) and each kept run is joined with
   ``" "`` into one column of a new cost matrix;
2. Hungarian assignment; a pair costing more than 0.7 is undone;
3. an unmatched ground-truth line found almost verbatim inside a prediction (sliding-window
   distance < 0.4) joins that prediction (one prediction, several ground-truth lines);
4. each group's edit is recomputed; leftover ground truth and leftover predictions are paired by a
   second Hungarian on raw distances with edit 1; rows sharing a prediction are merged; every
   ground-truth line not placed gets a row with an empty prediction.

v1.5 (0f22218) matches text and display formulas together: :func:`match_hybrid`.
"""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from bs4 import BeautifulSoup
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.omnidocbench.extract import PredictedElement
from evalsuite.metrics.omnidocbench.normalize import (
    _Bs4v411TreeBuilder,
    normalize_formula,
    normalize_text,
)
from evalsuite.metrics.omnidocbench.versions import V10, V15, Rules

__all__ = [
    "IGNORED_CATEGORIES",
    "QUICK_MATCH_TIMEOUT_S",
    "GtItem",
    "LineType",
    "MatchError",
    "MatchTimeout",
    "MatchedRow",
    "match_hybrid",
    "match_quick",
    "match_quick_or_simple",
    "match_simple",
    "table_leftover_cells",
]

LineType = Literal["text", "formula", "html_table", "latex_table"]

IGNORED_CATEGORIES = (
    "figure_caption",
    "figure_footnote",
    "table_caption",
    "table_footnote",
    "code_algorithm",
    "code_algorithm_caption",
    "header",
    "footer",
    "page_footnote",
    "page_number",
    "equation_caption",
)
"""Ground-truth categories that are matched (to absorb such predicted text) but not scored."""

QUICK_MATCH_TIMEOUT_S = 30.0
"""v1.0's limit on the quick match of a page's text (``func_timeout(30, …)``)."""

# Thresholds of the quick match (module docstring, steps 1-3).
MASK_COST = 0.25
MERGE_WINDOW_THRESHOLD = 0.6
UNMATCH_COST = 0.7
CONTAINED_THRESHOLD = 0.4

# The annotation field each line type reads (``get_gt_pred_lines``).
_GT_FIELD = {"text": "text", "formula": "latex", "html_table": "html", "latex_table": "latex"}


class MatchError(EvalsuiteError, ValueError):
    """An input on which the official v1.0 code raises, so that it has no official result."""


class MatchTimeout(EvalsuiteError, TimeoutError):
    """The quick match ran past its time limit."""


@dataclass(frozen=True)
class GtItem:
    """A ground-truth element as the v1.0 matchers read it (one item of ``gt_items``).

    ``line`` is the string normalised and matched, ``shown`` the row's ``gt`` string (``line``,
    except for a LaTeX-table match: the HTML), ``category`` the ``fine_category_type`` or
    ``category_type``, ``position`` the ``order`` or, when that is falsy, ``position[0]`` of
    the annotation (none in OmniDocBench.json: ``""``).
    """

    line: str
    shown: str
    category: str
    position: int | float | str
    attribute: Mapping[str, Any]
    kind: LineType = "text"
    from_content: bool = False

    @classmethod
    def from_annotation(cls, item: Mapping[str, Any], line_type: LineType) -> GtItem:
        """The item of one OmniDocBench.json ``layout_dets`` entry (or merged block).

        Rule: a truthy ``content`` is used as is; else ``text`` / ``latex`` / ``html`` by line
        type, through ``str()`` (so ``None`` becomes ``"None"``); a LaTeX-table match shows the
        ``html``. Raises KeyError for a missing field, as the official code does."""
        content = item.get("content")
        if content:
            line = shown = str(content)
        else:
            line = str(item[_GT_FIELD[line_type]])
            shown = str(item["html"]) if line_type == "latex_table" else line
        order = item.get("order")
        return cls(
            line=line,
            shown=shown,
            category=item.get("fine_category_type") or item["category_type"],
            position=order if order else item.get("position", [""])[0],
            attribute=item.get("attribute", {}),
            kind=line_type,
            from_content=bool(content),
        )


@dataclass(frozen=True)
class MatchedRow:
    """One official matched row (a dict of ``match_gt2pred_*``'s result).

    Index fields hold indices into the *filtered* line lists, ``("",)`` when the side is empty.
    ``gt``/``pred``/``norm_*`` are the ``"".join`` of the lines; ``gt_position`` the positions
    of the rows' ground-truth items (``("",)`` without ground truth, the bare string ``""`` in
    the quick match's page without any ground-truth line); ``pred_position`` the first
    prediction's start; ``edit`` the matcher's own cost (the metrics recompute it).
    """

    gt_idx: tuple[int | str, ...]
    gt: str
    norm_gt: str
    gt_category_type: str
    gt_position: tuple[int | str, ...] | str
    gt_attribute: tuple[Mapping[str, Any], ...]
    pred_idx: tuple[int | str, ...]
    pred: str
    norm_pred: str
    pred_category_type: str
    pred_position: int | str
    edit: float
    img_id: str


class _Deadline:
    """A wall-clock limit checked between steps (a cooperative stand-in for ``func_timeout``)."""

    def __init__(self, seconds: float | None) -> None:
        self._end = math.inf if seconds is None else time.monotonic() + seconds

    def check(self) -> None:
        if time.monotonic() > self._end:
            raise MatchTimeout("the quick match ran past its time limit")


@dataclass(frozen=True)
class _Lines:
    """``get_gt_pred_lines``: the lines whose raw and normalised strings are both non-empty.

    Quirk: the item lists stay unfiltered and are indexed with the filtered line indices, so
    after a dropped line, positions, attributes and predicted categories come from the wrong
    item (the ground-truth category does not: it is filtered with the lines)."""

    gt: list[str]
    norm_gt: list[str]
    gt_category: list[str]
    pred: list[str]
    norm_pred: list[str]
    gt_items: Sequence[GtItem]
    pred_items: Sequence[PredictedElement]


def _normalizer(line_type: LineType, rules: Rules = V10) -> Callable[[str], str]:
    if line_type == "text":
        return normalize_text
    if line_type == "formula":
        return lambda latex: normalize_formula(latex, rules)
    return str


def _gt_kind(item: GtItem, line_type: LineType | None) -> LineType:
    """How a ground-truth line is normalised: by the match's line type, or in the hybrid match
    (``line_type`` None) by its own kind, a ``content`` kept raw."""
    if line_type is not None:
        return line_type
    return "html_table" if item.from_content else item.kind


def _pred_kind(element: PredictedElement, line_type: LineType | None) -> LineType:
    """How a predicted line is normalised: by the match's line type, or in the hybrid match by
    its category (text, formula, anything else raw)."""
    if line_type is not None:
        return line_type
    categories: dict[str, LineType] = {"text_all": "text", "equation_isolated": "formula"}
    return categories.get(element.category, "html_table")


def _lines(
    gt_items: Sequence[GtItem],
    pred_items: Sequence[PredictedElement],
    line_type: LineType | None,
    deadline: _Deadline,
    rules: Rules = V10,
) -> _Lines:
    """The filtered lines; ``line_type`` None: the hybrid match (each item by its kind)."""
    gt: list[tuple[str, str, str]] = []
    for item in gt_items:
        deadline.check()
        norm = _normalizer(_gt_kind(item, line_type), rules)(item.line)
        if item.shown and norm:
            gt.append((item.shown, norm, item.category))
    pred: list[tuple[str, str]] = []
    for element in pred_items:
        deadline.check()
        norm = _normalizer(_pred_kind(element, line_type), rules)(element.content)
        if element.content and norm:
            pred.append((element.content, norm))
    return _Lines(
        gt=[shown for shown, _, _ in gt],
        norm_gt=[norm for _, norm, _ in gt],
        gt_category=[category for _, _, category in gt],
        pred=[content for content, _ in pred],
        norm_pred=[norm for _, norm in pred],
        gt_items=gt_items,
        pred_items=pred_items,
    )


def _majority_category(categories: list[str]) -> str:
    """Most common category, scored ones first; ties go to the first seen (``Counter``)."""
    scored = [category for category in categories if category not in IGNORED_CATEGORIES]
    return Counter(scored or categories).most_common(1)[0][0]


def _row(
    lines: _Lines, gt_idx: Sequence[int], pred_idx: Sequence[int], edit: float, img_id: str
) -> MatchedRow:
    """The official row of ground-truth lines ``gt_idx`` and prediction lines ``pred_idx``."""
    first_pred = lines.pred_items[pred_idx[0]] if pred_idx else None
    return MatchedRow(
        gt_idx=tuple(gt_idx) or ("",),
        gt="".join(lines.gt[i] for i in gt_idx),
        norm_gt="".join(lines.norm_gt[i] for i in gt_idx),
        gt_category_type=_majority_category([lines.gt_category[i] for i in gt_idx])
        if gt_idx
        else "",
        gt_position=tuple(lines.gt_items[i].position for i in gt_idx) or ("",),
        gt_attribute=tuple(lines.gt_items[i].attribute for i in gt_idx) or ({},),
        pred_idx=tuple(pred_idx) or ("",),
        pred="".join(lines.pred[j] for j in pred_idx),
        norm_pred="".join(lines.norm_pred[j] for j in pred_idx),
        pred_category_type=(first_pred.fine_category or first_pred.category) if first_pred else "",
        pred_position=first_pred.position[0] if first_pred else "",
        edit=edit,
        img_id=img_id,
    )


def _distance_ratio(a: str, b: str) -> float:
    return Levenshtein.distance(a, b) / max(len(a), len(b))


def _cost_matrix(norm_gt: list[str], norm_pred: list[str]) -> np.ndarray:
    """``compute_edit_distance_matrix_new``: normalised distances (0 for two empty strings)."""
    distances = process.cdist(norm_gt, norm_pred, scorer=Levenshtein.distance, dtype=np.int64)
    longer = np.maximum.outer([len(s) for s in norm_gt], [len(s) for s in norm_pred])
    return np.divide(distances, longer, out=np.zeros(longer.shape), where=longer > 0)


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
    lines = _lines(gt_items, pred_items, line_type, _Deadline(None), rules)
    n_gt, n_pred = len(lines.norm_gt), len(lines.norm_pred)
    if not n_gt:
        if not n_pred:
            raise MatchError("no ground-truth and no predicted line: v1.0 raises IndexError here")
        return [_row(lines, (), range(n_pred), 1, img_id)]
    if not n_pred:
        return [_row(lines, (i,), (), 1, img_id) for i in range(n_gt)]
    cost = _cost_matrix(lines.norm_gt, lines.norm_pred)
    rows, cols = linear_sum_assignment(cost)
    assigned = dict(zip(rows.tolist(), cols.tolist(), strict=True))
    matched: list[MatchedRow] = []
    for i in range(n_gt):
        j = assigned.get(i)
        if j is None:
            matched.append(_row(lines, (i,), (), 1, img_id))
        elif j == 0:
            row = _row(lines, (i,), (j,), float(cost[i, j]), img_id)
            matched.append(replace(row, pred_category_type="", pred_position=""))
        else:
            matched.append(_row(lines, (i,), (j,), float(cost[i, j]), img_id))
    taken = set(assigned.values())
    leftover = [j for j in range(n_pred) if j not in taken]
    if leftover:
        matched.append(_row(lines, (), leftover, 1, img_id))
    return matched


def match_quick(
    gt_items: Sequence[GtItem],
    pred_items: Sequence[PredictedElement],
    line_type: LineType,
    img_id: str,
    *,
    timeout_s: float | None = None,
) -> list[MatchedRow]:
    """v1.0 ``match_gt2pred_quick`` (steps in the module docstring).

    Shortcuts: without ground truth, one row per prediction (``gt_position`` the bare string
    ``""``); without predictions, one row per ground-truth line (edit 1); one line each, paired
    whatever the cost. Quirks, from the official helpers: several ground-truth lines on a run of
    predictions are compared with the run's *first* prediction only; a prediction whose
    contained lines were all placed already vanishes; leftover predictions beyond the leftover
    ground truth vanish; when every prediction is placed, each leftover ground-truth line gets
    *two* identical rows (``merge_duplicates_add_unmatched`` adds it twice); leftovers are
    paired in the iteration order of CPython's ``set(range(n)) - placed`` (not ascending once
    indices exceed the set's table size). Rows' strings are joined with ``""`` even where the
    edit joined predictions with ``" "``.

    Raises:
        MatchTimeout: ``timeout_s`` passed (checked between distance computations, counting
            from the call, normalisation included).
    """
    deadline = _Deadline(timeout_s)
    lines = _lines(gt_items, pred_items, line_type, deadline)
    norm_gt, norm_pred = lines.norm_gt, lines.norm_pred
    if not norm_gt:
        return [
            replace(_row(lines, (), (j,), 1, img_id), gt_position="") for j in range(len(norm_pred))
        ]
    if not norm_pred:
        return [_row(lines, (i,), (), 1, img_id) for i in range(len(norm_gt))]
    if len(norm_gt) == 1 and len(norm_pred) == 1:
        return [_row(lines, (0,), (0,), _distance_ratio(norm_gt[0], norm_pred[0]), img_id)]

    return [
        _row(lines, gt_idx, pred_idx, edit, img_id)
        for gt_idx, pred_idx, edit in _quick_groups(norm_gt, norm_pred, deadline, V10)
    ]


_Group = tuple[tuple[int, ...], tuple[int, ...], float]


def _quick_groups(
    norm_gt: list[str],
    norm_pred: list[str],
    deadline: _Deadline,
    rules: Rules,
    gt_categories: Sequence[str] = (),
) -> list[_Group]:
    """Steps 1-4 of the quick match (module docstring): (gt lines, predictions, edit) rows.

    ``gt_categories`` (one per line) is read only where ``rules.formulas_found_in_text`` is
    False: step 3 then skips display formulas (``equation_isolated``)."""
    columns, cost = _merge_split_predictions(norm_gt, norm_pred, deadline, rules.max_run)
    matches, unmatched_gt = _assign(cost, columns)
    searched = [
        i for i in unmatched_gt
        if rules.formulas_found_in_text or gt_categories[i] != "equation_isolated"
    ]
    contained = {
        j: found
        for j, pred in enumerate(norm_pred)
        if (found := [i for i in searched if _window_match(pred, norm_gt[i], deadline)])
    }
    groups = _group_by_prediction(matches, contained)
    entries = _entries(groups, norm_gt, norm_pred, rules)
    return _merge_duplicates(entries, len(norm_gt), rules)


def match_quick_or_simple(
    gt_items: Sequence[GtItem],
    pred_items: Sequence[PredictedElement],
    line_type: LineType,
    img_id: str,
    *,
    timeout_s: float | None = QUICK_MATCH_TIMEOUT_S,
    rules: Rules = V10,
) -> tuple[list[MatchedRow], bool]:
    """The quick match under v1.0's time limit, else the simple match; returns (rows, timed out).
    With ``rules.hybrid_match`` (v1.5): :func:`match_hybrid` (``line_type`` unread), its
    fallback the simple match of the items each normalised by its kind.

    Rule (``process_get_matched_elements``, text only): ``func_timeout(30, match_gt2pred_quick)``,
    falling back to :func:`match_simple` on timeout. The limit is wall-clock time, so which
    matcher runs on a slow page depends on the machine, here as in the official code; this code
    is about twice as fast as the official one, so a page the official run gave up on after 30 s
    may finish here (and get quick-match rows). Deviation: the limit is checked between distance
    computations (``func_timeout`` interrupts anywhere between bytecodes), so one long C call
    can overrun it.
    """
    hybrid = rules.hybrid_match
    try:
        if hybrid:
            return match_hybrid(gt_items, pred_items, img_id, timeout_s=timeout_s,
                                rules=rules), False
        return match_quick(gt_items, pred_items, line_type, img_id, timeout_s=timeout_s), False
    except MatchTimeout:
        return match_simple(gt_items, pred_items, None if hybrid else line_type, img_id,
                            rules), True


# --- step 1: predictions split into several ----------------------------------------------------


def _merge_split_predictions(
    norm_gt: list[str], norm_pred: list[str], deadline: _Deadline, max_run: int | None = None
) -> tuple[list[int | list[int]], np.ndarray]:
    """``deal_with_truncated``: the columns (a prediction index, or a list of consecutive ones
    joined with ``" "``) and their cost matrix.

    Rule: pairs costing < 0.25 mask their row and column; for each unmasked ground-truth line,
    every unmasked prediction starts a run grown by :func:`_grow_span`, and the run with the
    lowest cost (first on ties) is its candidate (a one-prediction run is a candidate too);
    :func:`_resolve_overlaps` picks among the candidates; each picked run becomes one column.
    """
    cost = _cost_matrix(norm_gt, norm_pred)
    masked = np.argwhere(cost < MASK_COST)
    masked_gt, masked_pred = set(masked[:, 0].tolist()), set(masked[:, 1].tolist())
    free_preds = [j for j in range(len(norm_pred)) if j not in masked_pred]
    candidates: list[tuple[list[int], float]] = []
    for i, gt in enumerate(norm_gt):
        if i in masked_gt or not free_preds:
            continue
        runs = []
        for start in free_preds:
            deadline.check()
            stop = start + _grow_span(gt, norm_pred, start, masked_pred, deadline, max_run)
            runs.append(
                (list(range(start, stop)), _distance_ratio(gt, " ".join(norm_pred[start:stop])))
            )
        candidates.append(min(runs, key=lambda run: run[1]))
    spans = _resolve_overlaps(candidates)
    if not spans:
        return list(range(len(norm_pred))), cost
    columns: list[int | list[int]] = list(range(len(norm_pred)))
    for span in spans:
        at = columns.index(span[0])
        del columns[at : at + len(span)]
        columns.insert(at, span)
    merged = [
        " ".join(norm_pred[column[0] : column[-1] + 1])
        if isinstance(column, list)
        else norm_pred[column]
        for column in columns
    ]
    return columns, _cost_matrix(norm_gt, merged)


def _grow_span(
    gt: str,
    norm_pred: list[str],
    start: int,
    masked_pred: set[int],
    deadline: _Deadline,
    max_run: int | None,
) -> int:
    """How many consecutive predictions from ``start`` form one run for ``gt``.

    Rule: add the next prediction (not masked, not past the end, the run shorter than
    ``max_run`` when given) while :func:`_judge_merge` accepts it; stop after adding one that
    makes the run longer than ``gt``."""
    length = 1
    while (
        (max_run is None or length < max_run)
        and start + length not in masked_pred
        and start + length < len(norm_pred)
    ):
        accept, go_on = _judge_merge(gt, norm_pred[start : start + length + 1], deadline)
        if not accept:
            break
        length += 1
        if not go_on:
            break
    return length


def _judge_merge(gt: str, parts: list[str], deadline: _Deadline) -> tuple[bool, bool]:
    """``judge_pred_merge`` (threshold 0.6): (accept the last part, keep growing).

    Accept when joining the last part does not raise the cost, every earlier part lies in ``gt``
    within window distance <= 0.6 and the last one within < 0.6; keep growing while the joined
    run is not longer than ``gt``."""
    current, merged = " ".join(parts[:-1]), " ".join(parts)
    if _distance_ratio(gt, merged) > _distance_ratio(gt, current):
        return False, False
    if not all(
        _window_match(gt, part, deadline, MERGE_WINDOW_THRESHOLD, inclusive=True)
        for part in parts[:-1]
    ):
        return False, False
    accept = _window_match(gt, parts[-1], deadline, MERGE_WINDOW_THRESHOLD, inclusive=False)
    return accept, len(merged) <= len(gt)


def _window_match(
    text: str,
    part: str,
    deadline: _Deadline,
    threshold: float = CONTAINED_THRESHOLD,
    *,
    inclusive: bool = False,
) -> bool:
    """Whether some window of ``text`` as long as ``part`` is within ``threshold`` of it.

    ``min_w Levenshtein(w, part) / len(part) < threshold`` (``<=`` if ``inclusive``) over the
    windows ``w`` of ``text`` (``sub_gt_fuzzy_matching`` / ``sub_pred_fuzzy_matching``); False
    when ``part`` is empty or longer than ``text``. The official scan computes every window's
    distance; stopping at the first hit and capping each distance gives the same answer.
    """
    size = len(part)
    if not 0 < size <= len(text):
        return False
    cutoff = int(threshold * size) + 1  # no accepted distance exceeds it
    for start in range(len(text) - size + 1):
        deadline.check()
        ratio = Levenshtein.distance(text[start : start + size], part, score_cutoff=cutoff) / size
        if ratio < threshold or (inclusive and ratio == threshold):
            return True
    return False


def _resolve_overlaps(candidates: list[tuple[list[int], float]]) -> list[list[int]]:
    """``get_final_subset``: the runs kept among the candidates (run, cost).

    Rule: candidates sorted by first index are grouped while they overlap the current group; a
    lone candidate is kept; in a larger group candidates are laid into "paths": each joins every
    path it overlaps nowhere, replaces an identical run of higher cost, or else opens a new path;
    the path with the lowest mean cost (first on ties) is kept. Quirk: after a replacement the
    official loop, which edits the path while walking it, skips the next member.
    """
    if not candidates:
        return []
    ordered = sorted(candidates, key=lambda candidate: candidate[0][0])
    groups = [[ordered[0]]]
    for candidate in ordered[1:]:
        if any(set(candidate[0]) & set(member[0]) for member in groups[-1]):
            groups[-1].append(candidate)
        else:
            groups.append([candidate])
    kept: list[list[int]] = []
    for group in groups:
        if len(group) == 1:
            kept.append(group[0][0])
            continue
        paths = [[group[0]]]
        for candidate in group[1:]:
            new_path = True
            for path in paths:
                overlaps = same = False
                k = 0
                while k < len(path):  # the path may change under the walk, as officially
                    member = path[k]
                    if member[0] == candidate[0]:
                        overlaps = same = True
                        if member[1] > candidate[1]:
                            path.pop(path.index(member))
                            path.append(candidate)
                    elif set(member[0]) & set(candidate[0]):
                        overlaps = True
                    k += 1
                if not overlaps:
                    path.append(candidate)
                if not overlaps or same:
                    new_path = False
            if new_path:
                paths.append([candidate])
        best = min(paths, key=lambda path: sum(cost for _, cost in path) / len(path))
        kept.extend(run for run, _ in best)
    return kept


# --- steps 2-4 ----------------------------------------------------------------------------------


def _assign(
    cost: np.ndarray, columns: list[int | list[int]]
) -> tuple[dict[int, list[int]], list[int]]:
    """``process_matches``: Hungarian pairs costing <= 0.7 ({gt: predictions}) and the rest."""
    rows, cols = linear_sum_assignment(cost)
    assigned = dict(zip(rows.tolist(), cols.tolist(), strict=True))
    matches: dict[int, list[int]] = {}
    unmatched: list[int] = []
    for i in range(cost.shape[0]):
        col = assigned.get(i)
        if col is None or cost[i, col] > UNMATCH_COST:
            unmatched.append(i)
            continue
        column = columns[col]
        matches[i] = (
            list(range(column[0], column[-1] + 1)) if isinstance(column, list) else [column]
        )
    return matches, unmatched


def _group_by_prediction(
    matches: dict[int, list[int]], contained: dict[int, list[int]]
) -> dict[tuple[int, ...], list[int]]:
    """``merge_matches``: ground-truth lines per prediction key, assigned pairs first, then
    contained lines not yet placed (``(j,)`` keys, even when ``j`` lies in a longer run's key;
    such a key may end up with no line)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    placed: set[int] = set()
    for i, preds in matches.items():
        groups.setdefault(tuple(sorted(preds)), []).append(i)
        placed.add(i)
    for j, found in contained.items():
        fresh = [i for i in found if i not in placed]
        groups.setdefault((j,), []).extend(fresh)
        placed.update(fresh)
    return groups


_Entry = tuple[int | None, tuple[int, ...], float]


def _group_edit(
    key: tuple[int, ...], gt_lines: list[int], norm_gt: list[str], norm_pred: list[str]
) -> float:
    """``recalculate_edit_distances``: 1 without lines; several lines joined with ``""`` against
    the key's first prediction; one line against the key's predictions joined with ``" "``."""
    if not gt_lines:
        return 1
    if len(gt_lines) > 1:
        return _distance_ratio("".join(norm_gt[i] for i in gt_lines), norm_pred[key[0]])
    return _distance_ratio(norm_gt[gt_lines[0]], " ".join(norm_pred[j] for j in key))


def _entries(
    groups: dict[tuple[int, ...], list[int]],
    norm_gt: list[str],
    norm_pred: list[str],
    rules: Rules,
) -> list[_Entry]:
    """``convert_final_matches``: (gt line or None, prediction key, edit) per placed line, then
    the leftovers (second Hungarian on raw distances, v1.5: on normalised distances, edit 1; or
    one row of all leftover predictions; or one row per leftover line)."""
    entries: list[_Entry] = []
    for key, gt_lines in groups.items():
        lines = sorted(set(gt_lines))
        edit = _group_edit(key, lines, norm_gt, norm_pred)
        entries.extend((i, key, edit) for i in lines)
    # Sets as in the official code: their iteration order decides the leftover rows.
    left_gt = set(range(len(norm_gt))) - {i for lines in groups.values() for i in lines}
    left_pred = set(range(len(norm_pred))) - {j for key in groups for j in key}
    if left_pred and left_gt:
        gts, preds = list(left_gt), list(left_pred)
        distance = _distance_ratio if rules.hybrid_match else Levenshtein.distance
        distances = [[distance(norm_gt[i], norm_pred[j]) for j in preds] for i in gts]
        rows, cols = linear_sum_assignment(distances)
        entries.extend(
            (gts[r], (preds[c],), 1) for r, c in zip(rows.tolist(), cols.tolist(), strict=True)
        )
    elif left_pred:
        entries.append((None, tuple(left_pred), 1))
    else:
        entries.extend((i, (), 1) for i in left_gt)
    return entries


def _merge_duplicates(entries: list[_Entry], n_gt: int, rules: Rules) -> list[_Group]:
    """``merge_duplicates_add_unmatched``: one row per prediction key (its lines in entry order,
    the first entry's edit), then (v1.0 only) the entries without prediction, then a row with
    edit 1 for every line not in a key-row (in v1.0 repeating those entries: the
    duplicated-row quirk)."""
    rows: list[_Group] = []
    keys_done: set[tuple[int, ...]] = set()
    lines_done: set[int | None] = set()
    for k, (i, key, edit) in enumerate(entries):
        if not key or key in keys_done:
            continue
        lines = [i] + [
            other for m, (other, other_key, _) in enumerate(entries) if other_key == key and m != k
        ]
        lines_done.update(lines)
        keys_done.add(key)
        rows.append((tuple(line for line in lines if line is not None), key, edit))
    if not rules.hybrid_match:
        rows.extend(
            ((i,), (), edit) for i, _, edit in entries if i not in lines_done and i is not None
        )
    rows.extend(((i,), (), 1) for i in range(n_gt) if i not in lines_done)
    return rows


# --- v1.5: the hybrid match -------------------------------------------------------------------

_ARRAY = re.compile(r"\\begin\{array\}\{(?P<spec>[^}]*)\}(?P<body>.*?)\\end\{array\}", re.DOTALL)
_ARRAY_SPEC_NOISE = (re.compile(r"\s+|\|"), re.compile(r"@{[^}]*}"), re.compile(r"!{[^}]*}"))
_ARRAY_ROW_BREAK = re.compile(r"\\\\")
_CDOT_FORMULA = re.compile(r"\$\\cdot\$")


def _array_rows(latex: str) -> tuple[re.Match[str], list[str]] | None:
    """The first ``array`` of ``latex`` and its non-empty stripped rows, when its column spec is
    one ``l``, ``c`` or ``r`` once spaces, ``|``, ``@{…}`` and ``!{…}`` are deleted, else None
    (``is_all_l``: multi-column arrays, matrices, stay whole)."""
    found = _ARRAY.search(latex)
    if found is None:
        return None
    spec = found.group("spec")
    for noise in _ARRAY_SPEC_NOISE:
        spec = noise.sub("", spec)
    if spec not in ("l", "c", "r"):
        return None
    rows = [row.strip() for row in _ARRAY_ROW_BREAK.split(found.group("body")) if row.strip()]
    return found, rows


def _split_gt_arrays(items: Sequence[GtItem]) -> list[GtItem]:
    """``split_gt_equation_arrays``: a ground-truth formula holding a one-column ``array`` becomes
    one formula ``\\[row\\]`` per row, ordered ``order + k/10`` (rounded to 1 decimal).
    Deviation: a formula without ``order`` counts as order 0 (the official code raises)."""
    out: list[GtItem] = []
    for item in items:
        is_formula = item.kind == "formula" and not item.from_content
        split = _array_rows(item.line) if is_formula and "\\begin{array" in item.line else None
        if split is None:
            out.append(item)
            continue
        base = float(item.position or 0)
        out += [replace(item, line=f"\\[{row}\\]", shown=f"\\[{row}\\]",
                        position=round(base + k / 10, 1))
                for k, row in enumerate(split[1], start=1)]
    return out


def _split_pred_arrays(elements: Sequence[PredictedElement]) -> list[PredictedElement]:
    """``split_equation_arrays``: a predicted formula holding a one-column ``array`` becomes one
    formula ``\\[row\\]`` per row, positioned at the row's first and last character in the page
    (the row found from the end of the previous one)."""
    out: list[PredictedElement] = []
    for element in elements:
        split = (_array_rows(element.content)
                 if element.category == "equation_isolated" and "\\begin{array" in element.content
                 else None)
        if split is None:
            out.append(element)
            continue
        found, rows = split
        body, cursor = found.group("body"), 0
        for row in rows:
            at = body.find(row, cursor)
            at = cursor if at == -1 else at
            cursor = at + len(row)
            start = element.position[0] + found.start("body") + at
            out.append(replace(element, content=f"\\[{row}\\]",
                               position=(start, start + len(row) - 1)))
    return out


def _stacked_formulas(parts: list[str]) -> str:
    """Several matched formulas as one: ``\\begin{array}{l} {a} \\\\ {b} \\end{array}``, each
    part stripped of ``$`` then newlines at both ends."""
    rows = " \\\\ ".join("{" + part.strip("$").strip("\n") + "}" for part in parts)
    return "\\begin{array}{l} " + rows + " \\end{array}"


def match_hybrid(
    gt_items: Sequence[GtItem],
    pred_items: Sequence[PredictedElement],
    img_id: str,
    *,
    timeout_s: float | None = None,
    rules: Rules = V15,
) -> list[MatchedRow]:
    """v1.5 ``match_gt2pred_quick`` on a page's text and display-formula ground truth against
    its predicted text, formulas and unmatched-table cells (``gt_items`` in reading order, each
    of kind ``"text"`` or ``"formula"``).

    Rules: one-column ``array`` formulas are split into rows on both sides; predictions are
    ordered by start, inline formulas last; each line is normalised by its kind (text, formula,
    else raw). Shortcuts as :func:`match_quick`. Otherwise predictions within cost < 0.25 of an
    ignored ground-truth line (:data:`IGNORED_CATEGORIES`) are taken by those lines and left
    out; the other lines and predictions go through the v1.0 quick-match steps, except that the
    leftover Hungarian uses normalised distances and no leftover line is repeated. A row of
    several formulas shows them stacked (:func:`_stacked_formulas`) on that side. Row indices
    are into the page's filtered lines.

    Left out, as they are never scored: the rows of the ignored lines (v1.5 drops them with all
    ignored-category rows) and a row without ground truth whose first prediction is an inline
    formula (v1.5 removes it).

    Raises:
        MatchTimeout: ``timeout_s`` passed.
    """
    deadline = _Deadline(timeout_s)
    gt_items = _split_gt_arrays(gt_items)
    ordered = sorted(enumerate(pred_items), key=lambda pair: (
        pair[1].fine_category == "equation_inline", pair[1].position[0], pair[0]))
    pred_items = _split_pred_arrays([element for _, element in ordered])
    lines = _lines(gt_items, pred_items, None, deadline, rules)
    norm_gt, norm_pred = lines.norm_gt, lines.norm_pred
    if not norm_gt:
        return [_row(lines, (), (j,), 1, img_id) for j in range(len(norm_pred))]
    if not norm_pred:
        return [_row(lines, (i,), (), 1, img_id) for i in range(len(norm_gt))]
    if len(norm_gt) == 1 and len(norm_pred) == 1:
        return [_row(lines, (0,), (0,), _distance_ratio(norm_gt[0], norm_pred[0]), img_id)]

    ignored = [i for i, category in enumerate(lines.gt_category) if category in IGNORED_CATEGORIES]
    taken: set[int] = set()
    if ignored:
        cost = _cost_matrix([norm_gt[i] for i in ignored], norm_pred)
        taken = set(np.argwhere(cost < MASK_COST)[:, 1].tolist())
    kept_gt = [i for i in range(len(norm_gt)) if i not in set(ignored)]
    kept_pred = [j for j in range(len(norm_pred)) if j not in taken]
    if not kept_gt:
        groups: list[_Group] = [((), tuple(range(len(kept_pred))), 1)] if kept_pred else []
    elif not kept_pred:
        groups = [((i,), (), 1) for i in range(len(kept_gt))]
    else:
        groups = _quick_groups([norm_gt[i] for i in kept_gt], [norm_pred[j] for j in kept_pred],
                               deadline, rules)
    rows = []
    for gt_lines, preds, edit in groups:
        gt_idx, pred_idx = [kept_gt[i] for i in gt_lines], [kept_pred[j] for j in preds]
        row = _row(lines, gt_idx, pred_idx, edit, img_id)
        if not gt_idx and row.pred_category_type == "equation_inline":
            continue
        if row.gt_category_type == "equation_isolated" and len(gt_idx) > 1:
            row = replace(row, gt=_stacked_formulas([lines.gt[i] for i in gt_idx]))
        if "equation" in row.pred_category_type and len(pred_idx) > 1:
            row = replace(row, pred=_stacked_formulas([lines.pred[j] for j in pred_idx]))
        rows.append(row)
    return rows


def table_leftover_cells(
    rows: Sequence[MatchedRow], pred_items: Sequence[PredictedElement]
) -> list[PredictedElement]:
    """v1.5: the cells of the predicted tables no ground-truth table took (``match_gt2pred_simple``
    on tables), as text for the hybrid match.

    Rule: only when some row has a ground truth; for each leftover table, each ``<td>`` whose
    content is a single string (bs4 ``.string``, parsed as bs4 4.11.1's ``html.parser``), with
    ``$\\cdot$`` deleted and stripped, becomes a ``text_all`` element with the table's position
    and fine category. LaTeX tables have no ``<td>``, so give nothing."""
    if not any(row.gt_idx != ("",) for row in rows):
        return []
    leftover = [j for row in rows if row.gt_idx == ("",) for j in row.pred_idx]
    cells = []
    for j in leftover:
        table = pred_items[int(j)]
        soup = BeautifulSoup(table.content, builder=_Bs4v411TreeBuilder)
        cells += [replace(table, category="text_all",
                          content=_CDOT_FORMULA.sub("", cell.string).strip())
                  for cell in soup.find_all("td") if cell.string]
    return cells
