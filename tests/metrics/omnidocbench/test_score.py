"""``evalsuite score omnidocbench`` end to end against the official OmniDocBench v1.0 code's
results on the 54 constructed pages of cases.json.gz (every run: all pages, the English filter,
no formulas or tables, one formula page, LaTeX tables only), through the command's JSON."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.metrics.omnidocbench.evaluation import PAGE_FIELDS
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
CASES = json.loads(gzip.decompress((FIXTURES / "cases.json.gz").read_bytes()))
BY_ID = {case["id"]: case for case in CASES["cases"]}
V10 = "v1.0"
SCORE_V10 = ("score", "omnidocbench", "--version", "1.0")  # 54 pages default to the newest


def write_run(run: str, folder: Path) -> Path:
    """The run's ground truth and prediction files in the published layout."""
    pred = folder / "pred"
    pred.mkdir()
    pages = [BY_ID[page_id] for page_id in CASES["runs"][run]["pages"]]
    (folder / "OmniDocBench.json").write_text(json.dumps([c["gt_page"] for c in pages]))
    for case in pages:
        if case["prediction_md"] is not None:
            (pred / f"{case['image_name'][:-4]}.md").write_text(case["prediction_md"])
    return pred


def score_json(run: str, tmp_path: Path, capsys) -> tuple[int, dict]:
    pred = write_run(run, tmp_path)
    filters = [f"--filter={k}={v}" for k, v in (CASES["runs"][run]["filter"] or {}).items()]
    status = main([*SCORE_V10, "--gt", str(tmp_path / "OmniDocBench.json"),
                   "--pred", str(pred), "--json", *filters])
    return status, json.loads(capsys.readouterr().out)


def official_nulls(tree):
    """The official result as the command writes it: NaN as null."""
    if isinstance(tree, dict):
        return {key: official_nulls(value) for key, value in tree.items()}
    if isinstance(tree, float) and math.isnan(tree):
        return None
    return tree


@pytest.mark.parametrize("run", sorted(CASES["runs"]))
def test_score_equals_the_official_evaluation(run, tmp_path, capsys):
    if run == "latex_table_page" and not __import__("shutil").which("latexmlc"):
        pytest.fail("latexmlc (Debian package latexml) is needed to score LaTeX tables")
    status, scored = score_json(run, tmp_path, capsys)
    official = CASES["runs"][run]["official"][V10]
    assert scored["official"] == official_nulls(official["metric_result"])
    table = official["show_result_table"]["overall_table"]
    for language in ("EN", "CH"):
        expected = None if table is None else table[f"overall_{language}"]
        assert scored["overall"][f"overall_{language}"] == official_nulls(expected)
    passing = CASES["runs"][run]["pages_passing_filter"]
    for page_id in passing:
        case = BY_ID[page_id]
        stem = case["image_name"][:-4]
        if case["prediction_md"] is None:
            assert case["image_name"] in scored["missing_predictions"]
            assert stem not in scored["pages"]
            continue
        values = case["official"][run][V10]
        assert scored["pages"][stem] == {
            ours: official_nulls(values[theirs]) for ours, theirs in PAGE_FIELDS.items()
        }, page_id
    assert set(scored["pages"]) == {
        BY_ID[p]["image_name"][:-4] for p in passing if BY_ID[p]["prediction_md"] is not None
    }
    assert status == (1 if scored["missing_predictions"] else 0)


def test_a_missing_prediction_is_listed_and_fails_the_command(tmp_path, capsys):
    status, scored = score_json("main", tmp_path, capsys)
    assert status == 1 and scored["missing_predictions"] == ["c33_missing_prediction.jpg"]


def test_bad_inputs_are_named(tmp_path, capsys):
    (tmp_path / "gt.json").write_text(json.dumps([{"page_info": {"image_path": "a.jpg"}}]))
    (tmp_path / "pred").mkdir()
    assert main([*SCORE_V10, "--gt", str(tmp_path / "gt.json"),
                 "--pred", str(tmp_path / "pred")]) == 2
    assert "page 0 (a.jpg): page_info.page_attribute" in capsys.readouterr().err
    assert main([*SCORE_V10, "--gt", str(tmp_path / "gt.json"),
                 "--pred", str(tmp_path / "nowhere")]) == 2
    assert main([*SCORE_V10, "--gt", str(tmp_path / "missing.json"),
                 "--pred", str(tmp_path / "pred")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_the_readable_summary_shows_the_papers_columns(tmp_path, capsys):
    pred = write_run("main", tmp_path)
    main([*SCORE_V10, "--gt", str(tmp_path / "OmniDocBench.json"),
          "--pred", str(pred)])
    out = capsys.readouterr().out
    assert "53 of 54 pages scored" in out
    english = next(line for line in out.splitlines() if line.startswith("english"))
    assert english.split()[1:3] == ["0.2954", "0.0979"]


def test_a_page_the_official_code_stops_on_is_named(tmp_path, capsys):
    pages = json.loads(gzip.decompress((FIXTURES / "page_cases.json.gz").read_bytes()))["pages"]
    page = next(p for p in pages if "official_error" in p)
    (tmp_path / "pred").mkdir()
    (tmp_path / "OmniDocBench.json").write_text(json.dumps([page["gt_page"]]))
    name = page["gt_page"]["page_info"]["image_path"]
    (tmp_path / "pred" / f"{name[:-4]}.md").write_text(page["prediction_md"])
    status = main([*SCORE_V10, "--gt", str(tmp_path / "OmniDocBench.json"),
                   "--pred", str(tmp_path / "pred")])
    assert status == 2
    assert f"error: page {name}: " in capsys.readouterr().err
