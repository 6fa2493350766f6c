"""The OmniDocBench v1.0 aggregates (evalsuite.metrics.omnidocbench.common.summary) against the
official metric results in cases.json.gz (made by running the official code: gen_cases.py),
fed with the official matched samples of each run, so only the aggregation is under test."""

from __future__ import annotations

import gzip
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalsuite.metrics.omnidocbench.common import summary
from tests.support.paths import TEST_FIXTURES

CASES = json.loads(gzip.decompress(
    (TEST_FIXTURES / "omnidocbench" / "cases.json.gz").read_bytes()
))
V10 = "v1.0"


def official_samples(run: str) -> dict[str, list[SimpleNamespace]]:
    """Each element's official sample rows of ``run``, pages in run order."""
    by_id = {case["id"]: case for case in CASES["cases"]}
    samples: dict[str, list[SimpleNamespace]] = {element: [] for element in summary.ELEMENTS}
    for page_id in CASES["runs"][run]["pages"]:
        case = by_id[page_id]
        official = case["official"][run][V10]
        for element, rows in official["pairs"].items():
            for index, row in enumerate(rows):
                img_id = (case["image_name"] if element == "reading_order"
                          else f"{case['image_name']}_{index}")
                metric = row.get("metric") or {}
                samples[element].append(SimpleNamespace(
                    gt=row["gt"], pred=row["pred"], norm_gt=row.get("norm_gt"),
                    norm_pred=row.get("norm_pred"), gt_attribute=row.get("gt_attribute"),
                    img_id=img_id, edit_num=row.get("Edit_num"), upper_len=row.get("upper_len"),
                    edit_dist=metric.get("Edit_dist"), teds=metric.get("TEDS"),
                    teds_structure_only=metric.get("TEDS_structure_only"),
                ))
    return samples


def page_info(run: str) -> dict[str, dict]:
    by_id = {case["id"]: case for case in CASES["cases"]}
    return {by_id[p]["image_name"]: by_id[p]["gt_page"]["page_info"]["page_attribute"]
            for p in CASES["runs"][run]["pages"]}


def same(ours, official) -> bool:
    """Equal, NaN equal to NaN, floats to the last digit."""
    if isinstance(official, dict):
        return isinstance(ours, dict) and ours.keys() == official.keys() and all(
            same(ours[k], official[k]) for k in official)
    if isinstance(official, float) and math.isnan(official):
        return isinstance(ours, float) and math.isnan(ours)
    return type(ours) is type(official) and ours == official


RUNS = sorted(CASES["runs"])


@pytest.mark.parametrize("run", RUNS)
def test_metric_result_equals_the_official_one(run):
    official = CASES["runs"][run]["official"][V10]["metric_result"]
    ours = summary.summarize(page_info(run), official_samples(run))
    for element in summary.ELEMENTS:
        for part in ("all", "group", "page"):
            assert same(ours[element][part], official[element][part]), (run, element, part)


@pytest.mark.parametrize("run", RUNS)
def test_per_page_edit_files_equal_the_official_ones(run):
    files = CASES["runs"][run]["official"][V10]["per_page_edit_files"]
    samples = official_samples(run)
    for element, per_page in files.items():
        # no file (None) where the element has no sample
        assert same(summary.page_edit_distances(samples[element]), per_page or {}), (run, element)


@pytest.mark.parametrize("run", RUNS)
def test_overall_table_equals_the_official_one(run):
    official = CASES["runs"][run]["official"][V10]["show_result_table"]
    result = summary.summarize(page_info(run), official_samples(run))
    expected = official["overall_table"] if official else None
    assert same(summary.overall_table(result), expected) if expected else (
        summary.overall_table(result) is None)


def test_an_element_without_samples_has_no_page_figures_and_no_overall():
    result = summary.summarize({"a.jpg": {"language": "english"}}, {})
    assert result["table"]["all"] == {"TEDS": {}, "TEDS_structure_only": {},
                                      "Edit_dist": {"ALL_page_avg": "NaN"}}
    assert summary.overall_table(result) is None


finite = st.floats(0, 1, allow_nan=False)


@given(st.lists(finite, min_size=1, max_size=40))
def test_kahan_mean_is_the_correctly_rounded_mean_of_short_lists(values):
    # the compensated sum is exact to within one rounding for these sizes
    assert summary._kahan_mean(values) == pytest.approx(math.fsum(values) / len(values),
                                                         rel=1e-15, abs=1e-300)


@given(st.lists(finite, min_size=2, max_size=40))
def test_welford_variance_matches_the_two_pass_formula(values):
    assert summary._welford_variance(values) == pytest.approx(
        float(np.var(np.array(values), ddof=1)), rel=1e-9, abs=1e-15)


@given(st.lists(st.one_of(finite, st.just(math.nan)), min_size=1, max_size=300))
def test_series_mean_skips_missing_values(values):
    present = [v for v in values if not math.isnan(v)]
    expected = math.fsum(present) / len(present) if present else math.nan
    ours = summary._series_mean(values)
    assert (math.isnan(ours) and math.isnan(expected)) or ours == pytest.approx(expected)


def test_sample_page_rule():
    assert summary.sample_page("page.jpg") == "page.jpg"
    assert summary.sample_page("page_a.jpg_12") == "page_a.jpg"
    assert summary.sample_page("page.png") == ""  # the official rule's quirk
