"""When a run started, how long it took and what was typed: ``created_utc`` is the start of the
run, ``duration_s`` covers it (under pytest-xdist too, where the controller's session object is
made only at the end), ``command`` reads as the user typed it."""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evalsuite.records.metadata import invocation_command, new_run_id, run_started
from evalsuite.records.results import read_results
from evalsuite.reports.dashboard_render import duration_text
from tests.support.faults import FIXED_TEXT, bench_env, run_benches

SLEEP_S = 1.5
"""How long the run's only page takes: longer than a second, so that a start time taken at
the end of the run lies after the page, even to the second."""


@pytest.mark.e2e
def test_a_parallel_run_records_its_start_and_a_duration_that_covers_it(tmp_path: Path) -> None:
    marker = tmp_path / "reading-a-page"
    before = time.time()
    done = run_benches("benches/test_fox.py", "-n", "2", "--max-samples", "1",
                       "--engine", FIXED_TEXT, "--update-golden",
                       "--golden-dir", tmp_path / "golden", "--report-dir", tmp_path / "reports",
                       env=bench_env(marker=str(marker), sleep=str(SLEEP_S)))
    after = time.time()
    assert done.returncode == 0, done.stdout[-3000:]
    (written,) = (tmp_path / "reports").glob("*/results.json")
    run = read_results(written).metadata
    started = datetime.strptime(run.created_utc, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    page_read = marker.stat().st_mtime  # the page of the run's only test, read by a worker
    assert math.floor(before) <= started.timestamp() <= page_read
    assert run.run_id.startswith(f"{started:%Y%m%dT%H%M%SZ}-")  # the id carries the start
    assert run.duration_s is not None
    # created_utc is truncated to the second: the start lies in [started, started + 1 s)
    assert page_read + SLEEP_S - (started.timestamp() + 1) <= run.duration_s <= after - before
    assert run.command is not None
    assert run.command.startswith("python -m pytest benches/test_fox.py -n 2 "), run.command


@pytest.mark.parametrize(("program", "command"), [
    ("/venv/lib/python3.11/site-packages/pytest/__main__.py",
     ["python", "-m", "pytest", "benches", "-n", "2"]),
    ("/venv/bin/pytest", ["pytest", "benches", "-n", "2"]),
    ("pytest", ["pytest", "benches", "-n", "2"]),
])
def test_the_command_reads_as_typed(program: str, command: list[str]) -> None:
    assert invocation_command(program, ["benches", "-n", "2"]) == command


def test_a_run_id_remembers_its_start_to_the_microsecond() -> None:
    moment = datetime(2026, 11, 20, 3, 50, 12, 345678, tzinfo=UTC)
    run_id = new_run_id(moment)
    assert run_id.startswith("20261120T035012Z-")
    assert run_started(run_id) == moment
    assert run_started("20261120T035012Z-00000000") is None  # made by another process


@pytest.mark.parametrize(("seconds", "text"), [
    (0.074, "0.1 s"), (9.94, "9.9 s"), (42.4, "42 s"), (339.2, "5 min 39 s"),
    (timedelta(hours=2, minutes=5, seconds=29).total_seconds(), "2 h 05 min"),
])
def test_the_dashboard_shows_durations_to_their_scale(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text
