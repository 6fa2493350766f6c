"""results.json: run metadata, atomic writing, side files, xdist parts, and its JSON Schema."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evalsuite.records import finalize_run
from evalsuite.records.history import read_history
from evalsuite.records.metadata import (
    RunMetadata,
    collect_metadata,
    git_state,
    merge_engine_details,
    new_run_id,
    require_run_id,
)
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord, merge_records
from evalsuite.records.results import read_results, write_part, write_results
from tests.support.reports_builder import build_runs, schema_validator


def metadata(run_id: str = "20251101T020000Z-abcdef") -> RunMetadata:
    return RunMetadata(
        run_id=run_id,
        created_utc="2025-11-01T02:00:00Z",
        git_commit="0123456789abcdef0123456789abcdef01234567",
        git_dirty=False,
        engines=["tesseract"],
        engine_details={"tesseract": {"engine": "tesseract"}},
        modes=[],
        versions={"python": "3.11.9", "evalsuite": "0.1.0", "torch": None, "transformers": None},
        device="cpu (x86_64)",
        seed=0,
        command="pytest benches",
    )


def record(parameter: str, sample_ids: list[str], prediction: str = "text") -> BenchmarkRecord:
    samples = [
        SampleRecord(sid, {"edit_precision": 0.5, "correct": True}, None, prediction, "ref")
        for sid in sample_ids
    ]
    metrics = {"edit_precision": MetricSummary(0.5, len(samples), 0.4, 0.6, "mean", "higher")}
    return BenchmarkRecord("fox", "tesseract", parameter, metrics, samples, {"mode": parameter})


# --- run ids and metadata ------------------------------------------------------------------


def test_run_ids_are_unique_sortable_and_carry_the_utc_start() -> None:
    early = new_run_id(datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC))
    late = new_run_id(datetime(2025, 1, 2, 3, 4, 6, tzinfo=UTC))
    assert re.fullmatch(r"20250102T030405Z-[0-9a-f]{8}", early)
    assert early < late
    assert len({new_run_id() for _ in range(50)}) == 50


@pytest.mark.parametrize("bad", ["", "../up", "a/b", ".hidden", "x" * 200])
def test_run_ids_that_are_not_folder_names_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError, match="run_id"):
        require_run_id(bad)
    with pytest.raises(TypeError, match="run_id"):
        require_run_id(None)


@pytest.fixture()
def git_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
            cwd=repo, check=True, capture_output=True, text=True,
        ).stdout.strip()

    git("init", "-q")
    (repo / "tracked.txt").write_text("one\n")
    git("add", "tracked.txt")
    git("commit", "-q", "-m", "first")
    repo.joinpath(".head").write_text(git("rev-parse", "HEAD"))
    return repo


def test_git_state_reports_head_and_whether_tracked_files_changed(git_repo: Path) -> None:
    head = git_repo.joinpath(".head").read_text()
    assert git_state(git_repo) == (head, False)  # an untracked file does not make it dirty
    (git_repo / "tracked.txt").write_text("two\n")
    assert git_state(git_repo) == (head, True)


def test_git_state_outside_a_repository_is_unknown(tmp_path: Path) -> None:
    assert git_state(tmp_path) == (None, None)


def test_collect_metadata_fills_what_it_can_detect(git_repo: Path) -> None:
    moment = datetime(2025, 11, 22, 3, 50, 12, tzinfo=UTC)
    meta = collect_metadata(
        engines=["tesseract", "replay"], modes=["small"], seed=7, device="cpu (test)",
        command=["pytest", "benches", "-k", "fox or quality"], repo_dir=git_repo,
        created=moment, engine_details={"replay": {"engine": "replay"}},
    )
    assert meta.run_id.startswith("20251122T035012Z-")
    assert meta.created_utc == "2025-11-22T03:50:12Z"
    assert meta.git_commit == git_repo.joinpath(".head").read_text()
    assert meta.git_dirty is False
    assert meta.command == "pytest benches -k 'fox or quality'"
    assert meta.versions["python"].count(".") == 2
    assert set(meta.versions) >= {"python", "evalsuite", "torch", "transformers"}
    assert (meta.engines, meta.modes, meta.seed, meta.device) == (
        ["tesseract", "replay"], ["small"], 7, "cpu (test)"
    )
    with pytest.raises(TypeError, match="engines"):
        collect_metadata(engines="tesseract", device="cpu")


# --- results.json ----------------------------------------------------------------------------


def test_results_round_trip_with_long_texts_in_side_files(tmp_path: Path) -> None:
    long_text = "word " * 2000
    records = [record("mode=small", ["b", "a"]), record("mode=tiny/odd", ["p/1"], long_text)]
    path = write_results(tmp_path, metadata(), records, text_limit=100)

    raw = json.loads(path.read_text("utf-8"))
    schema_validator("results").validate(raw)
    assert list(raw) == ["schema_version", "run", "records"]
    long_sample = raw["records"][1]["samples"][0]
    assert long_sample["prediction"] is None
    side_file = tmp_path / long_sample["prediction_path"]
    assert side_file.read_text("utf-8") == long_text
    assert side_file.resolve().is_relative_to(tmp_path / "samples")
    assert raw["records"][0]["samples"][0]["prediction"] == "text"  # short: inline
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed

    back = read_results(tmp_path)
    assert back.metadata == metadata()
    assert [r.parameter for r in back.records] == ["mode=small", "mode=tiny/odd"]
    assert [s.sample_id for s in back.records[0].samples] == ["a", "b"]  # sorted by id
    assert back.records[1].samples[0].prediction == long_text
    assert back.records[0].metrics == records[0].metrics


def test_a_missing_side_file_leaves_the_text_empty_with_a_warning(tmp_path: Path) -> None:
    write_results(tmp_path, metadata(), [record("p", ["s"], "x" * 50)], text_limit=10)
    for side_file in (tmp_path / "samples").rglob("*.txt"):
        side_file.unlink()
    with pytest.warns(UserWarning, match="cannot read the prediction"):
        back = read_results(tmp_path / "results.json")
    assert back.records[0].samples[0].prediction is None


def test_non_finite_numbers_are_named_and_nothing_is_written(tmp_path: Path) -> None:
    bad = record("p", ["s1"])
    bad.samples[0].scores["edit_precision"] = math.nan
    with pytest.raises(ValueError, match=r"\['samples'\]\[0\]\['scores'\]\['edit_precision'\]"):
        write_results(tmp_path, metadata(), [bad])
    assert not (tmp_path / "results.json").exists()


def test_bad_inputs_raise_type_errors_naming_the_argument(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="metadata"):
        write_results(tmp_path, {"run_id": "x"}, [])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"records\[0\]"):
        write_results(tmp_path, metadata(), [{"benchmark": "fox"}])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="text_limit"):
        write_results(tmp_path, metadata(), [], text_limit=-1)


def test_reading_rejects_unknown_versions_and_malformed_files(tmp_path: Path) -> None:
    path = write_results(tmp_path, metadata(), [record("p", ["s"])])
    data = json.loads(path.read_text("utf-8"))
    path.write_text(json.dumps({**data, "schema_version": 99}))
    with pytest.raises(ValueError, match="schema_version"):
        read_results(path)
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_results(path)


# --- xdist parts -------------------------------------------------------------------------------


def test_parts_of_workers_merge_into_the_file_a_serial_run_writes(tmp_path: Path) -> None:
    serial_dir, parallel_dir = tmp_path / "serial", tmp_path / "parallel"
    whole = [record("mode=small", ["s1", "s2", "s3"]), record("mode=tiny", ["s1"])]
    write_results(serial_dir, metadata(), whole)

    s1, s2, s3 = whole[0].samples
    # The aggregate is reported once; the samples are spread over both workers.
    first = BenchmarkRecord("fox", "tesseract", "mode=small", whole[0].metrics, [s3, s1])
    second = BenchmarkRecord("fox", "tesseract", "mode=small", {}, [s2], {"mode": "mode=small"})
    write_part(parallel_dir, "gw1", [second, whole[1]])
    write_part(parallel_dir, "gw0", [first])
    history = tmp_path / "history.jsonl"
    written = finalize_run(parallel_dir, metadata(), history_path=history)

    assert written.read_bytes() == (serial_dir / "results.json").read_bytes()
    assert not (parallel_dir / "parts").exists()
    [entry] = read_history(history)
    assert entry.results_path == "parallel/results.json"
    assert [len(r.samples) for r in entry.records] == [0, 0]
    assert entry.records[0].metrics == whole[0].metrics


def test_one_metric_aggregated_differently_by_two_workers_is_an_error() -> None:
    first, second = record("p", ["a"]), record("p", ["b"])
    second.metrics["edit_precision"] = MetricSummary(0.9, 1, None, None, "mean", "higher")
    with pytest.raises(ValueError, match=r"edit_precision.*reported twice"):
        merge_records([first, second])


# --- the schema on realistic runs -------------------------------------------------------------


def test_realistic_runs_validate_and_the_schema_rejects_broken_files(tmp_path: Path) -> None:
    run = build_runs(1)[0]
    path = write_results(tmp_path, run.metadata, run.records, text_limit=200)
    data = json.loads(path.read_text("utf-8"))
    validator = schema_validator("results")
    validator.validate(data)
    assert any("prediction_path" in s for r in data["records"] for s in r["samples"])

    broken = json.loads(json.dumps(data))
    del broken["records"][0]["metrics"]["edit_precision"]["n"]
    broken["run"]["created_utc"] = "yesterday"
    broken["records"][1]["samples"][0]["scores"]["edit_precision"] = "0.9"
    failed_at = {tuple(error.absolute_path) for error in validator.iter_errors(broken)}
    assert {
        ("run", "created_utc"),
        ("records", 0, "metrics", "edit_precision"),
        ("records", 1, "samples", 0, "scores", "edit_precision"),
    } <= failed_at


def test_engine_details_of_several_processes_sum_their_requests_per_server() -> None:
    first = {"deepseek-ocr": {"engine": "vllm", "endpoint_counts": {
        "http://a/v1": {"requests": 10, "completed": 9, "failed": 1},
        "http://b/v1": {"requests": 7, "completed": 7, "failed": 0}}},
        "tesseract": {"engine": "tesseract"}}
    second = {"deepseek-ocr": {"engine": "vllm", "endpoint_counts": {
        "http://b/v1": {"requests": 5, "completed": 5, "failed": 0},
        "http://c/v1": {"requests": 1, "completed": 0, "failed": 1}}}}
    merged = merge_engine_details(first, second, {})
    assert merged["deepseek-ocr"]["endpoint_counts"] == {
        "http://a/v1": {"requests": 10, "completed": 9, "failed": 1},
        "http://b/v1": {"requests": 12, "completed": 12, "failed": 0},
        "http://c/v1": {"requests": 1, "completed": 0, "failed": 1},
    }
    assert merged["tesseract"] == {"engine": "tesseract"}
    assert first["deepseek-ocr"]["endpoint_counts"]["http://b/v1"]["requests"] == 7  # unchanged
