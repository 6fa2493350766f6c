"""OmniDocBench v1.6's display-formula step of the page: the predicted formulas gathered
(``_build_formula_candidate_pool``), the ground-truth formulas re-matched by the best of several
candidate matchings (``_match_display_formula_candidates``) and the CDM variants of each row
(``_attach_formula_cdm_surrogates``): ``End2EndDataset`` of ``src/dataset/end2end_dataset.py``,
opendatalab/OmniDocBench at 9dc1dec, with ``configs/end2end.yaml``'s settings, quirks included.

Candidates (each a complete set of rows, one per ground-truth formula line, when required):

- ``current_match``: the display-formula rows of the page's text match;
- ``quick_unsplit``: the quick match on formulas, predictions not split (v16_quick);
- ``hungarian_unsplit``: a one-to-one assignment minimising the summed edit (unmatched: 1);
- ``dp_unsplit`` (``_allow_gaps``): an order-keeping dynamic programme where a ground-truth line
  takes a run of predictions (joined in an ``array``), with up to 1-2 skipped ones when gaps
  are allowed; skipping a line or a prediction costs 1;
- ``split_hungarian``: the assignment again for every way of cutting each multi-line prediction
  into runs of its rows (at most 128 ways, 8 rows);
- ``split_dp`` (``_allow_gaps``): the programme on the predictions split into rows;
- ``logic_norm_*``: the above on predictions whose ``cases`` blocks with logic markers are
  rewritten as ``\\left\\{ \\begin{array}{l} … \\end{array} \\right.``
  (:func:`normalize_logic_brace_formula`).

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

import itertools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.omnidocbench.v16_cdm_variants import (
    build_matrix_cdm_variants,
    sanitize_formula_candidate,
)
from evalsuite.metrics.omnidocbench.v16_normalize import (
    normalize_formula_v16,
    normalize_text_v16,
    strip_formula_delimiters,
)
from evalsuite.metrics.omnidocbench.v16_quick import (
    match_quick_v16,
    normalised_edit,
    split_gt_items,
    split_pred_items,
)
from evalsuite.metrics.omnidocbench.v16_split import (
    ENV_START,
    LOGIC_MARKER,
    alignment_cells,
    env_end,
    latex_rows,
)

__all__ = [
    "QuickMatch",
    "attach_formula_cdm_surrogates",
    "build_formula_candidate_pool",
    "match_display_formula_candidates",
    "normalize_logic_brace_formula",
]

Row = dict[str, Any]
QuickMatch = Callable[..., list[Row]]
"""``match_quick_v16(gt_items, pred_items, line_type, img_name, split_pred_formula=...)``."""

_RESCUED = ("text_formula", "image_formula", "formula_rescue", "table_formula_rescue")
_FORMULA_ROW_TYPES = ("", "equation_inline", "equation_isolated")
_NO_PREDICTION = ([""], "")
_TIE = 1e-12
_MAX_PARTITIONS = 128
_MAX_PARTITION_LINES = 8
_CJK = re.compile(r"[\u4e00-\u9fff]")
_SURROGATE_HINTS = ("=", "≈", "≠", "≤", "≥", "÷", "×", "+", "-", "/", "%", "^", "_", "\\frac",
                    "\\div", "\\times", "\\sum", "\\int", "\\(", "\\)", "\\[", "\\]", "$")
_TEXT_CATEGORIES = (
    "text_block", "title", "code_txt", "code_txt_caption", "reference", "equation_caption",
    "figure_caption", "figure_footnote", "table_caption", "table_footnote", "code_algorithm",
    "code_algorithm_caption", "header", "footer", "page_footnote", "page_number",
)
_CASES_TRAILING_CONTEXT = 200


# --- items -----------------------------------------------------------------------------------


def _range(item: Mapping) -> tuple[Any, Any]:
    """``_get_formula_range``: (start, end) of ``position``, (start, start) for a short one."""
    position = item.get("position", [""])
    if isinstance(position, list) and len(position) >= 2:
        return position[0], position[1]
    start = position[0] if position else ""
    return start, start


def _signature(item: Mapping) -> tuple:
    """(start, end, content, fine category, category): what makes a prediction unique."""
    start, end = _range(item)
    return (start, end, item.get("content", ""), item.get("fine_category_type", ""),
            item.get("category_type", ""))


def _pred_type(item: Mapping) -> str:
    """The row type of a prediction: its fine category, else category, else
    ``equation_isolated``; rescued formulas are ``equation_isolated``."""
    kind = item.get("fine_category_type") or item.get("category_type") or "equation_isolated"
    return "equation_isolated" if kind in _RESCUED else kind


def _with_formula_types(rows: Iterable[Row]) -> list[Row]:
    """``_normalize_formula_match_categories``: copies, rescued prediction types made
    ``equation_isolated``."""
    return [row | {"pred_category_type": "equation_isolated"}
            if row.get("pred_category_type") in _RESCUED else dict(row) for row in rows]


def _with_sources(items: Iterable[Mapping]) -> list[dict]:
    """Copies carrying ``source_formula_key`` (their signature, unless already set)."""
    return [{"source_formula_key": _signature(item)} | dict(item) for item in items]


def _reading_order(items: Iterable[dict]) -> list[dict]:
    """By start, inline formulas after display ones at the same start, then by end."""
    return sorted(items, key=lambda item: (_range(item)[0], _pred_type(item) == "equation_inline",
                                           _range(item)[1]))


def build_formula_candidate_pool(pred_dataset: Mapping[str, Sequence[dict]]) -> list[dict]:
    """``_build_formula_candidate_pool``: copies of the predicted display formulas, then of the
    rescued ones (``formula_rescue``, made ``equation_isolated`` with fine category
    ``formula_rescue`` unless they have one); repeats (same :func:`_signature`) dropped."""
    pool: list[dict] = []
    seen: set[tuple] = set()
    rescued = [item | {"category_type": "equation_isolated",
                       "fine_category_type": item.get("fine_category_type") or "formula_rescue"}
               for item in pred_dataset.get("formula_rescue", [])]
    for item in [*(dict(item) for item in pred_dataset.get("equation_isolated", [])), *rescued]:
        if (key := _signature(item)) not in seen:
            seen.add(key)
            pool.append(item)
    return pool


# --- row splits and lines ----------------------------------------------------------------------


class _Lines(NamedTuple):
    """``get_gt_pred_lines`` without a line type: the lines with a non-empty text and
    normalisation (indices into these), and the items as given (not filtered: officially
    indexed with the same indices)."""

    gt: list[str]
    norm_gt: list[str]
    gt_types: list[str]
    pred: list[str]
    norm_pred: list[str]
    gt_items: list[dict]
    pred_items: list[dict]


class _GroundTruth(NamedTuple):
    """The ground-truth side of ``get_gt_pred_lines``, made once per search: the formulas as
    given, split into rows (``items``), and the lines with a non-empty text and
    normalisation."""

    formula: list[dict]
    items: list[dict]
    lines: list[str]
    norm: list[str]
    types: list[str]


def _ground_truth(gt_formula: list[dict]) -> _GroundTruth:
    items = split_gt_items(gt_formula)
    found = []
    for item in items:
        kind = item.get("fine_category_type") or item["category_type"]
        if item.get("content"):
            content = str(item["content"])
            norm = (normalize_text_v16(content) if item["category_type"] == "text_all"
                    else item["content"])
        elif item["category_type"] in _TEXT_CATEGORIES:
            content = str(item["text"])
            norm = normalize_text_v16(content)
        elif item["category_type"] == "equation_isolated":
            content = str(item["latex"])
            norm = normalize_formula_v16(content)
        else:
            continue
        if content and norm:
            found.append((content, norm, kind))
    return _GroundTruth(gt_formula, items, [line[0] for line in found],
                        [line[1] for line in found], [line[2] for line in found])


def _lines(truth: _GroundTruth, pred_items: list[dict]) -> _Lines:
    pred = []
    for item in pred_items:
        content = str(item["content"])
        kind = item["category_type"]
        norm = (normalize_text_v16(content) if kind == "text_all" else
                normalize_formula_v16(content) if kind == "equation_isolated" else content)
        if content and norm:
            pred.append((content, norm))
    return _Lines(truth.lines, truth.norm, truth.types, [p[0] for p in pred],
                  [p[1] for p in pred], truth.items, pred_items)


class _Prepared(NamedTuple):
    """``_prepare_formula_candidate_inputs``: the predictions with sources in reading order
    (``raw``), split into rows or not (``ordered``), and the lines."""

    raw: list[dict]
    ordered: list[dict]
    lines: _Lines

    @property
    def gt_count(self) -> int:
        return len(self.lines.gt)

    @property
    def pred_count(self) -> int:
        return len(self.lines.pred)


def _prepare(truth: _GroundTruth, pred_formula: Iterable[Mapping],
             split_pred: bool) -> _Prepared:
    raw = _reading_order(_with_sources(pred_formula))
    ordered = split_pred_items(raw) if split_pred else raw
    return _Prepared(raw, ordered, _lines(truth, ordered))


# --- rows ------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    return int(value) if isinstance(value, np.integer) else value


def _merged_content(parts: Iterable[str]) -> str:
    """``_build_merged_formula_content``: the parts without delimiters, each in braces, in a
    one-column ``array``; one part alone as it is; ``""`` without parts."""
    pieces = [stripped for part in parts if (stripped := strip_formula_delimiters(str(part or "")))]
    if len(pieces) <= 1:
        return pieces[0] if pieces else ""
    rows = " \\\\ ".join("{" + piece + "}" for piece in pieces)
    return f"\\begin{{array}}{{l}} {rows} \\end{{array}}"


def _joined_norm(lines: _Lines, seq: Sequence[int]) -> str:
    return " ".join(lines.norm_pred[index] for index in seq).strip()


def _seq_type(lines: _Lines, seq: Sequence[int]) -> str:
    return "equation_isolated" if len(seq) >= 2 else _pred_type(lines.pred_items[seq[0]])


def _row(prepared: _Prepared, gt_index: int, img_name: str, seq: Sequence[int] | None) -> Row:
    """``_build_formula_match_entry``: ground-truth line ``gt_index`` with the predictions
    ``seq`` (several joined by :func:`_merged_content`), or unmatched (edit 1)."""
    lines = prepared.lines
    gt_item = lines.gt_items[gt_index]
    order = gt_item.get("order")
    row = {
        "gt_idx": [gt_index], "gt": lines.gt[gt_index],
        "gt_position": [_plain(order if order is not None else gt_item.get("position", [""])[0])],
        "norm_gt": lines.norm_gt[gt_index], "gt_category_type": lines.gt_types[gt_index],
        "gt_attribute": [gt_item.get("attribute", {})], "img_id": img_name,
    }
    if not seq:
        return row | {"pred_idx": [""], "pred": "", "pred_position": "", "norm_pred": "",
                      "pred_category_type": "", "edit": 1}
    seq = [int(index) for index in seq]
    norm_pred = _joined_norm(lines, seq)
    parts = [lines.pred[index] for index in seq]
    return row | {
        "pred_idx": seq, "pred": _merged_content(parts) if len(seq) >= 2 else parts[0],
        "pred_position": _plain(lines.pred_items[seq[0]]["position"][0]),
        "norm_pred": norm_pred, "pred_category_type": _seq_type(lines, seq),
        "edit": normalised_edit(lines.norm_gt[gt_index], norm_pred),
    }


# --- assignment ------------------------------------------------------------------------------


def _hungarian_rows(prepared: _Prepared, img_name: str) -> list[Row]:
    """``_build_display_formula_hungarian_candidate``: one prediction per ground-truth line at
    most, minimising the summed edit (a line left alone costs 1)."""
    n_gt, n_pred = prepared.gt_count, prepared.pred_count
    if n_gt <= 0:
        return []
    if n_pred <= 0:
        return [_row(prepared, index, img_name, None) for index in range(n_gt)]
    cost = np.ones((n_gt + n_pred, n_gt + n_pred), dtype=float)
    cost[n_gt:, n_pred:] = 0.0
    for i, norm_gt in enumerate(prepared.lines.norm_gt):
        for j, norm_pred in enumerate(prepared.lines.norm_pred):
            cost[i, j] = normalised_edit(norm_gt, norm_pred)
    assignment = dict(zip(*linear_sum_assignment(cost), strict=True))
    return [_row(prepared, i, img_name, [assignment[i]] if assignment[i] < n_pred else None)
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


def _mergeable(prepared: _Prepared, seq: Sequence[int]) -> bool:
    """``_can_merge_formula_sequence``: rows of one prediction, or a gapless run of display
    formulas."""
    items = prepared.lines.pred_items
    if len({items[index].get("source_formula_key") for index in seq}) <= 1:
        return True
    return seq[-1] - seq[0] + 1 == len(seq) and all(
        _pred_type(items[index]) == "equation_isolated" for index in seq)


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


def _dp_rows(prepared: _Prepared, img_name: str, allow_gaps: bool) -> list[Row] | None:
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
        [(seq, norm, _seq_type(lines, seq))
         for seq in _runs(n_pred, start, max_merge, max_span, max_skips)
         if _mergeable(prepared, seq) and (norm := _joined_norm(lines, seq))]
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
            rows.append(_row(prepared, prev_i, img_name, seq))
        i, j = prev_i, prev_j
    return rows[::-1]


# --- split predictions -----------------------------------------------------------------------


def _wrapped(content: str) -> str:
    """``_wrap_formula_candidate_content``: stripped and in ``\\[ \\]`` unless already
    delimited (``$$ $$``, ``\\[ \\]``, ``\\( \\)``)."""
    stripped = str(content or "").strip()
    if not stripped:
        return ""
    if any(stripped.startswith(left) and stripped.endswith(right)
           for left, right in (("$$", "$$"), ("\\[", "\\]"), ("\\(", "\\)"))):
        return stripped
    return f"\\[{stripped}\\]"


def _partitions(rows: list[dict]) -> list[list[list[dict]]]:
    """Every cut of ``rows`` into consecutive runs, in the order of the cut bit masks."""
    count = len(rows)
    out = []
    for mask in range(1 << (count - 1)):
        cuts = [0, *(k + 1 for k in range(count - 1) if mask & (1 << k)), count]
        out.append([rows[a:b] for a, b in itertools.pairwise(cuts)])
    return out


def _segment_item(rows: list[dict]) -> dict:
    """``_build_formula_partition_segment_item``: one row as it is, several as one display
    formula spanning them."""
    if len(rows) == 1:
        return dict(rows[0])
    return rows[0] | {
        "content": _wrapped(_merged_content(row.get("content", "") for row in rows)),
        "position": [rows[0].get("position", ["", ""])[0], rows[-1].get("position", ["", ""])[1]],
        "fine_category_type": "equation_isolated",
    }


def _partitioned_predictions(pred_formula: Sequence[Mapping]) -> list[list[dict]]:
    """``_build_formula_partitioned_pred_candidates``: the predictions with each multi-line
    one (2 to 8 rows) cut into runs of its rows, every combination (none when no prediction
    splits or when there would be more than 128)."""
    options: list[list[list[dict]]] = []
    total = 1
    splits = False
    for item in _reading_order(_with_sources(pred_formula)):
        rows = split_pred_items([item])
        if len(rows) <= 1 or len(rows) > _MAX_PARTITION_LINES:
            options.append([[dict(item)]])
            continue
        splits = True
        cuts = [[_segment_item(run) for run in partition] for partition in _partitions(rows)]
        total *= len(cuts)
        if total > _MAX_PARTITIONS:
            return []
        options.append(cuts)
    if not splits:
        return []
    return [[dict(item) for choice in combination for item in choice]
            for combination in itertools.product(*options)]


class _Candidate(NamedTuple):
    name: str
    rows: list[Row]
    pred_count: int
    pred_items: list[dict]
    raw_pred_count: int
    logic_rewrites: int = 0


def _split_hungarian(truth: _GroundTruth, pred_formula: Sequence[Mapping],
                     img_name: str) -> list[_Candidate]:
    """``_build_formula_split_hungarian_candidates``: the assignment for each cut of the
    multi-line predictions, repeats (same positions, predictions and rounded edits) dropped."""
    candidates = []
    seen = set()
    for predictions in _partitioned_predictions(pred_formula):
        prepared = _prepare(truth, predictions, split_pred=False)
        rows = _hungarian_rows(prepared, img_name)
        if not rows:
            continue
        key = tuple((tuple(row.get("gt_position") or []), tuple(row.get("pred_idx") or []),
                     round(float(row.get("edit", 1)), 6)) for row in rows)
        if key in seen:
            continue
        seen.add(key)
        candidates.append(_Candidate("split_hungarian", _with_formula_types(rows),
                                     len(prepared.raw), prepared.raw, len(pred_formula)))
    return candidates


def _split_dp(truth: _GroundTruth, pred_formula: Sequence[Mapping],
              img_name: str) -> list[_Candidate]:
    """``_build_formula_split_dp_candidates``: the dynamic programme on the predictions split
    into rows, when some prediction splits."""
    prepared = _prepare(truth, pred_formula, split_pred=True)
    if len(prepared.ordered) <= len(prepared.raw):
        return []
    candidates = []
    for name, allow_gaps in (("split_dp", False), ("split_dp_allow_gaps", True)):
        rows = _dp_rows(prepared, img_name, allow_gaps)
        if rows:
            candidates.append(_Candidate(name, _with_formula_types(rows), len(prepared.ordered),
                                         prepared.ordered, len(prepared.raw)))
    return candidates


# --- logic braces ----------------------------------------------------------------------------


def _rewrite_cases(body: str, rows: list[str], trailing: str) -> bool:
    """``_should_normalize_cases_block``: several rows, none with a top-level ``&``, and a
    logic marker in the block or in what follows it, or another multi-line environment right
    after it. (The official function's later tests can only answer yes.)"""
    if len(rows) <= 1 or any(len(alignment_cells(row)) > 1 for row in rows):
        return False
    trailing = trailing.lstrip()
    return bool(LOGIC_MARKER.search(body) or LOGIC_MARKER.search(trailing)
                or ENV_START.match(trailing))


def _rewrite_logic_braces(text: str) -> tuple[str, bool]:
    """``_normalize_logic_brace_blocks``: (text with each qualifying ``cases`` block, inner
    ones first, rewritten as a ``\\left\\{`` one-column array, whether any was)."""
    pieces: list[str] = []
    cursor = 0
    changed = False
    while cursor < len(text):
        begin = text.find("\\begin{", cursor)
        if begin < 0:
            pieces.append(text[cursor:])
            break
        pieces.append(text[cursor:begin])
        start = ENV_START.match(text[begin:])
        if not start:
            pieces.append("\\begin{")
            cursor = begin + len("\\begin{")
            continue
        env = start["env"]
        end_tag = f"\\end{{{env}}}"
        body_start = begin + start.end()
        end = env_end(text, env, body_start)
        if end < body_start:
            pieces.append(text[begin:])
            break
        body, body_changed = _rewrite_logic_braces(text[body_start:end])
        after = end + len(end_tag)
        if env == "cases" and _rewrite_cases(body, latex_rows(body),
                                             text[after : after + _CASES_TRAILING_CONTEXT]):
            pieces.append("\\left\\{ \\begin{array}{l} " + body.strip() + " \\end{array} \\right.")
            changed = True
        else:
            pieces.append(text[begin:body_start] + body + end_tag)
            changed = changed or body_changed
        cursor = after
    return "".join(pieces), changed


def normalize_logic_brace_formula(formula: str) -> str:
    """``normalize_logic_brace_formula``: ``cases`` blocks that are logic braces (several rows
    without ``&``, with a logic marker such as ``\\Rightarrow`` inside or after them, or
    followed by another multi-line environment) written as ``\\left\\{ \\begin{array}{l} …
    \\end{array} \\right.``; the formula unchanged otherwise."""
    rewritten, changed = _rewrite_logic_braces(str(formula or ""))
    return rewritten if changed else str(formula or "")


def _logic_brace_candidates(truth: _GroundTruth, pred_formula: Sequence[Mapping], img_name: str,
                            quick_match: QuickMatch) -> list[_Candidate]:
    """``_build_logic_brace_normalized_formula_candidates``: the candidates again on the
    predictions with rewritten logic braces (none when no display prediction changes); the
    rewritten predictions keep the source key of their original."""
    predictions = _with_sources(pred_formula)
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


def _quick_rows(truth: _GroundTruth, pred_formula: list[dict], img_name: str,
                quick_match: QuickMatch) -> list[Row]:
    """``_build_formula_quick_candidate``: the quick match on formulas, predictions not split,
    rows without ground truth dropped."""
    rows = quick_match(truth.formula, pred_formula, "formula", img_name, split_pred_formula=False)
    return _with_formula_types(row for row in rows if row.get("gt_idx") != [""])


def _unsplit_candidates(truth: _GroundTruth, pred_formula: list[dict], img_name: str,
                        quick_match: QuickMatch, current: Sequence[Row] | None = None,
                        ) -> list[_Candidate]:
    """The complete ones (one row per ground-truth line) of: the current rows (when given),
    the quick match, the assignment and the dynamic programmes, on the predictions as they
    are (not split)."""
    prepared = _prepare(truth, pred_formula, split_pred=False)
    found: list[tuple[str, list[Row]]] = []
    if current is not None:
        found.append(("current_match", _with_formula_types(
            row for row in current if row.get("gt_idx") != [""])))
    found.append(("quick_unsplit", _quick_rows(truth, pred_formula, img_name, quick_match)))
    found.append(("hungarian_unsplit", _with_formula_types(_hungarian_rows(prepared, img_name))))
    for name, allow_gaps in (("dp_unsplit", False), ("dp_unsplit_allow_gaps", True)):
        rows = _dp_rows(prepared, img_name, allow_gaps)
        found.append((name, _with_formula_types(rows or [])))
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

    return match_quick_v16


def match_display_formula_candidates(
    gt_formula: list[dict],
    pred_formula: list[dict],
    current_matches: list[Row],
    img_name: str,
    quick_match: QuickMatch | None = None,
) -> list[Row]:
    """``_match_display_formula_candidates``: the rows of the best candidate matching of the
    ground-truth display formulas (sorted by order) to the pool's predictions (module
    docstring), ``[]`` when no candidate is complete. ``quick_match`` replaces v16_quick's
    ``match_quick_v16`` (tests replay recorded official calls through it)."""
    quick_match = quick_match or _default_quick_match()
    truth = _ground_truth(gt_formula)
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
    :func:`.v16_cdm_variants.build_matrix_cdm_variants` when not empty; a text prediction
    scored by CDM (:func:`_text_surrogate`) also gets ``pred_cdm`` (itself, stripped), a
    ``pred_cdm_alt`` (:func:`.v16_cdm_variants.sanitize_formula_candidate`) when it has none
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
