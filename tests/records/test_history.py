"""history.jsonl: locked appends from concurrent processes, tolerant reading, its JSON Schema."""

from __future__ import annotations

import json
import multiprocessing
import resource
import signal
import warnings
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from evalsuite.records.history import (
    HistoryWarning,
    append_history,
    history_line,
    read_history,
)
from evalsuite.records.model import BenchmarkRecord, MetricSummary, SampleRecord
from evalsuite.records.results import RunMetadata
from tests.support.reports_builder import build_runs, schema_validator

WRITERS = 4
APPENDS_PER_WRITER = 15


def run_metadata(run_id: str) -> RunMetadata:
    return RunMetadata(run_id=run_id, created_utc="2025-11-01T02:00:00Z", device="cpu")


def small_record(value: float) -> BenchmarkRecord:
    summary = MetricSummary(value, 4, value - 0.1, value + 0.1, "mean", "higher")
    sample = SampleRecord("s", {"edit_precision": value}, None, "p" * 5000, "r")
    return BenchmarkRecord("fox", "tesseract", "default", {"edit_precision": summary}, [sample])


def append_many(path: str, writer: int) -> None:
    # Large lines (several pages each) so that unlocked writers would interleave.
    records = [small_record(0.5)] * 40
    for index in range(APPENDS_PER_WRITER):
        append_history(path, run_metadata(f"w{writer}-{index:03d}"), records)


def test_lines_keep_metadata_and_aggregates_but_no_samples(tmp_path: Path) -> None:
    history = tmp_path / "sub" / "history.jsonl"
    runs = build_runs(2)
    for run in runs:
        append_history(history, run.metadata, run.records, results_path="x/results.json")
    lines = history.read_text("utf-8").splitlines()
    validator = schema_validator("history")
    for line in lines:
        validator.validate(json.loads(line))
        assert '"samples"' not in line
    entries = read_history(history)
    assert [e.metadata for e in entries] == [run.metadata for run in runs]
    stored = {(r.benchmark, r.engine, r.parameter): r.metrics for r in entries[0].records}
    assert stored == {(r.benchmark, r.engine, r.parameter): r.metrics for r in runs[0].records}
    assert entries[0].results_path == "x/results.json"


def test_concurrent_appends_from_several_processes_stay_whole_lines(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    workers = [context.Process(target=append_many, args=(str(history), w)) for w in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    lines = history.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert len(lines) - 1 == WRITERS * APPENDS_PER_WRITER
    for line in lines[:-1]:
        json.loads(line)  # every line is one complete object
    ids = [entry.metadata.run_id for entry in read_history(history)]
    assert sorted(ids) == sorted(
        f"w{w}-{i:03d}" for w in range(WRITERS) for i in range(APPENDS_PER_WRITER)
    )
    for writer in range(WRITERS):  # each writer's lines in its own order
        own = [run_id for run_id in ids if run_id.startswith(f"w{writer}-")]
        assert own == sorted(own)


def test_a_truncated_last_line_is_skipped_with_a_warning_and_the_next_run_appends_cleanly(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.jsonl"
    append_history(history, run_metadata("one"), [small_record(0.4)])
    append_history(history, run_metadata("two"), [small_record(0.5)])
    cut = history_line(run_metadata("killed"), [small_record(0.6)])
    with history.open("a", encoding="utf-8") as handle:
        handle.write(cut[: len(cut) // 2])  # a run killed mid-write, without the lock

    with pytest.warns(HistoryWarning, match=r"history.jsonl:3: .*truncated"):
        entries = read_history(history)
    assert [e.metadata.run_id for e in entries] == ["one", "two"]

    append_history(history, run_metadata("three"), [small_record(0.7)])
    with pytest.warns(HistoryWarning, match=r":3: "):
        entries = read_history(history)
    assert [e.metadata.run_id for e in entries] == ["one", "two", "three"]


def append_with_file_size_limit(path: str, limit: int) -> None:
    # Past RLIMIT_FSIZE the kernel ends a write early, then kills the process with SIGXFSZ:
    # a real short write followed by death, as a SIGKILL mid-write can give. (Python ignores
    # SIGXFSZ unless told otherwise.)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
    append_history(path, run_metadata("killed"), [small_record(0.6)] * 40)


def test_a_writer_killed_in_the_middle_of_its_write_leaves_the_history_whole(
    tmp_path: Path,
) -> None:
    history = tmp_path / "history.jsonl"
    append_history(history, run_metadata("one"), [small_record(0.4)])
    before = history.read_bytes()
    cut_at = len(before) + len(history_line(run_metadata("killed"), [small_record(0.6)] * 40)) // 2
    context = multiprocessing.get_context("fork")
    writer = context.Process(target=append_with_file_size_limit, args=(str(history), cut_at))
    writer.start()
    writer.join(timeout=60)
    assert writer.exitcode == -signal.SIGXFSZ
    assert history.read_bytes() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [e.metadata.run_id for e in read_history(history)] == ["one"]

    append_history(history, run_metadata("two"), [small_record(0.5)])
    assert [e.metadata.run_id for e in read_history(history)] == ["one", "two"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["history.jsonl",
                                                                "history.jsonl.lock"]


@pytest.mark.parametrize(
    "garbage",
    [
        "not json at all",
        "[1, 2, 3]",
        '{"schema_version": 1, "run": {"run_id": "x"}, "records": []}',
        '{"schema_version": 2, "run": {}, "records": []}',
        '{"schema_version": 1, "run": {"run_id": "x", "created_utc": "t"}, "records": '
        '[{"benchmark": "fox", "engine": "e", "parameter": "p", "metrics": {"m": '
        '{"value": "high", "n": 3}}}]}',
    ],
)
def test_a_corrupt_line_in_the_middle_is_skipped_with_a_warning(
    tmp_path: Path, garbage: str
) -> None:
    history = tmp_path / "history.jsonl"
    append_history(history, run_metadata("one"), [small_record(0.4)])
    with history.open("a", encoding="utf-8") as handle:
        handle.write(garbage + "\n")
    append_history(history, run_metadata("two"), [small_record(0.5)])
    with pytest.warns(HistoryWarning, match=r":2: skipping"):
        entries = read_history(history)
    assert [e.metadata.run_id for e in entries] == ["one", "two"]


def test_a_missing_history_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nothing-here\.jsonl"):
        read_history(tmp_path / "nothing-here.jsonl")


def test_appending_waits_for_the_lock(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    with FileLock(f"{history}.lock"), pytest.raises(Timeout):
        append_history(history, run_metadata("blocked"), [], timeout=0.2)
    assert not history.exists() or history.read_text() == ""


def test_non_finite_aggregates_are_refused(tmp_path: Path) -> None:
    record = small_record(0.5)
    record.metrics["edit_precision"] = MetricSummary(float("inf"), 1)
    with pytest.raises(ValueError, match="non-finite"):
        append_history(tmp_path / "h.jsonl", run_metadata("bad"), [record])
