"""OmniDocBench v1.6's page step: one page's ground truth and predicted Markdown to its matched
samples (``End2EndDataset.process_get_matched_elements`` of ``src/dataset/end2end_dataset.py``,
opendatalab/OmniDocBench at 9dc1dec, with ``configs/end2end.yaml``: ``quick_match``), quirks
included.

The page's steps, in order: the prediction split into elements (:func:`.extract.md_tex_filter`);
the ground truth by category, truncated blocks merged (:func:`page_elements`); the predicted
tables (LaTeX ones converted to HTML) matched to the ground-truth tables one to one
(``match_gt2pred_simple``); the ground-truth text and display formulas, sorted by ``order``,
matched to every other predicted element at once (``match_gt2pred_quick`` on ``text_all``);
each row whose two sides differ in kind (text vs formula) rescored on plain text
(:func:`adapt_cross_category_norm`); rows of long or formula-bearing text and of titles that
matched badly given a nearby run of predictions instead (:func:`local_text_span_fallback`);
the display-formula rows re-matched by the formula step (:mod:`.formula_match`); the text rows of
ignored categories (captions, headers, footers, …) dropped; the reading-order sample
(:func:`reading_order`).

Rows are plain dicts with the official keys (``gt_idx``, ``gt``, ``pred_idx``, ``pred``,
``gt_position``, ``pred_position``, ``norm_gt``, ``norm_pred``, ``gt_category_type``,
``pred_category_type``, ``gt_attribute``, ``edit``, ``img_id``, …).

Deviations: no time limits (officially the text match falls back to a chunked assignment after
420 s, and each page runs under a LaTeX-conversion time limit); the formula-to-text conversion
that the environment variables ``OMNIDOCBENCH_AGGRESSIVE_FORMULA_CROSS_NORM`` /
``FORMULA_CROSS_NORM`` switch on is not implemented (off by default: end2end.yaml's runs never
use it), so a formula is read as text by removing its delimiters only. The official
``_maybe_apply_text_merge_fallback`` is never called at 9dc1dec and is left out.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral
from typing import Any, NamedTuple

from rapidfuzz.distance import Levenshtein

from evalsuite.errors import DatasetFormatError
from evalsuite.metrics.omnidocbench.common.ground_truth import (
    IGNORED_CATEGORIES,
    TEXT_CATEGORIES,
    merged_block,
)
from evalsuite.metrics.omnidocbench.common.normalize import INLINE_MATH, inline_math_to_unicode
from evalsuite.metrics.omnidocbench.v1_6 import formula_match, formula_pool, quick, tables
from evalsuite.metrics.omnidocbench.v1_6.extract import md_tex_filter
from evalsuite.metrics.omnidocbench.v1_6.normalize import (
    inline_to_unicode,
    normalize_formula,
    normalize_text,
    replace_circled,
    strip_formula_delimiters,
)
from evalsuite.metrics.omnidocbench.v1_6.quick import normalised_edit

__all__ = [
    "PageOutputs",
    "PageSteps",
    "adapt_cross_category_norm",
    "local_text_span_fallback",
    "match_extracted_page",
    "match_page",
    "page_elements",
    "reading_order",
    "sorted_by_order",
    "table_candidates",
    "without_categories",
]

Row = dict[str, Any]


class PageOutputs(NamedTuple):
    """One page's matched samples, the page step's output (officially a five-item list, the
    places named here as ``get_matched_elements`` reads them): rows with the official keys per
    element, and the reading-order sample (``[]`` when the page has no rows at all, ``{}`` when
    its rows hold no orders). ``latex_table`` is always empty in v1.6: its LaTeX tables are
    converted and matched as ``html_table``."""

    text_block: list[Row]
    display_formula: list[Row]
    latex_table: list[Row]
    html_table: list[Row]
    reading_order: dict[str, Any] | list

_MIXED_GT_CATEGORIES = (*TEXT_CATEGORIES, "equation_isolated")
_TABLE_LIKE_PREDICTIONS = ("html_table", "latex_table", "md2html_table", "formula_rescue")
_FORMULA_CATEGORIES = ("equation_isolated", "equation_inline")
_NO_PREDICTION = ([""], "", None)

_FORMULA_HINT_SPAN = re.compile(r"\$[^$]+\$|\\\([^)]*\\\)")
_FORMULA_HINT_COMMANDS = ("\\frac", "\\sum", "\\int", "\\sqrt", "\\left", "\\right")
_FALLBACK_MIN_EDIT = 0.45
"""A title or text row is searched again only when its edit distance exceeds this."""
_FALLBACK_MIN_CHARS = 80
_FALLBACK_WINDOW = 8
"""How far (in predictions) around the row's own predictions the search looks."""
_FALLBACK_MIN_GAIN = 0.2
_TIE = 1e-12


# --- ground truth -------------------------------------------------------------------------------


def page_elements(gt_page: Mapping[str, Any]) -> dict[str, list[dict]]:
    """The page's ``layout_dets`` by ``category_type``, ignored ones dropped and truncated
    blocks merged (``get_page_elements``).

    Rule: the blocks linked by ``truncated`` relations form groups (a relation's two blocks,
    united with every group that shares one of them; the united group moves to the end); each
    group whose blocks exist and are none ignored becomes one block, appended after its
    category's other blocks: the ``text`` of its blocks sorted by ``order`` and joined with
    ``""``, with the first block's ``category_type``, ``order`` and ``anno_id`` and
    ``merge_list`` = the sorted blocks. Blocks of a group are read in set order (as officially;
    it decides ties of ``order``).
    """
    groups: list[set[Any]] = []
    linked: dict[Any, Any] = {}
    for relation in gt_page["extra"]["relation"]:
        if relation["relation_type"] != "truncated":
            continue
        pair = {relation["source_anno_id"], relation["target_anno_id"]}
        linked.update(dict.fromkeys((relation["source_anno_id"], relation["target_anno_id"]), ""))
        apart = []
        for group in groups:
            if group & pair:
                pair |= group
            else:
                apart.append(group)
        groups = [*apart, pair]
    elements: dict[str, list[dict]] = defaultdict(list)
    for item in gt_page["layout_dets"]:
        if item["anno_id"] in linked:
            linked[item["anno_id"]] = item
        elif not item.get("ignore", False):
            elements[item["category_type"]].append(item)
    for group in groups:
        blocks = [linked[anno_id] for anno_id in group if linked.get(anno_id)]
        if not blocks or any(block.get("ignore", False) for block in blocks):
            continue
        if any("order" not in block for block in blocks):
            raise DatasetFormatError(
                f"a truncated block of {gt_page['page_info']['image_path']} has no order"
            )
        blocks.sort(key=lambda block: block["order"])
        elements[blocks[0]["category_type"]].append(merged_block(blocks))
    return elements


def sorted_by_order(items: Sequence[dict]) -> list[dict]:
    """The items sorted by ``order``, a missing or falsy order read as 0, ties kept in place
    (``get_sorted_text_list``)."""
    return sorted(items, key=lambda item: item.get("order") or 0)


def without_categories(rows: Sequence[Row], categories: Sequence[str]) -> list[Row]:
    """The rows whose ``gt_category_type`` is not among ``categories`` (``filtered_out_ignore``)."""
    return [row for row in rows if row["gt_category_type"] not in categories]


# --- reading order ------------------------------------------------------------------------------


def reading_order(rows: Sequence[Row], img_name: str) -> dict[str, Any]:
    """The page's reading-order sample (``get_order_paired``), ``{}`` when it has no orders.

    Rule: ``gt`` = the sorted orders of every row with a ground truth (``gt_position`` lists
    concatenated); ``pred`` = the ``gt_position`` lists of the rows that also have a prediction,
    concatenated in order of ``pred_position`` (stable); falsy orders dropped from both;
    ``edit = Levenshtein(gt, pred) / max(len(gt), len(pred))`` over the order lists.
    """
    with_gt = [row for row in rows if row["gt_position"] != [""]]
    paired = sorted(
        ((row["gt_position"], row["pred_position"]) for row in with_gt
         if row["pred_position"] != ""),
        key=lambda pair: pair[1],
    )
    gt = sorted(order for row in with_gt for order in row["gt_position"] if order)
    pred = [order for positions, _ in paired for order in positions if order]
    if not gt and not pred:
        return {}
    edit = Levenshtein.distance(gt, pred) / max(len(pred), len(gt))
    return {"gt": gt, "pred": pred, "img_id": img_name, "edit": edit}


# --- text read across categories ----------------------------------------------------------------


def _text_to_unicode(text: str) -> str:
    """``textblock2unicode``: circled characters read plainly, inline formulas converted
    (the first half of :func:`.normalize.normalize_text`)."""
    return inline_math_to_unicode(replace_circled(text), inline_to_unicode)


def _inline_formulas_normalised(text: str) -> str:
    """``textblock_with_norm_formula``: each inline formula replaced by its normalised body."""
    pieces: list[str] = []
    done = 0
    for found in INLINE_MATH.finditer(text):
        body = found.group(1) if found.group(1) is not None else found.group(2)
        pieces += [text[done : found.start()], normalize_formula(body).strip()]
        done = found.end()
    pieces.append(text[done:])
    return "".join(pieces)


def _is_formula(category: str) -> bool:
    return category in _FORMULA_CATEGORIES


def _cross_category_text(category: str, text: Any) -> str:
    """An element read as text (``_cross_category_text``, aggressive mode off): a formula
    without its delimiters, then inline formulas converted (:func:`_text_to_unicode`)."""
    text = str(text or "")
    return _text_to_unicode(strip_formula_delimiters(text) if _is_formula(category) else text)


def adapt_cross_category_norm(row: Row) -> Row:
    """A row matching a formula with text rescored on plain text (``_adapt_cross_category_norm``);
    the row is changed in place and returned.

    Rule: when both categories are set and exactly one is a formula category, ``gt`` and
    ``pred`` become their text readings (:func:`_cross_category_text`), ``norm_gt`` /
    ``norm_pred`` their ``normalized_text``, ``edit`` the normalised edit distance of those.
    """
    gt_category = row.get("gt_category_type", "")
    pred_category = row.get("pred_category_type", "")
    if not gt_category or not pred_category or _is_formula(gt_category) == _is_formula(
        pred_category
    ):
        return row
    row["gt"] = _cross_category_text(gt_category, row.get("gt", ""))
    row["pred"] = _cross_category_text(pred_category, row.get("pred", ""))
    row["norm_gt"] = normalize_text(row["gt"])
    row["norm_pred"] = normalize_text(row["pred"])
    row["edit"] = normalised_edit(row["norm_gt"], row["norm_pred"])
    return row


# --- local text-span fallback -------------------------------------------------------------------


def _position_sorted(pred_items: Sequence[dict]) -> list[dict]:
    """``sort_by_position_skip_inline``: by ``position[0]``, inline formulas last, stable."""
    ranked = sorted(
        enumerate(pred_items),
        key=lambda pair: (pair[1].get("fine_category_type") == "equation_inline",
                          pair[1]["position"][0], pair[0]),
    )
    return [item for _, item in ranked]


class _PoolItem(NamedTuple):
    category_type: str
    raw_text: str
    rendered_text: str
    position: Any


def _search_pool(pred_mix: Sequence[dict]) -> list[_PoolItem]:
    """The text and display-formula predictions in position order, each with its text reading
    (``_build_local_text_search_pool``)."""
    return [
        _PoolItem(item["category_type"], str(item.get("content", "") or ""),
                  _cross_category_text(item["category_type"], item.get("content", "")),
                  item["position"])
        for item in _position_sorted(pred_mix)
        if item.get("category_type") in ("text_all", "equation_isolated")
    ]


def _has_formula_hint(text: str) -> bool:
    """``_text_contains_formula_hint``: an inline formula span, a common math command, or
    ``^``/``_`` together with ``$`` or ``\\``."""
    return bool(text) and (
        bool(_FORMULA_HINT_SPAN.search(text))
        or any(command in text for command in _FORMULA_HINT_COMMANDS)
        or (("^" in text or "_" in text) and ("$" in text or "\\" in text))
    )


def _pool_indices(row: Row, pool: Sequence[_PoolItem]) -> list[int]:
    """The pool positions a row owns (``_match_item_pred_pool_indices``): its integer
    ``pred_idx`` values inside the pool (sorted, unique), else the pool items whose position
    span holds its ``pred_position``.

    Quirk: ``pred_idx`` counts the quick match's own prediction list, read here as pool places.
    """
    owned = sorted({int(index) for index in row.get("pred_idx", []) or []
                    if isinstance(index, Integral) and 0 <= index < len(pool)})
    if owned:
        return owned
    position = row.get("pred_position")
    if position in _NO_PREDICTION:
        return []
    holding = []
    for index, item in enumerate(pool):
        if not isinstance(item.position, list) or len(item.position) < 2:
            continue
        try:
            first, last, point = (float(item.position[0]), float(item.position[1]),
                                  float(position))
        except (TypeError, ValueError):
            continue
        if first <= point <= last:
            holding.append(index)
    return holding


def _edit_or_none(row: Row) -> float | None:
    """The row's ``edit`` as a float (1 when missing), None when it is not a number."""
    try:
        return float(row.get("edit", 1))
    except (TypeError, ValueError):
        return None


def _worth_searching(row: Row) -> bool:
    """``_should_try_local_text_span_fallback``: a title or text row with a ground truth and an
    edit distance over 0.45; a text row also needs a formula hint or 80+ normalised characters."""
    if row.get("gt_idx") == [""] or row.get("gt_category_type") not in ("title", "text_block"):
        return False
    edit = _edit_or_none(row)
    if edit is None or edit <= _FALLBACK_MIN_EDIT:
        return False
    if row["gt_category_type"] == "title":
        return True
    norm_gt = str(row.get("norm_gt", "") or "")
    return _has_formula_hint(str(row.get("gt", "") or "")) or len(norm_gt) >= _FALLBACK_MIN_CHARS


def _best_span(row: Row, pool: Sequence[_PoolItem], blocked: set[int]) -> dict | None:
    """The run of consecutive free pool items whose joined text reads closest to the row's
    ground truth (``_search_best_local_text_span``), or None.

    Rule: the target is the ground truth normalised (inline formulas normalised as formulas when
    it has a formula hint, else read as text); runs start within 8 places of the row's own
    predictions (anywhere if it owns none), stay inside that window, and hold at most 4 text
    predictions, or 8 text or display-formula predictions when the ground truth has a formula
    hint; a run stops at a blocked place or another category. Best: least edit distance, then
    shorter, then starting nearer the row's first prediction (differences under 1e-12 are ties).
    Kept only when it beats the row's edit by at least 0.2 and is at most 0.35 (0.45 with a
    formula hint).
    """
    gt = str(row.get("gt", "") or "")
    category = row.get("gt_category_type", "")
    hinted = _has_formula_hint(gt)
    if hinted and not _is_formula(category):
        target = normalize_text(_inline_formulas_normalised(gt))
    else:
        target = normalize_text(_cross_category_text(category, gt))
    if not target:
        return None
    current = _edit_or_none(row)
    current = 1.0 if current is None else current
    owned = _pool_indices(row, pool)
    low, high = 0, len(pool) - 1
    if owned:
        low, high = max(0, owned[0] - _FALLBACK_WINDOW), min(high, owned[-1] + _FALLBACK_WINDOW)
    allowed = ("text_all", "equation_isolated") if hinted else ("text_all",)
    longest = 8 if hinted else 4
    best: dict | None = None
    for start in range(low, high + 1):
        if pool[start].category_type not in allowed or start in blocked:
            continue
        raw, rendered = "", ""
        for end in range(start, min(high + 1, start + longest)):
            if pool[end].category_type not in allowed or end in blocked:
                break
            raw += pool[end].raw_text
            rendered += pool[end].rendered_text
            norm_pred = normalize_text(rendered)
            if not norm_pred:
                continue
            candidate = {
                "pred_idx": list(range(start, end + 1)),
                "pred": raw,
                "pred_position": pool[start].position[0],
                "pred_category_type": "text_block",
                "norm_pred": norm_pred,
                "edit": normalised_edit(target, norm_pred),
                "span_len": end - start + 1,
                "distance_to_current": abs(start - owned[0]) if owned else 0,
            }
            if best is None or _better_span(candidate, best):
                best = candidate
    if best is None or best["edit"] >= current - _FALLBACK_MIN_GAIN:
        return None
    if best["edit"] > (0.45 if hinted else 0.35):
        return None
    return best


def _better_span(candidate: dict, best: dict) -> bool:
    if candidate["edit"] + _TIE < best["edit"]:
        return True
    if candidate["edit"] > best["edit"] + _TIE:
        return False
    if candidate["span_len"] != best["span_len"]:
        return candidate["span_len"] < best["span_len"]
    return candidate["distance_to_current"] < best["distance_to_current"]


def local_text_span_fallback(rows: Sequence[Row], pred_mix: Sequence[dict]) -> list[Row]:
    """Badly matched title and text rows given a better run of nearby predictions
    (``_maybe_apply_local_text_span_fallback``).

    Rule: for each row worth it (:func:`_worth_searching`), the best run (:func:`_best_span`)
    among the pool places no other ground-truth row owns; the runs are applied by falling gain
    (row edit − run edit, stable), skipping a run that shares a place with one already applied;
    an applied run sets the row's ``pred_idx`` (pool places), ``pred`` (joined raw texts),
    ``pred_position`` (its first item's start), ``pred_category_type`` ``text_block``,
    ``norm_pred`` and ``edit``. The rows are copied; with no rows or no text/formula
    predictions the given list comes back as it is.
    """
    if not rows:
        return rows  # type: ignore[return-value]  # the official returns its argument
    pool = _search_pool(pred_mix)
    if not pool:
        return rows  # type: ignore[return-value]
    updated = [dict(row) for row in rows]
    found = []
    for index, row in enumerate(updated):
        if not _worth_searching(row):
            continue
        blocked: set[int] = set()
        for other_index, other in enumerate(updated):
            if other_index != index and other.get("gt_idx") != [""]:
                blocked.update(_pool_indices(other, pool))
        span = _best_span(row, pool, blocked)
        if span is not None:
            found.append((float(row.get("edit", 1)) - span["edit"], index, span))
    used: set[int] = set()
    for _, index, span in sorted(found, key=lambda entry: entry[0], reverse=True):
        if used & set(span["pred_idx"]):
            continue
        updated[index].update({key: span[key] for key in (
            "pred_idx", "pred", "pred_position", "pred_category_type", "norm_pred", "edit")})
        used.update(span["pred_idx"])
    return updated


# --- the page -----------------------------------------------------------------------------------


class PageSteps(NamedTuple):
    """The page's steps owned by other modules (:func:`default_steps`)."""

    quick_match: Callable[[list, list, str, str], list[Row]]
    simple_match: Callable[[list, list, str, str], tuple[list[Row], Any]]
    latex_table_to_html: Callable[[str], str]
    formula_pool: Callable[[dict], list[dict]]
    formula_candidates: Callable[[list, list, list, str], list[Row]]
    formula_surrogates: Callable[[list], list[Row]]


def default_steps() -> PageSteps:
    """The suite's v1.6 steps of the other modules."""
    return PageSteps(
        quick_match=quick.match_quick,
        simple_match=quick.match_simple,
        latex_table_to_html=tables.latex_table_to_html,
        formula_pool=formula_pool.build_formula_candidate_pool,
        formula_candidates=formula_match.match_display_formula_candidates,
        formula_surrogates=formula_match.attach_formula_cdm_surrogates,
    )


def table_candidates(
    pred_dataset: Mapping[str, list[dict]], latex_table_to_html: Callable[[str], str]
) -> list[dict]:
    """The predicted tables matched to the ground-truth ones: the HTML tables, then the LaTeX
    tables (those ``md_tex_filter`` could not convert) converted to HTML, marked ``html_table``
    (fine category kept, ``latex2html_table`` when absent)."""
    converted = [
        item | {"content": latex_table_to_html(item["content"]), "category_type": "html_table",
                "fine_category_type": item.get("fine_category_type", "latex2html_table")}
        for item in pred_dataset.get("latex_table") or []
    ]
    return [*(pred_dataset.get("html_table") or []), *converted]


def match_extracted_page(
    gt_page: Mapping[str, Any],
    pred_dataset: Mapping[str, list[dict]],
    img_name: str,
    steps: PageSteps | None = None,
) -> PageOutputs:
    """One page's samples (``process_get_matched_elements``), from the prediction's elements by
    category (``md_tex_filter``'s output, :func:`.extract.md_tex_filter`; its items are read, not
    copied, as officially). A page without a prediction is scored as an empty page
    (``_match_single_page``). The categories' order (officially that of their first element on
    the page) orders the predictions given to the text match.
    """
    steps = steps or default_steps()
    elements = page_elements(gt_page)
    pred_mix = [item for category, items in pred_dataset.items()
                if category not in _TABLE_LIKE_PREDICTIONS for item in items]
    gt_mix = sorted_by_order(
        [item for category in _MIXED_GT_CATEGORIES for item in elements.get(category) or []]
    )
    table_rows: list[Row] = []
    if elements.get("table"):
        candidates = table_candidates(pred_dataset, steps.latex_table_to_html)
        rows, _ = steps.simple_match(
            sorted_by_order(elements["table"]), candidates, "html_table", img_name
        )
        table_rows = [row for row in rows if row["gt_idx"] != [""]]
    rows = [adapt_cross_category_norm(row)
            for row in steps.quick_match(gt_mix, pred_mix, "text_all", img_name)]
    rows = local_text_span_fallback(rows, pred_mix)
    text_rows = [row for row in rows if row.get("gt_category_type") in TEXT_CATEGORIES]
    formula_rows = [row for row in rows if row.get("gt_category_type") == "equation_isolated"
                    and row["gt_idx"] != [""]]
    gt_formula = sorted_by_order(elements.get("equation_isolated") or [])
    pred_formula = steps.formula_pool(pred_dataset)
    if gt_formula or pred_formula:
        formula_rows = steps.formula_surrogates(
            steps.formula_candidates(gt_formula, pred_formula, formula_rows, img_name)
        )
    text_rows = without_categories(text_rows, IGNORED_CATEGORIES)
    ordered = [*text_rows, *formula_rows, *table_rows]
    order_sample = reading_order(ordered, img_name) if ordered else []
    return PageOutputs(text_rows, formula_rows, [], table_rows, order_sample)


def match_page(gt_page: Mapping[str, Any], markdown: str, img_name: str) -> PageOutputs:
    """One page's samples from its predicted Markdown (``process_get_matched_elements``):
    :func:`match_extracted_page` on ``md_tex_filter(markdown)``.

    Give ``markdown`` as the official reads a prediction file: UTF-8 text with universal newlines
    (``\\r\\n`` and ``\\r`` read as ``\\n``); ``""`` for a page without a prediction.
    """
    return match_extracted_page(gt_page, md_tex_filter(markdown), img_name)
