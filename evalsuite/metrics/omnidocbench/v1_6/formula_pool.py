"""OmniDocBench v1.6's display-formula step, what its candidate matchings read and build: the
pool of predicted formulas (``_build_formula_candidate_pool``), the ground-truth and predicted
lines (``_prepare_formula_candidate_inputs``), the row of one ground-truth line
(``_build_formula_match_entry``), and the predictions' variants the candidates are also tried
on: multi-line predictions cut into runs of their rows
(``_build_formula_partitioned_pred_candidates``) and logic-brace ``cases`` blocks rewritten
(``normalize_logic_brace_formula``). ``End2EndDataset`` of ``src/dataset/end2end_dataset.py``,
opendatalab/OmniDocBench at 9dc1dec, quirks included; the matchings and the choice among them
are :mod:`.formula_match`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from evalsuite.metrics.omnidocbench.common.ground_truth import TEXT_CATEGORIES
from evalsuite.metrics.omnidocbench.v1_6.normalize import (
    normalize_formula,
    normalize_text,
    strip_formula_delimiters,
)
from evalsuite.metrics.omnidocbench.v1_6.quick import (
    normalised_edit,
    split_gt_items,
    split_pred_items,
)
from evalsuite.metrics.omnidocbench.v1_6.split import (
    ENV_START,
    LOGIC_MARKER,
    alignment_cells,
    env_end,
    latex_rows,
)

__all__ = [
    "GroundTruth",
    "Lines",
    "Prepared",
    "Row",
    "build_formula_candidate_pool",
    "ground_truth",
    "joined_norm",
    "match_entry",
    "normalize_logic_brace_formula",
    "partitioned_predictions",
    "pred_type",
    "prepare",
    "seq_type",
    "with_formula_types",
    "with_sources",
]

Row = dict[str, Any]

_RESCUED = ("text_formula", "image_formula", "formula_rescue", "table_formula_rescue")
_MAX_PARTITIONS = 128
_MAX_PARTITION_LINES = 8
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


def pred_type(item: Mapping) -> str:
    """The row type of a prediction: its fine category, else category, else
    ``equation_isolated``; rescued formulas are ``equation_isolated``."""
    kind = item.get("fine_category_type") or item.get("category_type") or "equation_isolated"
    return "equation_isolated" if kind in _RESCUED else kind


def with_formula_types(rows: Iterable[Row]) -> list[Row]:
    """``_normalize_formula_match_categories``: copies, rescued prediction types made
    ``equation_isolated``."""
    return [row | {"pred_category_type": "equation_isolated"}
            if row.get("pred_category_type") in _RESCUED else dict(row) for row in rows]


def with_sources(items: Iterable[Mapping]) -> list[dict]:
    """Copies carrying ``source_formula_key`` (their signature, unless already set)."""
    return [{"source_formula_key": _signature(item)} | dict(item) for item in items]


def _reading_order(items: Iterable[dict]) -> list[dict]:
    """By start, inline formulas after display ones at the same start, then by end."""
    return sorted(items, key=lambda item: (_range(item)[0], pred_type(item) == "equation_inline",
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


class Lines(NamedTuple):
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


class GroundTruth(NamedTuple):
    """The ground-truth side of ``get_gt_pred_lines``, made once per search: the formulas as
    given, split into rows (``items``), and the lines with a non-empty text and
    normalisation."""

    formula: list[dict]
    items: list[dict]
    lines: list[str]
    norm: list[str]
    types: list[str]


def ground_truth(gt_formula: list[dict]) -> GroundTruth:
    """The ground truth of a search: the formulas split into rows, and a line per row with a
    ``content`` (normalised as text for ``text_all``, else as it is), a text category's
    ``text`` or a display formula's ``latex``, when both strings are non-empty."""
    items = split_gt_items(gt_formula)
    found = []
    for item in items:
        kind = item.get("fine_category_type") or item["category_type"]
        if item.get("content"):
            content = str(item["content"])
            norm = (normalize_text(content) if item["category_type"] == "text_all"
                    else item["content"])
        elif item["category_type"] in TEXT_CATEGORIES:
            content = str(item["text"])
            norm = normalize_text(content)
        elif item["category_type"] == "equation_isolated":
            content = str(item["latex"])
            norm = normalize_formula(content)
        else:
            continue
        if content and norm:
            found.append((content, norm, kind))
    return GroundTruth(gt_formula, items, [line[0] for line in found],
                       [line[1] for line in found], [line[2] for line in found])


def _lines(truth: GroundTruth, pred_items: list[dict]) -> Lines:
    pred = []
    for item in pred_items:
        content = str(item["content"])
        kind = item["category_type"]
        norm = (normalize_text(content) if kind == "text_all" else
                normalize_formula(content) if kind == "equation_isolated" else content)
        if content and norm:
            pred.append((content, norm))
    return Lines(truth.lines, truth.norm, truth.types, [p[0] for p in pred],
                 [p[1] for p in pred], truth.items, pred_items)


class Prepared(NamedTuple):
    """``_prepare_formula_candidate_inputs``: the predictions with sources in reading order
    (``raw``), split into rows or not (``ordered``), and the lines."""

    raw: list[dict]
    ordered: list[dict]
    lines: Lines

    @property
    def gt_count(self) -> int:
        return len(self.lines.gt)

    @property
    def pred_count(self) -> int:
        return len(self.lines.pred)


def prepare(truth: GroundTruth, pred_formula: Iterable[Mapping],
            split_pred: bool) -> Prepared:
    """The inputs of one candidate: ``pred_formula`` with sources in reading order, split into
    rows when ``split_pred``, and the lines of both sides."""
    raw = _reading_order(with_sources(pred_formula))
    ordered = split_pred_items(raw) if split_pred else raw
    return Prepared(raw, ordered, _lines(truth, ordered))


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


def joined_norm(lines: Lines, seq: Sequence[int]) -> str:
    """The normalised predictions ``seq`` joined with spaces, stripped."""
    return " ".join(lines.norm_pred[index] for index in seq).strip()


def seq_type(lines: Lines, seq: Sequence[int]) -> str:
    """The row type of the predictions ``seq``: ``equation_isolated`` for several, else the
    one's :func:`pred_type`."""
    return "equation_isolated" if len(seq) >= 2 else pred_type(lines.pred_items[seq[0]])


def match_entry(prepared: Prepared, gt_index: int, img_name: str, seq: Sequence[int] | None) -> Row:
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
    norm_pred = joined_norm(lines, seq)
    parts = [lines.pred[index] for index in seq]
    return row | {
        "pred_idx": seq, "pred": _merged_content(parts) if len(seq) >= 2 else parts[0],
        "pred_position": _plain(lines.pred_items[seq[0]]["position"][0]),
        "norm_pred": norm_pred, "pred_category_type": seq_type(lines, seq),
        "edit": normalised_edit(lines.norm_gt[gt_index], norm_pred),
    }


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


def partitioned_predictions(pred_formula: Sequence[Mapping]) -> list[list[dict]]:
    """``_build_formula_partitioned_pred_candidates``: the predictions with each multi-line
    one (2 to 8 rows) cut into runs of its rows, every combination (none when no prediction
    splits or when there would be more than 128)."""
    options: list[list[list[dict]]] = []
    total = 1
    splits = False
    for item in _reading_order(with_sources(pred_formula)):
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

