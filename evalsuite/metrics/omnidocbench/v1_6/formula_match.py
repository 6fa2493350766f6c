"""OmniDocBench v1.6's display-formula step of the page: the ground-truth formulas re-matched to
the pool's predictions (:mod:`.formula_pool`) by the best of several candidate matchings
(``_match_display_formula_candidates``) and the CDM variants of each row
(``_attach_formula_cdm_surrogates``): ``End2EndDataset`` of ``src/dataset/end2end_dataset.py``,
opendatalab/OmniDocBench at 9dc1dec, with ``configs/end2end.yaml``'s settings, quirks included.

Candidates (each a complete set of rows, one per ground-truth formula line, when required):

- ``current_match``: the display-formula rows of the page's text match;
- ``quick_unsplit``: the quick match on formulas, predictions not split (:mod:`.quick`);
- ``hungarian_unsplit``: a one-to-one assignment minimising the summed edit (unmatched: 1);
- ``dp_unsplit`` (``_allow_gaps``): an order-keeping dynamic programme where a ground-truth line
  takes a run of predictions (joined in an ``array``), with up to 1-2 skipped ones when gaps
  are allowed; skipping a line or a prediction costs 1;
- ``split_hungarian``: the assignment again for every way of cutting each multi-line prediction
  into runs of its rows (at most 128 ways, 8 rows);
- ``split_dp`` (``_allow_gaps``): the programme on the predictions split into rows;
- ``logic_norm_*``: the above on predictions whose ``cases`` blocks with logic markers are
  rewritten as ``\\left\\{ \\begin{array}{l} … \\end{array} \\right.``
  (:func:`.formula_pool.normalize_logic_brace_formula`).

The best candidate has the smallest (summed edit, character-weighted edit, predictions left
unused, mean edit, fewer logic-brace rewrites last, unmatched ground truth), floats compared with
a 1e-12 tolerance, the first one winning ties.

Deviations: none in results. Officially the quick match runs under a time limit; nothing here
times out, which is the branch taken when the official one does not. The official candidate
helpers that the page step never calls at 9dc1dec (the one-formula merge candidate, the
formula-only fallback with its multi-line replacement blocks, the visual ranking with its
position penalty) are left out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.omnidocbench.v1_6.cdm_variants import (
    build_matrix_cdm_variants,
    sanitize_formula_candidate,
)
from evalsuite.metrics.omnidocbench.v1_6.formula_pool import (
    GroundTruth,
    Prepared,
    Row,
    ground_truth,
    joined_norm,
    match_entry,
    normalize_logic_brace_formula,
    partitioned_predictions,
    pred_type,
    prepare,
    seq_type,
    with_formula_types,
    with_sources,
)
from evalsuite.metrics.omnidocbench.v1_6.quick import match_quick, normalised_edit

__all__ = [
    "QuickMatch",
    "attach_formula_cdm_surrogates",
    "match_display_formula_candidates",
]

QuickMatch = Callable[..., list[Row]]
"""``match_quick(gt_items, pred_items, line_type, img_name, split_pred_formula=...)``."""

_FORMULA_ROW_TYPES = ("", "equation_inline", "equation_isolated")
_NO_PREDICTION = ([""], "")
_TIE = 1e-12
_CJK = re.compile(r"[\u4e00-\u9fff]")
_SURROGATE_HINTS = ("=", "≈", "≠", "≤", "≥", "÷", "×", "+", "-", "/", "%", "^", "_", "\\frac",
                    "\\div", "\\times", "\\sum", "\\int", "\\(", "\\)", "\\[", "\\]", "$")


# --- assignment ------------------------------------------------------------------------------


def _hungarian_rows(prepared: Prepared, img_name: str) -> list[Row]:
    """``_build_display_formula_hungarian_candidate``: one prediction per ground-truth line at
    most, minimising the summed edit (a line left alone costs 1)."""
    n_gt, n_pred = prepared.gt_count, prepared.pred_count
    if n_gt <= 0:
        return []
    if n_pred <= 0:
        return [match_entry(prepared, index, img_name, None) for index in range(n_gt)]
    cost = np.ones((n_gt + n_pred, n_gt + n_pred), dtype=float)
    cost[n_gt:, n_pred:] = 0.0
    for i, norm_gt in enumerate(prepared.lines.norm_gt):
        for j, norm_pred in enumerate(prepared.lines.norm_pred):
            cost[i, j] = normalised_edit(norm_gt, norm_pred)
    assignment = dict(zip(*linear_sum_assignment(cost), strict=True))
    return [match_entry(prepared, i, img_name, [assignment[i]] if assignment[i] < n_pred else None)
            for i in range(n_gt)]


# --- dynamic programme -----------------------------------------------------------------------


def _max_merge(n_gt: int, n_pred: int) -> int:
    """``_resolve_formula_candidate_max_merge``: how many predictions one line may take."""
    if n_pred <= 0:
        return 0
    if n_gt <= 1:
        return min(n_pred, 10)
    return min(n_pred, 12 if abs(n_gt - n_pred) >= 2 else 10)


def _runs(n_pred: int, start: int, max_items: int, max_span: int,
          max_skips: int) -> list[tuple[int, ...]]:
    """``_enumerate_formula_merge_sequences``: the increasing index runs from ``start``, depth
    first, of at most ``max_items`` indices below ``start + max_span``, skipping at most
    ``max_skips`` indices in all."""
    end = min(n_pred, start + max_span)
    runs: list[tuple[int, ...]] = []

    def extend(run: tuple[int, ...], skips_left: int) -> None:
        runs.append(run)
        if len(run) >= max_items:
            return
        for following in range(run[-1] + 1, min(end, run[-1] + 2 + skips_left)):
            extend((*run, following), skips_left - (following - run[-1] - 1))

    if start < n_pred:
        extend((start,), max_skips)
    return runs


def _mergeable(prepared: Prepared, seq: Sequence[int]) -> bool:
    """``_can_merge_formula_sequence``: rows of one prediction, or a gapless run of display
    formulas."""
    items = prepared.lines.pred_items
    if len({items[index].get("source_formula_key") for index in seq}) <= 1:
        return True
    return seq[-1] - seq[0] + 1 == len(seq) and all(
        pred_type(items[index]) == "equation_isolated" for index in seq)


_State = tuple[float, int, int, int]  # (summed edit, character edits, summed lengths, inline hits)


def _better_state(new: _State, old: _State | None) -> bool:
    """Smaller summed edit; on a tie (1e-12) the smaller character-weighted edit (a state with
    lengths beating one without), then fewer inline hits."""
    if old is None or new[0] + _TIE < old[0]:
        return True
    if new[0] > old[0] + _TIE:
        return False
    if new[2] > 0 and old[2] > 0:
        left, right = new[1] * old[2], old[1] * new[2]
        if left != right:
            return left < right
    elif new[2] > 0 or old[2] > 0:
        return new[2] > 0
    return new[3] < old[3]


def _dp_rows(prepared: Prepared, img_name: str, allow_gaps: bool) -> list[Row] | None:
    """``_build_display_formula_dp_candidate``: the order-keeping matching of least summed
    edit where a line takes a run of predictions (:func:`_runs`, :func:`_mergeable`) and a line
    or prediction left alone costs 1; None without lines or predictions."""
    n_gt, n_pred = prepared.gt_count, prepared.pred_count
    if n_gt <= 0 or n_pred <= 0:
        return None
    lines = prepared.lines
    max_merge = _max_merge(n_gt, n_pred)
    max_span = min(n_pred, max_merge + 2) if allow_gaps else max_merge
    # officially also 1 with rescued predictions, whose count is always 0 (their type is mapped
    # to equation_isolated before it is counted)
    max_skips = 0
    if allow_gaps:
        gap = abs(n_gt - n_pred)
        max_skips = 2 if gap >= 3 else 1 if gap >= 1 or n_pred >= 4 else 0
    segments = [  # the runs a line may take (the official test inside the loop, done once)
        [(seq, norm, seq_type(lines, seq))
         for seq in _runs(n_pred, start, max_merge, max_span, max_skips)
         if _mergeable(prepared, seq) and (norm := joined_norm(lines, seq))]
        for start in range(n_pred)
    ]
    best: list[list[_State | None]] = [[None] * (n_pred + 1) for _ in range(n_gt + 1)]
    parent: list[list[tuple | None]] = [[None] * (n_pred + 1) for _ in range(n_gt + 1)]
    best[0][0] = (0.0, 0, 0, 0)

    def relax(i: int, j: int, state: _State, step: tuple) -> None:
        if _better_state(state, best[i][j]):
            best[i][j], parent[i][j] = state, step

    for i in range(n_gt + 1):
        for j in range(n_pred + 1):
            state = best[i][j]
            if state is None:
                continue
            skipped = (state[0] + 1.0, state[1], state[2], state[3])
            if j < n_pred:
                relax(i, j + 1, skipped, (i, j, None))
            if i >= n_gt:
                continue
            relax(i + 1, j, skipped, (i, j, None))
            if j >= n_pred:
                continue
            norm_gt = lines.norm_gt[i]
            for seq, norm_pred, kind in segments[j]:
                upper = max(len(norm_gt), len(norm_pred))
                relax(i + 1, seq[-1] + 1, (
                    state[0] + normalised_edit(norm_gt, norm_pred),
                    state[1] + (Levenshtein.distance(norm_gt, norm_pred) if upper > 0 else 0),
                    state[2] + upper,
                    state[3] + (kind == "equation_inline"),
                ), (i, j, seq))
    rows = []
    i, j = n_gt, n_pred
    while i > 0 or j > 0:
        prev_i, prev_j, seq = parent[i][j]
        if prev_i != i:  # a line matched or skipped (a skipped prediction makes no row)
            rows.append(match_entry(prepared, prev_i, img_name, seq))
        i, j = prev_i, prev_j
    return rows[::-1]


# --- candidates on split and rewritten predictions -------------------------------------------


class _Candidate(NamedTuple):
    name: str
    rows: list[Row]
    pred_count: int
    pred_items: list[dict]
    raw_pred_count: int
    logic_rewrites: int = 0


def _split_hungarian(truth: GroundTruth, pred_formula: Sequence[Mapping],
                     img_name: str) -> list[_Candidate]:
    """``_build_formula_split_hungarian_candidates``: the assignment for each cut of the
    multi-line predictions, repeats (same positions, predictions and rounded edits) dropped."""
    candidates = []
    seen = set()
    for predictions in partitioned_predictions(pred_formula):
        prepared = prepare(truth, predictions, split_pred=False)
        rows = _hungarian_rows(prepared, img_name)
        if not rows:
            continue
        key = tuple((tuple(row.get("gt_position") or []), tuple(row.get("pred_idx") or []),
                     round(float(row.get("edit", 1)), 6)) for row in rows)
        if key in seen:
            continue
        seen.add(key)
        candidates.append(_Candidate("split_hungarian", with_formula_types(rows),
                                     len(prepared.raw), prepared.raw, len(pred_formula)))
    return candidates


def _split_dp(truth: GroundTruth, pred_formula: Sequence[Mapping],
              img_name: str) -> list[_Candidate]:
    """``_build_formula_split_dp_candidates``: the dynamic programme on the predictions split
    into rows, when some prediction splits."""
    prepared = prepare(truth, pred_formula, split_pred=True)
    if len(prepared.ordered) <= len(prepared.raw):
        return []
    candidates = []
    for name, allow_gaps in (("split_dp", False), ("split_dp_allow_gaps", True)):
        rows = _dp_rows(prepared, img_name, allow_gaps)
        if rows:
            candidates.append(_Candidate(name, with_formula_types(rows), len(prepared.ordered),
                                         prepared.ordered, len(prepared.raw)))
    return candidates


def _logic_brace_candidates(truth: GroundTruth, pred_formula: Sequence[Mapping], img_name: str,
                            quick_match: QuickMatch) -> list[_Candidate]:
    """``_build_logic_brace_normalized_formula_candidates``: the candidates again on the
    predictions with rewritten logic braces (none when no display prediction changes); the
    rewritten predictions keep the source key of their original."""
    predictions = with_sources(pred_formula)
    rewrites = 0
    for item in predictions:
        if item.get("category_type") == "equation_isolated":
            content = str(item.get("content", ""))
            if (rewritten := normalize_logic_brace_formula(content)) != content:
                item["content"] = rewritten
                rewrites += 1
    if rewrites <= 0:
        return []
    return [candidate._replace(name="logic_norm_" + candidate.name, logic_rewrites=rewrites)
            for candidate in [*_unsplit_candidates(truth, predictions, img_name, quick_match),
                              *_split_hungarian(truth, predictions, img_name),
                              *_split_dp(truth, predictions, img_name)]]


# --- the search ------------------------------------------------------------------------------


def _complete(rows: Sequence[Row] | None, expected: int) -> bool:
    """``_is_complete_formula_candidate_rows``: one row per ground-truth line (distinct single
    indices), predictions of formula types only; always true without ground truth."""
    if expected <= 0:
        return True
    if not rows or len(rows) != expected:
        return False
    seen = set()
    for row in rows:
        gt_idx = row.get("gt_idx", [])
        if not isinstance(gt_idx, list) or len(gt_idx) != 1 or gt_idx[0] in ("", None):
            return False
        if gt_idx[0] in seen or row.get("pred_category_type", "") not in _FORMULA_ROW_TYPES:
            return False
        seen.add(gt_idx[0])
    return len(seen) == expected


def _quick_rows(truth: GroundTruth, pred_formula: list[dict], img_name: str,
                quick_match: QuickMatch) -> list[Row]:
    """``_build_formula_quick_candidate``: the quick match on formulas, predictions not split,
    rows without ground truth dropped."""
    rows = quick_match(truth.formula, pred_formula, "formula", img_name, split_pred_formula=False)
    return with_formula_types(row for row in rows if row.get("gt_idx") != [""])


def _unsplit_candidates(truth: GroundTruth, pred_formula: list[dict], img_name: str,
                        quick_match: QuickMatch, current: Sequence[Row] | None = None,
                        ) -> list[_Candidate]:
    """The complete ones (one row per ground-truth line) of: the current rows (when given),
    the quick match, the assignment and the dynamic programmes, on the predictions as they
    are (not split)."""
    prepared = prepare(truth, pred_formula, split_pred=False)
    found: list[tuple[str, list[Row]]] = []
    if current is not None:
        found.append(("current_match", with_formula_types(
            row for row in current if row.get("gt_idx") != [""])))
    found.append(("quick_unsplit", _quick_rows(truth, pred_formula, img_name, quick_match)))
    found.append(("hungarian_unsplit", with_formula_types(_hungarian_rows(prepared, img_name))))
    for name, allow_gaps in (("dp_unsplit", False), ("dp_unsplit_allow_gaps", True)):
        rows = _dp_rows(prepared, img_name, allow_gaps)
        found.append((name, with_formula_types(rows or [])))
    n_raw = len(prepared.raw)
    return [_Candidate(name, rows, n_raw, prepared.raw, n_raw)
            for name, rows in found if _complete(rows, prepared.gt_count)]


def _stats(rows: Sequence[Row]) -> tuple[float | None, float | None, int]:
    """From ``_formula_match_page_stats``: (character-weighted edit over matched rows, mean
    edit, unmatched ground-truth rows); (None, None, 0) without ground-truth rows."""
    rows = [row for row in rows if row.get("gt_idx") != [""]]
    if not rows:
        return None, None, 0
    edits = upper_total = 0
    for row in rows:
        if row.get("pred_idx", []) in _NO_PREDICTION:
            continue
        norm_gt, norm_pred = str(row.get("norm_gt", "") or ""), str(row.get("norm_pred", "") or "")
        upper = max(len(norm_gt), len(norm_pred))
        upper_total += upper
        if upper > 0:
            edits += Levenshtein.distance(norm_gt, norm_pred)
    mean = sum(float(row.get("edit", 1)) for row in rows) / len(rows)
    unmatched = sum(1 for row in rows if row.get("pred_idx") in _NO_PREDICTION)
    return (edits / upper_total) if upper_total else 0, mean, unmatched


def _as_float(value: Any) -> float:
    if value is None:
        return float("inf")
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("inf")


def _total_key(candidate: _Candidate) -> tuple:
    """``_formula_candidate_total_key``: (summed edit, weighted edit, predictions unused, mean
    edit, minus the logic-brace rewrites, unmatched ground truth); a prediction is used when a
    row's ``pred_idx`` points at it in the candidate's predictions (by source)."""
    rows = [row for row in candidate.rows if row.get("gt_idx") != [""]]
    total = sum(float(row.get("edit", 1)) for row in rows)
    used = set()
    for row in candidate.rows:
        pred_idx = row.get("pred_idx", [])
        if pred_idx in _NO_PREDICTION:
            continue
        for index in pred_idx:
            if index in ("", None):
                continue
            try:
                item = candidate.pred_items[int(index)]
            except (TypeError, ValueError, IndexError):
                continue
            if (source := item.get("source_formula_key")) is not None:
                used.add(source)
    weighted, mean, unmatched = _stats(candidate.rows)
    return (total, _as_float(weighted), max(0, candidate.raw_pred_count - len(used)),
            _as_float(mean), -candidate.logic_rewrites, unmatched)


def _better(candidate_key: tuple, best_key: tuple) -> bool:
    """Lexicographically smaller, floats within 1e-12 counting as equal."""
    for new, old in zip(candidate_key, best_key, strict=True):
        if isinstance(new, float) or isinstance(old, float):
            if new + _TIE < old:
                return True
            if new > old + _TIE:
                return False
        elif new != old:
            return new < old
    return False


def _default_quick_match() -> QuickMatch:

    return match_quick


def match_display_formula_candidates(
    gt_formula: list[dict],
    pred_formula: list[dict],
    current_matches: list[Row],
    img_name: str,
    quick_match: QuickMatch | None = None,
) -> list[Row]:
    """``_match_display_formula_candidates``: the rows of the best candidate matching of the
    ground-truth display formulas (sorted by order) to the pool's predictions (module
    docstring), ``[]`` when no candidate is complete. ``quick_match`` replaces :mod:`.quick`'s
    ``match_quick`` (tests replay recorded official calls through it)."""
    quick_match = quick_match or _default_quick_match()
    truth = ground_truth(gt_formula)
    candidates = [
        *_unsplit_candidates(truth, pred_formula, img_name, quick_match, current_matches),
        *_split_hungarian(truth, pred_formula, img_name),
        *_split_dp(truth, pred_formula, img_name),
        *_logic_brace_candidates(truth, pred_formula, img_name, quick_match),
    ]
    best = best_key = None
    for candidate in candidates:
        key = _total_key(candidate)
        if best is None or _better(key, best_key):
            best, best_key = candidate, key
    return list(best.rows) if best else []


# --- CDM surrogates --------------------------------------------------------------------------


def _text_surrogate(row: Row) -> bool:
    """``_should_attach_formula_cdm_surrogate``: a short text-typed prediction (≤ 240
    characters, spaces collapsed) with Chinese on either side and edit ≤ 0.35 is also scored
    by CDM when it has a formula hint (an operator, ``\\frac``, a delimiter, …) or edit ≤ 0.28
    and ≤ 80 characters."""
    if row.get("pred_category_type", "") in _FORMULA_ROW_TYPES:
        return False
    pred = " ".join(str(row.get("pred", "") or "").split())
    if not pred or len(pred) > 240:
        return False
    if not (_CJK.search(str(row.get("gt", "") or "")) or _CJK.search(pred)):
        return False
    try:
        edit = float(row.get("edit", 1))
    except (TypeError, ValueError):
        return False
    if edit > 0.35:
        return False
    return any(hint in pred for hint in _SURROGATE_HINTS) or (edit <= 0.28 and len(pred) <= 80)


def attach_formula_cdm_surrogates(matches: Iterable[Row]) -> list[Row]:
    """``_attach_formula_cdm_surrogates``: copies of the rows with ``gt_cdm`` (the ground truth
    for CDM) and ``pred_cdm_alt`` (a cleaned prediction) from
    :func:`.cdm_variants.build_matrix_cdm_variants` when not empty; a text prediction
    scored by CDM (:func:`_text_surrogate`) also gets ``pred_cdm`` (itself, stripped), a
    ``pred_cdm_alt`` (:func:`.cdm_variants.sanitize_formula_candidate`) when it has none
    and that differs, and ``gt_cdm`` (the ground truth when not set)."""
    out = []
    for row in matches:
        row = dict(row)
        gt_cdm, pred_alt = build_matrix_cdm_variants(row.get("gt", ""), row.get("pred", ""))
        if gt_cdm:
            row["gt_cdm"] = gt_cdm
        if pred_alt:
            row["pred_cdm_alt"] = pred_alt
        if _text_surrogate(row):
            raw = str(row.get("pred", "") or "").strip()
            if raw:
                alternative = sanitize_formula_candidate(row.get("pred", ""))
                row["pred_cdm"] = raw
                if alternative and alternative != raw and not row.get("pred_cdm_alt"):
                    row["pred_cdm_alt"] = alternative
                row["gt_cdm"] = row.get("gt_cdm", row.get("gt", ""))
        out.append(row)
    return out
