"""The ``openai``/``vllm`` engines: the request they send, retries and per-sample errors against
a scripted fake server, order and concurrency, page encoding, and end to end through a real
``evalsuite serve`` (tiny-deepseek-ocr-2 and replay) compared with the in-process engines."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import random
import re
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from aiohttp import web
from PIL import Image, ImageChops

from evalsuite.engines import InferenceRequest, create_engine
from evalsuite.engines.deepseek_ocr2 import OCR2_MODES, ocr2_image_tokens
from evalsuite.engines.deepseek_views import DEEPSEEK_OCR_VIEWS, OCR2_VIEWS, image_token_count
from evalsuite.engines.recording import RecordingEngine
from evalsuite.engines.served import TABLE_CELL_TOKEN_IDS, chat_text, encode_page, served_modes
from evalsuite.errors import EngineUnavailableError
from evalsuite.perf.serving import FixedLatencyEngine
from evalsuite.prompts import FREE_OCR, MARKDOWN
from evalsuite.render import RenderConfig, render_text
from evalsuite.serving.process import serve_subprocess
from evalsuite.tokens import text_token_count, vision_tokens
from tests.support.fake_servers import serving

PAGE_TEXT = "INVOICE #INV-2024-0892\nDate: November 15, 2024\nTotal: $1,229.20\n"


@dataclass
class FakeOpenAIServer:
    """An OpenAI-compatible server answering chat completions from a script.

    Each completion request consumes the next step: ``"drop"`` (close the connection unanswered),
    an int (that HTTP status with an OpenAI error body) or ``"ok"`` (after ``delay_s()`` seconds,
    answer the request's text reversed, with ``completion_tokens`` = its length); once the
    script is used up every step is ``"ok"``. ``version`` is what ``/version`` answers (None:
    404, like a server without that route); ``model_id`` and ``root`` are its model card's.
    """

    script: list[str | int] = field(default_factory=list)
    delay_s: Callable[[], float] = lambda: 0.0
    version: dict[str, Any] | None = None
    max_model_len: int | None = None
    plugin: bool = True
    model_id: str = "fake-model"
    root: str | None = None
    bodies: list[dict[str, Any]] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    api_base: str = ""

    async def models(self, _: web.Request) -> web.Response:
        card: dict[str, Any] = {"id": self.model_id}
        if self.root is not None:
            card["root"] = self.root
        if self.max_model_len is not None:
            card["max_model_len"] = self.max_model_len  # as vLLM's model cards say
        return web.json_response({"object": "list", "data": [card]})

    async def version_info(self, _: web.Request) -> web.Response:
        if self.version is None:
            raise web.HTTPNotFound()
        return web.json_response(self.version)

    async def completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.bodies.append(body)
        step = self.script.pop(0) if self.script else "ok"
        if step == "drop":
            assert request.transport is not None
            request.transport.close()
            return web.Response()
        if isinstance(step, int):
            error = {"message": f"scripted failure {step}", "type": "server_error"}
            return web.json_response({"error": error}, status=step)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s())
        finally:
            self.in_flight -= 1
        text = next(part["text"] for part in body["messages"][0]["content"] if "text" in part)
        return web.json_response(
            {
                "choices": [{"message": {"content": text[::-1]}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": self.prompt_tokens(body),
                    "completion_tokens": len(text),
                },
            }
        )


    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """vLLM's ``usage.prompt_tokens``: BOS, the image tokens (with the plugin: of the
        request's mode; a stock vLLM: gundam, 6 tiles at most), newline and text tokens."""
        content = body["messages"][0]["content"]
        text = next(part["text"] for part in content if "text" in part)
        image = next((part for part in content if "image_url" in part), None)
        if image is None:
            return 1 + text_token_count(text)
        page = decoded(image["image_url"]["url"])
        if self.plugin:
            mode = body["mm_processor_kwargs"]["mode"]
            count = image_token_count(*page.size, {**DEEPSEEK_OCR_VIEWS, **OCR2_VIEWS}[mode])
        else:
            count = vision_tokens(*page.size, "gundam", max_crops=6).raw
        return 1 + count + text_token_count("\n" + text)


@contextlib.contextmanager
def running(fake: FakeOpenAIServer) -> Iterator[FakeOpenAIServer]:
    """``fake`` listening on a free port of 127.0.0.1 (its event loop in a thread)."""
    app = web.Application()
    app.router.add_get("/v1/models", fake.models)
    app.router.add_get("/version", fake.version_info)
    app.router.add_post("/v1/chat/completions", fake.completions)
    with serving(app) as api_base:
        fake.api_base = api_base
        yield fake


def vllm_engine(fake: FakeOpenAIServer, **options: Any) -> Any:
    return create_engine("vllm", api_base=fake.api_base, backoff_s=0.01, **options)


def request(image: Any, mode: str = "gundam", prompt: str = FREE_OCR, sample_id: str = "s"):
    return InferenceRequest(image=image, prompt=prompt, mode=mode, sample_id=sample_id)


def decoded(data_url: str) -> Image.Image:
    header, _, data = data_url.partition(",")
    assert header == "data:image/png;base64"
    return Image.open(io.BytesIO(base64.b64decode(data)))


def same_pixels(a: Image.Image, b: Image.Image) -> bool:
    return (
        a.size == b.size
        and ImageChops.difference(a.convert("RGB"), b.convert("RGB")).getbbox() is None
    )


@pytest.fixture(scope="module")
def page() -> Image.Image:
    return render_text(PAGE_TEXT, RenderConfig()).pages[0].image


def test_request_follows_vllms_deepseek_ocr_recipe(page) -> None:
    with running(FakeOpenAIServer()) as fake:
        engine = vllm_engine(fake)
        result = engine.infer(request(page))
    assert result.error is None
    (body,) = fake.bodies
    assert body["model"] == "fake-model"
    assert body["temperature"] == 0
    assert body["max_tokens"] == 8192
    assert body["skip_special_tokens"] is False
    assert body["vllm_xargs"] == {
        "ngram_size": 30,
        "window_size": 90,
        "whitelist_token_ids": list(TABLE_CELL_TOKEN_IDS),
    }
    assert "evalsuite" not in body  # only evalsuite serve is sent the sample's identity
    image_part, text_part = body["messages"][0]["content"]
    assert text_part == {"type": "text", "text": "Free OCR."}  # vLLM adds "<image>\n" itself
    assert same_pixels(decoded(image_part["image_url"]["url"]), page)
    assert result.text == "Free OCR."[::-1]
    assert result.output_tokens == len("Free OCR.")
    assert result.vision_tokens == vision_tokens(page.width, page.height, "gundam", max_crops=9)
    assert result.settings["model"] == "fake-model"
    assert result.settings["server_mode"] == "per-request"
    assert result.settings["mode"] == "gundam"
    assert result.settings["api_base"] == fake.api_base
    assert result.settings["vision_token_arithmetic"] == "deepseek-ocr"
    assert engine.server_info()["model"] == "fake-model"


@pytest.mark.parametrize(("context", "sent"), [(8192, None), (8191, None), (32768, 8192)])
def test_max_tokens_is_left_out_where_it_cannot_fit_the_servers_context(page, context, sent):
    # vLLM refuses prompt + max_tokens > max_model_len: DeepSeek-OCR's own 8192 context cannot
    # take max_tokens 8192 beside any prompt, so the server's remaining context is used instead
    with running(FakeOpenAIServer(max_model_len=context)) as fake:
        result = vllm_engine(fake).infer(request(page))
    (body,) = fake.bodies
    assert body.get("max_tokens") == sent and ("max_tokens" in body) == (sent is not None)
    assert result.settings["max_model_len"] == context
    assert result.settings["max_tokens"] == sent


def test_text_only_request_sends_no_image(page) -> None:
    with running(FakeOpenAIServer()) as fake:
        result = vllm_engine(fake).infer(request(None, prompt="Question: 2 + 2?"))
    assert fake.bodies[0]["messages"][0]["content"] == [
        {"type": "text", "text": "Question: 2 + 2?"}
    ]
    assert result.vision_tokens is None
    assert result.text == "?2 + 2 :noitseuQ"


def test_deepseek_ocr2_family_counts_its_own_tokens_in_vllms_mode(page) -> None:
    with running(FakeOpenAIServer()) as fake:
        engine = vllm_engine(fake, model_family="deepseek-ocr-2", ngram_size=None)
        result = engine.infer(request(page, mode="default", prompt=MARKDOWN))
    assert engine.supported_modes == ("default", "global")
    assert "vllm_xargs" not in fake.bodies[0]
    assert (
        fake.bodies[0]["messages"][0]["content"][1]["text"]
        == "<|grounding|>Convert the document to markdown."
    )
    assert result.vision_tokens == ocr2_image_tokens(page.width, page.height, "default")


def test_each_mode_is_sent_and_a_stock_server_is_caught(page) -> None:
    """With the plugin every mode runs; a vLLM without it (gundam whatever the mode) answers
    prompts of the wrong length, and those samples fail, never scored."""
    with running(FakeOpenAIServer()) as fake:
        results = vllm_engine(fake).infer_batch(
            [request(page, mode=mode, sample_id=mode) for mode in ("tiny", "base", "gundam")]
        )
    assert [r.error for r in results] == [None, None, None]
    assert sorted(b["mm_processor_kwargs"]["mode"] for b in fake.bodies) == [
        "base", "gundam", "tiny"
    ]
    with running(FakeOpenAIServer(plugin=False)) as stock:
        tiny, gundam = vllm_engine(stock).infer_batch(
            [request(page, mode="tiny", sample_id="t"), request(page, sample_id="g")]
        )
    assert tiny.text == "" and "evalsuite's plugin" in tiny.error and "'tiny'" in tiny.error
    assert gundam.error is None  # a page of at most 6 tiles: the stock gundam is DeepSeek's


def test_retries_dropped_connections_and_5xx_then_succeeds(page) -> None:
    with running(FakeOpenAIServer(script=["drop", 503, "drop", "ok"])) as fake:
        result = vllm_engine(fake, max_retries=3).infer(request(page))
    assert result.error is None
    assert result.text == "Free OCR."[::-1]
    assert len(fake.bodies) == 4


def test_4xx_is_not_retried(page) -> None:
    with running(FakeOpenAIServer(script=[400])) as fake:
        result = vllm_engine(fake, max_retries=3).infer(request(page))
    assert len(fake.bodies) == 1
    assert result.text == ""
    assert "HTTP 400 (not retried)" in result.error
    assert "scripted failure 400" in result.error
    assert fake.api_base in result.error


def test_always_5xx_fails_the_sample_after_max_retries(page) -> None:
    with running(FakeOpenAIServer(script=[503] * 10)) as fake:
        results = vllm_engine(fake, max_retries=2).infer_batch([request(page)])
    assert len(fake.bodies) == 3
    (result,) = results
    assert result.text == ""
    assert "failed after 3 attempts" in result.error
    assert "HTTP 503: scripted failure 503" in result.error
    assert f"{fake.api_base}/chat/completions" in result.error


def test_results_keep_request_order_with_many_in_flight() -> None:
    rng = random.Random(7)
    fake = FakeOpenAIServer(delay_s=lambda: rng.uniform(0.0, 0.03))
    requests = [request(None, prompt=f"prompt {i:02d}", sample_id=f"s{i}") for i in range(40)]
    with running(fake):
        engine = vllm_engine(fake, concurrency=8)
        results = engine.infer_batch(requests)
    assert engine.preferred_batch_size == 8
    assert [r.text for r in results] == [f"prompt {i:02d}"[::-1] for i in range(40)]
    assert 1 < fake.most_in_flight <= 8


# --- several servers ---


def two_server_engine(first: FakeOpenAIServer, second: FakeOpenAIServer, **options: Any) -> Any:
    return create_engine(
        "vllm", api_base=[first.api_base, second.api_base], backoff_s=0.01, **options
    )


def prompts(count: int) -> list[InferenceRequest]:
    return [request(None, prompt=f"prompt {i:02d}", sample_id=f"s{i}") for i in range(count)]


def served_tokens(server: FakeOpenAIServer) -> dict[str, int]:
    """The prompt and completion tokens ``server`` reported for the bodies it answered."""
    texts = [next(p["text"] for p in body["messages"][0]["content"] if "text" in p)
             for body in server.bodies]
    return {"prompt_tokens": sum(server.prompt_tokens(body) for body in server.bodies),
            "completion_tokens": sum(len(text) for text in texts)}


def sent_counts(engine: Any) -> dict[str, dict[str, int]]:
    """Requests, completed and failed per server of ``engine``."""
    return {url: {k: counts[k] for k in ("requests", "completed", "failed")}
            for url, counts in engine.endpoint_counts().items()}


def test_two_servers_share_the_requests_and_answers_keep_their_order() -> None:
    rng = random.Random(3)
    first = FakeOpenAIServer(delay_s=lambda: rng.uniform(0.01, 0.03))
    second = FakeOpenAIServer(delay_s=lambda: rng.uniform(0.01, 0.03))
    with running(first), running(second):
        engine = two_server_engine(first, second, concurrency=4)
        results = engine.infer_batch(prompts(60))
    assert [r.text for r in results] == [f"prompt {i:02d}"[::-1] for i in range(60)]
    assert engine.preferred_batch_size == 8  # four in flight per server
    counts = engine.endpoint_counts()
    assert counts == {
        server.api_base: {"requests": len(server.bodies), "completed": len(server.bodies),
                          "failed": 0, "rate_limited": 0, **served_tokens(server)}
        for server in (first, second)
    }
    assert len(first.bodies) + len(second.bodies) == 60
    assert abs(len(first.bodies) - len(second.bodies)) <= 8  # servers of one speed: even
    assert 1 < first.most_in_flight <= 4 and 1 < second.most_in_flight <= 4
    answered_by = [r.settings["api_base"] for r in results]
    assert answered_by.count(first.api_base) == len(first.bodies)
    assert engine.server_info()["api_base"] == [first.api_base, second.api_base]


def test_a_faster_server_takes_more_requests() -> None:
    fast, slow = FakeOpenAIServer(delay_s=lambda: 0.005), FakeOpenAIServer(delay_s=lambda: 0.3)
    with running(fast), running(slow):
        engine = two_server_engine(fast, slow, concurrency=2)
        results = engine.infer_batch(prompts(40))
    assert [r.error for r in results] == [None] * 40
    assert len(fast.bodies) > 3 * len(slow.bodies) > 0


def test_a_failed_request_is_retried_at_once_on_the_other_server() -> None:
    failing, healthy = FakeOpenAIServer(script=[503]), FakeOpenAIServer()
    with running(failing), running(healthy):
        engine = create_engine(
            "vllm", api_base=[failing.api_base, healthy.api_base], backoff_s=30.0, max_retries=1
        )
        started = time.perf_counter()
        result = engine.infer(request(None, prompt="only one"))
        elapsed = time.perf_counter() - started
    assert result.error is None and result.text == "eno ylno"
    assert elapsed < 5  # no 30 s backoff: another server was free
    assert result.settings["api_base"] == healthy.api_base
    assert sent_counts(engine) == {
        failing.api_base: {"requests": 1, "completed": 0, "failed": 1},
        healthy.api_base: {"requests": 1, "completed": 1, "failed": 0},
    }


def test_every_request_of_a_batch_survives_a_server_that_goes_away() -> None:
    healthy, leaving = FakeOpenAIServer(delay_s=lambda: 0.01), FakeOpenAIServer()
    with running(healthy):
        with running(leaving):
            engine = create_engine(
                "vllm", api_base=[leaving.api_base, healthy.api_base], backoff_s=2.0,
                concurrency=4, max_retries=1,
            )
        results = engine.infer_batch(prompts(30))  # the first server has stopped listening
    assert [r.text for r in results] == [f"prompt {i:02d}"[::-1] for i in range(30)]
    counts = engine.endpoint_counts()
    assert sent_counts(engine)[healthy.api_base] == {"requests": 30, "completed": 30,
                                                     "failed": 0}
    # only the requests sent before its first refusal came back: then it rests
    assert counts[leaving.api_base]["completed"] == 0
    assert 1 <= counts[leaving.api_base]["failed"] <= 4


def test_concurrent_faults_rest_a_server_once_and_it_serves_again_after() -> None:
    """Eight requests failing at once are one fault: the server rests backoff_s, not
    backoff_s · 2^7, and takes its share again once the rest is over."""
    flaky, steady = FakeOpenAIServer(script=[503] * 8), FakeOpenAIServer(delay_s=lambda: 0.01)
    with running(flaky), running(steady):
        engine = create_engine("vllm", api_base=[flaky.api_base, steady.api_base],
                               backoff_s=0.3, concurrency=8, max_retries=1)
        first = engine.infer_batch(prompts(16))
        time.sleep(0.5)
        before = engine.endpoint_counts()[flaky.api_base]
        second = engine.infer_batch(prompts(16))
    assert [r.error for r in (*first, *second)] == [None] * 32
    assert before["failed"] >= 1 and before["completed"] == 0
    after = engine.endpoint_counts()[flaky.api_base]
    assert after["completed"] >= 4  # rested, then back in the rotation


def test_a_server_that_timed_out_rests_and_the_others_take_the_next_requests() -> None:
    text_token_count("warm")  # the fake servers count tokens: load the tokenizer before 0.3 s runs
    delays = iter([1.0])
    stuck = FakeOpenAIServer(delay_s=lambda: next(delays, 0.0))
    other = FakeOpenAIServer()
    with running(stuck), running(other):
        engine = create_engine("vllm", api_base=[stuck.api_base, other.api_base],
                               backoff_s=30.0, timeout_s=0.3)
        timed_out = engine.infer(request(None, prompt="slow"))
        later = [engine.infer(request(None, prompt=f"p{i}")) for i in range(2)]
    assert "no answer within timeout_s=0.3 s (not retried" in timed_out.error
    assert timed_out.settings["api_base"] == stuck.api_base
    assert [r.settings["api_base"] for r in later] == [other.api_base] * 2
    assert sent_counts(engine)[stuck.api_base] == {"requests": 1, "completed": 0, "failed": 1}


def test_a_server_down_for_a_long_batch_fails_each_sample_with_its_own_error() -> None:
    with running(FakeOpenAIServer(script=[503] * 1200)) as down:
        results = vllm_engine(down, max_retries=0).infer_batch(prompts(1100))
    assert all(r.error.startswith("POST failed after 1 attempts:") and "HTTP 503" in r.error
               for r in results)  # no OverflowError from an ever-longer rest


@pytest.mark.parametrize(
    ("second", "message"),
    [
        (FakeOpenAIServer(version={"version": "0.34.0"}), "version '0.33.0' vs '0.34.0'"),
        (FakeOpenAIServer(version={"version": "0.33.0"}, max_model_len=4096),
         "max_model_len None vs 4096"),
        (FakeOpenAIServer(version={"version": "0.33.0"}, root="/models/finetune"),
         "root None vs '/models/finetune'"),
        (FakeOpenAIServer(version={"version": "0.33.0"}, model_id="other-model"),
         "does not serve 'fake-model'; it serves: other-model"),
    ],
)
def test_servers_of_different_model_versions_are_refused(second, message) -> None:
    first = FakeOpenAIServer(version={"version": "0.33.0"})
    with (running(first), running(second),
          pytest.raises(EngineUnavailableError, match=re.escape(message)) as raised):
        two_server_engine(first, second)
    assert second.api_base in str(raised.value)


def test_a_server_named_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="this server is already given"):
        create_engine("openai", api_base=["http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1/"])
    with pytest.raises(ValueError, match="names no server"):
        create_engine("openai", api_base=[])


def test_unreachable_server_is_reported_at_creation() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    api_base = f"http://127.0.0.1:{port}/v1"
    with pytest.raises(EngineUnavailableError, match="evalsuite serve") as raised:
        create_engine("openai", api_base=api_base)
    assert api_base in str(raised.value)


def test_per_request_modes_need_a_server_that_takes_them() -> None:
    with running(FakeOpenAIServer(version={"version": "0.11.1"})) as fake:
        with pytest.raises(EngineUnavailableError, match="mode=NAME"):
            create_engine("openai", api_base=fake.api_base, model_family="deepseek-ocr")
        engine = create_engine("openai", api_base=fake.api_base, mode="large")
    assert engine.server_info()["version"] == "0.11.1"
    assert engine.supported_modes == ("large",)


def test_a_stock_server_given_no_model_gets_no_deepseek_fields(page) -> None:
    """No family, mode or profile named and a server that is not evalsuite serve: the
    benchmark's prompt text with temperature 0 and max_tokens only, in one mode."""
    with running(FakeOpenAIServer(version={"version": "0.11.1"}, plugin=False)) as fake:
        engine = create_engine("openai", api_base=fake.api_base)
        result = engine.infer(request(page, mode="native", prompt=MARKDOWN))
    assert engine.generic and engine.supported_modes == ("native",)
    assert result.error is None and result.vision_tokens is None
    (body,) = fake.bodies
    assert set(body) == {"model", "messages", "temperature", "max_tokens"}
    assert body["messages"][0]["content"][1]["text"] == chat_text(MARKDOWN)


def test_a_model_the_server_does_not_serve_is_refused() -> None:
    with (
        running(FakeOpenAIServer()) as fake,
        pytest.raises(EngineUnavailableError, match="it serves: fake-model"),
    ):
        vllm_engine(fake, model="deepseek-ai/DeepSeek-OCR")


def test_chat_text_drops_the_image_placeholder() -> None:
    assert chat_text(FREE_OCR) == "Free OCR."
    assert chat_text("no placeholder") == "no placeholder"
    assert chat_text("<image>\n<image>\ntwo") == "two"


def test_png_file_is_sent_as_its_own_bytes(tmp_path, page) -> None:
    path = tmp_path / "page.png"
    page.save(path)
    encoded = encode_page(path)
    assert base64.b64decode(encoded.data_url.partition(",")[2]) == path.read_bytes()
    assert (encoded.width, encoded.height) == page.size


def test_grey_and_color_pages_keep_their_pixels(page) -> None:
    color = render_text(PAGE_TEXT, RenderConfig(colors="sepia")).pages[0].image
    grey_png = decoded(encode_page(page).data_url)
    assert grey_png.mode == "P"  # the fast path: grey levels as a palette
    assert same_pixels(grey_png, page)
    assert same_pixels(decoded(encode_page(color).data_url), color)


def test_rgba_and_exif_rotated_pages_are_sent_as_deepseek_loads_them(tmp_path) -> None:
    rgba = Image.new("RGBA", (40, 30), (10, 20, 30, 0))
    assert same_pixels(decoded(encode_page(rgba).data_url), rgba.convert("RGB"))
    sideways = Image.new("RGB", (60, 20), "white")
    exif = sideways.getexif()
    exif[0x0112] = 6  # rotate 90° clockwise to view
    path = tmp_path / "sideways.jpg"
    sideways.save(path, exif=exif)
    encoded = encode_page(path)
    assert (encoded.width, encoded.height) == (20, 60)
    assert decoded(encoded.data_url).size == (20, 60)


# --- end to end through evalsuite serve ---


@pytest.fixture(scope="module")
def tiny_server() -> Iterator[str]:
    with serve_subprocess("tiny-deepseek-ocr-2", max_batch=4) as server:
        yield server.api_base


def test_tiny_engine_through_the_server_equals_in_process(tiny_server, page, tmp_path) -> None:
    path = tmp_path / "page.png"
    page.save(path)
    small = page.resize((500, 400))
    requests = [
        request(page, mode="default", sample_id="a"),
        request(path, mode="global", sample_id="b"),
        request(small, mode="default", prompt=MARKDOWN, sample_id="c"),
        request(page, mode="global", prompt=MARKDOWN, sample_id="d"),
        request(None, mode="default", prompt="Question: what is 2 + 2?\nAnswer:", sample_id="e"),
    ]
    served = create_engine(
        "openai", api_base=tiny_server, model_family="deepseek-ocr-2", concurrency=3
    )
    local = create_engine("tiny-deepseek-ocr-2")
    through_server = served.infer_batch(requests)
    in_process = local.infer_batch(requests)
    assert [r.error for r in through_server] == [None] * len(requests)
    assert [r.text for r in through_server] == [r.text for r in in_process]
    assert [r.vision_tokens for r in through_server] == [r.vision_tokens for r in in_process]
    assert [r.output_tokens for r in through_server] == [r.output_tokens for r in in_process]
    assert through_server[0].settings["server_engine"] == "tiny-deepseek-ocr-2"
    assert served.server_info()["server"] == "evalsuite serve"


def test_evalsuite_serve_says_its_modes_and_the_engine_keeps_to_them(tiny_server, page) -> None:
    """Against ``evalsuite serve --engine tiny-deepseek-ocr-2`` the openai engine (no family
    given) runs that engine's modes; a mode it lacks fails before any POST, naming them."""
    assert served_modes(tiny_server) == OCR2_MODES
    served = create_engine("openai", api_base=tiny_server)
    assert served.supported_modes == OCR2_MODES
    (result,) = served.infer_batch([request(page, mode="tiny")])
    assert result.error is not None and "has no mode 'tiny'" in result.error
    assert ", ".join(OCR2_MODES) in result.error and "HTTP" not in result.error


def test_replay_through_the_server_finds_the_recordings(tmp_path, page) -> None:
    path = tmp_path / "page.png"
    page.save(path)
    requests = [
        InferenceRequest(path, FREE_OCR, "base", "doc-1", {"experiment": "x", "document": "d1"}),
        InferenceRequest(page, FREE_OCR, "tiny", "doc-2", {"experiment": "x", "document": "d2"}),
        InferenceRequest(None, "Q?", "small", "doc-3", {"experiment": "x", "document": "d3"}),
    ]
    recordings = tmp_path / "recordings.jsonl"
    recorded = RecordingEngine(FixedLatencyEngine(latency_s=0), recordings).infer_batch(requests)
    with serve_subprocess("replay", engine_options={"recordings": str(recordings)}) as server:
        served = create_engine(
            "openai", api_base=server.api_base, concurrency=2, max_retries=1, backoff_s=0.01
        )
        replayed = served.infer_batch(requests)
        unknown = served.infer(
            InferenceRequest(page, FREE_OCR, "base", "doc-9", {"document": "d9"})
        )
    assert served.keyed_outputs is True
    assert [r.error for r in replayed] == [None] * 3
    assert [r.text for r in replayed] == [r.text for r in recorded]
    assert [r.output_tokens for r in replayed] == [r.output_tokens for r in recorded]
    assert "no recording" in unknown.error


def test_modes_are_those_of_the_model_family() -> None:
    with pytest.raises(ValueError, match="deepseek-ocr-2 has no mode 'gundam'; choose one of"):
        create_engine(
            "vllm", api_base="http://127.0.0.1:9/v1", model_family="deepseek-ocr-2", mode="gundam"
        )


def test_infer_batch_works_under_a_running_event_loop(page) -> None:
    async def caller(engine: Any) -> list[Any]:  # e.g. a notebook: a loop is already running
        return engine.infer_batch([request(page, sample_id="a"), request(None, prompt="b")])

    with running(FakeOpenAIServer()) as fake:
        results = asyncio.run(caller(vllm_engine(fake)))
    assert [r.text for r in results] == ["Free OCR."[::-1], "b"]


def test_the_benchmarks_anti_repetition_setting_is_sent_and_recorded(page) -> None:
    from dataclasses import replace

    from evalsuite.engines.base import DOCUMENT_EVALUATION_NGRAM
    from evalsuite.request_cache import request_key

    with running(FakeOpenAIServer()) as fake:
        engine = vllm_engine(fake)
        plain = request(page, sample_id="plain")
        evaluation = replace(request(page, sample_id="eval"),
                             anti_repetition=DOCUMENT_EVALUATION_NGRAM)
        default, chosen = engine.infer_batch([plain, evaluation])
        off = vllm_engine(fake, ngram_size=None).infer(evaluation)
    sent = {body["vllm_xargs"]["ngram_size"]: body["vllm_xargs"] for body in fake.bodies[:2]}
    assert sent[30]["window_size"] == 90 and sent[40]["window_size"] == 90
    assert sent[40]["whitelist_token_ids"] == list(TABLE_CELL_TOKEN_IDS)
    assert chosen.settings["vllm_xargs"]["ngram_size"] == 40
    assert "run_dpsk_ocr_eval_batch.py" in chosen.settings["anti_repetition_source"]
    assert default.settings["vllm_xargs"]["ngram_size"] == 30
    assert "vllm_xargs" not in fake.bodies[2] and off.error is None
    # two settings never share a cached answer
    assert request_key("l", engine, plain) != request_key("l", engine, evaluation)
