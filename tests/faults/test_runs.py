"""Fault battery, whole runs: Ctrl-C and SIGKILL in the middle of a run, processes killed while
they write, two runs at once into one report folder, ``-n 2`` against a serial run. History and
goldens stay readable and untouched, and the next ``trend`` / ``report`` work."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pytest

from evalsuite.golden import GoldenStore
from evalsuite.records.history import read_history
from evalsuite.records.results import read_results
from tests.support.faults import FIXED_TEXT, bench_env, run_benches
from tests.support.subprocess_runs import REPO, pytest_command, run_evalsuite

pytestmark = pytest.mark.faults

FOX = "benches/test_fox.py"


def strict_history(path: Path) -> list[Any]:
    """Every run of the history file; a line that does not parse fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return read_history(path)


def assert_trend_and_report_work(report_dir: Path, golden: Path, runs: int) -> None:
    history = report_dir / "history.jsonl"
    trend = run_evalsuite("trend", "--history", history, "--golden-dir", golden)
    assert trend.returncode == 0, trend.stderr
    assert f"history.jsonl, {runs} runs" in trend.stdout and trend.stderr == ""
    page = report_dir / "index.html"
    report = run_evalsuite("report", "--history", history, "--golden-dir", golden,
                           "--out", page, "--no-png")
    assert report.returncode == 0, report.stderr
    assert page.stat().st_size > 0 and report.stderr == ""


def sigint_as_from_a_terminal() -> None:
    """In the child, before it starts: SIGINT unblocked and at its default action, as a shell
    starts a command, whatever this test process inherited (a library in the worker may have
    blocked or ignored it; a child started so would never see the Ctrl-C this test sends)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("sent", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_interrupted_run_leaves_history_and_goldens_untouched(
    tmp_path: Path, sent: signal.Signals
) -> None:
    """Slow (~13 s per signal here, ~67 s when the signalled run does not end and its 60 s wait
    runs out): three child pytest runs of Fox on the fixed-text engine (goldens set, the run
    signalled while it reads a page, the next run) and ``evalsuite trend`` and ``report``: the
    first makes the files the signalled run must leave alone, the rest show them still usable."""
    golden, report_dir = tmp_path / "golden", tmp_path / "reports"
    done = run_benches(FOX, "--engine", FIXED_TEXT, "--update-golden", "--golden-dir", golden,
                       "--report-dir", report_dir)
    assert done.returncode == 0, done.stdout[-3000:]
    history = report_dir / "history.jsonl"
    before = {path.name: path.read_bytes() for path in (history, golden / "fox.json")}

    # an update under another label would add entries: an interrupted one must add none
    marker = tmp_path / "reading-a-page"
    process = subprocess.Popen(
        pytest_command(FOX, "benches/test_render_configs.py", "--engine", FIXED_TEXT,
                       "--engine-label", "interrupted", "--update-golden", "--golden-dir", golden,
                       "--report-dir", report_dir),
        cwd=REPO, env={**bench_env(marker=str(marker), sleep="60"), "PYTHONFAULTHANDLER": "1"},
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=sigint_as_from_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert process.poll() is None and time.monotonic() < deadline, "run never started"
            time.sleep(0.05)
        process.send_signal(sent)
        try:
            output, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # where it hangs: faulthandler's dump on SIGABRT
            process.send_signal(signal.SIGABRT)
            output, _ = process.communicate(timeout=30)
            pytest.fail(f"the signalled run did not end within 60 s:\n{output[-6000:]}")
    finally:
        process.kill()
    if sent == signal.SIGINT:  # pytest's own exit status for an interruption, nothing else
        assert process.returncode == pytest.ExitCode.INTERRUPTED, output[-3000:]
        assert "KeyboardInterrupt" in output and "gated no metric" not in output
    else:
        assert process.returncode == -signal.SIGKILL
    assert {path.name: path.read_bytes() for path in (history, golden / "fox.json")} == before
    assert sorted(path.name for path in golden.glob("*.json")) == ["fox.json"]
    assert len(strict_history(history)) == 1
    assert_trend_and_report_work(report_dir, golden, runs=1)
    # and the next run appends as usual
    done = run_benches(FOX, "--engine", FIXED_TEXT, "--golden-dir", golden,
                       "--report-dir", report_dir)
    assert done.returncode == 0, done.stdout[-3000:]
    assert len(strict_history(history)) == 2


def test_a_run_stopped_after_a_finished_test_is_marked_interrupted(tmp_path: Path) -> None:
    golden, report_dir = tmp_path / "golden", tmp_path / "reports"
    assert run_benches(FOX, "--engine", FIXED_TEXT, "--update-golden", "--golden-dir", golden,
                       "--report-dir", report_dir).returncode == 0
    stop = tmp_path / "test_stop.py"
    stop.write_text("def test_ctrl_c():\n    raise KeyboardInterrupt\n")
    done = run_benches(FOX, stop, "--engine", FIXED_TEXT, "--golden-dir", golden,
                       "--report-dir", report_dir)
    assert done.returncode == pytest.ExitCode.INTERRUPTED, done.stdout[-3000:]
    first, second = strict_history(report_dir / "history.jsonl")
    assert not first.metadata.interrupted and second.metadata.interrupted
    assert [record.benchmark for record in second.records] == ["fox"]
    trend = run_evalsuite("trend", "--history", report_dir / "history.jsonl",
                          "--golden-dir", golden)
    assert "(interrupted: only its finished tests)" in trend.stdout


WRITER = """
import sys
from pathlib import Path
from evalsuite.golden import GoldenEntry, GoldenStore
from evalsuite.records.history import append_history
from evalsuite.records.metadata import RunMetadata, new_run_id
from evalsuite.records.model import BenchmarkRecord, MetricSummary

folder, count = Path(sys.argv[1]), int(sys.argv[2])
store = GoldenStore(folder / "golden")
for index in range(count):
    metrics = {f"m{k}": MetricSummary(value=index / 7, n=index, direction="higher", kind="mean")
               for k in range(300)}
    record = BenchmarkRecord("fox", "eng", "mode=small", metrics=metrics)
    append_history(folder / "history.jsonl", RunMetadata(new_run_id(), "2026-01-01T00:00:00Z"),
                   [record])
    store.update("fox", [GoldenEntry("eng", "fixtures", f"p{k}", "m", index / 7, index, "higher",
                                     0.0, "mean", "", "") for k in range(300)])
    print(index, flush=True)
"""


def test_sigkill_while_writing_leaves_every_file_readable(tmp_path: Path) -> None:
    """A writer appending large history lines and rewriting a golden file in a loop, killed at
    five moments: what is on disk always reads back whole."""
    writer = tmp_path / "writer.py"
    writer.write_text(WRITER, encoding="utf-8")
    written = 0
    for delay in (0.0, 0.05, 0.1, 0.2, 0.3):
        process = subprocess.Popen([sys.executable, str(writer), str(tmp_path), "1000"],
                                   cwd=REPO, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        process.stdout.readline()  # one complete round, then kill at some point in the next
        time.sleep(delay)
        process.kill()
        rounds = 1 + len(process.stdout.read().splitlines())
        process.wait()
        entries = strict_history(tmp_path / "history.jsonl")
        assert written + rounds <= len(entries) <= written + rounds + 1
        written = len(entries)
        golden = GoldenStore(tmp_path / "golden").load("fox")
        assert len(golden.entries) == 300
        assert len({entry.value for entry in golden.entries.values()}) == 1  # one whole write
    assert len({entry.metadata.run_id for entry in entries}) == written


def test_two_runs_at_once_into_one_report_folder(tmp_path: Path) -> None:
    golden, report_dir = tmp_path / "golden", tmp_path / "reports"
    done = run_benches(FOX, "--engine", FIXED_TEXT, "--update-golden", "--golden-dir", golden,
                       "--report-dir", report_dir)
    assert done.returncode == 0, done.stdout[-3000:]
    markers = [tmp_path / "first", tmp_path / "second"]
    processes = [
        subprocess.Popen(
            pytest_command(FOX, "--engine", FIXED_TEXT, "--golden-dir", golden,
                           "--report-dir", report_dir, "--run-name", marker.name),
            cwd=REPO, env=bench_env(marker=str(marker), sleep="0.5"), stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
        )
        for marker in markers
    ]
    outputs = [process.communicate(timeout=300)[0] for process in processes]
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output[-3000:]
    entries = strict_history(report_dir / "history.jsonl")
    assert len(entries) == 3
    assert sorted(str(entry.metadata.run_name) for entry in entries[1:]) == ["first", "second"]
    run_ids = [entry.metadata.run_id for entry in entries]
    assert len(set(run_ids)) == 3
    for entry in entries:
        results = read_results(report_dir / str(entry.results_path))
        assert results.metadata.run_id == entry.metadata.run_id
    assert_trend_and_report_work(report_dir, golden, runs=3)


WRITERS = 4
APPENDS = 25
APPENDER = """
import sys
from pathlib import Path
from evalsuite.records.history import append_history
from evalsuite.records.metadata import RunMetadata, new_run_id
from evalsuite.records.model import BenchmarkRecord, MetricSummary

metrics = {f"m{k}": MetricSummary(value=k / 3, n=k, direction="higher", kind="mean")
           for k in range(200)}
for index in range(int(sys.argv[2])):
    append_history(Path(sys.argv[1]), RunMetadata(new_run_id(), "2026-01-01T00:00:00Z",
                   run_name=f"{sys.argv[3]}-{index}"),
                   [BenchmarkRecord("fox", "eng", "mode=small", metrics=metrics)])
"""


def test_simultaneous_appends_keep_every_line_whole(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    script = tmp_path / "append.py"
    script.write_text(APPENDER, encoding="utf-8")
    processes = [
        subprocess.Popen([sys.executable, str(script), str(history), str(APPENDS), f"w{number}"],
                         cwd=REPO)
        for number in range(WRITERS)
    ]
    assert [process.wait(timeout=120) for process in processes] == [0] * WRITERS
    entries = strict_history(history)
    names = sorted(str(entry.metadata.run_name) for entry in entries)
    assert names == sorted(f"w{w}-{i}" for w in range(WRITERS) for i in range(APPENDS))
    assert len({entry.metadata.run_id for entry in entries}) == WRITERS * APPENDS
    assert all(len(entry.records[0].metrics) == 200 for entry in entries)


def sample_outcomes(report_dir: Path) -> dict[tuple[str, ...], Any]:
    (run_dir,) = [path for path in report_dir.iterdir() if path.is_dir()]
    run = read_results(run_dir / "results.json")
    outcomes: dict[tuple[str, ...], Any] = {}
    for record in run.records:
        for name, summary in record.metrics.items():
            outcomes[(record.benchmark, record.data, record.parameter, name)] = (
                summary.value, summary.n, summary.ci_low, summary.ci_high
            )
        for sample in record.samples:
            outcomes[(record.benchmark, record.data, record.parameter, sample.sample_id)] = (
                sample.prediction, sample.scores, sample.error
            )
    return outcomes


def test_two_workers_record_what_a_serial_run_records(tmp_path: Path) -> None:
    outcomes, goldens = {}, {}
    for label, workers in (("serial", "0"), ("parallel", "2")):
        golden, report_dir = tmp_path / label / "golden", tmp_path / label / "reports"
        done = run_benches(
            "benches", "-m", "fox or render_configs or surya_recognition or finix",
            "--engine", FIXED_TEXT, "-n", workers, "--update-golden",
            "--golden-dir", golden, "--report-dir", report_dir, env=bench_env(sample="fixture_2"),
        )
        assert done.returncode == 0, done.stdout[-3000:]
        outcomes[label] = sample_outcomes(report_dir)
        assert len(strict_history(report_dir / "history.jsonl")) == 1
        goldens[label] = {
            path.name: [
                {k: v for k, v in entry.items() if k != "set_at"}
                for entry in json.loads(path.read_text(encoding="utf-8"))["entries"]
            ]
            for path in sorted(golden.glob("*.json"))
        }
    assert outcomes["serial"] == outcomes["parallel"]
    assert {key[0] for key in outcomes["serial"]} == {
        "fox", "render_configs", "surya_recognition", "finix"
    }
    failed = [v for k, v in outcomes["serial"].items() if k[3] == "fixture_2"]
    assert failed == [("", failed[0][1], "SampleFault: injected fault on fixture_2")]
    assert goldens["serial"] == goldens["parallel"] and len(goldens["serial"]) == 4
