"""The pytest front end, driven as users drive it: in subprocesses, on the project's fixtures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evalsuite.golden import GoldenStore
from evalsuite.reports.results import read_results

REPO = Path(__file__).resolve().parent.parent
needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None,
    reason="tesseract binary absent (apt-get install tesseract-ocr)",
)


def run_pytest(*args: str, data: bool = False) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("PYTEST_XDIST_WORKER", None)
    if not data:
        env.pop("EVALSUITE_DATA", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "no:randomly"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_gpu_benchmarks_skip_cleanly_without_cuda(tmp_path):
    done = run_pytest("benches/test_quality.py", "--gpu", "-rs", "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:]
    assert "no CUDA device is visible" in done.stdout
    assert " passed" not in done.stdout and "skipped" in done.stdout


def test_quality_selected_by_keyword(tmp_path):
    done = run_pytest(
        "benches", "-k", "quality", "--collect-only", "-q", "--report-dir", str(tmp_path)
    )
    assert done.returncode == 0, done.stdout[-3000:]
    ids = [line for line in done.stdout.splitlines() if "::" in line]
    assert ids and all(line.startswith("benches/test_quality.py::") for line in ids)


@needs_tesseract
def test_degraded_engine_fails_the_gates_readably(tmp_path):
    golden = tmp_path / "golden"
    store = GoldenStore(REPO / "golden")
    fox = store.load("fox")
    entries = [e for e in fox.entries.values() if e.engine == "tesseract"]
    assert entries, "golden/fox.json must hold tesseract entries"
    renamed = [{**e.__dict__, "engine": "degraded-tesseract"} for e in entries]
    golden.mkdir()
    (golden / "fox.json").write_text(
        json.dumps({"benchmark": "fox", "format": 1, "entries": renamed})
    )
    done = run_pytest(
        "benches/test_fox.py::test_fox_pages",
        "-p",
        "tests.degraded_engine",
        "--engine",
        "degraded-tesseract",
        "--golden-dir",
        str(golden),
        "--report-dir",
        str(tmp_path / "reports"),
    )
    assert done.returncode == 1, done.stdout[-3000:]
    out = done.stdout
    for part in (
        "edit_precision regressed (higher is better)",
        "golden ",
        "current ",
        "delta ",
        "test    tolerance",
        "worst samples:",
    ):
        assert part in out, out[-3000:]


@needs_tesseract
def test_parallel_run_gives_the_serial_scores(tmp_path):
    results = {}
    for label, extra in (("serial", ["-n", "0"]), ("parallel", ["-n", "2"])):
        report_dir = tmp_path / label
        done = run_pytest(
            "benches/test_fox.py",
            "benches/test_surya_detection.py",
            "--engine",
            "tesseract",
            "--report-dir",
            str(report_dir),
            *extra,
        )
        assert done.returncode == 0, done.stdout[-3000:]
        (run_dir,) = [p for p in report_dir.iterdir() if p.is_dir()]
        run = read_results(run_dir / "results.json")
        assert (run_dir / "report.json").exists()
        results[label] = {
            (r.benchmark, r.parameter, name): m.value
            for r in run.records
            for name, m in r.metrics.items()
        }
        history = (report_dir / "history.jsonl").read_text().splitlines()
        assert len(history) == 1
    assert results["serial"] and results["serial"] == results["parallel"]


@needs_tesseract
def test_update_golden_writes_only_what_ran(tmp_path):
    golden = tmp_path / "golden"
    shutil.copytree(REPO / "golden", golden)
    before = {p.name: p.read_text() for p in golden.glob("*.json")}
    store = GoldenStore(golden)
    fox = json.loads((golden / "fox.json").read_text())
    for entry in fox["entries"]:
        if entry["engine"] == "tesseract" and entry["metric"] == "edit_precision":
            entry["value"] = 0.5  # stale: rewritten where it ran, kept where it did not
    (golden / "fox.json").write_text(json.dumps(fox))
    done = run_pytest(
        "benches/test_fox.py::test_fox_pages",
        "--engine",
        "tesseract",
        "--update-golden",
        "--golden-dir",
        str(golden),
        "--report-dir",
        str(tmp_path / "reports"),
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "golden updates" in done.stdout and "0.5 (n=" in done.stdout
    after = store.load("fox").entries
    # run without EVALSUITE_DATA: the fixtures-only entry ran and was rewritten
    assert after[("tesseract", "mode=native,data=fixtures", "edit_precision")].value > 0.9
    assert after[("tesseract", "mode=native", "edit_precision")].value == 0.5
    assert {e.engine for e in after.values()} == {e["engine"] for e in fox["entries"]}
    for name, text in before.items():
        if name != "fox.json":
            assert (golden / name).read_text() == text
