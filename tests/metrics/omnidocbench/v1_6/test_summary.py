"""OmniDocBench v1.6's metric step (:mod:`evalsuite.metrics.omnidocbench.v1_6.summary`) against
runs of the unmodified official code (9dc1dec):

- cases.json.gz: whole official runs without CDM of the 54 pages whose official page outputs
  v16_cases.json.gz holds;
- v16_summary_cases.json.gz (gen_v16_summary_cases.py): the official metric step WITH CDM,
  surrogate predictions, formulas scored as text, filtered and empty runs; CDM is replaced by
  the official scores it recorded for each (ground truth, prediction) pair, so a pair prepared
  differently from the official code has no score and fails the test.
"""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Mapping
from typing import Any

import pytest

from evalsuite.metrics.cdm import CdmToolchainUnavailableError
from evalsuite.metrics.omnidocbench.common.formula_cdm import cdm_hook
from evalsuite.metrics.omnidocbench.v1_6.page import PageOutputs
from evalsuite.metrics.omnidocbench.v1_6.summary import (
    evaluate_run,
    formula_cdm_scores,
    gt_pages_by_element,
    match_debug_section,
    run_samples,
    strip_cdm_math_wrappers,
)
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"


def _load(name: str) -> dict[str, Any]:
    with gzip.open(FIXTURES / name, "rt", encoding="utf-8") as f:
        return json.load(f)


CASES = _load("cases.json.gz")
V16_PAGES = {page["id"]: PageOutputs(**page["outputs"])
             for page in _load("v16_cases.json.gz")["pages"]}
SUMMARY_CASES = _load("v16_summary_cases.json.gz")
SUMMARY_PAGES = {name: PageOutputs(**outputs) for name, outputs in SUMMARY_CASES["pages"].items()}
"""The official page-step outputs the summary cases recorded, by image name."""


def _canonical(tree: Any) -> str:
    """JSON text with sorted keys: NaN equals NaN, 1 differs from 1.0, "NaN" from NaN."""
    return json.dumps(tree, sort_keys=True, ensure_ascii=False)


def _passes(page: Mapping[str, Any], page_filter: Mapping[str, Any] | None) -> bool:
    attributes = page["page_info"]["page_attribute"]
    return all(attributes[key] == value for key, value in (page_filter or {}).items())


@pytest.mark.parametrize("run_name", sorted(CASES["runs"]))
def test_official_runs_without_cdm(run_name: str) -> None:
    run = CASES["runs"][run_name]
    gt = {case["id"]: case["gt_page"] for case in CASES["cases"]}
    kept = run["pages_passing_filter"]
    assert kept == [name for name in run["pages"] if _passes(gt[name], run["filter"])]
    official = run["official"]["v1.6"]
    result = evaluate_run(
        [V16_PAGES[name] for name in kept],
        {gt[name]["page_info"]["image_path"]: gt[name]["page_info"]["page_attribute"]
         for name in run["pages"]},
        gt_pages_by_element(gt[name] for name in kept),
        teds_workers=2,
        match_debug=match_debug_section(len(kept), workers=2),
    )
    assert _canonical(result.metric_result) == _canonical(official["metric_result"])
    report = official["run_summary"]
    assert _canonical(result.run_report(report["save_name"])) == _canonical(
        {key: value for key, value in report.items() if key != "runtime_environment"})
    assert result.overall is None  # no CDM


def _recorded_cdm(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The official CDM scores recorded for these pairs (KeyError for a pair never scored)."""
    recorded = {(gt, pred): (f1, error) for gt, pred, f1, error in SUMMARY_CASES["cdm_calls"]}
    scores = []
    for pair in pairs:
        f1, error = recorded[pair]
        scores.append({"F1_score": f1, **({"cdm_eval_error": error} if error else {})})
    return scores


@pytest.mark.parametrize("run", SUMMARY_CASES["runs"], ids=lambda run: run["name"])
def test_official_runs_with_cdm(run: dict[str, Any]) -> None:
    kept = [page for page in run["gt_pages"] if _passes(page, run["filter"])]
    names = [page["page_info"]["image_path"] for page in kept]
    result = evaluate_run(
        [SUMMARY_PAGES[name] for name in names],
        {page["page_info"]["image_path"]: page["page_info"]["page_attribute"]
         for page in run["gt_pages"]},
        gt_pages_by_element(kept),
        formula_cdm=_recorded_cdm if run["cdm"] else None,
        teds_workers=2,
        cdm_workers=2,
        match_debug=match_debug_section(len(kept), run["fallback"], workers=2),
    )
    assert _canonical(result.metric_result) == _canonical(run["metric_result"])
    assert _canonical(result.run_report("run")) == _canonical(run["run_summary"])
    official_overall = run["run_summary"]["notebook_metric_summary"]["overall_notebook"]
    assert result.overall == official_overall


def test_every_recorded_cdm_pair_is_asked_for() -> None:
    """The runs together prepare exactly the pairs the official code scored (no pair missed)."""
    asked: set[tuple[str, str]] = set()

    def recording(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
        asked.update(pairs)
        return _recorded_cdm(pairs)

    formulas = run_samples(SUMMARY_PAGES.values())["display_formula"]
    formula_cdm_scores(formulas, recording)
    recorded = {(gt, pred) for gt, pred, _, _ in SUMMARY_CASES["cdm_calls"]}
    assert recorded == asked


def test_surrogate_kept_only_when_strictly_better() -> None:
    """The surrogate's score, and its CDM error, replace the first only when higher."""
    sample = {"gt": "$$a$$", "pred": "b", "pred_cdm_alt": "c"}
    for first, alt, expected in ((0.5, 0.7, (0.7, "alt")), (0.5, 0.5, (0.5, None)),
                                 (0.9, 0.2, (0.9, None))):
        def cdm(pairs: list[tuple[str, str]], first=first, alt=alt) -> list[dict[str, Any]]:
            return [{"F1_score": first} if pred == "b" else
                    {"F1_score": alt, "cdm_eval_error": "alt"} for _, pred in pairs]
        assert formula_cdm_scores([sample], cdm) == [expected]


def test_cdm_scorer_with_a_wrong_count_is_refused() -> None:
    with pytest.raises(ValueError, match="2 results for 1 pairs"):
        formula_cdm_scores([{"gt": "a", "pred": "b"}], lambda pairs: [{"F1_score": 1.0}] * 2)


@pytest.mark.parametrize(("text", "expected"), [
    ("  $$ x^2 $$ ", "x^2"),
    ("$x$", "x"),
    (r"\[ a+b \]", "a+b"),
    (r"\( a \)", "a"),
    (r"$$\[ a \tag{3} \]$$", "a"),
    (r"a \nonumber", "a"),
    (None, ""),
])
def test_strip_cdm_math_wrappers(text: str | None, expected: str) -> None:
    assert strip_cdm_math_wrappers(text) == expected


def test_cdm_errors_are_listed_as_exception_cases() -> None:
    formula = {"gt": "a", "pred": "b", "img_id": "p.jpg", "gt_idx": [1], "pred_idx": [2],
               "gt_attribute": [{"formula_type": "print"}],
               "pred_category_type": "equation_isolated", "norm_gt": "a", "norm_pred": "b"}
    page = PageOutputs([], [formula], [], [], [])
    result = evaluate_run(
        [page], {"p.jpg": {"language": "english"}}, {"display_formula": {"p.jpg"}},
        formula_cdm=lambda pairs: [{"F1_score": 0.0, "cdm_eval_error": "ValueError: bad"}],
    ).metric_result
    debug = result["display_formula"]["metric_debug"]["CDM"]
    assert debug["exception_case_count"] == 1
    assert debug["exception_cases"] == [{"case_name": "p.jpg[gt=[1], pred=[2]]",
                                         "img_id": "p.jpg", "gt_idx": [1], "pred_idx": [2],
                                         "reason": "ValueError: bad"}]
    assert result["display_formula"]["all"]["CDM"] == {"all": 0.0}
    assert math.isclose(result["display_formula"]["all"]["Edit_dist"]["ALL_page_avg"], 1.0)


@pytest.mark.slow
@pytest.mark.cdm
def test_official_run_with_the_suites_cdm() -> None:
    """The whole v1.6 metric step with the suite's own v1.6 CDM equals the official run."""
    try:
        formula_cdm = cdm_hook("1.6", workers=2)
    except CdmToolchainUnavailableError as error:
        pytest.skip(str(error))
    run = next(run for run in SUMMARY_CASES["runs"] if run["name"] == "cdm_all")
    names = [page["page_info"]["image_path"] for page in run["gt_pages"]]
    result = evaluate_run(
        [SUMMARY_PAGES[name] for name in names],
        {page["page_info"]["image_path"]: page["page_info"]["page_attribute"]
         for page in run["gt_pages"]},
        gt_pages_by_element(run["gt_pages"]),
        formula_cdm=formula_cdm, teds_workers=2, cdm_workers=2,
        match_debug=match_debug_section(len(names), workers=2),
    )
    assert _canonical(result.metric_result) == _canonical(run["metric_result"])
