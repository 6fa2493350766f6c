"""One page of OmniDocBench v1.0's end-to-end evaluation: its matched samples and their scores.

Re-implements, for one ground-truth page and its predicted markdown, what opendatalab/OmniDocBench
at 895837f (the v1.0 evaluation code) does in ``End2EndDataset.process_get_matched_elements``
(``dataset/end2end_dataset.py``: truncated-block merge, text / display-formula / table matching,
ignored categories, reading order) and the per-sample metrics of ``metrics/cal_metric.py``
(``Edit_dist`` with ``Edit_num``/``upper_len``, ``TEDS``) on the samples of the page.

Cross-page rule kept out of :func:`match_page`: the table format of a run
(:func:`choose_table_format`). v1.5 (0f22218): the hybrid page match of
:func:`_match_page_hybrid` and the run-wide rules of :func:`run_samples`.
"""

from __future__ import annotations

import math
import posixpath
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from pylatexenc.latex2text import LatexNodes2Text
from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.omnidocbench.common.ground_truth import (
    IGNORED_CATEGORIES,
    TEXT_CATEGORIES,
    merged_block,
)
from evalsuite.metrics.omnidocbench.common.match import (
    QUICK_MATCH_TIMEOUT_S,
    GtItem,
    LineType,
    MatchedRow,
    MatchError,
    match_quick,
)
from evalsuite.metrics.omnidocbench.common.normalize import keep_word_chars, normalize_table
from evalsuite.metrics.omnidocbench.common.sample import ElementSample, page_figures, table_teds
from evalsuite.metrics.omnidocbench.v1_0.extract import split_markdown
from evalsuite.metrics.omnidocbench.v1_0.match import (
    match_quick_or_simple,
    match_simple,
    table_leftover_cells,
)
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = [
    "ELEMENTS",
    "PageMatches",
    "choose_table_format",
    "match_page",
    "page_blocks",
    "page_values",
    "run_samples",
]

ELEMENTS = ("text_block", "display_formula", "table", "reading_order")


@dataclass(frozen=True)
class PageMatches:
    """The samples of one page (``image_name``: the image file name, the official ``img_id``).

    ``elements`` maps each of :data:`ELEMENTS` to its samples; ``"table"`` holds the page's
    HTML-table matches, scored. A page with more predicted LaTeX than HTML tables matched LaTeX
    tables instead: those rows are ``latex_table_rows`` (``"table"`` is then empty) and are
    scored, through LaTeXML, only on demand (:meth:`table_samples`), as v1.0 converts them only
    when the run's format (:func:`choose_table_format`) is LaTeX.
    ``text_match_timed_out``: the quick text match ran past its time limit and the simple match
    was used. v1.5 only: ``formulas_as_text``, the display formulas matched to predicted text
    (not formulas), their ground truth turned into text (:func:`_formula_as_text`).
    """

    image_name: str
    elements: dict[str, list[ElementSample]]
    latex_table_rows: tuple[MatchedRow, ...] = ()
    text_match_timed_out: bool = False
    formulas_as_text: tuple[ElementSample, ...] = ()

    @cached_property
    def latex_table_samples(self) -> list[ElementSample]:
        """``latex_table_rows`` scored as the run's tables when its format is LaTeX.

        Raises:
            LatexmlUnavailableError: ``latexmlc`` is not on PATH."""
        return [_table_sample(row, "latex") for row in self.latex_table_rows]

    def table_samples(self, table_format: str) -> list[ElementSample]:
        """The page's table samples in a run whose table format is ``table_format``: its HTML
        matches for ``"html"``, its LaTeX matches for ``"latex"`` (the others are dropped)."""
        if table_format == "html":
            return self.elements["table"]
        if table_format == "latex":
            return self.latex_table_samples
        raise ValueError(f"table_format must be 'html' or 'latex', not {table_format!r}")


def page_blocks(gt_page: Mapping[str, Any]) -> dict[str, list[Mapping[str, Any]]]:
    """The page's ``layout_dets`` by ``category_type``, truncated blocks merged
    (``get_page_elements``).

    Rule: blocks linked by ``truncated`` relations are grouped (a relation touching existing
    groups is appended to each of them, else starts a new one); each group becomes one block,
    appended after the category's other blocks: the ``text`` of its blocks sorted by ``order``,
    joined with ``""``, with the first block's ``category_type``, ``order`` and ``anno_id`` (no
    ``attribute``). Quirks: a block shared by two relations of one group appears twice in the
    joined text (``a→b, b→c`` gives ``a+b+b+c``); ``ignore`` flags are not read; a relation
    naming a missing block, a block without ``text`` or a ``None`` order among others raises,
    as officially.
    """
    groups: list[list[Any]] = []
    truncated: dict[Any, Any] = {}
    for relation in gt_page["extra"]["relation"]:
        if relation["relation_type"] != "truncated":
            continue
        pair = [relation["source_anno_id"], relation["target_anno_id"]]
        truncated.update(dict.fromkeys(pair, ""))
        touched = [group for group in groups if pair[0] in group or pair[1] in group]
        for group in touched:
            group.extend(pair)
        if not touched:
            groups.append(pair)
    blocks: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for item in gt_page["layout_dets"]:
        if item["anno_id"] in truncated:
            truncated[item["anno_id"]] = item
        else:
            blocks[item["category_type"]].append(item)
    for group in groups:
        parts = sorted((truncated[anno_id] for anno_id in group), key=lambda block: block["order"])
        blocks[parts[0]["category_type"]].append(merged_block(parts))
    return blocks


def _sorted_blocks(blocks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """``get_sorted_text_list``: the blocks sorted by ``order`` (falsy as 0, stable)."""
    return sorted(blocks, key=lambda block: block.get("order") or 0)


def _gt_items(blocks: Sequence[Mapping[str, Any]], line_type: LineType) -> list[GtItem]:
    """The items of the blocks in ``order`` (:func:`_sorted_blocks`)."""
    return [GtItem.from_annotation(block, line_type) for block in _sorted_blocks(blocks)]


def match_page(
    gt_page: Mapping[str, Any],
    prediction: str,
    *,
    text_timeout_s: float | None = QUICK_MATCH_TIMEOUT_S,
    rules: Rules = V10,
) -> PageMatches:
    """Match and score one page (``process_get_matched_elements`` + per-sample metrics) by
    ``rules``' version (v1.5: :func:`_match_page_hybrid`).

    ``gt_page``: the page's OmniDocBench.json entry; ``prediction``: its markdown as read in text
    mode (``\\r\\n`` already ``\\n``). v1.0 rules:

    - text: the blocks of :data:`TEXT_CATEGORIES` (truncated groups merged) against the
      predicted ``text_all`` items, quick match under ``text_timeout_s`` else simple match; rows
      whose ground-truth category is in :data:`..common.ground_truth.IGNORED_CATEGORIES` are
      dropped, rows of extra predicted text (category ``""``) kept;
    - display formulas: ``equation_isolated`` blocks against the predicted display *and*
      inline formulas, quick match, rows without ground truth dropped;
    - tables: simple match against the predicted LaTeX tables if there are more of them than
      HTML tables, else against the HTML tables (ground truth: ``latex`` resp. ``html``), rows
      without ground truth dropped; scored on the normalised tables;
    - reading order: from the text rows (:func:`_reading_order`).

    Raises:
        MatchError: an input on which the official code raises.
    """
    image_name = posixpath.basename(gt_page["page_info"]["image_path"])
    predicted = split_markdown(prediction, rules)
    blocks = page_blocks(gt_page)
    if rules.hybrid_match:
        return _match_page_hybrid(image_name, blocks, predicted, text_timeout_s, rules)

    text_rows: list[MatchedRow] = []
    timed_out = False
    text_blocks = [block for category in TEXT_CATEGORIES for block in blocks.get(category, [])]
    if text_blocks:
        rows, timed_out = match_quick_or_simple(
            _gt_items(text_blocks, "text"),
            predicted["text_all"],
            "text",
            image_name,
            timeout_s=text_timeout_s,
        )
        text_rows = [row for row in rows if row.gt_category_type not in IGNORED_CATEGORIES]

    formula_rows: list[MatchedRow] = []
    if blocks.get("equation_isolated"):
        formula_rows = _without_extra_predictions(match_quick(
            _gt_items(blocks["equation_isolated"], "formula"),
            predicted["equation_isolated"],
            "formula",
            image_name,
        ))

    table_rows: list[MatchedRow] = []
    table_type: LineType = "html_table"
    if blocks.get("table"):
        if len(predicted["latex_table"]) > len(predicted["html_table"]):
            table_type = "latex_table"
        table_rows = _without_extra_predictions(match_simple(
            _gt_items(blocks["table"], table_type), predicted[table_type], table_type, image_name
        ))
    html_rows = table_rows if table_type == "html_table" else []
    latex_rows = table_rows if table_type == "latex_table" else []

    order = _reading_order(text_rows, image_name)
    return PageMatches(
        image_name=image_name,
        elements={
            "text_block": [ElementSample.scored(row) for row in text_rows],
            "display_formula": [ElementSample.scored(row) for row in formula_rows],
            "table": [_table_sample(row, "html") for row in html_rows],
            "reading_order": [order] if order else [],
        },
        latex_table_rows=tuple(latex_rows),
        text_match_timed_out=timed_out,
    )


def _match_page_hybrid(
    image_name: str,
    blocks: Mapping[str, list[Mapping[str, Any]]],
    predicted: Mapping[str, list[Any]],
    text_timeout_s: float | None,
    rules: Rules,
) -> PageMatches:
    """v1.5's page: tables first, then text and display formulas together.

    - tables: simple match against the predicted LaTeX tables if there are more of them than
      HTML tables, else the HTML tables; rows without ground truth dropped; the cells of the
      unmatched predicted tables (:func:`.match.table_leftover_cells`) join the predictions of
      the hybrid match. LaTeX-table rows are kept aside (``latex_table_rows``): the run scores
      them as unpredicted (:func:`run_samples`);
    - hybrid match (:func:`.match.match_hybrid`, under ``text_timeout_s`` else the simple match)
      of the blocks of :data:`TEXT_CATEGORIES` and ``equation_isolated`` (in ``order``) against
      the predicted text and formulas (each category in the order it first occurs on the page)
      plus those cells. Rows by ground-truth category: text categories (less
      :data:`..common.ground_truth.IGNORED_CATEGORIES`) are the text samples,
      ``equation_isolated`` the formula samples, a formula matched to a prediction that is no
      formula goes to ``formulas_as_text``; rows without ground truth are dropped;
    - reading order from the text rows, as v1.0.
    """
    table_rows: list[MatchedRow] = []
    table_type: LineType = "html_table"
    cells = []
    if blocks.get("table"):
        if len(predicted["latex_table"]) > len(predicted["html_table"]):
            table_type = "latex_table"
        rows = match_simple(
            _gt_items(blocks["table"], table_type), predicted[table_type], table_type, image_name
        )
        cells = table_leftover_cells(rows, predicted[table_type])
        table_rows = _without_extra_predictions(rows)

    mixed = [block for category in (*TEXT_CATEGORIES, "equation_isolated")
             for block in blocks.get(category, [])]
    gt_items = [GtItem.from_annotation(
        block, "formula" if block["category_type"] == "equation_isolated" else "text"
    ) for block in _sorted_blocks(mixed)]
    first_seen = sorted(("text_all", "equation_isolated"), key=lambda category: min(
        ((element.position[0], category != "equation_isolated")
         for element in predicted[category]), default=(math.inf, False)))
    pred_items = [element for category in first_seen for element in predicted[category]] + cells
    rows, timed_out = match_quick_or_simple(
        gt_items, pred_items, "text", image_name, timeout_s=text_timeout_s, rules=rules
    )
    text_rows = [row for row in rows if row.gt_category_type in TEXT_CATEGORIES
                 and row.gt_category_type not in IGNORED_CATEGORIES]
    formula_rows = [row for row in rows if row.gt_category_type == "equation_isolated"]
    formulas = [ElementSample.scored(row) for row in formula_rows
                if row.pred_category_type in _FORMULA_PREDICTIONS]
    as_text = [_formula_as_text(row) for row in formula_rows
               if row.pred_category_type not in _FORMULA_PREDICTIONS]
    order = _reading_order(text_rows, image_name)
    return PageMatches(
        image_name=image_name,
        elements={
            "text_block": [ElementSample.scored(row) for row in text_rows],
            "display_formula": formulas,
            "table": [_table_sample(row, "html") for row in table_rows
                      if table_type == "html_table"],
            "reading_order": [order] if order else [],
        },
        latex_table_rows=tuple(table_rows) if table_type == "latex_table" else (),
        text_match_timed_out=timed_out,
        formulas_as_text=tuple(as_text),
    )


_FORMULA_PREDICTIONS = ("equation_inline", "equation_isolated", "")
"""The predicted categories that keep a v1.5 display-formula match a formula sample."""


def _formula_as_text(row: MatchedRow) -> ElementSample:
    """v1.5's display formula matched to predicted text: its ground truth becomes pylatexenc's
    ``latex_to_text`` of the LaTeX (no strip), compared as
    :func:`..common.normalize.keep_word_chars` of that (no inline-math conversion); the
    prediction stays normalised as text."""
    text = LatexNodes2Text().latex_to_text(row.gt)
    return ElementSample.scored(row, gt=text, norm_gt=keep_word_chars(text))


def _unpredicted_table(row: MatchedRow) -> ElementSample:
    """v1.5's LaTeX-table match, scored as an HTML table whose prediction is empty (every
    ``pred*`` field ``""``, edit 1)."""
    emptied = replace(row, pred_idx="", pred="", norm_pred="", pred_category_type="",
                      pred_position="", edit=1)
    return _table_sample(emptied, "html")


def _without_extra_predictions(rows: list[MatchedRow]) -> list[MatchedRow]:
    """The rows that have a ground truth (v1.0 drops the predicted-only rows of formulas, which
    inline formulas also fill, and of tables)."""
    return [row for row in rows if row.gt_idx != ("",)]


def _reading_order(rows: list[MatchedRow], img_id: str) -> ElementSample | None:
    """``get_order_paired``: the reading-order sample of the page's text rows, or None.

    Rule: ``gt`` = the sorted orders of all rows with ground truth; ``pred`` = the orders of the
    rows that also have a prediction, taken in order of ``pred_position`` (stable); falsy
    orders (missing, 0) dropped from both; ``edit = Levenshtein(gt, pred) / max(len)``; no
    sample when both are empty. Quirk: a leftover ground-truth line counted twice by the quick
    match (:func:`..common.match.match_quick`) is counted twice here too.
    """
    with_gt = [row for row in rows if row.gt_position != ("",)]
    if any(isinstance(row.gt_position, str) for row in with_gt):
        raise MatchError("text rows without any ground-truth line: v1.0 raises TypeError here")
    paired = sorted(
        ((row.gt_position, row.pred_position) for row in with_gt if row.pred_position != ""),
        key=lambda pair: pair[1],
    )
    gt = tuple(sorted(order for row in with_gt for order in row.gt_position if order))
    pred = tuple(order for positions, _ in paired for order in positions if order)
    if not gt and not pred:
        return None
    edit = Levenshtein.distance(gt, pred) / max(len(gt), len(pred))
    return ElementSample(gt=gt, pred=pred, img_id=img_id, edit=edit).with_edit_scores()


def _table_sample(row: MatchedRow, table_format: str) -> ElementSample:
    """A table row normalised (``normalize_data``: ground truth as HTML, prediction as
    ``table_format``) and scored: edit scores, then TEDS and TEDS-structure-only
    (:func:`..common.sample.table_teds`)."""
    norm_gt = normalize_table(row.gt)
    norm_pred = normalize_table(row.pred, table_format)
    return ElementSample.scored(
        row,
        norm_gt=norm_gt,
        norm_pred=norm_pred,
        teds=table_teds(norm_pred, norm_gt, structure_only=False),
        teds_structure_only=table_teds(norm_pred, norm_gt, structure_only=True),
    )


def choose_table_format(pages: Sequence[PageMatches]) -> str:
    """The table format of a run (``get_matched_elements``): ``"latex"`` when the run has more
    LaTeX-table samples than HTML-table samples over all its pages, else ``"html"``; the
    samples of the other format are dropped from the whole run."""
    latex = sum(len(page.latex_table_rows) for page in pages)
    html = sum(len(page.elements["table"]) for page in pages)
    return "latex" if latex > html else "html"


def page_values(page: PageMatches, table_format: str) -> dict[str, float | None]:
    """The page's official figures in a run of table format ``table_format``.

    ``<element>_edit``: ``Σ edit_num / Σ upper_len`` over the page's samples of the element
    (the official ``<element>_per_page_edit.json`` value; NaN when every sample is empty on
    both sides, None without samples); ``table_TEDS`` / ``table_TEDS_structure_only``: the mean
    of the page's table samples (None without any).
    """
    return page_figures({element: page.table_samples(table_format) if element == "table"
                         else page.elements[element] for element in ELEMENTS})


def run_samples(
    pages: Sequence[PageMatches], rules: Rules = V10
) -> tuple[str, dict[str, list[ElementSample]]]:
    """A run's table format and its samples per element, in the official order.

    v1.0: pages in order, tables of the run's format (:func:`choose_table_format`). v1.5: the
    pages' samples in order, then, run-wide, the formulas matched to text appended to the text
    samples (dropped when the run has no text sample) and the LaTeX-table matches appended to
    the tables as unpredicted (:func:`_unpredicted_table`); the format is then always HTML
    (LaTeX would need more LaTeX than HTML-plus-LaTeX matches).
    """
    if not rules.tables_always_html:
        table_format = choose_table_format(pages)
        return table_format, {
            element: [sample for page in pages
                      for sample in (page.table_samples(table_format) if element == "table"
                                     else page.elements[element])]
            for element in ELEMENTS
        }
    samples = {element: [sample for page in pages for sample in page.elements[element]]
               for element in ELEMENTS}
    if samples["text_block"]:
        samples["text_block"] += [sample for page in pages for sample in page.formulas_as_text]
    samples["table"] += [_unpredicted_table(row) for page in pages for row in page.latex_table_rows]
    return "html", samples
