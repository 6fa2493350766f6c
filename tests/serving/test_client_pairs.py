"""The documented pair, end to end, for every CPU engine ``evalsuite serve`` offers: ``evalsuite
serve --engine NAME`` in one process and ``pytest benches -m fox --engine openai --api-base URL
--max-samples 2`` in another. The server's model card says which modes its engine takes and how
it counts vision tokens (its family); the client asks only for those, so no sample fails (it
was "unknown mode 'default'" for the tiny model and "unknown mode 'native'" for Tesseract)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evalsuite.engines import create_engine
from evalsuite.errors import EngineUnavailableError
from evalsuite.serving.process import serve_subprocess
from tests.support.subprocess_runs import child_env, needs_tesseract, run_pytest

pytestmark = pytest.mark.e2e


def fox_through(api_base: str, folder: Path, *extra: str) -> dict[str, Any]:
    """The fox benchmark on its fixtures through the ``openai`` engine at ``api_base``, goldens
    written (so that the run passes when every sample scored); its ``results.json``."""
    done = run_pytest(
        "benches", "-m", "fox", "--engine", "openai", "--api-base", api_base, "--max-samples",
        "2", "--update-golden", "--golden-dir", str(folder / "golden"), "--report-dir",
        str(folder / "reports"), "-p", "no:cacheprovider", "-q", *extra, env=child_env(),
    )
    assert done.returncode == 0, done.stdout[-4000:]
    (written,) = (folder / "reports").glob("*/results.json")
    return json.loads(written.read_text())


def sample_errors(results: dict[str, Any]) -> dict[tuple[str, str], str | None]:
    return {(record["parameter"], sample["sample_id"]): sample["error"]
            for record in results["records"] for sample in record["samples"]}


@pytest.mark.parametrize(("engine", "modes", "vision_tokens"), [
    ("tiny-deepseek-ocr-2", {"mode=default", "mode=global"}, True),
    pytest.param("tesseract", {"mode=native"}, False, marks=needs_tesseract),
])
def test_the_client_runs_the_modes_the_server_says_and_no_sample_fails(
    engine: str, modes: set[str], vision_tokens: bool, tmp_path: Path
) -> None:
    """Slow (~15 s for the tiny model): a server process and a child benchmark run."""
    with serve_subprocess(engine, max_batch=4) as server:
        results = fox_through(server.api_base, tmp_path)
    errors = sample_errors(results)
    assert {parameter for parameter, _ in errors} <= modes and errors
    assert set(errors.values()) == {None}
    counted = [record["metrics"]["valid_vision_tokens"]["value"] for record in results["records"]]
    assert all((value is not None) == vision_tokens for value in counted), counted


@needs_tesseract
def test_replay_behind_the_server_serves_a_recorded_run(tmp_path: Path) -> None:
    """Recordings of a Tesseract run, served by ``--engine replay`` (every mode of every family:
    the run picks its own with --modes); the replayed run scores what the recorded one did."""
    recordings = tmp_path / "recordings.jsonl"
    recorded = run_pytest(
        "benches", "-m", "fox", "--engine", "tesseract", "--max-samples", "2", "--record",
        str(recordings), "--update-golden", "--golden-dir", str(tmp_path / "golden-recorded"),
        "--report-dir", str(tmp_path / "recorded"), "-p", "no:cacheprovider", "-q",
        env=child_env(),
    )
    assert recorded.returncode == 0, recorded.stdout[-4000:]
    with serve_subprocess("replay", engine_options={"recordings": str(recordings)}) as server:
        results = fox_through(server.api_base, tmp_path, "--modes", "native")
    assert set(sample_errors(results).values()) == {None}
    (original,) = (tmp_path / "recorded").glob("*/results.json")
    before = json.loads(original.read_text())
    assert [[s["prediction"] for s in r["samples"]] for r in results["records"]] == [
        [s["prediction"] for s in r["samples"]] for r in before["records"]]


@needs_tesseract
def test_a_family_the_server_contradicts_is_refused_when_the_engine_is_made() -> None:
    with serve_subprocess("tesseract") as server:
        assert create_engine("openai", api_base=server.api_base).model_family == "none"
        with pytest.raises(EngineUnavailableError, match="runs a none engine, not deepseek-ocr"):
            create_engine("openai", api_base=server.api_base, model_family="deepseek-ocr")
