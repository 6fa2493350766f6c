"""OmniDocBench v1.5's hybrid match (0f22218): text and display formulas matched together by
v1.0's quick-match steps (:mod:`...common.match.quick`), with the cells of unmatched predicted
tables as text; and :func:`match_quick_or_simple`, the match of a page's text in v1.0 and v1.5
under v1.0's time limit, the simple match (:mod:`.simple`) its fallback."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from bs4 import BeautifulSoup

from evalsuite.metrics.omnidocbench.common.extract import PredictedElement
from evalsuite.metrics.omnidocbench.common.ground_truth import IGNORED_CATEGORIES
from evalsuite.metrics.omnidocbench.common.match.quick import (
    MASK_COST,
    QUICK_MATCH_TIMEOUT_S,
    Group,
    match_quick,
    quick_groups,
)
from evalsuite.metrics.omnidocbench.common.match.rows import (
    Deadline,
    GtItem,
    LineType,
    MatchedRow,
    MatchTimeout,
    cost_matrix,
    distance_ratio,
    gt_pred_lines,
    matched_row,
)
from evalsuite.metrics.omnidocbench.common.normalize import _Bs4v411TreeBuilder
from evalsuite.metrics.omnidocbench.v1_0.match.simple import match_simple
from evalsuite.metrics.omnidocbench.versions import V10, V15, Rules

__all__ = ["match_hybrid", "match_quick_or_simple", "table_leftover_cells"]

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
    deadline = Deadline(timeout_s)
    gt_items = _split_gt_arrays(gt_items)
    ordered = sorted(enumerate(pred_items), key=lambda pair: (
        pair[1].fine_category == "equation_inline", pair[1].position[0], pair[0]))
    pred_items = _split_pred_arrays([element for _, element in ordered])
    lines = gt_pred_lines(gt_items, pred_items, None, deadline, rules)
    norm_gt, norm_pred = lines.norm_gt, lines.norm_pred
    if not norm_gt:
        return [matched_row(lines, (), (j,), 1, img_id) for j in range(len(norm_pred))]
    if not norm_pred:
        return [matched_row(lines, (i,), (), 1, img_id) for i in range(len(norm_gt))]
    if len(norm_gt) == 1 and len(norm_pred) == 1:
        return [matched_row(lines, (0,), (0,), distance_ratio(norm_gt[0], norm_pred[0]), img_id)]

    ignored = [i for i, category in enumerate(lines.gt_category) if category in IGNORED_CATEGORIES]
    taken: set[int] = set()
    if ignored:
        cost = cost_matrix([norm_gt[i] for i in ignored], norm_pred)
        taken = set(np.argwhere(cost < MASK_COST)[:, 1].tolist())
    kept_gt = [i for i in range(len(norm_gt)) if i not in set(ignored)]
    kept_pred = [j for j in range(len(norm_pred)) if j not in taken]
    if not kept_gt:
        groups: list[Group] = [((), tuple(range(len(kept_pred))), 1)] if kept_pred else []
    elif not kept_pred:
        groups = [((i,), (), 1) for i in range(len(kept_gt))]
    else:
        groups = quick_groups([norm_gt[i] for i in kept_gt], [norm_pred[j] for j in kept_pred],
                              deadline, rules)
    rows = []
    for gt_lines, preds, edit in groups:
        gt_idx, pred_idx = [kept_gt[i] for i in gt_lines], [kept_pred[j] for j in preds]
        row = matched_row(lines, gt_idx, pred_idx, edit, img_id)
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
