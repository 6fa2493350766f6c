"""OmniDocBench v1.5 whole runs WITH CDM against the official v1.5 code's own results.

Differential oracle: ``fixtures/omnidocbench/v15_cdm_cases.json.gz`` (make_v15_cdm_cases.py:
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

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evalsuite.metrics.omnidocbench.evaluation import Evaluation, evaluate_pages
from evalsuite.metrics.omnidocbench.formula_cdm import cdm_hook
from tests.test_omnidocbench_v15 import same

FIXTURES = Path(__file__).parent / "fixtures" / "omnidocbench"

with gzip.open(FIXTURES / "v15_cdm_cases.json.gz", "rt", encoding="utf-8") as _handle:
    PAYLOAD = json.load(_handle)
RUNS = sorted(PAYLOAD["runs"])

pytestmark = pytest.mark.cdm


@cache
def _cases() -> dict[str, dict[str, Any]]:
    with gzip.open(FIXTURES / "cases.json.gz", "rt", encoding="utf-8") as handle:
        return {case["id"]: case for case in json.load(handle)["cases"]}


@cache
def _evaluation(run: str) -> Evaluation:
    """The run as the official code saw it: the pages passing its filter, predictions by image
    name, attributes of every page of its ground truth; the real v1.5 CDM."""
    by_id = _cases()
    everything = [by_id[page_id] for page_id in PAYLOAD["pages"]]
    filt = PAYLOAD["runs"][run]["filter"] or {}
    pages = [case for case in everything if all(
        case["gt_page"]["page_info"]["page_attribute"].get(key) == value
        for key, value in filt.items())]
    predictions = {case["image_name"]: case["prediction_md"] for case in pages}
    page_info = {case["image_name"]: case["gt_page"]["page_info"]["page_attribute"]
                 for case in everything}
    return evaluate_pages([case["gt_page"] for case in pages], predictions.get, page_info,
                          version="1.5", formula_cdm=cdm_hook("1.5", workers=2))


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
    official = PAYLOAD["runs"][run]["metric_result"]
    result = _evaluation(run).result
    differing = {element: result.get(element) for element in official
                 if not same(result.get(element), official[element])}
    assert differing == {}
    assert same(result, official)


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
