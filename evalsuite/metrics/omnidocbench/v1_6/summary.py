"""OmniDocBench v1.6's metric step (opendatalab/OmniDocBench 9dc1dec), number for number: from
each page's page-step outputs (:class:`.page.PageOutputs`: the official ``text_block``,
``display_formula``, ``latex_table``, ``html_table`` and ``reading_order`` samples) to the
official ``<name>_metric_result.json`` (:func:`evaluate_run`) and eval_report's figures
(:meth:`RunResult.run_report`, with the leaderboard ``overall_notebook``).

The aggregation is v1.5's (:func:`..common.summary.summarize` with :data:`..versions.V16`);
v1.6 adds:

- the run's samples (:func:`run_samples`): display formulas matched to a prediction that
  is neither a formula nor empty, and without a CDM surrogate (``pred_cdm``), are scored as
  text; tables are the HTML matches only;
- ``page`` of TEDS and CDM counts each ground-truth page holding the element
  (:func:`gt_pages_by_element`) without a sample as scoring 0.0 (``_append_missing_page_rows``);
- CDM (:func:`formula_cdm_scores`): both sides lose math wrappers and ``\\tag``s
  (:func:`strip_cdm_math_wrappers`), and a sample with a surrogate prediction
  (``pred_cdm_alt``) keeps the higher of its two scores;
- ``metric_debug`` (TEDS always, CDM when run) and ``match_debug`` sections.

Deviations: a TEDS that the official code would time out (120 s) is computed anyway; TEDS
failures score 0.0 as officially but are not listed in ``error_cases`` (the suite's TEDS does
not raise the official exceptions); CDM failures are listed only where the CDM scorer reports
``cdm_eval_error``.

Tables keep the page step's ``norm_gt``/``norm_pred`` where the official table dataset
normalises ``gt``/``pred`` again (``normalized_table``). Same scores: both are v1.6's
``normalized_html_table`` of a text holding ``<table`` (any case); otherwise the page step keeps
the text and the dataset writes ``""``, and both metrics then read the raw text.
"""

from __future__ import annotations

import math
import posixpath
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evalsuite.metrics.omnidocbench.common.formula_cdm import FormulaCdm, unwrap_dollars
from evalsuite.metrics.omnidocbench.common.sample import ElementSample, table_teds
from evalsuite.metrics.omnidocbench.common.summary import (
    ELEMENTS,
    sample_metrics,
    sample_page,
    summarize,
)
from evalsuite.metrics.omnidocbench.v1_6.normalize import strip_formula_tags
from evalsuite.metrics.omnidocbench.v1_6.page import PageOutputs
from evalsuite.metrics.omnidocbench.versions import V16

FORMULA_PREDICTION_TYPES = ("equation_inline", "equation_isolated", "")
"""Prediction categories that keep a matched display formula a formula sample."""
GT_PAGE_CATEGORIES = {"equation_isolated": "display_formula", "table": "table"}
"""Ground-truth block category -> the element whose pages ``gt_pages_by_element`` collects."""
ELEMENT_METRICS = {
    "text_block": ("Edit_dist",),
    "display_formula": ("Edit_dist", "CDM"),
    "table": ("TEDS", "Edit_dist"),
    "reading_order": ("Edit_dist",),
}
"""configs/end2end.yaml's metrics per element, in their order."""
TEDS_TIMEOUT_SEC = 120.0
MATCH_FALLBACK_REASONS = ("quick_match_timeout", "page_timeout")


def gt_pages_by_element(gt_pages: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """The official ``gt_pages_by_element`` of the (filtered) ground-truth pages: per
    ``display_formula``/``table`` the image names of the pages with a not-ignored block of
    that kind (``equation_isolated``/``table``)."""
    pages: dict[str, set[str]] = {element: set() for element in GT_PAGE_CATEGORIES.values()}
    for page in gt_pages:
        name = posixpath.basename(page.get("page_info", {}).get("image_path", ""))
        if not name:
            continue
        for block in page.get("layout_dets", []):
            element = GT_PAGE_CATEGORIES.get(block.get("category_type"))
            if element and not block.get("ignore", False):
                pages[element].add(name)
    return pages


def run_samples(page_outputs: Iterable[PageOutputs]) -> dict[str, list[dict[str, Any]]]:
    """The run's samples per element (``get_matched_elements``), pages in run order. A
    formula sample whose ``pred_category_type`` is not in :data:`FORMULA_PREDICTION_TYPES`
    and that has no ``pred_cdm`` moves to the end of ``text_block``; ``table`` is the
    ``html_table`` samples; a sample without ``img_id`` gets its index."""
    text, formulas, others, tables, orders = [], [], [], [], []
    for outputs in page_outputs:
        text += [dict(sample) for sample in outputs.text_block]
        tables += [dict(sample) for sample in outputs.html_table]
        if outputs.reading_order:
            orders.append(dict(outputs.reading_order))
        for sample in outputs.display_formula:
            kept = (sample.get("pred_category_type") in FORMULA_PREDICTION_TYPES
                    or sample.get("pred_cdm"))
            (formulas if kept else others).append(dict(sample))
    samples = {"text_block": text + others, "display_formula": formulas, "table": tables,
               "reading_order": orders}
    for element_samples in samples.values():
        for index, sample in enumerate(element_samples):
            if not sample.get("img_id"):
                sample["img_id"] = index
    return samples


def strip_cdm_math_wrappers(text: str | None) -> str:
    """``_strip_cdm_math_wrappers``: trimmed; every leading/trailing ``$`` then whitespace off,
    twice; one enclosing ``\\[ \\]`` then one ``\\( \\)`` pair off (each then trimmed);
    :func:`strip_formula_tags`; trimmed."""
    text = unwrap_dollars(str(text or "").strip())
    for opening, closing in (("\\[", "\\]"), ("\\(", "\\)")):
        if text.startswith(opening) and text.endswith(closing):
            text = text[2:-2].strip()
    return strip_formula_tags(text).strip()


def _latex_block(pred: str) -> str:
    """What follows the last ```` ```latex ```` and precedes the next ```` ``` ````."""
    return pred.split("```latex")[-1].split("```")[0]


def formula_cdm_scores(
    samples: Sequence[Mapping[str, Any]], formula_cdm: FormulaCdm
) -> list[tuple[float, str | None]]:
    """Per display-formula sample, v1.6's CDM F1 (``_process_single_cdm_sample``) and the CDM
    error kept with it: ground truth ``gt_cdm`` (else ``gt``) and prediction ``pred_cdm``
    (else ``pred``, cut to its ```` ```latex ```` block) through
    :func:`strip_cdm_math_wrappers`; a non-empty surrogate ``pred_cdm_alt`` (cut and stripped
    alike) is scored too, and its F1 replaces the first when strictly higher."""
    gts = [strip_cdm_math_wrappers(sample.get("gt_cdm", sample["gt"])) for sample in samples]
    preds = [strip_cdm_math_wrappers(_latex_block(sample.get("pred_cdm", sample["pred"])))
             for sample in samples]
    alts = [strip_cdm_math_wrappers(_latex_block(sample["pred_cdm_alt"]))
            if sample.get("pred_cdm_alt") else "" for sample in samples]
    first = _scored(formula_cdm, list(zip(gts, preds, strict=True)))
    alt_indices = [index for index, alt in enumerate(alts) if alt]
    second = _scored(formula_cdm, [(gts[index], alts[index]) for index in alt_indices])
    scores = [(score["F1_score"], score.get("cdm_eval_error")) for score in first]
    for index, score in zip(alt_indices, second, strict=True):
        if score["F1_score"] > scores[index][0]:
            scores[index] = (score["F1_score"], score.get("cdm_eval_error"))
    return scores


def _scored(formula_cdm: FormulaCdm, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """``formula_cdm`` of ``pairs`` (not called without any), one result per pair."""
    if not pairs:
        return []
    scores = formula_cdm(pairs)
    if len(scores) != len(pairs):
        raise ValueError(f"the CDM scorer gave {len(scores)} results for {len(pairs)} pairs")
    return scores


def scored_samples(
    element: str,
    samples: Sequence[Mapping[str, Any]],
    cdm_scores: Sequence[tuple[float, str | None]] | None = None,
) -> list[ElementSample]:
    """The samples with their official metric values: edit scores (``call_Edit_dist``), TEDS
    for tables (``call_TEDS``), CDM from ``cdm_scores`` for formulas."""
    scored = []
    for index, sample in enumerate(samples):
        element_sample = ElementSample(
            gt=sample["gt"],
            pred=sample["pred"],
            img_id=str(sample["img_id"]),
            edit=sample.get("edit", math.nan),
            norm_gt=sample.get("norm_gt") or "",
            norm_pred=sample.get("norm_pred") or "",
            gt_attribute=tuple(_attribute_dicts(sample.get("gt_attribute") or ())),
        ).with_edit_scores()
        if element == "table":
            norm_gt = element_sample.norm_gt or element_sample.gt
            norm_pred = element_sample.norm_pred or element_sample.pred
            element_sample = replace(
                element_sample,
                teds=table_teds(norm_pred, norm_gt, structure_only=False),
                teds_structure_only=table_teds(norm_pred, norm_gt, structure_only=True),
            )
        if cdm_scores is not None:
            element_sample = replace(element_sample, cdm=cdm_scores[index][0])
        scored.append(element_sample)
    return scored


def _attribute_dicts(value: Any) -> Iterator[Mapping[str, Any]]:
    """The attribute dicts of a ``gt_attribute`` value, nested lists flattened (v1.6)."""
    if isinstance(value, Mapping):
        yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _attribute_dicts(item)


@dataclass(frozen=True)
class RunResult:
    """A run's official v1.6 results: ``metric_result`` (``<name>_metric_result.json``) and
    ``page_denominators`` (``build_metric_page_denominators`` per element); ``samples``: the
    scored samples per element."""

    metric_result: dict[str, Any]
    page_denominators: dict[str, dict[str, dict[str, int]]]
    samples: dict[str, list[ElementSample]]

    def run_report(self, save_name: str) -> dict[str, Any]:
        """eval_report's ``<name>_run_summary.json`` less its ``runtime_environment`` (the
        machine's packages and TeX files)."""
        return {
            "save_name": save_name,
            "stage_execution": stage_execution(self.metric_result),
            "page_denominators": self.page_denominators,
            "notebook_metric_summary": notebook_metric_summary(self.metric_result,
                                                               self.page_denominators),
        }

    @property
    def overall(self) -> float | None:
        """The leaderboard overall (``overall_notebook``), None without CDM, text or TEDS."""
        return notebook_metric_summary(self.metric_result,
                                       self.page_denominators)["overall_notebook"]


def evaluate_run(
    page_outputs: Iterable[PageOutputs],
    page_info: Mapping[str, Mapping[str, Any]],
    gt_pages: Mapping[str, Collection[str]],
    *,
    formula_cdm: FormulaCdm | None = None,
    teds_workers: int = 13,
    cdm_workers: int = 13,
    match_debug: Mapping[str, Any] | None = None,
) -> RunResult:
    """The official v1.6 results of a run.

    ``page_outputs``: per page of the (filtered) run, in ground-truth order, the page step's
    outputs (:func:`.page.match_page`); ``page_info``: ``page_attribute`` by image name of EVERY
    ground-truth page; ``gt_pages``: :func:`gt_pages_by_element` of the run's pages;
    ``formula_cdm``: the CDM scorer (v1.6: ``evalsuite.metrics.cdm.cdm_scores(pairs,
    version="1.6")`` as dicts), None to leave CDM out as a config without it does;
    ``teds_workers``/``cdm_workers``: the worker counts the debug sections report
    (``resolve_*_workers`` of the config);
    ``match_debug``: :func:`match_debug_section`, written when given."""
    samples = run_samples(page_outputs)
    formulas = samples["display_formula"]
    cdm = formula_cdm_scores(formulas, formula_cdm) if formula_cdm is not None else None
    scored = {element: scored_samples(element, samples[element],
                                      cdm if element == "display_formula" else None)
              for element in ELEMENTS}
    result: dict[str, Any] = summarize(page_info, scored, V16, with_cdm=cdm is not None,
                                       gt_pages=gt_pages)
    if cdm is not None:
        if not formulas:  # call_CDM hands on a list, and get_full_labels_results([]) is {}
            result["display_formula"]["group"] = {}
        result["display_formula"]["metric_debug"] = {"CDM": _cdm_debug(formulas, cdm,
                                                                       cdm_workers)}
    result["table"]["metric_debug"] = {"TEDS": {
        "stage": "TEDS",
        "workers": teds_workers,
        "timeout_sec": TEDS_TIMEOUT_SEC,
        "sample_count": len(samples["table"]),
        "timeout_case_count": 0,
        "timeout_cases": [],
        "error_case_count": 0,
        "error_cases": [],
    }}
    if match_debug:
        result["match_debug"] = dict(match_debug)
    return RunResult(result, page_denominators(scored, gt_pages, with_cdm=cdm is not None),
                     scored)


def _cdm_debug(
    samples: Sequence[Mapping[str, Any]], cdm: Sequence[tuple[float, str | None]], workers: int
) -> dict[str, Any]:
    cases = [_case_record(sample, error) for sample, (_, error) in zip(samples, cdm, strict=True)
             if error]
    return {
        "stage": "CDM",
        "workers": max(1, workers),
        "sample_count": len(samples),
        "timeout_case_count": 0,
        "timeout_cases": [],
        "exception_case_count": len(cases),
        "exception_cases": sorted(cases, key=_case_order),
    }


def _present(value: Any) -> bool:
    return value not in (None, "", [])


def _case_record(sample: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """``_build_case_record``: ``case_name`` ``img_id[gt=…, pred=…]``, the ids, ``reason``."""
    ids = {key: sample.get(key) for key in ("gt_idx", "pred_idx") if _present(sample.get(key))}
    label = ", ".join(f"{key[:-4]}={value}" for key, value in ids.items())
    img_id = str(sample.get("img_id") or "")
    return {"case_name": f"{img_id}[{label}]" if label else img_id,
            "img_id": sample.get("img_id"), **ids, "reason": str(reason)}


def _case_order(record: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(str(record.get(key, ""))
                 for key in ("img_id", "gt_idx", "pred_idx", "reason", "case_name"))


def match_debug_section(
    page_count: int,
    fallback_pages: Mapping[str, Iterable[str]] | None = None,
    *,
    workers: int = 13,
    quick_match_truncated_timeout_sec: int = 300,
    match_timeout_sec: int = 420,
) -> dict[str, Any]:
    """The ``match_debug`` section: the run's page count, the config's figures, and per
    fallback reason (:data:`MATCH_FALLBACK_REASONS` first) the sorted pages whose text match
    fell back, with their counts."""
    pages = {reason: sorted(set((fallback_pages or {}).get(reason, ())))
             for reason in (*MATCH_FALLBACK_REASONS, *(fallback_pages or {}))}
    return {
        "workers": workers,
        "page_count": page_count,
        "quick_match_truncated_timeout_sec": quick_match_truncated_timeout_sec,
        "match_timeout_sec": match_timeout_sec,
        "text_match_fallback_pages": pages,
        "text_match_fallback_counts": {reason: len(names) for reason, names in pages.items()},
    }


def page_denominators(
    scored: Mapping[str, Sequence[ElementSample]],
    gt_pages: Mapping[str, Collection[str]],
    *,
    with_cdm: bool = False,
) -> dict[str, dict[str, dict[str, int]]]:
    """``build_metric_page_denominators`` per element: for each configured metric (plus
    ``TEDS_structure_only``) ``{"ALL": n}``, n = the element's ground-truth page count, or
    where it has none the count of pages of its samples with a metric value."""
    denominators = {}
    for element in ELEMENTS:
        metrics = [metric for metric in ELEMENT_METRICS[element] if with_cdm or metric != "CDM"]
        if "TEDS" in metrics:
            metrics.append("TEDS_structure_only")
        pages = gt_pages.get(element)
        if pages:
            count = len(set(pages))
        else:
            count = len({sample_page(sample.img_id, V16) for sample in scored.get(element, ())
                         if sample_metrics(element, sample)})
        denominators[element] = {metric: {"ALL": count} for metric in metrics}
    return denominators


NOTEBOOK_FIGURES = (
    ("text_block_Edit_dist", ("text_block", "all", "Edit_dist", "ALL_page_avg"), 1.0),
    ("display_formula_CDM", ("display_formula", "page", "CDM", "ALL"), 100.0),
    ("table_TEDS", ("table", "page", "TEDS", "ALL"), 100.0),
    ("table_TEDS_structure_only", ("table", "page", "TEDS_structure_only", "ALL"), 100.0),
    ("reading_order_Edit_dist", ("reading_order", "all", "Edit_dist", "ALL_page_avg"), 1.0),
)
"""eval_report's figures: name, path in the metric result, notebook scale."""


def notebook_metric_summary(
    result: Mapping[str, Any], denominators: Mapping[str, Any]
) -> dict[str, Any]:
    """``build_notebook_metric_summary``: per figure ``raw`` (None unless a finite number),
    its ``page_denominator`` and ``notebook_value`` (raw x scale); ``overall_notebook`` =
    ``((1 - text) * 100 + cdm * 100 + teds * 100) / 3`` unrounded, None without one of them."""
    metrics = {}
    for name, path, scale in NOTEBOOK_FIGURES:
        raw = _finite(_lookup(result, path))
        element, metric = path[0], path[2]
        metrics[name] = {
            "raw": raw,
            "page_denominator": _lookup(denominators, (element, metric, "ALL")),
            "notebook_value": None if raw is None else raw * scale,
        }
    text, cdm, teds = (metrics[name]["raw"] for name in
                       ("text_block_Edit_dist", "display_formula_CDM", "table_TEDS"))
    overall = None
    if text is not None and cdm is not None and teds is not None:
        overall = ((1.0 - text) * 100.0 + cdm * 100.0 + teds * 100.0) / 3.0
    return {"source": "tools/generate_result_tables.ipynb#cell-2", "metrics": metrics,
            "overall_notebook": overall}


def _lookup(tree: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(tree, Mapping) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _finite(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def stage_execution(result: Mapping[str, Any]) -> dict[str, Any]:
    """``build_stage_execution_summary``: the match fallbacks and each metric's debug counts."""
    summary: dict[str, Any] = {}
    match_debug = result.get("match_debug")
    if isinstance(match_debug, Mapping):
        pages = match_debug.get("text_match_fallback_pages", {})
        counts = match_debug.get("text_match_fallback_counts", {})
        summary["page_match"] = {
            "workers": match_debug.get("workers", match_debug.get("match_workers")),
            "page_count": match_debug.get("page_count"),
            "quick_match_truncated_timeout_sec":
                match_debug.get("quick_match_truncated_timeout_sec"),
            "match_timeout_sec": match_debug.get("match_timeout_sec"),
            "fallbacks": {
                reason: {"count": int(counts.get(reason, len(set(names)))),
                         "cases": sorted({str(name) for name in names if str(name)})}
                for reason, names in pages.items()
            },
        }
    metrics = {}
    for element, payload in result.items():
        if element == "match_debug" or not isinstance(payload, Mapping):
            continue
        debug = payload.get("metric_debug")
        if isinstance(debug, Mapping):
            metrics[element] = {metric: _debug_summary(info) for metric, info in debug.items()
                                if isinstance(info, Mapping)}
    if any(metrics.values()):
        summary["metrics"] = {element: info for element, info in metrics.items() if info}
    return summary


def _debug_summary(debug: Mapping[str, Any]) -> dict[str, Any]:
    summary: dict[str, Any] = {"workers": debug.get("workers"),
                               "timeout_sec": debug.get("timeout_sec"),
                               "sample_count": debug.get("sample_count")}
    for kind in ("timeout", "error", "exception"):
        cases = debug.get(f"{kind}_cases", [])
        summary[f"{kind}_case_count"] = int(debug.get(f"{kind}_case_count", len(cases)))
        summary[f"{kind}_cases"] = sorted(
            ({key: value for key, value in case.items() if _present(value)}
             if isinstance(case, Mapping) else {"case_name": str(case)}
             for case in cases if isinstance(case, Mapping) or case not in (None, "")),
            key=_case_order,
        )
    return summary
