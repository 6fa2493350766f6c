"""``evalsuite score omnidocbench`` with the v1.5 evaluation, end to end through the command
against the official v1.5 results of cases.json.gz; version choice; CDM wiring; predictions
that are not UTF-8 (both ``score`` benchmarks)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.commands import score as score_command
from evalsuite.metrics.cdm import CdmToolchainMissingError
from evalsuite.metrics.omnidocbench import versions
from evalsuite.metrics.omnidocbench.evaluation import PAGE_FIELDS
from tests.test_omnidocbench_score import write_run

FIXTURES = Path(__file__).parent / "fixtures" / "omnidocbench"
CASES = json.loads(gzip.decompress((FIXTURES / "cases.json.gz").read_bytes()))
BY_ID = {case["id"]: case for case in CASES["cases"]}
OLMOCR_BENCH = Path(__file__).parent / "fixtures" / "olmocr_bench" / "bench1"


def score(folder: Path, *options: str) -> int:
    return main(["score", "omnidocbench", "--gt", str(folder / "OmniDocBench.json"),
                 "--pred", str(folder / "pred"), *options])


def nulls(tree):
    if isinstance(tree, dict):
        return {key: nulls(value) for key, value in tree.items()}
    return None if isinstance(tree, float) and math.isnan(tree) else tree


@pytest.mark.parametrize("run", sorted(CASES["runs"]))
def test_score_equals_the_official_v15_evaluation(run, tmp_path, capsys):
    write_run(run, tmp_path)
    filters = [f"--filter={k}={v}" for k, v in (CASES["runs"][run]["filter"] or {}).items()]
    status = score(tmp_path, "--version", "1.5", "--no-cdm", "--json", *filters)
    scored = json.loads(capsys.readouterr().out)
    official = CASES["runs"][run]["official"]["v1.5"]
    assert scored["version"] == "1.5" and scored["commit"].startswith("0f22218")
    assert scored["official"] == nulls(official["metric_result"])
    assert scored["overall"]["overall"] is None and scored["overall"]["display_formula_cdm"] is None
    for page_id in CASES["runs"][run]["pages_passing_filter"]:
        case = BY_ID[page_id]
        if case["prediction_md"] is None:
            continue
        values = case["official"][run]["v1.5"]
        assert scored["pages"][case["image_name"][:-4]] == {
            ours: nulls(values[theirs]) for ours, theirs in PAGE_FIELDS.items()}
    assert status == (1 if scored["missing_predictions"] else 0)


def test_the_readable_output_names_version_and_commit(tmp_path, capsys):
    write_run("text_only", tmp_path)
    assert score(tmp_path, "--version", "1.5", "--no-cdm") == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("OmniDocBench v1.5 end-to-end evaluation "
                            "(opendatalab/OmniDocBench 0f22218): 5 of 5 pages scored")


def fake_cdm(pairs):
    return [{"F1_score": 1.0 if gt == pred else 0.5, "recall": 0.0, "precision": 0.0}
            for gt, pred in pairs]


def test_cdm_is_on_by_default_and_gives_the_leaderboard_overall(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(score_command, "cdm_hook", lambda version: fake_cdm)
    write_run("main", tmp_path)
    score(tmp_path, "--json")  # 54 pages: no release's count, so the newest version, 1.5
    scored = json.loads(capsys.readouterr().out)
    assert scored["version"] == "1.5"
    cdm = scored["official"]["display_formula"]["page"]["CDM"]["ALL"]
    text = scored["official"]["text_block"]["all"]["Edit_dist"]["ALL_page_avg"]
    teds = scored["official"]["table"]["page"]["TEDS"]["ALL"]
    parts = [round(text, 3), round(cdm * 100, 3), round(teds * 100, 3)]
    assert scored["overall"] == {
        "overall": ((1 - parts[0]) * 100 + parts[1] + parts[2]) / 3,
        "text_block_edit_dist": parts[0], "display_formula_cdm": parts[1],
        "table_teds": parts[2],
    }


def test_an_unloadable_cdm_asks_for_no_cdm(tmp_path, capsys, monkeypatch):
    def unloadable(version):
        raise CdmToolchainMissingError("CDM needs xelatex; install with: sudo make cdm-toolchain")

    monkeypatch.setattr(score_command, "cdm_hook", unloadable)
    write_run("text_only", tmp_path)
    assert score(tmp_path, "--version", "1.5") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "make cdm-toolchain" in err
    assert err.endswith("or pass --no-cdm to score without CDM")


@pytest.mark.parametrize(("pages", "version"), [(5, "1.0"), (5, "1.5")])
def test_the_default_version_is_the_releases_by_page_count(
        pages, version, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(versions.DATASET_VERSIONS, pages, version)
    write_run("text_only", tmp_path)
    score(tmp_path, "--json", "--no-cdm")
    assert json.loads(capsys.readouterr().out)["version"] == version


def test_v16_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    write_run("text_only", tmp_path)
    assert score(tmp_path, "--version", "1.6") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "v1.6 scoring is not implemented yet" in err
    monkeypatch.setitem(versions.DATASET_VERSIONS, 5, "1.6")  # a v1.6-sized ground truth
    assert score(tmp_path) == 2
    assert "v1.6 scoring is not implemented yet" in capsys.readouterr().err


def test_release_page_counts():
    assert versions.version_for_pages(981) == "1.0"
    assert versions.version_for_pages(1355) == "1.5"
    assert versions.version_for_pages(1651) == "1.6"
    assert versions.version_for_pages(12) == "1.5"


@pytest.mark.parametrize("version", ["1.0", "1.5"])
def test_a_prediction_that_is_not_utf8_is_named(version, tmp_path, capsys):
    pred = write_run("text_only", tmp_path)
    bad = pred / f"{BY_ID['c02_text_small_edits']['image_name'][:-4]}.md"
    bad.write_bytes("caf\u00e9".encode("latin-1"))
    assert score(tmp_path, "--version", version, "--no-cdm") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(bad) in err and "not UTF-8" in err


def test_an_olmocr_prediction_that_is_not_utf8_is_named(tmp_path, capsys):
    (tmp_path / "pdfs").mkdir()
    (tmp_path / "pdfs" / "b1.pdf").write_bytes((OLMOCR_BENCH / "pdfs" / "b1.pdf").read_bytes())
    line = {"pdf": "b1.pdf", "page": 1, "id": "t1", "type": "present", "text": "x"}
    (tmp_path / "a.jsonl").write_text(json.dumps(line) + "\n")
    (tmp_path / "pred").mkdir()
    (tmp_path / "pred" / "b1_pg1_repeat1.md").write_bytes(b"\xff\xfe text")
    code = main(["score", "olmocr-bench", "--tests", str(tmp_path), "--pred",
                 str(tmp_path / "pred")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert str(tmp_path / "pred" / "b1_pg1_repeat1.md") in err and "not UTF-8" in err
