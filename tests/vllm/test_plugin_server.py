"""The plugin as vLLM finds and runs it: discovery through its entry point in a fresh process,
the exact server command the suite starts parsed by vLLM's own CLI parser into engine
arguments, its logits processor accepted by the V2 runner's loader (DeepSeek's V1 processor
refused), and the V2 n-gram processor against vLLM's in-tree DeepSeek rule."""

from __future__ import annotations

import json
import os
import random
import shlex
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from evalsuite.plugin.server import VLLM_COMMAND, plan_server
from evalsuite.vllm_plugin import (
    ARCHITECTURES,
    MODE_KWARG,
    NGRAM_PROCESSOR,
    PLUGIN_NAME,
    SERVER_ENVIRONMENT,
    VLLM_VERSION,
)
from evalsuite.vllm_plugin.ngram import NoRepeatNGramLogitsProcessor
from evalsuite.vllm_plugin.ngram_rule import parse_rule

DISCOVER = (
    "import json; from vllm.plugins import load_general_plugins; load_general_plugins(); "
    "from vllm import ModelRegistry; import vllm; "
    "print(json.dumps([vllm.__version__, sorted(ModelRegistry.get_supported_archs())]))"
)


def discover(plugins: str | None) -> tuple[str, list[str]]:
    env = {k: v for k, v in os.environ.items() if k != "VLLM_PLUGINS"}
    if plugins is not None:
        env["VLLM_PLUGINS"] = plugins
    done = subprocess.run([sys.executable, "-c", DISCOVER], capture_output=True, text=True,
                          env=env, timeout=300, check=True)
    version, archs = json.loads(done.stdout.strip().splitlines()[-1])
    return version, archs


def test_a_fresh_vllm_process_finds_the_plugin_by_its_entry_point() -> None:
    version, archs = discover(SERVER_ENVIRONMENT["VLLM_PLUGINS"])
    assert version == VLLM_VERSION
    assert set(ARCHITECTURES.values()) <= set(archs)


def test_with_the_plugin_disabled_its_architectures_are_unknown() -> None:
    _, archs = discover("some-other-plugin")
    assert not set(ARCHITECTURES.values()) & set(archs)
    assert "DeepseekOCRForCausalLM" in archs


def test_the_server_command_parses_and_its_processor_loads_under_the_v2_runner(
    checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm.config import DeviceConfig, VllmConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.platforms import current_platform
    from vllm.utils.argparse_utils import FlexibleArgumentParser
    from vllm.v1.worker.gpu.sample.logits_processor.loader import (
        _load_v2_logitsprocs,
        build_custom_logits_processors_params_validator,
    )

    for name, value in SERVER_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)
    # no accelerator here: vLLM's argument defaults ask the platform for a device type
    monkeypatch.setattr(type(current_platform), "device_type", "cpu", raising=False)
    plan = plan_server(None, "deepseek-ocr", str(checkpoint), 10.0, vllm="/venv/bin/vllm")
    words = shlex.split(plan.command.replace("{port}", "8123"))
    assert words[:3] == ["/venv/bin/vllm", "serve", str(checkpoint)]
    args = make_arg_parser(FlexibleArgumentParser()).parse_args(["--model", *words[2:]])
    engine_args = AsyncEngineArgs.from_cli_args(args)
    assert engine_args.model == str(checkpoint)
    assert engine_args.logits_processors == [NGRAM_PROCESSOR]
    assert engine_args.enable_prefix_caching is False
    model_config = engine_args.create_model_config()
    assert model_config.architectures == [ARCHITECTURES["deepseek-ocr"]]
    config = VllmConfig(model_config=model_config, device_config=DeviceConfig(device="cpu"))
    assert config.use_v2_model_runner  # pinned by the server's environment
    assert _load_v2_logitsprocs(model_config.logits_processors) == [NoRepeatNGramLogitsProcessor]
    validate = build_custom_logits_processors_params_validator(model_config.logits_processors)
    validate(SimpleNamespace(extra_args={"ngram_size": 30, "window_size": 90}))
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError, match="strictly positive"):
        validate(SimpleNamespace(extra_args={"ngram_size": 0}))
    # the recipe's processor, which the suite used to start, is refused by this runner
    with pytest.raises(ValueError, match="not a subclass"):
        _load_v2_logitsprocs(["vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor"])
    assert "{vllm} serve" in VLLM_COMMAND and SERVER_ENVIRONMENT["VLLM_PLUGINS"] == PLUGIN_NAME


def parsed_server_args(command: str) -> Any:
    """``command`` (a ``vllm serve MODEL ...`` line) through vLLM's own CLI parser."""
    from vllm.entrypoints.common.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    words = shlex.split(command.replace("{port}", "8123"))
    return make_arg_parser(FlexibleArgumentParser()).parse_args(["--model", *words[2:]])


@pytest.mark.parametrize("platform", ["cuda", "cpu"])
def test_the_started_server_accepts_each_requests_mode(
    checkpoint: Path, monkeypatch: pytest.MonkeyPatch, platform: str
) -> None:
    """The body the ``vllm`` engine sends, validated as vLLM's chat endpoint validates it
    (``ChatCompletionRequest``, then ``validate_request_mm_kwargs`` with the server's
    ``--trust-request-mm-kwargs``): accepted by the command the suite starts, refused with
    HTTP 400's message by a command without the flag (the first GPU night's every sample)."""
    from vllm.entrypoints.generate.base.protocol import validate_request_mm_kwargs
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.exceptions import VLLMValidationError
    from vllm.platforms import current_platform

    monkeypatch.setattr(type(current_platform), "device_type", "cpu", raising=False)
    body = {
        "model": "deepseek-ocr", "temperature": 0.0, "max_tokens": 16,
        "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            {"type": "text", "text": "Free OCR."}]}],
        "mm_processor_kwargs": {MODE_KWARG: "tiny"},
        "vllm_xargs": {"ngram_size": 30, "window_size": 90, "whitelist_token_ids": [1]},
    }
    request = ChatCompletionRequest.model_validate(body)
    command = plan_server(None, "deepseek-ocr", str(checkpoint), 10.0, platform=platform).command
    for args, accepted in ((parsed_server_args(command), True), (parsed_server_args(
            command.replace(" --trust-request-mm-kwargs", "")), False)):
        check = {"mm_processor_kwargs": request.mm_processor_kwargs,
                 "media_io_kwargs": request.media_io_kwargs,
                 "trust_request_mm_kwargs": args.trust_request_mm_kwargs}
        if accepted:
            validate_request_mm_kwargs(**check)
        else:
            with pytest.raises(VLLMValidationError, match="Per-request mm_processor_kwargs"):
                validate_request_mm_kwargs(**check)


def test_ngram_rule_equals_vllms_deepseek_rule() -> None:
    from vllm.model_executor.models.deepseek_ocr import NoRepeatNGramLogitsProcessor as Oracle

    rng = random.Random(7)
    for _ in range(400):
        size, window = rng.randint(1, 6), rng.randint(1, 40)
        whitelist = {rng.randint(0, 5)} if rng.random() < 0.5 else set()
        output = [rng.randint(0, 5) for _ in range(rng.randint(0, 60))]
        rule = parse_rule({"ngram_size": size, "window_size": window,
                           "whitelist_token_ids": sorted(whitelist)})
        logits = Oracle(size, window, whitelist)(output, torch.zeros(6))
        assert rule.banned(output) == {i for i in range(6) if logits[i] == float("-inf")}


def test_v2_processor_bans_per_row_from_the_request_history() -> None:
    """apply() on a batch: each row's history comes from the runner's token buffer after the
    prompt, plus the token fed this step; a request without ngram_size is left alone."""
    from vllm.model_executor.models.deepseek_ocr import NoRepeatNGramLogitsProcessor as Oracle

    rng = random.Random(11)
    prompts = [5, 3]
    histories = [[rng.randint(0, 4) for _ in range(30)] for _ in prompts]
    buffer = torch.zeros((2, 64), dtype=torch.int64)
    for slot, (prompt, history) in enumerate(zip(prompts, histories, strict=True)):
        buffer[slot, :prompt] = 9
        buffer[slot, prompt : prompt + len(history)] = torch.tensor(history)
    states = SimpleNamespace(prompt_len=SimpleNamespace(np=prompts),
                             all_token_ids=SimpleNamespace(gpu=buffer))
    processor = NoRepeatNGramLogitsProcessor(None, states)
    wanted = SimpleNamespace(extra_args={"ngram_size": 3, "window_size": 20})
    assert processor.add_request(0, wanted)
    assert not processor.add_request(1, SimpleNamespace(extra_args=None))
    last = [prompts[s] + len(histories[s]) - 1 for s in (0, 1)]
    ctx = SimpleNamespace(
        expanded_idx_mapping=torch.tensor([1, 0]),
        pos=torch.tensor([last[1], last[0]]),
        input_ids=torch.tensor([histories[1][-1], histories[0][-1]]),
    )
    logits = processor.apply(torch.zeros((2, 10)), ctx)
    expected = Oracle(3, 20, set())(histories[0], torch.zeros(10))
    assert torch.equal(logits[1], expected) and torch.isinf(expected).any()
    assert torch.equal(logits[0], torch.zeros(10))


def test_v1_processor_loads_under_the_v1_runner_and_bans_as_the_rule() -> None:
    """The CPU server's form of the rule: vLLM's V1 loader takes it (and refuses the V2 one),
    and ``apply`` on a batch bans, per row, what DeepSeek's in-tree rule bans for that row's
    running output; a request without ``ngram_size`` is left alone."""
    from vllm.model_executor.models.deepseek_ocr import NoRepeatNGramLogitsProcessor as Oracle
    from vllm.v1.sample.logits_processor import _load_logitsprocs_by_fqcns
    from vllm.v1.sample.logits_processor.interface import BatchUpdate

    from evalsuite.vllm_plugin import NGRAM_PROCESSOR_V1
    from evalsuite.vllm_plugin.ngram_v1 import NoRepeatNGramAdapterProcessor

    assert _load_logitsprocs_by_fqcns([NGRAM_PROCESSOR_V1]) == [NoRepeatNGramAdapterProcessor]
    with pytest.raises(ValueError, match="must be a subclass of LogitsProcessor"):
        _load_logitsprocs_by_fqcns([NGRAM_PROCESSOR])
    rng = random.Random(5)  # row 0 ends in a 2-gram seen before: its third token is banned
    outputs = [[rng.randint(0, 4) for _ in range(9)] + [1, 2, 3, 0, 1, 2], [1, 2, 3, 1, 2]]
    processor = NoRepeatNGramAdapterProcessor(None, torch.device("cpu"), False)
    wanted = SimpleNamespace(extra_args={"ngram_size": 3, "window_size": 12})
    processor.update_state(BatchUpdate(
        batch_size=2, removed=[], moved=[],
        added=[(0, wanted, [9, 9], outputs[0]), (1, SimpleNamespace(extra_args=None), [9],
                                                 outputs[1])],
    ))
    logits = processor.apply(torch.zeros((2, 8)))
    expected = Oracle(3, 12, set())(outputs[0], torch.zeros(8))
    assert torch.equal(logits[0], expected) and torch.isinf(expected).any()
    assert torch.equal(logits[1], torch.zeros(8))
    outputs[0].append(int(torch.argmax(logits[0])))  # the next step sees the grown output
    assert torch.equal(processor.apply(torch.zeros((2, 8)))[0],
                       Oracle(3, 12, set())(outputs[0], torch.zeros(8)))
