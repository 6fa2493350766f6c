"""Fixtures of the tests that run inside the pinned vLLM (``make test-vllm``): DeepSeek-OCR and
DeepSeek-OCR-2 checkpoint folders without weights (their published ``config.json`` fields and
the real tokenizer) and vLLM's own chat renderer for them, on the CPU."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalsuite.engines.deepseek_checkpoints import write_checkpoint
from evalsuite.vllm_plugin import ARCHITECTURES


def renderer_for(folder: Path, architecture: str | None, processor_cache_gb: float = 4) -> Any:
    """vLLM's chat renderer for checkpoint ``folder`` with the plugins loaded as vLLM loads
    them; ``architecture`` None: the checkpoint's own (the stock class); ``processor_cache_gb``
    0: no multimodal processor cache (as the server the suite starts)."""
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    from vllm.plugins import load_general_plugins
    from vllm.renderers.registry import renderer_from_config

    load_general_plugins()
    overrides = {"hf_overrides": {"architectures": [architecture]}} if architecture else {}
    model = ModelConfig(
        model=str(folder), tokenizer=str(folder), dtype="float32", max_model_len=8192,
        mm_processor_cache_gb=processor_cache_gb, **overrides,
    )
    return renderer_from_config(
        VllmConfig(model_config=model, device_config=DeviceConfig(device="cpu"))
    )


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A DeepSeek-OCR checkpoint folder with config.json and its tokenizer, and no weights."""
    return write_checkpoint(tmp_path_factory.mktemp("deepseek-ocr"), "deepseek-ocr")


@pytest.fixture(scope="session")
def make_renderer(checkpoint: Path) -> Callable[[str | None], Any]:
    """The renderer of :func:`checkpoint` for ``architecture`` (None: the stock class)."""
    made: dict[str | None, Any] = {}

    def make(architecture: str | None) -> Any:
        if architecture not in made:
            made[architecture] = renderer_for(checkpoint, architecture)
        return made[architecture]

    return make


@pytest.fixture(scope="session")
def make_family_renderer(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str, bool], Any]:
    """The renderer of the plugin's architecture for a model family, on a folder of it, with
    or without vLLM's multimodal processor cache."""
    made: dict[tuple[str, bool], Any] = {}

    def make(family: str, cache: bool = False) -> Any:
        if (family, cache) not in made:
            folder = write_checkpoint(tmp_path_factory.mktemp(family), family)
            made[family, cache] = renderer_for(folder, ARCHITECTURES[family], 4 if cache else 0)
        return made[family, cache]

    return make
