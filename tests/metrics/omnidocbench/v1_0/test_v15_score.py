"""``evalsuite score omnidocbench`` with the v1.5 and v1.6 evaluations, end to end through the
command against the official results of cases.json.gz; version choice; CDM wiring; predictions
that are not UTF-8 (both ``score`` benchmarks)."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from evalsuite.cli import main
from evalsuite.commands import score as score_command
from evalsuite.metrics.cdm import CdmToolchainUnavailableError
from evalsuite.metrics.omnidocbench import versions
from evalsuite.metrics.omnidocbench.evaluation import PAGE_FIELDS
from tests.metrics.omnidocbench.test_score import write_run
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "omnidocbench"
CASES = json.loads(gzip.decompress((FIXTURES / "cases.json.gz").read_bytes()))
BY_ID = {case["id"]: case for case in CASES["cases"]}
OLMOCR_BENCH = TEST_FIXTURES / "olmocr_bench" / "bench1"


def score(folder: Path, *options: str) -> int:
    return main(["score", "omnidocbench", "--gt", str(folder / "OmniDocBench.json"),
                 "--pred", str(folder / "pred"), *options])


def nulls(tree):
    if isinstance(tree, dict):
        return {key: nulls(value) for key, value in tree.items()}
    return None if isinstance(tree, float) and math.isnan(tree) else tree


COMMITS = {"1.5": "0f22218", "1.6": "9dc1dec"}
CONFIGURED_WORKERS = 13
"""end2end.yaml's worker counts, which v1.6's debug sections report (the cases were generated
with 2 workers)."""


def as_configured(tree):
    """v1.6's metric result as a run with end2end.yaml's worker counts reports it."""
    if isinstance(tree, dict):
        return {key: CONFIGURED_WORKERS if key == "workers" else as_configured(value)
                for key, value in tree.items()}
    return tree


@pytest.mark.parametrize("version", sorted(COMMITS))
@pytest.mark.parametrize("run", sorted(CASES["runs"]))
def test_score_equals_the_official_evaluation(run, version, tmp_path, capsys):
    """v1.5 and v1.6 without CDM: the metric result, the leaderboard parts and every page's
    figures (v1.6 scores a page without prediction as an empty page; v1.5 skips it)."""
    write_run(run, tmp_path)
    filters = [f"--filter={k}={v}" for k, v in (CASES["runs"][run]["filter"] or {}).items()]
    status = score(tmp_path, "--version", version, "--no-cdm", "--json", *filters)
    scored = json.loads(capsys.readouterr().out)
    official = CASES["runs"][run]["official"][f"v{version}"]
    assert scored["version"] == version and scored["commit"].startswith(COMMITS[version])
    expected = nulls(official["metric_result"])
    assert scored["official"] == (as_configured(expected) if version == "1.6" else expected)
    assert scored["overall"]["overall"] is None and scored["overall"]["display_formula_cdm"] is None
    scored_pages = set()
    for page_id in CASES["runs"][run]["pages_passing_filter"]:
        case = BY_ID[page_id]
        if case["prediction_md"] is None and version == "1.5":
            continue
        values = case["official"][run][f"v{version}"]
        scored_pages.add(case["image_name"][:-4])
        assert scored["pages"][case["image_name"][:-4]] == {
            ours: nulls(values[theirs]) for ours, theirs in PAGE_FIELDS.items()}
    assert set(scored["pages"]) == scored_pages
    assert status == (1 if scored["missing_predictions"] else 0)


@pytest.mark.parametrize("version", sorted(COMMITS))
def test_the_readable_output_names_version_and_commit(version, tmp_path, capsys):
    write_run("text_only", tmp_path)
    assert score(tmp_path, "--version", version, "--no-cdm") == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith(f"OmniDocBench v{version} end-to-end evaluation "
                            f"(opendatalab/OmniDocBench {COMMITS[version]}): 5 of 5 pages scored")


def fake_cdm(pairs):
    return [{"F1_score": 1.0 if gt == pred else 0.5, "recall": 0.0, "precision": 0.0}
            for gt, pred in pairs]


def official_parts(scored):
    """The leaderboard's three figures, from the official metric result."""
    official = scored["official"]
    return (official["text_block"]["all"]["Edit_dist"]["ALL_page_avg"],
            official["display_formula"]["page"]["CDM"]["ALL"] * 100,
            official["table"]["page"]["TEDS"]["ALL"] * 100)


def test_cdm_is_on_by_default_and_gives_the_leaderboard_overall(tmp_path, capsys, monkeypatch):
    """v1.6 (the default for 54 pages, no release's count): parts not rounded."""
    monkeypatch.setattr(score_command, "cdm_hook", lambda version: fake_cdm)
    write_run("main", tmp_path)
    score(tmp_path, "--json")
    scored = json.loads(capsys.readouterr().out)
    assert scored["version"] == "1.6"
    text, cdm, teds = official_parts(scored)
    assert 0 < cdm < 100 and 0 < teds < 100 and 0 < text < 1
    assert scored["overall"] == {
        "overall": ((1 - text) * 100 + cdm + teds) / 3,
        "text_block_edit_dist": text, "display_formula_cdm": cdm, "table_teds": teds,
        "rule": "v1.6 eval_report: parts not rounded",
    }


def test_v15_rounds_the_leaderboard_parts(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(score_command, "cdm_hook", lambda version: fake_cdm)
    write_run("main", tmp_path)
    score(tmp_path, "--json", "--version", "1.5")
    scored = json.loads(capsys.readouterr().out)
    parts = [round(part, 3) for part in official_parts(scored)]
    assert scored["overall"] == {
        "overall": ((1 - parts[0]) * 100 + parts[1] + parts[2]) / 3,
        "text_block_edit_dist": parts[0], "display_formula_cdm": parts[1],
        "table_teds": parts[2], "rule": "v1.5 notebook: parts rounded to 3 places before the mean",
    }


def test_an_unloadable_cdm_asks_for_no_cdm(tmp_path, capsys, monkeypatch):
    def unloadable(version):
        raise CdmToolchainUnavailableError(
            "CDM needs xelatex; install with: sudo make cdm-toolchain"
        )

    monkeypatch.setattr(score_command, "cdm_hook", unloadable)
    write_run("text_only", tmp_path)
    assert score(tmp_path, "--version", "1.5") == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "make cdm-toolchain" in err
    assert err.endswith("or pass --no-cdm to score without CDM")


@pytest.mark.parametrize(("pages", "version"), [(5, "1.0"), (5, "1.5"), (5, "1.6")])
def test_the_default_version_is_the_releases_by_page_count(
        pages, version, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(versions.DATASET_VERSIONS, pages, version)
    write_run("text_only", tmp_path)
    score(tmp_path, "--json", "--no-cdm")
    assert json.loads(capsys.readouterr().out)["version"] == version


def test_an_unknown_version_is_refused(tmp_path, capsys):
    write_run("text_only", tmp_path)
    with pytest.raises(SystemExit):
        score(tmp_path, "--version", "1.7")
    assert "1.7" in capsys.readouterr().err


def test_release_page_counts():
    assert versions.version_for_pages(981) == "1.0"
    assert versions.version_for_pages(1355) == "1.5"
    assert versions.version_for_pages(1651) == "1.6"
    assert versions.version_for_pages(12) == "1.6"


@pytest.mark.parametrize("version", ["1.0", "1.5", "1.6"])
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
