"""OmniDocBench v1.0's aggregates of a run's matched samples, number for number (v1.5's
differences: :func:`summarize`); v1.6's metric step (:mod:`..v1_6.summary`) aggregates with
them too.

:func:`summarize` gives what the official ``<name>_metric_result.json`` holds per element
(``text_block``, ``display_formula``, ``table``, ``reading_order``):

- ``all``: ``Edit_dist.ALL_page_avg``, the mean over pages of the page edit distance
  ``Σ Edit_num / Σ upper_len`` (the string ``"NaN"`` when the element has no sample); for
  tables also ``TEDS.all`` and ``TEDS_structure_only.all``, means over table *samples*.
- ``group``: per block attribute ``"key: value"`` of the samples' ground truth, the mean of
  the sample scores (``sample_count`` beside).
- ``page``: per page attribute ``"key: value"`` (each ``special_issue`` entry without "table"
  in it by its bare name, and ``ALL``), the mean over pages of the page score: for edit
  distance ``Σ score·upper_len / Σ upper_len`` within the page, with ``Edit_dist_var`` (sample
  variance over pages, NaN for one page); for TEDS the mean of the page's samples.

:func:`overall_table` is v1.0's printed "Overall" table, from which the DeepSeek-OCR paper's
per-language figures come: ``overall_EN`` = mean of the ``page`` edit distances of
``language: english`` of the four elements (NaN if one is missing).

Exactness: the official figures are pandas/numpy reductions, and the last digit depends on
the summation. Reproduced here: page means of a Series (numpy's pairwise sum over the values,
missing ones as 0, divided by the count), group means of ``groupby(...).mean()`` (pandas'
compensated Kahan sum), group variances (pandas' Welford update), plain Python sums for the
attribute groups and TEDS.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from evalsuite.errors import EvalsuiteError
from evalsuite.metrics.omnidocbench.versions import V10, Rules

ELEMENTS = ("text_block", "display_formula", "table", "reading_order")
OVERALL_COLUMNS = (
    ("text_block", "Edit_dist"),
    ("display_formula", "Edit_dist"),
    ("display_formula", "CDM"),
    ("table", "TEDS"),
    ("table", "Edit_dist"),
    ("reading_order", "Edit_dist"),
)
LANGUAGES = (("EN", "language: english"), ("CH", "language: simplified_chinese"))


class ScoredSample(Protocol):
    """What the aggregates read of a matched sample (:class:`.sample.ElementSample`)."""

    gt: Any
    pred: Any
    norm_gt: Any
    norm_pred: Any
    gt_attribute: Any
    img_id: str
    edit_num: int | None
    upper_len: int | None
    edit_dist: float | None
    teds: float | None
    teds_structure_only: float | None
    cdm: float | None


class SummaryError(EvalsuiteError, ValueError):
    """A sample that the official aggregation cannot place (it would raise there too)."""


def sample_page(img_id: str, rules: Rules = V10) -> str:
    """The page a sample belongs to, by v1.0's rule: ``img_id`` itself when it ends with
    ``.jpg`` (v1.5: or ``.png``), else ``img_id`` less its last ``_`` part (``page.jpg_3`` ->
    ``page.jpg``).
    Quirk: a page whose image is not a ``.jpg`` has its page-level samples (reading order)
    cut to a name of no page; the official code then fails, and so does :func:`summarize`."""
    endings = (".jpg", ".png") if rules.png_pages else (".jpg",)
    return img_id if img_id.endswith(endings) else "_".join(img_id.split("_")[:-1])


def sample_metrics(element: str, sample: ScoredSample) -> dict[str, float]:
    """The sample's ``metric`` dict as the official code fills it: TEDS first for tables,
    then ``Edit_dist`` when either string is non-empty, then ``CDM`` when it was computed."""
    metrics: dict[str, float] = {}
    if element == "table":
        metrics["TEDS"] = _require(sample.teds, "teds")
        metrics["TEDS_structure_only"] = _require(sample.teds_structure_only, "teds_structure_only")
    if sample.edit_dist is not None:
        metrics["Edit_dist"] = sample.edit_dist
    if getattr(sample, "cdm", None) is not None:
        metrics["CDM"] = sample.cdm
    return metrics


def page_edit_distance(samples: Sequence[ScoredSample]) -> float | None:
    """A page's edit distance over its samples of one element: ``Σ edit_num / Σ upper_len``
    (v1.0's ``<element>_per_page_edit.json`` value); NaN when every sample is empty on both
    sides, None without samples."""
    if not samples:
        return None
    edits = sum(sample.edit_num or 0 for sample in samples)
    upper = sum(sample.upper_len or 0 for sample in samples)
    return edits / upper if upper else math.nan


def page_edit_distances(
    samples: Sequence[ScoredSample], rules: Rules = V10
) -> dict[str, float | None]:
    """Per page (sorted by name), :func:`page_edit_distance` of its samples (the official
    ``<element>_per_page_edit.json``)."""
    by_page: dict[str, list[ScoredSample]] = defaultdict(list)
    for sample in samples:
        by_page[sample_page(sample.img_id, rules)].append(sample)
    return {name: page_edit_distance(members) for name, members in sorted(by_page.items())}


def summarize(
    page_info: Mapping[str, Mapping[str, Any]],
    samples: Mapping[str, Sequence[ScoredSample]],
    rules: Rules = V10,
    *,
    with_cdm: bool = False,
    gt_pages: Mapping[str, Collection[str]] | None = None,
) -> dict[str, dict[str, Any]]:
    """The official metric result of a run by ``rules``' version. ``page_info``: each page's
    ``page_attribute`` by image file name (every page of the ground truth, scored or not);
    ``samples``: per element the run's samples in run order (pages in ground-truth order, rows
    in match order); ``with_cdm``: display formulas carry CDM (``cdm``), as v1.5's ``call_CDM``
    adds: ``all.CDM.all`` (mean over samples, ``{}`` without any) and ``CDM`` beside
    ``Edit_dist`` in ``group`` and ``page``.

    v1.5 differences: ``all.Edit_dist`` adds ``edit_whole`` (``Σ Edit_num / Σ upper_len`` over
    the samples) and ``edit_sample_avg`` (mean of the samples' ``Edit_num / upper_len``, NaN
    ones skipped); ``page`` has no ``Edit_dist_var``; ``.png`` pages are pages
    (:func:`sample_page`).

    ``gt_pages`` (v1.6's ``gt_pages_by_element``: per element the ground-truth pages that hold
    it): in ``page``, every metric but ``Edit_dist`` (TEDS, CDM) counts such a page, and each
    of its attributes, without a sample as a page scoring 0.0."""
    result = {}
    for element in ELEMENTS:
        element_samples = list(samples.get(element, ()))
        overall = _all(element, element_samples, rules)
        if with_cdm and element == "display_formula":
            scores = [_require(sample.cdm, "cdm") for sample in element_samples]
            overall["CDM"] = {"all": sum(scores) / len(scores)} if scores else {}
        result[element] = {
            "all": overall,
            "group": _groups(element, element_samples),
            "page": _page_split(
                element, element_samples, page_info, rules,
                _missing_page_metrics(element, with_cdm, (gt_pages or {}).get(element)),
            ),
        }
    return result


def overall_table(result: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """v1.0's "Overall" table (``text_block_Edit_dist_EN`` … ``overall_EN``, ``overall_CH``),
    TEDS ×100, ``"-"`` where the metric is absent (CDM, never computed here); None when an
    element has no page figures, where the official code prints its raw results instead."""
    table: dict[str, Any] = {}
    overall: dict[str, list[float]] = {"EN": [], "CH": []}
    incomplete = False
    for element, metric in OVERALL_COLUMNS:
        page = result[element]["page"]
        if not page:
            incomplete = True
            continue
        scale = 100 if metric == "TEDS" else 1
        for suffix, label in LANGUAGES:
            key = f"{element}_{metric}_{suffix}"
            table[key] = page[metric].get(label, math.nan) * scale if metric in page else "-"
            if metric == "Edit_dist":
                overall[suffix].append(page[metric].get(label, math.nan))
    if incomplete:
        return None
    for suffix, values in overall.items():
        table[f"overall_{suffix}"] = sum(values) / len(values)
    return table


def _require(value: float | None, name: str) -> float:
    if value is None:
        raise SummaryError(f"a sample has no {name} value")
    return value


def _all(element: str, samples: Sequence[ScoredSample], rules: Rules) -> dict[str, Any]:
    result: dict[str, Any] = {}
    if element == "table":
        for metric, field in (("TEDS", "teds"), ("TEDS_structure_only", "teds_structure_only")):
            values = [_require(getattr(sample, field), field) for sample in samples]
            result[metric] = {"all": sum(values) / len(values)} if values else {}
    if not samples:
        result["Edit_dist"] = {"ALL_page_avg": "NaN"}
        return result
    result["Edit_dist"] = {
        "ALL_page_avg": _series_mean(page_edit_distances(samples, rules).values())
    }
    if rules.edit_whole:
        edits = sum(sample.edit_num for sample in samples if sample.edit_num is not None)
        upper = sum(sample.upper_len or 0 for sample in samples)
        result["Edit_dist"]["edit_whole"] = (edits / upper if upper
                                             else math.nan if not edits else math.inf)
        result["Edit_dist"]["edit_sample_avg"] = _series_mean(
            sample.edit_num / sample.upper_len if sample.edit_num is not None else math.nan
            for sample in samples
        )
    return result


def _groups(element: str, samples: Sequence[ScoredSample]) -> dict[str, Any]:
    """Quirk: the official guard against no samples never fires (it tests a dataset object,
    always truthy), so an element without samples has ``{"sample_count": {}}``."""
    scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for sample in samples:
        if not sample.gt_attribute:
            continue
        labels = {f"{key}: {value}" for anno in sample.gt_attribute for key, value in anno.items()}
        metrics = sample_metrics(element, sample)
        for label in labels:
            for metric, score in metrics.items():
                scores[label][metric].append(score)
    result: dict[str, dict[str, Any]] = {"sample_count": {}}
    for label, by_metric in scores.items():
        for metric, values in by_metric.items():
            result.setdefault(metric, {})[label] = sum(values) / len(values)
            result["sample_count"][label] = len(values)
    return _sorted(result)


def _page_split(
    element: str,
    samples: Sequence[ScoredSample],
    page_info: Mapping[str, Mapping[str, Any]],
    rules: Rules,
    missing_pages: tuple[Sequence[str], Collection[str]] = ((), ()),
) -> dict[str, Any]:
    """``missing_pages``: (metrics, pages) for which a page of ``pages`` that has no row of
    such a metric under one of its attributes gets a row scoring 0.0 there (v1.6)."""
    if not page_info:
        return {}
    # metric -> (page, attribute) -> [(score, upper_len)], pages and rows in run order
    rows: dict[str, dict[tuple[str, str], list[tuple[float, int]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for sample in samples:
        name = sample_page(sample.img_id, rules)
        if name not in page_info:
            raise SummaryError(
                f"sample {sample.img_id!r} belongs to page {name!r}, which the ground truth "
                "does not have (v1.0 names pages by their .jpg file)"
            )
        metrics = sample_metrics(element, sample)
        if not metrics:
            continue
        upper_len = max(len(sample.norm_gt or sample.gt), len(sample.norm_pred or sample.pred))
        attributes = ["ALL", *_page_attributes(page_info[name])]
        for metric, score in metrics.items():
            for attribute in attributes:
                rows[metric][(name, attribute)].append((score, upper_len))
    missing_metrics, pages = missing_pages
    for metric in missing_metrics:
        for name in sorted(pages):
            for attribute in ["ALL", *_page_attributes(page_info.get(name, {}))]:
                rows[metric].setdefault((name, attribute), [(0.0, 0)])
    result: dict[str, Any] = {}
    if "Edit_dist" in rows:
        per_page = {
            key: float(
                np.sum(np.array([s * n for s, n in values], dtype=np.float64))
                / np.sum(np.array([n for _, n in values], dtype=np.int64))
            )
            for key, values in rows["Edit_dist"].items()
        }
        result["Edit_dist"] = _group_reduce(per_page, _kahan_mean)
        if rules.reports_variance:
            result["Edit_dist_var"] = _group_reduce(per_page, _welford_variance)
    for metric, by_key in rows.items():
        if metric == "Edit_dist":
            continue
        per_page = {key: _series_mean(s for s, _ in values) for key, values in by_key.items()}
        result[metric] = _group_reduce(per_page, _kahan_mean)
    return _sorted(result)


def _missing_page_metrics(
    element: str, with_cdm: bool, pages: Collection[str] | None
) -> tuple[Sequence[str], Collection[str]]:
    """The metrics other than ``Edit_dist`` that v1.6 expects of ``element``, and ``pages``."""
    if not pages:
        return (), ()
    if element == "table":
        return ("TEDS", "TEDS_structure_only"), pages
    if element == "display_formula" and with_cdm:
        return ("CDM",), pages
    return (), ()


def _page_attributes(attributes: Mapping[str, Any]) -> list[str]:
    labels = []
    for key, value in attributes.items():
        if isinstance(value, list):
            labels += [issue for issue in value if "table" not in issue]
        else:
            labels.append(f"{key}: {value}")
    return labels


def _group_reduce(
    per_page: Mapping[tuple[str, str], float], reduce: Any
) -> dict[str, float]:
    """pandas' ``Series.groupby('attribute').<reduce>()`` over a Series indexed by (page,
    attribute) in sorted order: each attribute's values in page-name order."""
    by_attribute: dict[str, list[float]] = defaultdict(list)
    for (_, attribute), value in sorted(per_page.items()):
        by_attribute[attribute].append(value)
    return {attribute: reduce(values) for attribute, values in by_attribute.items()}


def _series_mean(values: Iterable[float]) -> float:
    """pandas' ``Series.mean()`` without bottleneck: numpy's pairwise sum of the values with
    NaN replaced by 0, divided by the count of the others (NaN when none)."""
    array = np.array(list(values), dtype=np.float64)
    missing = np.isnan(array)
    count = int((~missing).sum())
    if count == 0:
        return math.nan
    return float(np.where(missing, 0.0, array).sum() / count)


def _kahan_mean(values: Sequence[float]) -> float:
    """pandas' grouped mean: a compensated (Kahan) sum of the non-NaN values over their count."""
    total = compensation = 0.0
    count = 0
    for value in values:
        if math.isnan(value):
            continue
        count += 1
        corrected = value - compensation
        updated = total + corrected
        compensation = updated - total - corrected
        if math.isnan(compensation):
            compensation = 0.0
        total = updated
    return total / count if count else math.nan


def _welford_variance(values: Sequence[float]) -> float:
    """pandas' grouped ``var()`` (ddof 1): Welford's running update; NaN below two values."""
    count = 0
    mean = squares = 0.0
    for value in values:
        if math.isnan(value):
            continue
        count += 1
        previous = mean
        mean += (value - previous) / count
        squares += (value - mean) * (value - previous)
    return squares / (count - 1) if count > 1 else math.nan


def _sorted(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: _sorted(value) for key, value in sorted(tree.items())}
    return tree
