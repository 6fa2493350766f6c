"""Bad input to the scorers: a one-line error naming the file and what is wrong, exit status 2,
never a traceback or a wrong diagnosis ("missing" for a value of the wrong type, "no
prediction" for a folder). One size limit for every scorer's predictions; ``--workers`` means
the same everywhere; a run's "golden updates" are its own entries only."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from evalsuite import runner, textfiles
from evalsuite.cli import main
from evalsuite.engines.base import InferenceRequest, InferenceResult
from evalsuite.golden import GoldenStore, entries_from_record
from evalsuite.metrics.cdm import cdm_scores
from evalsuite.metrics.markdown import MAX_TOTAL_LENGTH
from evalsuite.plugin import reporting
from evalsuite.plugin.session import OPTIONS_KEY
from evalsuite.records.metadata import RunMetadata
from evalsuite.records.model import BenchmarkRecord, MetricSummary
from evalsuite.records.results import write_results
from evalsuite.runner import Sample
from evalsuite.textfiles import MAX_PREDICTION_CHARS, file_problem, found
from tests.support.paths import TEST_FIXTURES

FIXTURES = TEST_FIXTURES
OMNIDOCBENCH_GT = FIXTURES / "omnidocbench" / "fixture" / "OmniDocBench.json"
OLMOCR_PDF = FIXTURES / "olmocr_bench" / "bench1" / "pdfs" / "blank.pdf"


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The command's standard error, which must be exactly one line."""
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_found_names_what_a_json_value_is() -> None:
    assert found("oops") == "a string ('oops')"
    assert [found(v) for v in (None, True, 3, 2.5, {}, [1], [1, 2])] == [
        "null", "true", "a number (3)", "a number (2.5)", "an object", "a list of 1 item",
        "a list of 2 items"]


def test_file_problem_says_what_the_path_is(tmp_path: Path) -> None:
    (tmp_path / "file.md").write_text("x")
    (tmp_path / "folder.md").mkdir()
    (tmp_path / "loop.md").symlink_to("loop.md")
    (tmp_path / "dangling.md").symlink_to("nowhere")
    os.mkfifo(tmp_path / "pipe.md")
    assert file_problem(tmp_path / "file.md") is None
    assert file_problem(tmp_path / "folder.md") == "a folder, not a file"
    assert file_problem(tmp_path / "loop.md") == "a symbolic link loop"
    assert file_problem(tmp_path / "dangling.md") == "a broken symbolic link"
    assert file_problem(tmp_path / "absent.md") == "missing"
    assert file_problem(tmp_path / "pipe.md").startswith("not a regular file")


# --- score omnidocbench ---


def test_a_ground_truth_that_is_not_utf8_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gt = tmp_path / "OmniDocBench.json"
    gt.write_bytes(b"\xff\xfe[]")
    (tmp_path / "pred").mkdir()
    assert main(["score", "omnidocbench", "--gt", str(gt), "--pred", str(tmp_path / "pred"),
                 "--no-cdm"]) == 2
    assert one_error_line(capsys) == (f"error: file {gt} is not UTF-8 text (invalid start byte "
                                      "at byte 0); save it as UTF-8")


@pytest.mark.parametrize(("edit", "message"), [
    (lambda page: page.update(layout_dets="oops"),
     "layout_dets must be a list of blocks, found a string ('oops')"),
    (lambda page: page.pop("layout_dets"), "layout_dets (a list of blocks) is missing"),
    (lambda page: page["page_info"].update(page_attribute=[]),
     "page_info.page_attribute must be an object, found a list of 0 items"),
    (lambda page: page["page_info"].update(image_path=7),
     "page_info.image_path must be a string, found a number (7)"),
    (lambda page: page.update(page_info=None), "page_info must be an object, found null"),
])
def test_a_ground_truth_field_of_the_wrong_type_says_what_was_found(
    edit, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pages = json.loads(OMNIDOCBENCH_GT.read_text())
    edit(pages[1])
    gt = tmp_path / "OmniDocBench.json"
    gt.write_text(json.dumps(pages))
    (tmp_path / "pred").mkdir()
    assert main(["score", "omnidocbench", "--gt", str(gt), "--pred", str(tmp_path / "pred"),
                 "--no-cdm"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("error: OmniDocBench.json: page 1") and line.endswith(message), line


def test_a_ground_truth_that_is_not_a_list_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gt = tmp_path / "OmniDocBench.json"
    gt.write_text('{"pages": []}')
    (tmp_path / "pred").mkdir()
    assert main(["score", "omnidocbench", "--gt", str(gt), "--pred", str(tmp_path / "pred"),
                 "--no-cdm"]) == 2
    assert one_error_line(capsys) == f"error: {gt}: expected a list of pages, found an object"


def omnidocbench_predictions(tmp_path: Path) -> tuple[Path, list[str]]:
    """A prediction folder for the fixture's pages (each its ground-truth text), and the names
    of the files, in page order."""
    pred = tmp_path / "pred"
    pred.mkdir()
    names = []
    for page in json.loads(OMNIDOCBENCH_GT.read_text()):
        name = Path(page["page_info"]["image_path"]).stem + ".md"
        texts = [block.get("text", "") for block in page["layout_dets"]]
        (pred / name).write_text("\n\n".join(texts))
        names.append(name)
    return pred, names


@pytest.mark.parametrize("kind", ["folder", "loop", "dangling"])
def test_a_prediction_that_is_not_a_file_is_named_not_counted_as_missing(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pred, names = omnidocbench_predictions(tmp_path)
    spoiled = pred / names[2]
    spoiled.unlink()
    if kind == "folder":
        spoiled.mkdir()
    else:
        spoiled.symlink_to(spoiled.name if kind == "loop" else "nowhere.md")
    assert main(["score", "omnidocbench", "--gt", str(OMNIDOCBENCH_GT), "--pred", str(pred),
                 "--no-cdm"]) == 2
    line = one_error_line(capsys)
    assert line == f"error: prediction {spoiled} is {file_problem(spoiled)}", line


def test_every_scorer_refuses_a_prediction_over_the_one_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One limit, FinixDocBench's: ``score omnidocbench`` and ``score olmocr-bench`` refuse a
    longer prediction file (exit 2, naming it) and a benchmark run records a longer answer as
    a failed sample; the limit is lowered here so that the files stay small."""
    assert MAX_PREDICTION_CHARS == MAX_TOTAL_LENGTH == 10_000_000
    monkeypatch.setattr(textfiles, "MAX_PREDICTION_CHARS", 1000)
    pred, names = omnidocbench_predictions(tmp_path)
    (pred / names[0]).write_text("é" * 1001)
    assert main(["score", "omnidocbench", "--gt", str(OMNIDOCBENCH_GT), "--pred", str(pred),
                 "--no-cdm"]) == 2
    assert one_error_line(capsys) == (f"error: prediction {pred / names[0]} has 1_001 "
                                      "characters, over the limit of 1_000")
    (pred / names[0]).write_text("x" * 4001)  # more bytes than any 1,000 characters: not read
    assert main(["score", "omnidocbench", "--gt", str(OMNIDOCBENCH_GT), "--pred", str(pred),
                 "--no-cdm"]) == 2
    assert one_error_line(capsys).endswith("has 4_001 bytes, over the limit of 1_000 characters")

    tests, predictions = olmocr_bench(tmp_path)
    (predictions / "blank_pg1_repeat1.md").write_text("y" * 1001)
    assert main(["score", "olmocr-bench", "--tests", str(tests), "--pred",
                 str(predictions)]) == 2
    assert "blank_pg1_repeat1.md has 1_001 characters, over the limit" in one_error_line(capsys)

    monkeypatch.setattr(runner, "MAX_PREDICTION_CHARS", 1000)
    sample = Sample("s1", InferenceRequest(None, "p", "base", "s1"), reference="abc")
    (record,) = runner.score_samples(
        [sample], [InferenceResult("z" * 1001)], lambda s, r: {"edit_precision": 1.0}, [])
    assert record.error == ("the answer has 1_001 characters, over the limit of 1_000 that "
                            "every scorer reads")


# --- score olmocr-bench ---


def olmocr_bench(tmp_path: Path) -> tuple[Path, Path]:
    """A bench_data folder with one PDF and one ``present`` test, and a prediction folder."""
    tests = tmp_path / "bench"
    (tests / "pdfs").mkdir(parents=True)
    shutil.copy(OLMOCR_PDF, tests / "pdfs" / "blank.pdf")
    line = {"pdf": "blank.pdf", "page": 1, "id": "t1", "type": "present", "text": "hello"}
    (tests / "a.jsonl").write_text(json.dumps(line) + "\n")
    predictions = tmp_path / "olmocr-pred"
    predictions.mkdir()
    (predictions / "blank_pg1_repeat1.md").write_text("hello\n")
    return tests, predictions


@pytest.mark.parametrize(("content", "message"), [
    (b"[1, 2]\n", "a.jsonl:1: expected a JSON object (one test), found a list of 2 items"),
    (b'"present"\n', "a.jsonl:1: expected a JSON object (one test), found a string ('present')"),
    (b'{"pdf": "blank.pdf", "text": "\xff"}\n', "a.jsonl is not UTF-8 text (invalid start byte "
     "at byte 30); save it as UTF-8"),
])
def test_a_tests_file_line_that_is_not_a_test_is_one_line(
    content: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests, predictions = olmocr_bench(tmp_path)
    (tests / "a.jsonl").write_bytes(content)
    assert main(["score", "olmocr-bench", "--tests", str(tests), "--pred",
                 str(predictions)]) == 2
    line = one_error_line(capsys)
    assert line.startswith("error: ") and line.endswith(message), line
    assert "prediction" not in line


def test_an_olmocr_prediction_that_is_a_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tests, predictions = olmocr_bench(tmp_path)
    (predictions / "blank_pg1_repeat2.md").mkdir()
    assert main(["score", "olmocr-bench", "--tests", str(tests), "--pred",
                 str(predictions)]) == 2
    assert one_error_line(capsys) == (f"error: prediction {predictions / 'blank_pg1_repeat2.md'}"
                                      " is a folder, not a file")


# --- finix and --workers ---


def test_a_finix_prediction_that_is_a_folder_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pred = tmp_path / "pred"
    shutil.copytree(FIXTURES / "finix" / "pred", pred)
    spoiled = sorted(pred.glob("*.md"))[0]
    spoiled.unlink()
    spoiled.mkdir()
    assert main(["finix", "--gt_dir", str(FIXTURES / "finix" / "gt"), "--pred_dir", str(pred),
                 "--output_json", str(tmp_path / "out.json")]) == 1
    assert f"pred_dir entry {spoiled} is a folder, not a file" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["-3", "0"])
@pytest.mark.parametrize("command", [
    ["score", "cdm", "--version", "1.6", "--pairs", "pairs.jsonl"],
    ["score", "cdm", "--version", "1.5", "--pairs", "pairs.jsonl"],
    ["finix", "--gt_dir", "g", "--pred_dir", "p", "--output_json", "o.json"],
])
def test_workers_means_at_least_one_in_every_command(
    command: list[str], value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main([*command, "--workers", value])
    assert stopped.value.code == 2
    assert (f"argument --workers: {value} is out of range: use at least 1, or leave it out for "
            "one per CPU") in capsys.readouterr().err


def test_cdm_scores_take_the_same_workers() -> None:
    for workers in (0, -3, 1.5, True):
        with pytest.raises(ValueError, match="workers must be an int of at least 1"):
            cdm_scores([("x", "x")], version="1.6", workers=workers)


# --- golden updates of concurrent runs ---


def test_a_runs_golden_updates_are_its_own_entries_only(tmp_path: Path) -> None:
    """Another run writes entries into the same golden folder while this one runs: this run's
    "golden updates" list the entries of its own records, not the other run's."""
    golden = GoldenStore(tmp_path / "golden")
    before = golden.snapshot()

    def record(engine: str) -> BenchmarkRecord:
        return BenchmarkRecord("fox", engine, "mode=tiny",
                               {"edit_precision": MetricSummary(0.9, 10, 0.85, 0.95)},
                               data="fixtures")

    mine, theirs = record("mine"), record("theirs")
    for written in (theirs, mine):
        golden.update("fox", entries_from_record(
            written, ["edit_precision"], tolerance=lambda *_: 0.0, existing=golden.load("fox"),
            commit="c0ffee"))
    results = write_results(tmp_path / "run", RunMetadata("r1", "2026-01-01T00:00:00Z"), [mine])
    stash = pytest.Stash()
    stash[reporting.RESULTS_KEY] = results
    stash[reporting.GOLDEN_BEFORE_KEY] = before
    stash[OPTIONS_KEY] = SimpleNamespace(golden_dir=golden.directory)
    lines: list[str] = []
    reporter = SimpleNamespace(section=lambda *_, **__: None,
                               write_line=lambda line, **_: lines.append(line))
    reporting.terminal_summary(reporter, SimpleNamespace(stash=stash))
    updates = lines[lines.index(f"results: {results.resolve()}") + 1:]
    assert len(updates) == 1 and updates[0].startswith("fox [mine data=fixtures mode=tiny]")
