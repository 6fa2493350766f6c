"""OmniDocBench v1.6's quick match as official row dicts (``match_gt2pred_quick`` of
``src/core/matching/match_quick.py``, opendatalab/OmniDocBench at 9dc1dec, end2end.yaml).

The dict layer around :func:`.mgam.match_lines`: ground-truth formulas split into rows
(:func:`.split.split_rows_orders`), predictions sorted by start (inline formulas last, stable)
then, when ``split_pred_formula``, their formulas split (:func:`.split.split_rows_spans`);
the kept lines (non-empty raw and normalised) normalised by kind; the rows assembled.

Quirks kept: item fields (position, category, attribute) are read at a row's *kept-line*
index in the *unfiltered* item list, as officially; several ground-truth display formulas
(or several predicted formulas) in one row of the main pass are stacked into
``\\begin{array}{l} {a} \\\\ {b} \\end{array}``; rows of the ignored-category pass are plain joins.
Deviation: no timeout fallback (see :mod:`.mgam`).
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.assignment import linear_sum_assignment
from evalsuite.metrics.omnidocbench.common.ground_truth import IGNORED_CATEGORIES, TEXT_CATEGORIES
from evalsuite.metrics.omnidocbench.common.match import MASK_COST, cost_matrix
from evalsuite.metrics.omnidocbench.v1_6.mgam import MgamLine, MgamRow, match_lines
from evalsuite.metrics.omnidocbench.v1_6.normalize import (
    normalize_formula,
    normalize_text,
    strip_formula_delimiters,
)
from evalsuite.metrics.omnidocbench.v1_6.split import split_rows_orders, split_rows_spans
from evalsuite.metrics.omnidocbench.v1_6.tables import normalize_html_table

__all__ = [
    "match_quick",
    "match_simple",
    "normalised_edit",
    "split_gt_items",
    "split_pred_items",
]

Item = dict[str, Any]

_GT_TEXT_CATEGORIES = frozenset(TEXT_CATEGORIES)


def split_gt_items(items: Iterable[Mapping[str, Any]]) -> list[Item]:
    """``split_gt_equation_arrays``: each multi-line ground-truth display formula as one item
    per row (:mod:`.split`), orders ``order + k/1000``; ``order`` is read only when it splits."""
    out: list[Item] = []
    for item in items:
        rows = (split_rows_orders(item.get("latex", ""), item.get("order"))
                if item.get("category_type") == "equation_isolated" else None)
        if rows is None:
            out.append(dict(item))
        else:
            out.extend(copy.deepcopy(dict(item)) | {"latex": latex, "order": order}
                       for latex, order in rows)
    return out


def split_pred_items(items: Iterable[Mapping[str, Any]]) -> list[Item]:
    """``split_equation_arrays``: each multi-line predicted display formula as one item per
    row (:mod:`.split`), with the row's character span in the page as position; the position is
    read only when the formula splits."""
    out: list[Item] = []
    for item in items:
        rows = (split_rows_spans(item.get("content", ""), 0)
                if item.get("category_type") == "equation_isolated" else None)
        if rows is None:
            out.append(dict(item))
            continue
        key = "position" if "position" in item else "positions"
        start = item[key][0]
        out.extend(copy.deepcopy(dict(item))
                   | {"content": content, key: [start + first, start + last]}
                   for content, (first, last) in rows)
    return out


def sort_predictions(items: Sequence[Mapping[str, Any]]) -> list[Item]:
    """``sort_by_position_skip_inline``: by start, inline formulas last, ties in input order."""
    order = sorted(range(len(items)), key=lambda k: (
        items[k].get("fine_category_type") == "equation_inline", items[k]["position"][0], k))
    return [dict(items[k]) for k in order]


def _category(item: Mapping[str, Any]) -> str:
    return item.get("fine_category_type") or item["category_type"]


def _gt_line(item: Mapping[str, Any]) -> tuple[str, str] | None:
    """(raw, normalised) line of a ground-truth item, None for an item without one."""
    if item.get("content"):
        raw = str(item["content"])
        text = item["category_type"] == "text_all"
        return raw, normalize_text(raw) if text else item["content"]
    if item["category_type"] in _GT_TEXT_CATEGORIES:
        raw = str(item["text"])
        return raw, normalize_text(raw)
    if item["category_type"] == "equation_isolated":
        raw = str(item["latex"])
        return raw, normalize_formula(raw)
    return None


def _pred_line(item: Mapping[str, Any]) -> tuple[str, str]:
    raw = str(item["content"])
    if item["category_type"] == "text_all":
        return raw, normalize_text(raw)
    if item["category_type"] == "equation_isolated":
        return raw, normalize_formula(raw)
    return raw, raw


def _stacked(parts: list[str]) -> str:
    rows = " \\\\ ".join("{" + strip_formula_delimiters(part) + "}" for part in parts)
    return "\\begin{array}{l} " + rows + " \\end{array}"


def _gt_position(item: Mapping[str, Any]) -> Any:
    return item.get("order") or item.get("position", [""])[0]


def match_quick(
    gt_items: Sequence[Mapping[str, Any]],
    pred_items: Sequence[Mapping[str, Any]],
    line_type: str,
    img_name: str,
    split_pred_formula: bool = True,
) -> list[Item]:
    """Official ``match_gt2pred_quick`` rows (``line_type`` is unused there, as officially)."""
    gts = split_gt_items(gt_items)
    preds = sort_predictions(pred_items)
    if split_pred_formula:
        preds = split_pred_items(preds)
    gt_kept = [(raw, norm, _category(item)) for item in gts
               if (line := _gt_line(item)) is not None for raw, norm in [line] if raw and norm]
    pred_kept = [(raw, norm) for raw, norm in map(_pred_line, preds) if raw and norm]
    gt_lines = [MgamLine(norm, cat) for _, norm, cat in gt_kept]
    pred_lines = [MgamLine(norm, inline=_category(preds[j]) == "equation_inline")
                  for j, (_, norm) in enumerate(pred_kept)]
    taken = _taken_by_ignored(gt_lines, pred_lines)
    return [_row(row, taken, gts, preds, gt_kept, pred_kept, img_name)
            for row in match_lines(gt_lines, pred_lines)]


def _taken_by_ignored(gt: list[MgamLine], pred: list[MgamLine]) -> set[int]:
    """Predictions the ignored-category pass takes (distance < 0.25 to an ignored line): rows
    holding one, or an ignored line, come from that pass and are not stacked."""
    ignored = [line.norm for line in gt if line.category in IGNORED_CATEGORIES]
    if not ignored or not pred:
        return set()
    costs = cost_matrix(ignored, [line.norm for line in pred])
    return {int(j) for j in np.flatnonzero((costs < MASK_COST).any(axis=0))}


def _row(row: MgamRow, taken: set[int], gts: list[Item], preds: list[Item],
         gt_kept: list[tuple[str, str, str]], pred_kept: list[tuple[str, str]],
         img_name: str) -> Item:
    gi, pj = list(row.gt_idx), list(row.pred_idx)
    gt_cat = ""
    if gi:
        cats = [gt_kept[i][2] for i in gi]
        clean = [c for c in cats if c not in IGNORED_CATEGORIES]
        gt_cat = Counter(clean or cats).most_common(1)[0][0]
    pred_cat = _category(preds[pj[0]]) if pj else ""
    gt_raw = [gt_kept[i][0] for i in gi]
    pred_raw = [pred_kept[j][0] for j in pj]
    main_pass = not (any(cat in IGNORED_CATEGORIES for cat in (gt_kept[i][2] for i in gi))
                     or any(j in taken for j in pj))
    stack_gt = main_pass and gt_cat == "equation_isolated" and len(gi) > 1
    stack_pred = main_pass and "equation" in pred_cat and len(pj) > 1
    return {
        "gt_idx": gi or [""],
        "gt": _stacked(gt_raw) if stack_gt else "".join(gt_raw),
        "pred_idx": pj or [""],
        "pred": _stacked(pred_raw) if stack_pred else "".join(pred_raw),
        "gt_position": [_gt_position(gts[i]) for i in gi] or [""],
        "pred_position": preds[pj[0]]["position"][0] if pj else "",
        "norm_gt": "".join(gt_kept[i][1] for i in gi),
        "norm_pred": "".join(pred_kept[j][1] for j in pj),
        "gt_category_type": gt_cat,
        "pred_category_type": pred_cat,
        "gt_attribute": [gts[i].get("attribute", {}) for i in gi] or [{}],
        "edit": row.edit,
        "img_id": img_name,
    }


def _table_norm(text: Any) -> str:
    """``normalize_table_match_content``: HTML tables normalised (v1.6), other text kept."""

    text = str(text or "")
    return normalize_html_table(text) if "<table" in text.lower() else text


def match_simple(
    gt_items: Sequence[Mapping[str, Any]],
    pred_items: Sequence[Mapping[str, Any]],
    line_type: str,
    img_name: str,
) -> tuple[list[Item], list[Item] | None]:
    """Official v1.6 ``match_gt2pred_simple`` for tables (``html_table``/``latex_table``): one
    Hungarian pairing on normalised distances, one row per kept ground-truth table.

    Quirk kept: a row paired with prediction 0 gets empty ``pred_category_type`` and
    ``pred_position`` (the official test is the index's truth). Deviation: the second element
    is the unpaired predicted items themselves (officially they are cut into text lines); the
    page step does not read it. Only the table line types are implemented.
    """
    field = "html" if line_type == "html_table" else None
    gt_kept = []
    for item in gt_items:
        fallback = item.get("html", "") if field else item.get("html", "") or item.get("latex", "")
        raw = str(item["content"]) if item.get("content") else str(fallback)
        gt_kept.append((raw, _table_norm(raw), _category(item)))
    gt_kept = [line for line in gt_kept if line[0] and line[1]]
    pred_kept = [(raw, norm) for raw in (str(item["content"]) for item in pred_items)
                 for norm in [_table_norm(raw)] if raw and norm]

    def gt_row(i: int, j: int | str, edit: Any) -> Item:
        return {
            "gt_idx": [i], "gt": gt_kept[i][0], "norm_gt": gt_kept[i][1],
            "gt_category_type": gt_kept[i][2], "gt_position": [_gt_position(gt_items[i])],
            "gt_attribute": [gt_items[i].get("attribute", {})], "pred_idx": [j],
            "pred": pred_kept[j][0] if j != "" else "",
            "norm_pred": pred_kept[j][1] if j != "" else "",
            "pred_category_type": _category(pred_items[j]) if j else "",
            "pred_position": pred_items[j]["position"][0] if j else "",
            "edit": edit, "img_id": img_name,
        }

    if not gt_kept:
        leftover = list(range(len(pred_kept)))
        return [_leftover_row(leftover, pred_items, pred_kept, img_name)], None
    if not pred_kept:
        return [gt_row(i, "", 1) for i in range(len(gt_kept))], None
    costs = cost_matrix([norm for _, norm, _ in gt_kept], [norm for _, norm in pred_kept])
    rows_of, cols_of = linear_sum_assignment(costs)
    paired = {int(i): int(j) for i, j in zip(rows_of, cols_of, strict=True)}
    rows = [gt_row(i, paired[i], costs[i][paired[i]]) if i in paired else gt_row(i, "", 1)
            for i in range(len(gt_kept))]
    unpaired = [pred_items[j] for j in range(len(pred_kept)) if j not in set(paired.values())]
    return rows, [dict(item) for item in unpaired] or None


def _leftover_row(leftover: list[int], pred_items: Sequence[Mapping[str, Any]],
                  pred_kept: list[tuple[str, str]], img_name: str) -> Item:
    return {
        "gt_idx": [""], "gt": "", "pred_idx": leftover,
        "pred": "".join(pred_kept[j][0] for j in leftover),
        "gt_position": [""], "pred_position": pred_items[leftover[0]]["position"][0],
        "norm_gt": "", "norm_pred": "".join(pred_kept[j][1] for j in leftover),
        "gt_category_type": "", "pred_category_type": _category(pred_items[leftover[0]]),
        "gt_attribute": [{}], "edit": 1, "img_id": img_name,
    }


def normalised_edit(gt: str, pred: str) -> float:
    """Levenshtein distance over the longer length; 0 (int) for two empty strings, 1 (int) for
    one, as the official ``_normalized_edit_distance``/``compute_edit_distance`` return."""
    if not gt and not pred:
        return 0
    if not gt or not pred:
        return 1
    return Levenshtein.distance(gt, pred) / max(len(gt), len(pred))
