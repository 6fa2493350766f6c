"""``evalsuite serve``: the chat-completions application (answers, identity, modes, errors), its
request batcher, the command line, and ``--engine package.module:factory`` resolution."""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient
from PIL import Image

from evalsuite.commands.serve import engine_option, main
from evalsuite.engines import EngineBase, InferenceRequest, InferenceResult, create_engine
from evalsuite.engines.base import engine_kind, resolve_engine
from evalsuite.errors import UnknownEngineError
from evalsuite.perf.serving import FIXED_LATENCY_ENGINE, FixedLatencyEngine
from evalsuite.serving.app import RequestBatcher, create_app
from evalsuite.serving.process import ServeProcessError, serve_subprocess


class EchoEngine(EngineBase):
    """Answers ``prompt|mode|sample_id|image size``; fails samples whose id is ``bad``."""

    name = "echo"
    supported_modes = ("gundam", "base")

    def __init__(self) -> None:
        self.seen: list[InferenceRequest] = []

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        self.seen.extend(requests)
        return [
            InferenceResult(
                text=f"{r.prompt}|{r.mode}|{r.sample_id}|{r.image.size if r.image else None}",
                output_tokens=3,
                error="boom" if r.sample_id == "bad" else None,
                settings={"echo": True},
            )
            for r in requests
        ]


def data_url(image: Image.Image) -> str:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def chat(text: str = "Free OCR.", images: Sequence[str] = (), **extra: Any) -> dict[str, Any]:
    parts = [{"type": "image_url", "image_url": {"url": url}} for url in images]
    return {
        "messages": [{"role": "user", "content": [*parts, {"type": "text", "text": text}]}],
        **extra,
    }


@pytest.fixture
def echo() -> EchoEngine:
    return EchoEngine()


@pytest.fixture
def client(echo) -> TestClient:
    with TestClient(create_app(echo, engine_name="echo", max_batch=4)) as test_client:
        yield test_client


PAGE = Image.new("RGB", (120, 90), "white")
NOT_AN_IMAGE = base64.b64encode(b"plain text").decode()
SYSTEM_MESSAGE = {"role": "system", "content": "You are an OCR engine."}


def test_completion_in_openai_shape(client, echo) -> None:
    answer = client.post("/v1/chat/completions", json=chat(images=[data_url(PAGE)], model="echo"))
    assert answer.status_code == 200
    payload = answer.json()
    assert payload["object"] == "chat.completion"
    assert payload["model"] == "echo"
    (request,) = echo.seen
    assert payload["choices"][0]["message"] == {
        "role": "assistant",
        "content": f"<image>\nFree OCR.|gundam|{request.sample_id}|(120, 90)",
    }
    assert payload["usage"]["completion_tokens"] == 3
    assert payload["evalsuite"]["output_tokens"] == 3
    assert payload["evalsuite"]["batch_size"] == 1
    assert payload["evalsuite"]["settings"] == {"echo": True}


def test_text_only_request_keeps_its_prompt(client, echo) -> None:
    answer = client.post("/v1/chat/completions", json=chat("Question: 2 + 2?"))
    assert answer.json()["choices"][0]["message"]["content"].startswith("Question: 2 + 2?|gundam|")
    assert echo.seen[0].image is None


def test_sample_identity_comes_from_the_evalsuite_field(client, echo) -> None:
    identity = {
        "sample_id": "doc-7",
        "key": {"experiment": "compression", "document": "d7"},
        "mode": "base",
        "prompt": "<image>\nFree OCR.",
        "image_sha256": "f" * 64,
    }
    answer = client.post(
        "/v1/chat/completions", json=chat(images=[data_url(PAGE)], evalsuite=identity)
    )
    assert answer.status_code == 200
    (request,) = echo.seen
    assert (request.sample_id, request.mode, request.prompt) == (
        "doc-7",
        "base",
        "<image>\nFree OCR.",
    )
    assert dict(request.key) == identity["key"]
    assert request.image_sha256 == "f" * 64  # the client's page, not the re-encoded PNG
    assert request.replay_key()["document"] == "d7"


def test_mode_from_mm_processor_kwargs(client, echo) -> None:
    base = {"base_size": 1024, "image_size": 1024, "crop_mode": False}
    answer = client.post("/v1/chat/completions", json=chat(mm_processor_kwargs=base))
    assert answer.status_code == 200
    assert echo.seen[0].mode == "base"
    odd = {"base_size": 1000, "image_size": 640, "crop_mode": True}
    refused = client.post("/v1/chat/completions", json=chat(mm_processor_kwargs=odd))
    assert refused.status_code == 400
    assert "gundam (1024/640/True)" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"model": "echo"}, 422, "messages"),
        (chat(images=[data_url(PAGE)] * 2), 400, "at most one image_url"),
        (chat(images=["https://example.com/page.png"]), 400, "the server fetches nothing"),
        (chat(images=["data:image/png;base64,***"]), 400, "does not hold valid base64"),
        (
            chat(images=["data:image/png;base64," + NOT_AN_IMAGE]),
            400,
            "image_url: not an image Pillow can read (it looks like text: 'plain text')",
        ),
        (chat(evalsuite={"mode": "tiny"}), 400, "no mode 'tiny'; choose one of: gundam, base"),
        (chat(stream=True), 400, "streaming"),
        (chat(model="gpt-4o"), 404, "serves 'echo', not 'gpt-4o'"),
        ({"messages": [SYSTEM_MESSAGE, {"role": "user", "content": "y"}]}, 400, "one user message"),
    ],
)
def test_malformed_requests_are_refused(client, echo, body, status, message) -> None:
    answer = client.post("/v1/chat/completions", json=body)
    assert answer.status_code == status
    assert message in answer.text
    assert echo.seen == []


def test_engine_failure_is_a_500_with_the_engines_message(client) -> None:
    answer = client.post("/v1/chat/completions", json=chat(evalsuite={"sample_id": "bad"}))
    assert answer.status_code == 500
    error = answer.json()["error"]
    assert error["type"] == "engine_error"
    assert "engine 'echo' failed on sample 'bad': boom" in error["message"]


def test_health_version_and_models(client) -> None:
    assert client.get("/health").json() == {"status": "ok", "engine": "echo"}
    version = client.get("/version").json()
    assert version["server"] == "evalsuite serve"
    assert version["per_request_mode"] is True
    assert version["keyed_outputs"] is False
    assert version["modes"] == ["gundam", "base"] and version["model_family"] is None
    (card,) = client.get("/v1/models").json()["data"]
    assert card["id"] == "echo"
    assert card["modes"] == ["gundam", "base"] and card["model_family"] is None


def test_default_mode_is_one_the_engine_has() -> None:
    class OnlyNative(EchoEngine):
        supported_modes = ("native",)

    engine = OnlyNative()
    with TestClient(create_app(engine, engine_name="ocr")) as test_client:
        assert test_client.post("/v1/chat/completions", json=chat()).status_code == 200
    assert engine.seen[0].mode == "native"
    with pytest.raises(ValueError, match="no mode 'base'"):
        create_app(engine, engine_name="ocr", default_mode="base")


class SlowEngine(EchoEngine):
    """Each batch takes 50 ms; records batch sizes; refuses to run two batches at once."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: list[int] = []
        self._running = threading.Lock()

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        if not self._running.acquire(blocking=False):
            raise RuntimeError("two batches at once")
        try:
            self.sizes.append(len(requests))
            time.sleep(0.05)
            return super().infer_batch(requests)
        finally:
            self._running.release()


def test_batcher_collects_concurrent_requests_into_batches() -> None:
    engine = SlowEngine()

    async def scenario() -> list[tuple[InferenceResult, int]]:
        batcher = RequestBatcher(engine, max_batch=4, wait_s=0.01)
        await batcher.start()
        requests = [InferenceRequest(None, f"p{i}", "gundam", f"s{i}") for i in range(10)]
        try:
            return await asyncio.gather(*(batcher.infer(request) for request in requests))
        finally:
            await batcher.stop()

    answers = asyncio.run(scenario())
    assert [result.text.split("|")[2] for result, _ in answers] == [f"s{i}" for i in range(10)]
    assert sum(engine.sizes) == 10
    assert max(engine.sizes) == 4
    assert [size for _, size in answers] == [4] * 4 + [4] * 4 + [2] * 2


def test_batcher_turns_a_raising_engine_into_errors() -> None:
    class Broken(EchoEngine):
        def infer_batch(self, requests):
            raise RuntimeError("CUDA error: out of memory")

    async def scenario() -> tuple[InferenceResult, int]:
        batcher = RequestBatcher(Broken(), max_batch=2, wait_s=0)
        await batcher.start()
        try:
            return await batcher.infer(InferenceRequest(None, "p", "gundam", "s"))
        finally:
            await batcher.stop()

    result, _ = asyncio.run(scenario())
    assert result.error == "RuntimeError: CUDA error: out of memory"


def test_served_engine_batches_through_a_real_server() -> None:
    requests = [InferenceRequest(None, f"p{i}", "gundam", f"s{i}") for i in range(24)]
    with serve_subprocess(
        FIXED_LATENCY_ENGINE, engine_options={"latency_s": 0.2}, max_batch=8, batch_wait_ms=20
    ) as server:
        engine = create_engine(
            "openai", api_base=server.api_base, model_family="none", concurrency=12
        )
        results = engine.infer_batch(requests)
        status = server.stop()
    assert [r.text for r in results] == [f"page s{i}" for i in range(24)]
    sizes = [r.settings["server_settings"]["batch_size"] for r in results]
    assert max(sizes) == 8  # twelve in flight, eight per batch
    assert status == 0  # SIGTERM stops it cleanly


def test_serve_refuses_an_unknown_engine(capsys) -> None:
    assert main(["--engine", "no-such-engine", "--port", "0"]) == 2
    assert "unknown engine 'no-such-engine'" in capsys.readouterr().err


def test_engine_options_are_json_or_strings() -> None:
    assert engine_option("max_new_tokens=16") == ("max_new_tokens", 16)
    assert engine_option("recordings=/data/r.jsonl") == ("recordings", "/data/r.jsonl")
    assert engine_option("model_path=null") == ("model_path", None)
    assert engine_option("ids=[1, 2]") == ("ids", [1, 2])
    with pytest.raises(argparse.ArgumentTypeError, match="KEY=VALUE"):
        engine_option("no-equals-sign")


# --- --engine package.module:factory and the evalsuite.engines entry points ---


def test_module_factory_names_create_engines() -> None:
    engine = create_engine(FIXED_LATENCY_ENGINE, latency_s=0.0)
    assert isinstance(engine, FixedLatencyEngine)
    assert engine.infer(InferenceRequest(None, "p", "gundam", "s1")).text == "page s1"
    assert engine_kind(FIXED_LATENCY_ENGINE) == "vlm"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no_such_package.engines:make", "no module named 'no_such_package.engines'"),
        ("evalsuite.no_such_module:make", "no module named 'evalsuite.no_such_module'"),
        ("evalsuite.perf.serving:no_such_factory", "has no callable 'no_such_factory'"),
        ("evalsuite.perf.serving:ENGINE_LATENCY_S", "has no callable 'ENGINE_LATENCY_S'"),
        ("evalsuite.perf.serving:", "expected the form package.module:factory"),
    ],
)
def test_bad_module_factory_names_are_unknown_engines(name, message) -> None:
    with pytest.raises(UnknownEngineError, match=message):
        create_engine(name)


def test_a_module_with_a_missing_dependency_is_not_an_unknown_engine(tmp_path, monkeypatch) -> None:
    (tmp_path / "needs_missing_dep.py").write_text("import surely_not_installed_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="surely_not_installed_xyz"):
        resolve_engine("needs_missing_dep:make")


def test_entry_points_add_engines(tmp_path, monkeypatch) -> None:
    dist_info = tmp_path / "fake_ocr_plugin-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fake-ocr-plugin\nVersion: 1.0\n"
    )
    (dist_info / "entry_points.txt").write_text(
        f"[evalsuite.engines]\nplugin-latency = {FIXED_LATENCY_ENGINE}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    from evalsuite.engines import available_engines

    assert "plugin-latency" in available_engines()
    assert isinstance(create_engine("plugin-latency", latency_s=0.0), FixedLatencyEngine)
    with pytest.raises(UnknownEngineError, match="plugin-latency"):  # listed among the choices
        create_engine("still-unknown")


def test_a_server_that_cannot_start_says_why() -> None:
    with (
        pytest.raises(ServeProcessError, match="unknown engine 'no-such-engine'"),
        serve_subprocess("no-such-engine", startup_timeout_s=60),
    ):
        pass
