"""Checkpoint folders without weights for DeepSeek's own checkpoint format (what vLLM serves):
``config.json`` and the real tokenizer. vLLM starts such a folder with random weights
(``--load-format dummy``), which is how CI and a user's smoke run exercise the full serving
path with no download.

The vision encoders (SAM ViT-B, CLIP-L; Qwen2 for DeepSeek-OCR-2) are hard-coded at full size
in vLLM's model classes; only the language model follows the config, so a ``tiny`` folder keeps
the encoders and makes the language model small.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

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
"""deepseek-ai/DeepSeek-OCR's config.json, language part (its published values; DeepSeek-OCR-2
uses the same language model)."""

TINY_LANGUAGE: dict[str, Any] = {
    "num_hidden_layers": 2, "first_k_dense_replace": 2, "hidden_size": 256,
    "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 4,
    "torch_dtype": "float32",
}
"""What a ``tiny`` folder changes in :data:`LANGUAGE_CONFIG`: two dense layers of width 256."""

FAMILIES: dict[str, tuple[str, int]] = {
    "deepseek-ocr": ("DeepseekOCRForCausalLM", 2048),
    "deepseek-ocr-2": ("DeepseekOCR2ForCausalLM", 896),
}
"""Family -> the checkpoint's architecture and the projector's input width (SAM + CLIP
features, 2048; DeepSeek-OCR-2's Qwen2 encoder, 896)."""

def checkpoint_config(family: str, *, tiny: bool = False) -> dict[str, Any]:
    """The ``config.json`` of ``family`` (without ``auto_map``: vLLM's own classes serve it);
    ``tiny``: the language model of :data:`TINY_LANGUAGE`."""
    try:
        architecture, projector_input = FAMILIES[family]
    except KeyError:
        raise ValueError(
            f"unknown model family {family!r}; choose one of: {', '.join(FAMILIES)}"
        ) from None
    language = {**LANGUAGE_CONFIG, **(TINY_LANGUAGE if tiny else {})}
    return {
        "architectures": [architecture],
        "candidate_resolutions": [[1024, 1024]],
        "global_view_pos": "head",
        "language_config": language,
        "model_type": "deepseek_vl_v2",
        "projector_config": {"input_dim": projector_input, "model_type": "mlp_projector",
                             "n_embed": language["hidden_size"], "projector_type": "linear"},
        "tile_tag": "2D",
        "vision_config": {"image_size": 1024, "mlp_ratio": 3.7362, "model_name": "deeplip_b_l",
                          "model_type": "vision"},
        **{k: v for k, v in language.items() if k != "architectures"},
    }


def write_checkpoint(folder: str | os.PathLike[str], family: str, *, tiny: bool = False) -> Path:
    """Write ``config.json`` (:func:`checkpoint_config`) and DeepSeek-OCR's tokenizer into
    ``folder`` (made if missing), and no weights; returns the folder."""
    config = checkpoint_config(family, tiny=tiny)
    folder = write_deepseek_ocr_tokenizer(folder)
    (folder / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    return folder
