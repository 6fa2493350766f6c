"""OmniDocBench v1.0's quick match, ``match_gt2pred_quick`` (``utils/match_quick.py`` of
opendatalab/OmniDocBench at 895837f), row for row, quirks included; its steps are shared with
v1.5's hybrid match (:mod:`...v1_0.match.hybrid`) and v1.6's (:mod:`...v1_6.mgam`).

Costs are normalised edit distances ``Levenshtein(a, b) / max(len(a), len(b))`` of the
normalised strings (:func:`..normalize.normalize_text` for text,
:func:`..normalize.normalize_formula` for formulas, the raw strings for tables). The quick match:

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
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.omnidocbench.common.extract import PredictedElement
from evalsuite.metrics.omnidocbench.common.match.rows import (
    Deadline,
    GtItem,
    LineType,
    MatchedRow,
    cost_matrix,
    distance_ratio,
    gt_pred_lines,
    matched_row,
)
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = [
    "MASK_COST",
    "QUICK_MATCH_TIMEOUT_S",
    "Entry",
    "Group",
    "final_entries",
    "group_by_prediction",
    "match_quick",
    "merge_duplicates",
    "merge_split_predictions",
    "quick_groups",
    "window_match",
]

QUICK_MATCH_TIMEOUT_S = 30.0
"""v1.0's limit on the quick match of a page's text (``func_timeout(30, …)``)."""

# Thresholds of the quick match (module docstring, steps 1-3).
MASK_COST = 0.25
MERGE_WINDOW_THRESHOLD = 0.6
UNMATCH_COST = 0.7
CONTAINED_THRESHOLD = 0.4


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
    deadline = Deadline(timeout_s)
    lines = gt_pred_lines(gt_items, pred_items, line_type, deadline)
    norm_gt, norm_pred = lines.norm_gt, lines.norm_pred
    if not norm_gt:
        return [
            replace(matched_row(lines, (), (j,), 1, img_id), gt_position="")
            for j in range(len(norm_pred))
        ]
    if not norm_pred:
        return [matched_row(lines, (i,), (), 1, img_id) for i in range(len(norm_gt))]
    if len(norm_gt) == 1 and len(norm_pred) == 1:
        return [matched_row(lines, (0,), (0,), distance_ratio(norm_gt[0], norm_pred[0]), img_id)]

    return [
        matched_row(lines, gt_idx, pred_idx, edit, img_id)
        for gt_idx, pred_idx, edit in quick_groups(norm_gt, norm_pred, deadline, V10)
    ]


Group = tuple[tuple[int, ...], tuple[int, ...], float]
"""One row of the quick match: (ground-truth lines, predictions, edit)."""


def quick_groups(
    norm_gt: list[str],
    norm_pred: list[str],
    deadline: Deadline,
    rules: Rules,
    gt_categories: Sequence[str] = (),
) -> list[Group]:
    """Steps 1-4 of the quick match (module docstring): (gt lines, predictions, edit) rows.

    ``gt_categories`` (one per line) is read only where ``rules.formulas_found_in_text`` is
    False: step 3 then skips display formulas (``equation_isolated``)."""
    columns, cost = merge_split_predictions(norm_gt, norm_pred, deadline, rules.max_run)
    matches, unmatched_gt = _assign(cost, columns)
    searched = [
        i for i in unmatched_gt
        if rules.formulas_found_in_text or gt_categories[i] != "equation_isolated"
    ]
    contained = {
        j: found
        for j, pred in enumerate(norm_pred)
        if (found := [i for i in searched if window_match(pred, norm_gt[i], deadline)])
    }
    groups = group_by_prediction(matches, contained)
    entries = final_entries(groups, norm_gt, norm_pred, rules)
    return merge_duplicates(entries, len(norm_gt), rules)


# --- step 1: predictions split into several ----------------------------------------------------


def merge_split_predictions(
    norm_gt: list[str], norm_pred: list[str], deadline: Deadline, max_run: int | None = None
) -> tuple[list[int | list[int]], np.ndarray]:
    """``deal_with_truncated``: the columns (a prediction index, or a list of consecutive ones
    joined with ``" "``) and their cost matrix.

    Rule: pairs costing < 0.25 mask their row and column; for each unmasked ground-truth line,
    every unmasked prediction starts a run grown by :func:`_grow_span`, and the run with the
    lowest cost (first on ties) is its candidate (a one-prediction run is a candidate too);
    :func:`_resolve_overlaps` picks among the candidates; each picked run becomes one column.
    """
    cost = cost_matrix(norm_gt, norm_pred)
    masked = np.argwhere(cost < MASK_COST)
    masked_gt, masked_pred = set(masked[:, 0].tolist()), set(masked[:, 1].tolist())
    free_preds = [j for j in range(len(norm_pred)) if j not in masked_pred]
    candidates: list[tuple[list[int], float]] = []
    for i, gt in enumerate(norm_gt):
        if i in masked_gt or not free_preds:
            continue
        runs = []
        judge = _RunJudge(gt, deadline)
        for start in free_preds:
            deadline.check()
            stop = start + _grow_span(judge, norm_pred, start, masked_pred, max_run)
            runs.append((list(range(start, stop)), judge.cost(" ".join(norm_pred[start:stop]))))
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
    return columns, cost_matrix(norm_gt, merged)


def _grow_span(
    judge: _RunJudge,
    norm_pred: list[str],
    start: int,
    masked_pred: set[int],
    max_run: int | None,
) -> int:
    """How many consecutive predictions from ``start`` form one run for the judge's line.

    Rule: add the next prediction (not masked, not past the end, the run shorter than
    ``max_run`` when given) while :meth:`_RunJudge.judge` accepts it; stop after adding one that
    makes the run longer than the line."""
    length = 1
    while (
        (max_run is None or length < max_run)
        and start + length not in masked_pred
        and start + length < len(norm_pred)
    ):
        accept, go_on = judge.judge(norm_pred[start : start + length + 1])
        if not accept:
            break
        length += 1
        if not go_on:
            break
    return length


class _RunJudge:
    """``judge_pred_merge`` (threshold 0.6) for one ground-truth line, remembering what it
    computed: a run's cost and a part's window match are pure functions of their strings, and
    the runs grown for one line re-read the same parts and each run's shorter run again (the
    official code recomputes them; the answers are the same)."""

    def __init__(self, gt: str, deadline: Deadline) -> None:
        self.gt = gt
        self._deadline = deadline
        self._costs: dict[str, float] = {}
        self._windows: dict[tuple[str, bool], bool] = {}

    def cost(self, run: str) -> float:
        """:func:`distance_ratio` of the line and ``run``."""
        if run not in self._costs:
            self._costs[run] = distance_ratio(self.gt, run)
        return self._costs[run]

    def contains(self, part: str, *, inclusive: bool) -> bool:
        """:func:`window_match` of ``part`` in the line at the merge threshold."""
        key = (part, inclusive)
        if key not in self._windows:
            self._windows[key] = window_match(
                self.gt, part, self._deadline, MERGE_WINDOW_THRESHOLD, inclusive=inclusive)
        return self._windows[key]

    def judge(self, parts: list[str]) -> tuple[bool, bool]:
        """(accept the last part, keep growing): accept when joining the last part does not
        raise the cost, every earlier part lies in the line within window distance <= 0.6 and
        the last one within < 0.6; keep growing while the joined run is not longer than the
        line."""
        current, merged = " ".join(parts[:-1]), " ".join(parts)
        if self.cost(merged) > self.cost(current):
            return False, False
        if not all(self.contains(part, inclusive=True) for part in parts[:-1]):
            return False, False
        return self.contains(parts[-1], inclusive=False), len(merged) <= len(self.gt)


def window_match(
    text: str,
    part: str,
    deadline: Deadline,
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


def group_by_prediction(
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


Entry = tuple[int | None, tuple[int, ...], float]
"""A line placed by step 4: (ground-truth line or None, prediction key, edit)."""


def _group_edit(
    key: tuple[int, ...], gt_lines: list[int], norm_gt: list[str], norm_pred: list[str]
) -> float:
    """``recalculate_edit_distances``: 1 without lines; several lines joined with ``""`` against
    the key's first prediction; one line against the key's predictions joined with ``" "``."""
    if not gt_lines:
        return 1
    if len(gt_lines) > 1:
        return distance_ratio("".join(norm_gt[i] for i in gt_lines), norm_pred[key[0]])
    return distance_ratio(norm_gt[gt_lines[0]], " ".join(norm_pred[j] for j in key))


def final_entries(
    groups: dict[tuple[int, ...], list[int]],
    norm_gt: list[str],
    norm_pred: list[str],
    rules: Rules,
) -> list[Entry]:
    """``convert_final_matches``: (gt line or None, prediction key, edit) per placed line, then
    the leftovers (second Hungarian on raw distances, v1.5: on normalised distances, edit 1; or
    one row of all leftover predictions; or one row per leftover line)."""
    entries: list[Entry] = []
    for key, gt_lines in groups.items():
        lines = sorted(set(gt_lines))
        edit = _group_edit(key, lines, norm_gt, norm_pred)
        entries.extend((i, key, edit) for i in lines)
    # Sets as in the official code: their iteration order decides the leftover rows.
    left_gt = set(range(len(norm_gt))) - {i for lines in groups.values() for i in lines}
    left_pred = set(range(len(norm_pred))) - {j for key in groups for j in key}
    if left_pred and left_gt:
        gts, preds = list(left_gt), list(left_pred)
        distance = distance_ratio if rules.hybrid_match else Levenshtein.distance
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


def merge_duplicates(entries: list[Entry], n_gt: int, rules: Rules) -> list[Group]:
    """``merge_duplicates_add_unmatched``: one row per prediction key (its lines in entry order,
    the first entry's edit), then (v1.0 only) the entries without prediction, then a row with
    edit 1 for every line not in a key-row (in v1.0 repeating those entries: the
    duplicated-row quirk)."""
    rows: list[Group] = []
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
