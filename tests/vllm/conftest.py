"""Fixtures of the tests that run inside the pinned vLLM (``make test-vllm``): a DeepSeek-OCR
checkpoint folder without weights (its published ``config.json`` fields and the real tokenizer)
and vLLM's own chat renderer for it, on the CPU."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from evalsuite.tokenizer import write_deepseek_ocr_tokenizer

LANGUAGE_CONFIG: dict[str, Any] = {
    "architectures": ["DeepseekV2ForCausalLM"], "bos_token_id": 0, "eos_token_id": 1,
    "first_k_dense_replace": 1, "hidden_size": 1280, "intermediate_size": 6848,
    "kv_lora_rank": None, "lm_head": True, "max_position_embeddings": 8192,
    "moe_intermediate_size": 896, "n_group": 1, "n_routed_experts": 64, "n_shared_experts": 2,
    "num_attention_heads": 10, "num_experts_per_tok": 6, "num_hidden_layers": 12,
    "num_key_value_heads": 10, "q_lora_rank": None, "qk_nope_head_dim": 0,
    "qk_rope_head_dim": 0, "rm_head": False, "topk_group": 1, "topk_method": "greedy",
    "torch_dtype": "bfloat16", "use_mla": False, "v_head_dim": 0, "vocab_size": 129280,
}
"""deepseek-ai/DeepSeek-OCR's config.json, language part (its published values)."""


def checkpoint_config(architecture: str) -> dict[str, Any]:
    """A DeepSeek-OCR config.json (the published fields, without ``auto_map``)."""
    return {
        "architectures": [architecture],
        "candidate_resolutions": [[1024, 1024]],
        "global_view_pos": "head",
        "language_config": LANGUAGE_CONFIG,
        "model_type": "deepseek_vl_v2",
        "projector_config": {"input_dim": 2048, "model_type": "mlp_projector", "n_embed": 1280,
                             "projector_type": "linear"},
        "tile_tag": "2D",
        "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l",
                          "model_type": "vision"},
        **{k: v for k, v in LANGUAGE_CONFIG.items() if k != "architectures"},
    }


@pytest.fixture(scope="session")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint folder with config.json and DeepSeek-OCR's tokenizer, and no weights."""
    folder = write_deepseek_ocr_tokenizer(tmp_path_factory.mktemp("deepseek-ocr"))
    (folder / "config.json").write_text(json.dumps(checkpoint_config("DeepseekOCRForCausalLM")))
    return folder


@pytest.fixture(scope="session")
def make_renderer(checkpoint: Path) -> Callable[[str | None], Any]:
    """vLLM's chat renderer for the checkpoint, the plugins loaded as vLLM loads them;
    ``architecture`` None: the checkpoint's own (the stock class)."""
    from vllm.config import DeviceConfig, ModelConfig, VllmConfig
    from vllm.plugins import load_general_plugins
    from vllm.renderers.registry import renderer_from_config

    load_general_plugins()
    made: dict[str | None, Any] = {}

    def make(architecture: str | None) -> Any:
        if architecture not in made:
            overrides = {"hf_overrides": {"architectures": [architecture]}} if architecture else {}
            model = ModelConfig(
                model=str(checkpoint), tokenizer=str(checkpoint), dtype="float32",
                max_model_len=8192, **overrides,
            )
            made[architecture] = renderer_from_config(
                VllmConfig(model_config=model, device_config=DeviceConfig(device="cpu"))
            )
        return made[architecture]

    return make
