"""OmniDocBench v1.6 whole runs WITH CDM against the official v1.6 code's own results.

Differential oracle: ``fixtures/omnidocbench/v16_cdm_cases.json.gz`` (gen_v16_cdm_cases.py:
21 constructed pages of cases.json.gz and one built page with Chinese text inside display
formulas, scored by opendatalab/OmniDocBench 9dc1dec run unmodified with configs/end2end.yaml,
CDM included, unfiltered and filtered to English; one page has no prediction file and is scored
as an empty page). The suite's v1.6 evaluation with the real CDM (``cdm_hook("1.6")``) must give
the official ``*_metric_result.json`` leaf by leaf (``==``, NaN equal to NaN) and eval_report's
notebook overall (unrounded) with its parts.

Needs pdflatex (with CJK's gkai font), Ghostscript and node (``make test-cdm``): without them
the CDM hook fails naming the install command (no skip).
"""

from __future__ import annotations

import re

import pytest

from evalsuite.metrics.omnidocbench.evaluation import Evaluation
from tests.support.omnidocbench_official_runs import (
    assert_same_metric_result,
    evaluate_run,
    load_runs,
)

CASES = "v16_cdm_cases.json.gz"
PAYLOAD = load_runs(CASES)
RUNS = sorted(PAYLOAD["runs"])
MISSING_PREDICTION = "c33_missing_prediction.jpg"
NOTEBOOK_PARTS = {"text_block_edit_dist": "text_block_Edit_dist",
                  "display_formula_cdm": "display_formula_CDM", "table_teds": "table_TEDS"}
"""The leaderboard's parts and the names eval_report's notebook summary gives them."""

pytestmark = pytest.mark.cdm


def _evaluation(run: str) -> Evaluation:
    """The run as the official code saw it (:func:`evaluate_run`), with the real v1.6 CDM."""
    return evaluate_run(CASES, run, "1.6")


def test_fixture_has_formulas_scored_by_cdm() -> None:
    """The oracle is worth something: CDM figures exist, not all 0 or 1; a formula holding
    Chinese text is scored; the page without a prediction is part of the unfiltered run."""
    results = PAYLOAD["runs"]["main"]["results"]
    scores = results["pred_quick_match_display_formula_per_sample_CDM.json"]
    assert len(scores) >= 10
    assert any(0 < value < 1 for value in scores.values())
    samples = results["pred_quick_match_display_formula_result.json"]
    assert any(re.search("[\u4e00-\u9fff]", sample["gt"]) and sample["metric"]["CDM"] < 1
               for sample in samples)
    assert MISSING_PREDICTION in results["pred_quick_match_text_block_per_page_edit.json"]
    assert PAYLOAD["runs"]["main"]["notebook_summary"]["overall_notebook"] is not None


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_metric_result_equals_the_official_one(run: str) -> None:
    assert_same_metric_result(_evaluation(run).result, PAYLOAD["runs"][run]["metric_result"])


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_leaderboard_overall_equals_the_notebook(run: str) -> None:
    notebook = PAYLOAD["runs"][run]["notebook_summary"]
    expected = {ours: notebook["metrics"][theirs]["notebook_value"]
                for ours, theirs in NOTEBOOK_PARTS.items()}
    expected["overall"] = notebook["overall_notebook"]
    board = _evaluation(run).leaderboard or {}
    assert {key: board.get(key) for key in expected} == expected


@pytest.mark.slow
def test_the_page_without_prediction_is_scored_as_empty() -> None:
    """Its per-page figures are the official per-page edit files' (1.0: all missed; no table)."""
    evaluation = _evaluation("main")
    assert evaluation.missing == [MISSING_PREDICTION]
    page = evaluation.pages[MISSING_PREDICTION.removesuffix(".jpg")]
    results = PAYLOAD["runs"]["main"]["results"]
    for element in ("text_block", "display_formula", "table", "reading_order"):
        edits = results[f"pred_quick_match_{element}_per_page_edit.json"]
        assert page[f"{element}_edit_dist"] == edits.get(MISSING_PREDICTION)
