"""OmniDocBench v1.5 whole runs WITH CDM against the official v1.5 code's own results.

Differential oracle: ``fixtures/omnidocbench/v15_cdm_cases.json.gz`` (gen_v15_cdm_cases.py:
20 constructed pages of cases.json.gz, display formulas among them, scored by
opendatalab/OmniDocBench 0f22218 run unmodified with ``CDM`` in display_formula's metrics,
unfiltered and filtered to English). The suite's v1.5 evaluation with the real CDM
(``cdm_hook("1.5")``) must give the official ``*_metric_result.json`` leaf by leaf (``==``,
NaN equal to NaN) and the notebook's leaderboard overall.

Needs xelatex, Ghostscript and node (``make test-cdm``): without them the CDM hook fails naming
the install command (no skip). The Chinese formulas are typeset in Noto Sans CJK SC, the
suite's stand-in for Source Han Sans SC; the scores equal the official ones with either.
"""

from __future__ import annotations

import pytest

from evalsuite.metrics.omnidocbench.evaluation import Evaluation
from tests.support.omnidocbench_official_runs import (
    assert_same_metric_result,
    evaluate_run,
    load_runs,
)

CASES = "v15_cdm_cases.json.gz"
PAYLOAD = load_runs(CASES)
RUNS = sorted(PAYLOAD["runs"])

pytestmark = pytest.mark.cdm


def _evaluation(run: str) -> Evaluation:
    """The run as the official code saw it (:func:`evaluate_run`), with the real v1.5 CDM."""
    return evaluate_run(CASES, run, "1.5")


def test_fixture_has_formulas_scored_by_cdm() -> None:
    """The oracle is worth something: CDM figures exist, and not all of them are 0 or 1."""
    scores = PAYLOAD["runs"]["main"]["results"]["pred_quick_match_display_formula_per_sample_CDM"
                                                ".json"]
    assert len(scores) >= 10
    assert any(0 < value < 1 for value in scores.values())
    assert PAYLOAD["runs"]["main"]["metric_result"]["display_formula"]["page"]["CDM"]


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_metric_result_equals_the_official_one(run: str) -> None:
    """Slow (~42-54 s per run here): the run's whole v1.5 evaluation with the real CDM, both
    sides of its display formulas tokenized in Node, compiled by xelatex and rasterised by
    Ghostscript on two workers (kept for the leaderboard test in the same process); the official
    result is of the whole run, compared leaf by leaf, so no page can be left out."""
    assert_same_metric_result(_evaluation(run).result, PAYLOAD["runs"][run]["metric_result"])


@pytest.mark.slow
@pytest.mark.parametrize("run", RUNS)
def test_leaderboard_overall_equals_the_notebook(run: str) -> None:
    notebook = PAYLOAD["runs"][run]["notebook_overall"]
    board = _evaluation(run).leaderboard
    assert board is not None
    assert board["text_block_edit_dist"] == notebook["text_block_Edit_dist"]
    assert board["display_formula_cdm"] == notebook["display_formula_CDM"]
    assert board["table_teds"] == notebook["table_TEDS"]
    assert board["overall"] == notebook["overall"]
