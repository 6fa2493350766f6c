"""How a run plans its model server (evalsuite.plugin.server.plan_server): the recipe command,
the placeholders, and which checkpoint each served model loads."""

from __future__ import annotations

import shlex
import sys

import pytest

from evalsuite.plugin.server import VLLM_COMMAND, plan_server


def test_default_command_is_vllms_deepseek_ocr_recipe(monkeypatch):
    monkeypatch.delenv("EVALSUITE_DEEPSEEK_OCR_PATH", raising=False)
    plan = plan_server(None, "deepseek-ocr", None, 60.0)
    words = shlex.split(plan.command)
    assert words[:3] == ["vllm", "serve", "deepseek-ai/DeepSeek-OCR"]
    assert words[words.index("--served-model-name") + 1] == "deepseek-ocr"
    assert (
        words[words.index("--logits-processors") + 1]
        == "vllm.model_executor.models.deepseek_ocr:NGramPerReqLogitsProcessor"
    )
    assert "--no-enable-prefix-caching" in words
    assert words[words.index("--mm-processor-cache-gb") + 1] == "0"
    assert "{port}" in plan.command and plan.timeout_s == 60.0
    assert plan.command == VLLM_COMMAND.format(
        model="deepseek-ai/DeepSeek-OCR", name="deepseek-ocr", port="{port}"
    )


@pytest.mark.parametrize(
    ("served", "path", "env", "expected"),
    [
        ("deepseek-ocr", None, {}, "deepseek-ai/DeepSeek-OCR"),
        ("deepseek-ocr", None, {"EVALSUITE_DEEPSEEK_OCR_PATH": "/w/v1"}, "/w/v1"),
        ("deepseek-ocr", "/given", {"EVALSUITE_DEEPSEEK_OCR_PATH": "/w/v1"}, "/given"),
        # vLLM needs DeepSeek's own OCR-2 checkpoint, never the transformers conversion that
        # the in-process engine's variable names
        ("deepseek-ocr-2", None, {"EVALSUITE_DEEPSEEK_OCR2_PATH": "/w/hf"},
         "deepseek-ai/DeepSeek-OCR-2"),
        ("deepseek-ocr-2", "/given-v2", {}, "/given-v2"),
    ],
)
def test_each_served_model_loads_its_own_checkpoint(monkeypatch, served, path, env, expected):
    for name in ("EVALSUITE_DEEPSEEK_OCR_PATH", "EVALSUITE_DEEPSEEK_OCR2_PATH"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    plan = plan_server(None, served, path, 10.0)
    assert plan.model == expected
    assert shlex.split(plan.command)[2] == expected


def test_placeholders_of_a_custom_command():
    plan = plan_server("{python} -m evalsuite serve --engine {name} --port {port}",
                       "deepseek-ocr-2", None, 5.0)
    assert plan.command == (
        f"{shlex.quote(sys.executable)} -m evalsuite serve --engine deepseek-ocr-2 --port {{port}}"
    )


@pytest.mark.parametrize(
    ("command", "message"),
    [("serve --port 8000", "must contain {port}"), ("serve {port} {gpu}", "unknown placeholder")],
)
def test_bad_commands_say_what_is_wrong(command, message):
    with pytest.raises(ValueError, match=message):
        plan_server(command, "deepseek-ocr", None, 5.0)
