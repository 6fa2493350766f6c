"""How a run plans its model server (evalsuite.plugin.server.plan_server): the recipe command,
the placeholders, and which checkpoint each served model loads."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from evalsuite.plugin.server import (
    ServerStartError,
    plan_server,
    vllm_environment,
    vllm_executable,
)
from evalsuite.vllm_plugin import ARCHITECTURES, NGRAM_PROCESSOR


def test_default_command_is_the_recipe_with_evalsuites_plugin(monkeypatch):
    monkeypatch.delenv("EVALSUITE_DEEPSEEK_OCR_PATH", raising=False)
    plan = plan_server(None, "deepseek-ocr", None, 60.0, vllm="/srv/.venv-vllm/bin/vllm")
    words = shlex.split(plan.command)
    assert words[:3] == ["/srv/.venv-vllm/bin/vllm", "serve", "deepseek-ai/DeepSeek-OCR"]
    assert words[words.index("--served-model-name") + 1] == "deepseek-ocr"
    assert words[words.index("--logits-processors") + 1] == NGRAM_PROCESSOR
    overrides = json.loads(words[words.index("--hf-overrides") + 1])
    assert overrides == {"architectures": [ARCHITECTURES["deepseek-ocr"]]}
    assert "--no-enable-prefix-caching" in words
    assert words[words.index("--mm-processor-cache-gb") + 1] == "0"
    assert "{port}" in plan.command and plan.timeout_s == 60.0
    two = shlex.split(plan_server(None, "deepseek-ocr-2", None, 1.0).command)
    assert json.loads(two[two.index("--hf-overrides") + 1])["architectures"] == [
        "EvalsuiteDeepseekOCR2ForCausalLM"
    ]
    assert two[0] == "vllm"


def test_the_pinned_environment_is_preferred(tmp_path):
    assert vllm_executable(tmp_path) == "vllm"
    pinned = tmp_path / ".venv-vllm" / "bin" / "vllm"
    pinned.parent.mkdir(parents=True)
    pinned.write_text("#!/bin/sh\n")
    assert vllm_executable(tmp_path) == str(pinned)


def test_the_vllm_environment_is_read_without_importing_vllm(tmp_path):
    """A fake environment: its ``python`` answers the probe as the real one would."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "vllm").write_text("#!/bin/sh\n")
    (folder / "vllm").chmod(0o755)
    python = folder / "python"
    python.write_text('#!/bin/sh\necho \'["0.33.0", false]\'\n')
    python.chmod(0o755)
    environment = vllm_environment(str(folder / "vllm"))
    assert (environment.version, environment.plugin) == ("0.33.0", False)
    assert "no evalsuite plugin" in environment.describe()
    with pytest.raises(ServerStartError, match="make vllm-env"):
        vllm_environment(str(tmp_path / "nowhere" / "vllm"))


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
