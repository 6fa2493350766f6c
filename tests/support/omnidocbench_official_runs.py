"""Shared by the OmniDocBench whole-run CDM tests: the recorded official runs
(``fixtures/omnidocbench/v1*_cdm_cases.json.gz``) and their inputs as the official code saw them."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from evalsuite.metrics.omnidocbench.common.formula_cdm import cdm_hook
from evalsuite.metrics.omnidocbench.evaluation import Evaluation, evaluate_pages
from tests.metrics.omnidocbench.v1_0.test_v15 import same
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"


@cache
def load_runs(file_name: str) -> dict[str, Any]:
    """A recorded set of official runs (the generator's payload)."""
    with gzip.open(FIXTURES / file_name, "rt", encoding="utf-8") as handle:
        return json.load(handle)


@cache
def constructed_pages() -> dict[str, dict[str, Any]]:
    """The constructed pages of cases.json.gz by id."""
    with gzip.open(FIXTURES / "cases.json.gz", "rt", encoding="utf-8") as handle:
        return {case["id"]: case for case in json.load(handle)["cases"]}


def run_inputs(
    payload: Mapping[str, Any], run: str
) -> tuple[list[dict[str, Any]], Callable[[str], str | None], dict[str, dict[str, Any]]]:
    """``run`` as the official code saw it, in :func:`evaluate_pages`' terms: the ground-truth
    pages passing its filter (in order), predictions by image name (None: no prediction file),
    the attributes of every page of its ground truth. Pages come from cases.json.gz or, when
    built by the generator, from the payload's ``built_pages``."""
    by_id = constructed_pages() | {page["id"]: page for page in payload.get("built_pages", ())}
    everything = [by_id[page_id] for page_id in payload["pages"]]
    filt = payload["runs"][run]["filter"] or {}
    pages = [case for case in everything if all(
        case["gt_page"]["page_info"]["page_attribute"].get(key) == value
        for key, value in filt.items())]
    predictions = {case["image_name"]: case["prediction_md"] for case in pages}
    page_info = {case["image_name"]: case["gt_page"]["page_info"]["page_attribute"]
                 for case in everything}
    return [case["gt_page"] for case in pages], predictions.get, page_info


@cache
def evaluate_run(file_name: str, run: str, version: str) -> Evaluation:
    """``run`` of ``file_name`` scored by the suite's ``version`` evaluation with the real CDM
    (2 workers)."""
    return evaluate_pages(*run_inputs(load_runs(file_name), run), version=version,
                          formula_cdm=cdm_hook(version, workers=2))


def assert_same_metric_result(result: Mapping[str, Any], official: Mapping[str, Any]) -> None:
    """``result`` equals the official metric result leaf by leaf (same keys and types, ``==``,
    NaN equal to NaN); on failure pytest shows our figures of each differing element."""
    differing = {element: result.get(element) for element in official
                 if not same(result.get(element), official[element])}
    assert differing == {}
    assert same(result, official)
