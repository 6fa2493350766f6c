"""What OmniDocBench's v1.0/v1.5 matchers read and give: the typed data model (:class:`GtItem`
in, :class:`MatchedRow` out, :class:`MatchError`, :class:`MatchTimeout`), the lines
``get_gt_pred_lines`` keeps and the official row of some of them, the edit costs
(``compute_edit_distance_matrix_new``) and the time limit the quick match checks, as
``utils/match.py`` of opendatalab/OmniDocBench at 895837f has them, quirks included."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.omnidocbench.common.extract import PredictedElement
from evalsuite.metrics.omnidocbench.common.ground_truth import IGNORED_CATEGORIES
from evalsuite.metrics.omnidocbench.common.normalize import normalize_formula, normalize_text
from evalsuite.metrics.omnidocbench.versions import V10, Rules

__all__ = [
    "Deadline",
    "GtItem",
    "LineType",
    "Lines",
    "MatchError",
    "MatchTimeout",
    "MatchedRow",
    "cost_matrix",
    "distance_ratio",
    "gt_pred_lines",
    "matched_row",
]

LineType = Literal["text", "formula", "html_table", "latex_table"]

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


class Deadline:
    """A wall-clock limit checked between steps (a cooperative stand-in for ``func_timeout``)."""

    def __init__(self, seconds: float | None) -> None:
        self._end = math.inf if seconds is None else time.monotonic() + seconds

    def check(self) -> None:
        """Raise :class:`MatchTimeout` once the limit has passed."""
        if time.monotonic() > self._end:
            raise MatchTimeout("the quick match ran past its time limit")


@dataclass(frozen=True)
class Lines:
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


def gt_pred_lines(
    gt_items: Sequence[GtItem],
    pred_items: Sequence[PredictedElement],
    line_type: LineType | None,
    deadline: Deadline,
    rules: Rules = V10,
) -> Lines:
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
    return Lines(
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


def matched_row(
    lines: Lines, gt_idx: Sequence[int], pred_idx: Sequence[int], edit: float, img_id: str
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


def distance_ratio(a: str, b: str) -> float:
    """``Levenshtein(a, b) / max(len(a), len(b))``, of two strings not both empty."""
    return Levenshtein.distance(a, b) / max(len(a), len(b))


def cost_matrix(norm_gt: list[str], norm_pred: list[str]) -> np.ndarray:
    """``compute_edit_distance_matrix_new``: normalised distances (0 for two empty strings)."""
    distances = process.cdist(norm_gt, norm_pred, scorer=Levenshtein.distance, dtype=np.int64)
    longer = np.maximum.outer([len(s) for s in norm_gt], [len(s) for s in norm_pred])
    return np.divide(distances, longer, out=np.zeros(longer.shape), where=longer > 0)
