"""OmniDocBench v1.5 end-to-end evaluation against the official v1.5 code's own results.

Differential oracle: ``fixtures/omnidocbench/cases.json.gz`` (``gen_cases.py``: 54 constructed
pages in five runs, scored by opendatalab/OmniDocBench at 0f22218 run unmodified, with the
shipped ``configs/end2end.yaml``, so no CDM number). Every run must give the official metric
result leaf by leaf (``==``, NaN equal to NaN), every page its official per-page figures and
its official matched rows field by field. Then the CDM hook against an independent
aggregation written from ``call_CDM`` / ``get_full_labels_results`` / ``get_page_split``, the
leaderboard overall against the notebook's formula, and mutations that must break the match.
"""

from __future__ import annotations

import gzip
import json
import math
import re
from collections import defaultdict
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from evalsuite.metrics.omnidocbench import versions
from evalsuite.metrics.omnidocbench.common.sample import ElementSample
from evalsuite.metrics.omnidocbench.evaluation import (
    CODE_BASES,
    PAGE_FIELDS,
    Evaluation,
    cdm_pair,
    evaluate_pages,
    leaderboard_overall,
)
from evalsuite.metrics.omnidocbench.v1_0.extract import split_markdown
from evalsuite.metrics.omnidocbench.v1_0.page import ELEMENTS, match_page, run_samples
from evalsuite.metrics.omnidocbench.versions import V10, V15
from tests.metrics.omnidocbench.v1_0.test_match import official_row
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
V = "v1.5"


@cache
def _cases() -> dict[str, Any]:
    with gzip.open(FIXTURES / "cases.json.gz", "rt", encoding="utf-8") as file:
        return json.load(file)


def _by_id() -> dict[str, dict[str, Any]]:
    return {case["id"]: case for case in _cases()["cases"]}


RUNS = sorted(_cases()["runs"])


def _evaluate(run: str, **options: Any) -> Evaluation:
    """The run as the official code saw it: its pages passing the filter, predictions by
    image name (None: no prediction file), attributes of every page of its ground truth."""
    spec, by_id = _cases()["runs"][run], _by_id()
    pages = [by_id[page_id] for page_id in spec["pages_passing_filter"]]
    predictions = {case["image_name"]: case["prediction_md"] for case in pages}
    page_info = {by_id[page_id]["image_name"]: by_id[page_id]["gt_page"]["page_info"]
                 ["page_attribute"] for page_id in spec["pages"]}
    return evaluate_pages([case["gt_page"] for case in pages], predictions.get, page_info,
                          version="1.5", **options)


@cache
def _evaluation(run: str) -> Evaluation:
    """:func:`_evaluate` without CDM, once per run."""
    return _evaluate(run)


def same(ours: Any, official: Any) -> bool:
    """Equal leaf by leaf: same keys, same types, ``==``, NaN equal to NaN."""
    if isinstance(official, dict):
        return isinstance(ours, dict) and ours.keys() == official.keys() and all(
            same(ours[key], official[key]) for key in official)
    if isinstance(official, list):
        return isinstance(ours, list) and len(ours) == len(official) and all(
            same(a, b) for a, b in zip(ours, official, strict=True))
    if isinstance(official, float) and math.isnan(official):
        return isinstance(ours, float) and math.isnan(ours)
    return type(ours) is type(official) and ours == official


@cache
def _run_samples(run: str) -> dict[str, list[ElementSample]]:
    by_id = _by_id()
    pages = [match_page(by_id[page_id]["gt_page"], by_id[page_id]["prediction_md"], rules=V15)
             for page_id in _cases()["runs"][run]["pages_passing_filter"]
             if by_id[page_id]["prediction_md"] is not None]
    table_format, samples = run_samples(pages, V15)
    assert table_format == "html"  # v1.5 appends LaTeX matches to the HTML ones
    return samples


# ---------------------------------------------------------------- the official runs


@pytest.mark.parametrize("run", RUNS)
def test_metric_result_equals_the_official_one(run: str) -> None:
    evaluation = _evaluation(run)
    official = _cases()["runs"][run]["official"][V]["metric_result"]
    assert same(evaluation.result, official)
    assert evaluation.version == "1.5" and evaluation.commit.startswith("0f22218")


@pytest.mark.parametrize("run", RUNS)
def test_per_page_edit_files_equal_the_official_ones(run: str) -> None:
    evaluation = _evaluation(run)
    for element, per_page in _cases()["runs"][run]["official"][V]["per_page_edit_files"].items():
        field = next(name for name, key in PAGE_FIELDS.items() if key == f"{element}_edit")
        ours = {f"{stem}.jpg": figures[field] for stem, figures in evaluation.pages.items()
                if figures[field] is not None}
        assert same(ours, per_page or {}), element  # no file (None) without samples


def _page_cases() -> list[tuple[str, str]]:
    return [(run, case["id"]) for case in _cases()["cases"] for run in case["runs"]]


@pytest.mark.parametrize(("run", "case_id"), _page_cases())
def test_pages_equal_the_official_ones(run: str, case_id: str) -> None:
    case = _by_id()[case_id]
    official = case["official"][run][V]
    figures = {key: value for key, value in official.items() if key != "pairs"}
    stem = case["image_name"][:-4]
    evaluation = _evaluation(run)
    if case["prediction_md"] is None or case_id not in _cases()["runs"][run][
            "pages_passing_filter"]:
        assert stem not in evaluation.pages
        assert all(value is None for value in figures.values())
        assert not any(official["pairs"].values())
        return
    ours = {key: evaluation.pages[stem][name] for name, key in PAGE_FIELDS.items()}
    assert same(ours, figures)
    samples = _run_samples(run)
    for element in ELEMENTS:
        rows = [official_row(sample, element) for sample in samples[element]
                if sample.img_id == case["image_name"]]
        assert same(rows, official["pairs"][element]), element


def _formula_page(name: str, prediction: str, *, text: str | None = None) -> dict[str, Any]:
    """A ground-truth page holding one display formula ``x^2+y^2`` (and a text block)."""
    blocks: list[dict[str, Any]] = [{"category_type": "equation_isolated", "anno_id": 0,
                                     "order": 1, "latex": "$$x^2+y^2$$", "attribute": {}}]
    if text is not None:
        blocks.append({"category_type": "text_block", "anno_id": 1, "order": 2, "text": text,
                       "attribute": {}})
    return {"layout_dets": blocks, "extra": {"relation": []},
            "page_info": {"image_path": name, "page_attribute": {"language": "english"}},
            "prediction": prediction}


def test_formulas_read_as_text_join_the_text_only_when_the_run_has_text() -> None:
    """v1.5 ``get_matched_elements``: a display formula matched to predicted text is scored as
    text (its LaTeX through pylatexenc), appended after the run's text samples, and dropped
    when the run has no text sample at all."""
    alone = _formula_page("a.jpg", "x squared plus y squared")
    with_text = _formula_page("b.jpg", "Some words here.\n\nx squared", text="Some words here.")
    info = {"a.jpg": {"language": "english"}, "b.jpg": {"language": "english"}}

    def run(pages: list[dict[str, Any]]) -> Evaluation:
        texts = {page["page_info"]["image_path"]: page["prediction"] for page in pages}
        return evaluate_pages(pages, texts.get, info, version="1.5")

    dropped = run([alone])
    assert dropped.result["display_formula"]["all"]["Edit_dist"] == {"ALL_page_avg": "NaN"}
    assert dropped.result["text_block"]["all"]["Edit_dist"] == {"ALL_page_avg": "NaN"}
    kept = run([alone, with_text])
    by_page = kept.pages
    assert by_page["a"]["text_block_edit_dist"] is not None  # the formula, now text
    assert by_page["a"]["display_formula_edit_dist"] is None


def test_the_cases_exercise_what_v15_changed() -> None:
    """The fixtures hold the v1.5-only paths, so the tests above check them."""
    samples = {run: _run_samples(run) for run in RUNS}
    main = samples["main"]
    # a display formula matched to predicted text, scored as text
    assert any(s.gt_category_type == "equation_isolated" for s in main["text_block"])
    # a LaTeX-table match scored as an unpredicted HTML table
    assert any(s.pred_idx == "" for s in main["table"])


# ---------------------------------------------------------------- the CDM hook


def _overlap(gt: str, pred: str) -> float:
    """A stand-in for CDM's F1: the Jaccard index of the two formulas' character sets."""
    union = set(gt) | set(pred)
    return len(set(gt) & set(pred)) / len(union) if union else 1.0


def _fake_cdm(pairs: list[tuple[str, str]]) -> list[dict[str, float]]:
    return [{"F1_score": _overlap(gt, pred), "recall": 0.0, "precision": 0.0}
            for gt, pred in pairs]


def _prepared(text: str) -> str:
    """The official preparation, written out: ``lstrip("$$").rstrip("$$").strip()`` then the
    same with ``"$"`` (``lstrip("$$")`` strips single ``$`` characters)."""
    return text.lstrip("$").rstrip("$").strip().lstrip("$").rstrip("$").strip()


def _expected_cdm(run: str) -> dict[str, dict[str, float]]:
    """``all``, ``group`` and ``page`` CDM figures of the run by the official rules (plain
    loops over the official display-formula rows): ``all``: mean over samples; ``group``: per
    ground-truth attribute ``"key: value"``, mean over samples; ``page``: per page attribute
    (``ALL``, ``key: value``, special issues without "table"), mean over pages of the page's
    mean."""
    by_id = _by_id()
    scores: list[float] = []
    group: dict[str, list[float]] = defaultdict(list)
    page_scores: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for page_id in _cases()["runs"][run]["pages_passing_filter"]:
        case = by_id[page_id]
        for row in case["official"][run][V]["pairs"]["display_formula"]:
            gt = _prepared(row["gt"])
            pred = _prepared(row["pred"].split("```latex")[-1].split("```")[0])
            score = _overlap(gt, pred)
            scores.append(score)
            for label in {f"{k}: {v}" for anno in row["gt_attribute"] for k, v in anno.items()}:
                group[label].append(score)
            labels = ["ALL"]
            for key, value in case["gt_page"]["page_info"]["page_attribute"].items():
                if isinstance(value, list):
                    labels += [issue for issue in value if "table" not in issue]
                else:
                    labels.append(f"{key}: {value}")
            for label in labels:
                page_scores[label][page_id].append(score)
    return {
        "all": {"all": sum(scores) / len(scores)} if scores else {},
        "group": {label: sum(values) / len(values) for label, values in group.items()},
        "page": {label: sum(sum(v) / len(v) for v in pages.values()) / len(pages)
                 for label, pages in page_scores.items()},
    }


@pytest.mark.parametrize("run", RUNS)
def test_the_cdm_hook_lands_where_the_official_call_cdm_puts_it(run: str) -> None:
    evaluation = _evaluate(run, formula_cdm=_fake_cdm)
    formula = evaluation.result["display_formula"]
    expected = _expected_cdm(run)
    assert formula["all"]["CDM"] == pytest.approx(expected["all"], abs=1e-12)
    assert formula["group"].get("CDM", {}) == pytest.approx(expected["group"], abs=1e-12)
    assert formula["page"].get("CDM", {}) == pytest.approx(expected["page"], abs=1e-12)
    # CDM adds figures and changes none of the others
    without = _evaluation(run).result
    assert same({k: v for k, v in formula["all"].items() if k != "CDM"},
                without["display_formula"]["all"])
    for part in ("group", "page"):
        assert same({k: v for k, v in formula[part].items() if k != "CDM"},
                    without["display_formula"][part])


def test_the_stand_in_cdm_tells_pages_apart() -> None:
    """The stand-in scores differ between pages, so the page means above mean something."""
    page = _expected_cdm("main")["page"]
    assert len(set(page.values())) > 2


def test_without_cdm_there_is_no_cdm_key() -> None:
    def keys(tree: Any) -> set[str]:
        return set() if not isinstance(tree, dict) else {
            key for k, v in tree.items() for key in {k} | keys(v)}

    evaluation = _evaluate("main")
    assert "CDM" not in keys(evaluation.result)
    assert evaluation.leaderboard is not None and evaluation.leaderboard["overall"] is None


def test_the_cdm_pairs_are_prepared_as_officially() -> None:
    assert cdm_pair("$$\n x^2 \n$$", "```latex\n$$y$$\n```") == ("x^2", "y")
    assert cdm_pair("$a$", "intro ```latex b``` ```latex $c$ ``` tail") == ("a", "c")
    assert cdm_pair("$$$x$$$", "x") == ("x", "x")


def test_a_cdm_scorer_that_loses_pairs_is_refused() -> None:
    with pytest.raises(ValueError, match="results for"):
        _evaluate("main", formula_cdm=lambda pairs: [])


def test_cdm_is_refused_for_v10() -> None:
    with pytest.raises(ValueError, match=r"v1\.5"):
        evaluate_pages([], lambda name: None, {}, version="1.0", formula_cdm=_fake_cdm)


# ---------------------------------------------------------------- leaderboard overall


def test_leaderboard_overall_is_the_notebook_formula() -> None:
    result = {
        "text_block": {"all": {"Edit_dist": {"ALL_page_avg": 0.12345}}},
        "display_formula": {"page": {"CDM": {"ALL": 0.876543}}},
        "table": {"page": {"TEDS": {"ALL": 0.5555555}}},
    }
    overall = leaderboard_overall(result)
    assert overall == {
        "overall": ((1 - 0.123) * 100 + 87.654 + 55.556) / 3,
        "text_block_edit_dist": 0.123,
        "display_formula_cdm": 87.654,
        "table_teds": 55.556,
        "rule": "v1.5 notebook: parts rounded to 3 places before the mean",
    }


@pytest.mark.parametrize("run", RUNS)
def test_leaderboard_parts_are_the_official_figures(run: str) -> None:
    official = _cases()["runs"][run]["official"][V]["notebook_overall"]
    evaluation = _evaluate(run, formula_cdm=_fake_cdm)
    parts = evaluation.leaderboard
    assert parts is not None
    text = official["text_block_Edit_dist_ALL_page_avg"]
    assert parts["text_block_edit_dist"] == (None if text is None else round(text, 3))
    teds = official["table_TEDS_page_ALL_x100"]
    assert parts["table_teds"] == (None if teds is None else round(teds, 3))
    if None not in parts.values():
        assert parts["overall"] == pytest.approx(
            ((1 - parts["text_block_edit_dist"]) * 100 + parts["display_formula_cdm"]
             + parts["table_teds"]) / 3)


# ---------------------------------------------------------------- mutations


@pytest.mark.parametrize("mutation", [
    pytest.param({"formula_extra_deletions": ()}, id="v1.0 formula normalisation"),
    pytest.param({"hybrid_match": False}, id="v1.0 matching"),
    pytest.param({"formula_lines_joined": False}, id="v1.0 formula whitespace"),
])
def test_v10_rules_break_the_match(mutation: dict[str, Any], monkeypatch) -> None:
    """Each v1.5 switch matters on these pages: turned back to v1.0, some official figure or
    row is no longer met."""
    monkeypatch.setitem(versions.RULES, "1.5", replace(V15, **mutation))
    assert not all(_meets_the_official_run(run, replace(V15, **mutation)) for run in RUNS)


def test_v15_cleans_predictions_up_its_way() -> None:
    """v1.5 ``md_tex_filter``: ```html / ```latex fences go, symbol runs stay, page tags go,
    a formula keeps its spaces (the cases above have none of the first three)."""
    markdown = ("```html\n<html><body><p>A</p></body></html>\n```\n\n" + "-" * 12
                + " end\n\n$$a + b$$")
    v15, v10 = split_markdown(markdown, V15), split_markdown(markdown, V10)
    assert [e.content for e in v15["text_all"]] == ["<p>A</p>", "-" * 12 + " end"]
    assert [e.content for e in v10["text_all"]] == [
        "```html\n<html><body><p>A</p></body></html>", "----" + " end"]
    assert [e.content for e in v15["equation_isolated"]] == ["\\[a + b\\]"]
    assert [e.content for e in v10["equation_isolated"]] == ["\\[a+b\\]"]


def _meets_the_official_run(run: str, rules: versions.Rules) -> bool:
    """The run's metric result and every page's rows, scored by ``rules``, are the official
    v1.5 ones."""
    if not same(_evaluate(run).result, _cases()["runs"][run]["official"][V]["metric_result"]):
        return False
    by_id = _by_id()
    cases = [by_id[page_id] for page_id in _cases()["runs"][run]["pages_passing_filter"]
             if by_id[page_id]["prediction_md"] is not None]
    pages = [match_page(case["gt_page"], case["prediction_md"], rules=rules) for case in cases]
    _, samples = run_samples(pages, rules)
    return all(
        same([official_row(sample, element) for sample in samples[element]
              if sample.img_id == case["image_name"]],
             case["official"][run][V]["pairs"][element])
        for case in cases for element in ELEMENTS
    )


def test_every_version_is_scored_by_a_code_base_that_exists() -> None:
    """A row names its page and metric steps through ``code_base``; v1.5 is v1.0's code with
    other flags, v1.6 its own."""
    assert {version: rules.code_base for version, rules in versions.RULES.items()} == {
        "1.0": "1.0", "1.5": "1.0", "1.6": "1.6"}
    assert {rules.code_base for rules in versions.RULES.values()} <= set(CODE_BASES)


VERSION_TEST = re.compile(r'version\s*[!=]=\s*"1\.|V1\d\.version\b')


def test_only_the_version_table_asks_which_version_runs() -> None:
    """No module of evalsuite branches on a version's name (``rules.version == "1.6"``,
    ``V16.version``): what differs is a field of the version's row in ``versions.py``, which
    the steps read (docs/add_a_version.md). The pattern is checked to find such a test."""
    assert VERSION_TEST.search('if rules.version == "1.6":')
    assert VERSION_TEST.search("elif version != V16.version")
    package = Path(versions.__file__).parents[2]
    asking = [f"{path.relative_to(package)}:{number}"
              for path in sorted(package.rglob("*.py")) if path.name != "versions.py"
              for number, line in enumerate(path.read_text().splitlines(), start=1)
              if VERSION_TEST.search(line)]
    assert asking == []
