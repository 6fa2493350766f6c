"""Fault battery, ``evalsuite trend`` and ``evalsuite report``: an empty history, a garbage
line, a line cut short, a line of a future schema version, and 5,000 runs (time and page size
printed, both bounded)."""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from evalsuite.records.history import HistoryWarning, append_history, read_history
from evalsuite.records.model import SCHEMA_VERSION
from evalsuite.records.results import write_results
from tests.support.reports_builder import START, build_runs, write_reports
from tests.support.subprocess_runs import run_evalsuite

pytestmark = pytest.mark.faults

MANY_RUNS = 5_000
MANY_RUNS_SECONDS = 60.0  # per command, on the 2-CPU development machine
PAGE_BYTES_LIMIT = 5_000_000


def trend(history: Path) -> subprocess.CompletedProcess[str]:
    return run_evalsuite("trend", "--history", history, "--golden-dir", history.parent / "none")


def report(history: Path) -> subprocess.CompletedProcess[str]:
    return run_evalsuite("report", "--history", history, "--golden-dir",
                         history.parent / "none", "--out", history.parent / "index.html",
                         "--no-png")


def test_empty_history(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("", encoding="utf-8")
    done = trend(history)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"evalsuite trend: no series in {history}\n"
    done = report(history)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "No runs recorded yet" in (tmp_path / "index.html").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def damaged_history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Six good runs, then a garbage line, a run of a future schema version, and a run cut
    short (no newline at its end): lines 7, 8 and 9."""
    history = write_reports(tmp_path_factory.mktemp("reports"), build_runs(6))
    newest = history.read_text(encoding="utf-8").splitlines()[-1]
    future = {**json.loads(newest), "schema_version": SCHEMA_VERSION + 1}
    with history.open("a", encoding="utf-8") as handle:
        handle.write("{this is not json\n")
        handle.write(json.dumps(future) + "\n")
        handle.write(newest[: len(newest) // 2])
    return history


def expected_warnings(history: Path) -> list[str]:
    return [
        f"warning: {history}:7: skipping unreadable run record: not valid JSON "
        "(Expecting property name enclosed in double quotes at column 2)",
        f"warning: {history}:8: skipping unreadable run record: schema_version "
        f"{SCHEMA_VERSION + 1} is newer than this evalsuite reads ({SCHEMA_VERSION}); upgrade "
        "evalsuite to read it",
        f"warning: {history}:9: skipping unreadable run record (truncated: no newline at its "
        "end): not valid JSON",
    ]


@pytest.mark.parametrize("command", [trend, report], ids=["trend", "report"])
def test_damaged_lines_are_skipped_with_one_warning_each(damaged_history: Path, command) -> None:
    done = command(damaged_history)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    expected = expected_warnings(damaged_history)
    assert lines[:2] == expected[:2] and lines[2].startswith(expected[2])
    assert len(lines) == 3 and "Traceback" not in done.stderr
    if command is trend:
        assert f"{damaged_history.name}, 6 runs" in done.stdout
        assert "REGRESSED" in done.stdout  # the newest good run's built-in regression
    else:
        assert (damaged_history.parent / "index.html").stat().st_size > 0


def test_appending_after_a_cut_line_starts_a_fresh_line(damaged_history: Path,
                                                        tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_bytes(damaged_history.read_bytes())
    run = build_runs(1)[0]
    append_history(history, run.metadata, run.records)
    with pytest.warns(HistoryWarning) as caught:
        entries = read_history(history)
    assert len(caught) == 3  # the same three lines, the appended run whole
    assert len(entries) == 7 and entries[-1].metadata.run_id == run.metadata.run_id


def many_runs(folder: Path, count: int) -> Path:
    """A history of ``count`` nightly runs (the report builder's six patterns, repeated with
    new ids and dates; the newest has its results.json)."""
    built = build_runs(6)
    template = write_reports(folder / "template", built).read_text(encoding="utf-8").splitlines()
    history = folder / "history.jsonl"
    with history.open("w", encoding="utf-8") as handle:
        for index in range(count):
            pattern = 5 if index == count - 1 else index % 5
            created = START + timedelta(hours=12 * index)
            run_id = f"{created:%Y%m%dT%H%M%SZ}-{index:06x}"
            original = built[pattern].metadata
            line = template[pattern].replace(original.run_id, run_id)
            handle.write(line.replace(original.created_utc, f"{created:%Y-%m-%dT%H:%M:%SZ}"))
            handle.write("\n")
    newest = replace(built[5].metadata, run_id=run_id,
                     created_utc=f"{created:%Y-%m-%dT%H:%M:%SZ}")
    write_results(folder / run_id, newest, built[5].records)
    return history


@pytest.mark.e2e
def test_five_thousand_runs_in_bounded_time_and_page_size(tmp_path: Path) -> None:
    """Slow (~90 s here): an ``evalsuite trend`` and an ``evalsuite report`` child process, each
    reading a 5,000-run history written first; the bounds on their time and on the page's size
    are for 5,000 runs, so a shorter history would not check them."""
    history = many_runs(tmp_path, MANY_RUNS)
    assert len(history.read_text(encoding="utf-8").splitlines()) == MANY_RUNS
    start = time.perf_counter()
    done = trend(history)
    trend_s = time.perf_counter() - start
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert f"history.jsonl, {MANY_RUNS} runs" in done.stdout
    start = time.perf_counter()
    done = report(history)
    report_s = time.perf_counter() - start
    assert done.returncode == 0 and done.stderr == "", done.stderr
    page_bytes = (tmp_path / "index.html").stat().st_size
    print(f"\n{MANY_RUNS} runs, history {history.stat().st_size / 1e6:.1f} MB: trend "
          f"{trend_s:.1f} s, report {report_s:.1f} s, dashboard {page_bytes / 1e6:.2f} MB")
    assert trend_s < MANY_RUNS_SECONDS and report_s < MANY_RUNS_SECONDS
    assert page_bytes < PAGE_BYTES_LIMIT


def test_a_folder_given_as_the_dashboard_file_is_named(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text("")
    (tmp_path / "site").mkdir()
    result = run_evalsuite("report", "--history", history, "--out", tmp_path / "site",
                           "--no-png")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"--out {tmp_path / 'site'} is a folder" in result.stderr
