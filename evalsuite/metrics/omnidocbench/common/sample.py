"""The sample model of OmniDocBench's evaluations: one matched, scored sample of an element
(:class:`ElementSample`), v1.0's TEDS of a table sample (:func:`table_teds`), and a page's
official figures over its samples (:func:`values_by_page`), as v1.0's and v1.6's code bases
use them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from rapidfuzz.distance import Levenshtein

from evalsuite.metrics.omnidocbench.common.match.rows import MatchedRow
from evalsuite.metrics.omnidocbench.common.summary import ELEMENTS, page_edit_distance
from evalsuite.metrics.tables import teds

__all__ = ["ElementSample", "page_figures", "table_teds", "values_by_page"]


@dataclass(frozen=True)
class ElementSample:
    """One official sample of an element with its metric values.

    The row fields are those of :class:`.match.rows.MatchedRow`; a reading-order sample has only
    ``gt``/``pred`` (the ground-truth orders in reading order and in predicted order), ``edit``
    and ``img_id``. For tables ``norm_gt``/``norm_pred`` are the normalised tables.
    ``upper_len = max(len(gt'), len(pred'))`` and ``edit_num = Levenshtein(pred', gt')``,
    ``edit_dist = edit_num / upper_len`` (both None when ``upper_len`` is 0), where ``x'`` is
    ``norm_x`` or, when that is empty, ``x``. ``teds``/``teds_structure_only`` for tables only;
    ``cdm`` (F1) for v1.5 display formulas scored through the CDM hook.
    ``gt_attribute`` holds the ground-truth blocks' ``attribute`` dicts, which the official
    per-attribute ``group`` breakdown reads (``{}`` for a merged truncated block and for a row
    without ground truth).
    """

    gt: str | tuple[int | str, ...]
    pred: str | tuple[int | str, ...]
    img_id: str
    edit: float
    norm_gt: str = ""
    norm_pred: str = ""
    gt_idx: tuple[int | str, ...] = ()
    pred_idx: tuple[int | str, ...] | str = ()
    gt_category_type: str = ""
    pred_category_type: str = ""
    gt_position: tuple[int | str, ...] | str = ()
    pred_position: int | str = ""
    gt_attribute: tuple[Mapping[str, Any], ...] = ()
    edit_num: int | None = None
    upper_len: int | None = None
    edit_dist: float | None = None
    teds: float | None = None
    teds_structure_only: float | None = None
    cdm: float | None = None

    @classmethod
    def scored(cls, row: MatchedRow, **overrides: Any) -> ElementSample:
        """The sample of a matched row (fields replaced by ``overrides``) with its edit scores."""
        sample = cls(**{f.name: getattr(row, f.name) for f in fields(row)} | overrides)
        return sample.with_edit_scores()

    def with_edit_scores(self) -> ElementSample:
        """This sample with ``upper_len``, ``edit_num`` and ``edit_dist`` (``call_Edit_dist``)."""
        gt, pred = self.norm_gt or self.gt, self.norm_pred or self.pred
        upper_len = max(len(pred), len(gt))
        if not upper_len:
            return replace(self, upper_len=0)
        edit_num = Levenshtein.distance(pred, gt)
        return replace(self, upper_len=upper_len, edit_num=edit_num, edit_dist=edit_num / upper_len)


def table_teds(norm_pred: str, norm_gt: str, *, structure_only: bool) -> float:
    """v1.0's TEDS of a table sample (``call_TEDS``): :func:`evalsuite.metrics.tables.teds`,
    0.0 where the official evaluation raises (and is caught: bad spans, two empty tables).

    An empty normalised table (no ``<table`` in the raw string) scores 0.0: the official code
    then scores the raw string, in which lxml finds no ``body/table``. Deviation: an upper-case
    full document (``<HTML><BODY><TABLE>…``) would be scored there.
    """
    if not norm_pred or not norm_gt:
        return 0.0
    try:
        return teds(norm_pred, norm_gt, structure_only=structure_only)
    except ValueError:
        return 0.0


def page_figures(samples: Mapping[str, Sequence[ElementSample]]) -> dict[str, float | None]:
    """A page's official figures over its ``samples`` per element: ``<element>_edit``
    (:func:`.summary.page_edit_distance`), ``table_TEDS`` and ``table_TEDS_structure_only``
    (the mean of its table samples, None without any)."""
    values: dict[str, float | None] = {
        f"{element}_edit": page_edit_distance(samples[element]) for element in ELEMENTS
    }
    tables = samples["table"]
    values["table_TEDS"] = _mean([sample.teds for sample in tables])
    values["table_TEDS_structure_only"] = _mean([sample.teds_structure_only for sample in tables])
    return values


def _mean(scores: list[float | None]) -> float | None:
    known = [score for score in scores if score is not None]
    return sum(known) / len(known) if known else None


def values_by_page(
    samples: Mapping[str, Sequence[ElementSample]], image_names: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Per page (image name) its official figures (:func:`page_figures`) over the run's
    ``samples``, taken by the samples' ``img_id``."""
    by_page: dict[str, dict[str, list[ElementSample]]] = {
        name: {element: [] for element in ELEMENTS} for name in image_names
    }
    for element, members in samples.items():
        for sample in members:
            by_page[sample.img_id][element].append(sample)
    return {name: page_figures(elements) for name, elements in by_page.items()}
