"""``tiny-deepseek-ocr-2``: the ``deepseek-ocr-2`` engine on a tiny random model, for CI.

It runs exactly :class:`~evalsuite.engines.deepseek_ocr2.DeepseekOcr2Engine`'s code: the real
``DeepseekOcr2Processor`` (resizing, tiling, image-token insertion), ``generate`` with batching,
and decoding. Only the weights are fake: a ``DeepseekOcr2ForConditionalGeneration`` with tiny
layers initialised from a fixed seed, all in process (no files, no network). Its tokenizer is
DeepSeek-OCR's real one (:func:`~evalsuite.tokenizer.deepseek_ocr_fast_tokenizer`), so prompts
are tokenised as the real model's are (``<image>`` is id 128815, BOS 0 is prepended) and
output-token counts are real counts of the emitted text; the 128,827-token vocabulary makes the
embedding and output layers 98 % of its 8.4M parameters. Its text is meaningless but
deterministic: the same requests give the same text in every run and process on a machine.
Vision-token counts are the real processor's, mode for mode (see
:mod:`evalsuite.engines.deepseek_ocr2`). Under a second per 1024-px page on one CPU core with
the default ``max_new_tokens=16``.
"""

from __future__ import annotations

import functools
from typing import Any

from evalsuite.engines.base import register_engine
from evalsuite.engines.deepseek_ocr2 import Decoding, DeepseekOcr2Engine, native_problem
from evalsuite.engines.weights import cuda_problem
from evalsuite.errors import EngineUnavailableError
from evalsuite.tokenizer import deepseek_ocr_fast_tokenizer

# Added tokens a real checkpoint emits in its output: end of text, grounding and table markup.
# The tiny model never emits any other added token (BOS, PAD, <image>, <|grounding|>, chat, tool
# and placeholder tokens), so its output is text a real model could write (see build_tiny_model).
EMITTED_ADDED_TOKENS = frozenset(
    {"<｜end▁of▁sentence｜>", "<|ref|>", "<|/ref|>", "<|det|>", "<|/det|>", "<td>", "</td>"}
    | {"<tr>", "</tr>"}
)
# Scales the vision-to-text projection so that the page, not only the prompt, steers the text.
IMAGE_FEATURE_GAIN = 30.0
INIT_STD = 0.5  # wide logits: large top-1 margins keep greedy decoding stable across machines


def build_tiny_model(tokenizer: Any, seed: int) -> Any:
    """A random DeepSeek-OCR-2 with the real layer types and view sizes, in float32 on CPU.

    SAM keeps 16-px patches and a 1024-px position grid, so 768-px and 1024-px views give the
    12x12 and 16x16 query grids the processor's token arithmetic assumes.
    """
    import torch
    from transformers import DeepseekOcr2Config, DeepseekOcr2ForConditionalGeneration

    config = DeepseekOcr2Config(
        vision_config={
            "sam_config": {
                "hidden_size": 16,
                "output_channels": 16,
                "num_hidden_layers": 1,
                "num_attention_heads": 1,
                "image_size": 1024,
                "patch_size": 16,
                "window_size": 14,
                "global_attn_indexes": [],
                "downsample_channels": [16, 32],
                "mlp_dim": 32,
                "initializer_range": INIT_STD,
            },
            "encoder_config": {
                "hidden_size": 32,
                "intermediate_size": 64,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "num_key_value_heads": 2,
                "max_position_embeddings": 2048,
                "initializer_range": INIT_STD,
            },
        },
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": 32,
            "intermediate_size": 64,
            "num_hidden_layers": 2,
            "num_attention_heads": 2,
            "num_key_value_heads": 2,
            "mlp_layer_types": ["dense", "dense"],
            "max_position_embeddings": 4096,
            "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "pad_token_id": tokenizer.pad_token_id,
            "initializer_range": INIT_STD,
        },
        image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
        initializer_range=INIT_STD,
    )
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG state alone
        torch.manual_seed(seed)
        model = DeepseekOcr2ForConditionalGeneration(config)
    with torch.no_grad():
        model.model.multi_modal_projector.weight.mul_(IMAGE_FEATURE_GAIN)
        # Suppression in the weights rather than in generation_config.suppress_tokens (821 ids:
        # ~7 kB in every result's settings and a vocabulary-wide isin() per step): a zero output
        # row gives logit 0, while ~128k random rows in 32 dimensions leave some logit > 0 for
        # every hidden state, so greedy decoding never picks these tokens. Saved checkpoints
        # keep it.
        model.lm_head.weight[suppressed_token_ids(tokenizer)] = 0.0
    return model.eval()


def suppressed_token_ids(tokenizer: Any) -> list[int]:
    """Ids of the added tokens outside :data:`EMITTED_ADDED_TOKENS`, ascending (821 of 830)."""
    added = tokenizer.get_added_vocab()  # token -> id
    return sorted(i for token, i in added.items() if token not in EMITTED_ADDED_TOKENS)


@functools.lru_cache(maxsize=4)
def tiny_model_and_processor(seed: int = 0, device: str = "cpu") -> tuple[Any, Any]:
    """The tiny model (on ``device``) and its real ``DeepseekOcr2Processor``, built once each."""
    from transformers import DeepseekOcr2Processor
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import (
        DeepseekOcr2ImageProcessorPil,
    )

    tokenizer = deepseek_ocr_fast_tokenizer()
    processor = DeepseekOcr2Processor(
        image_processor=DeepseekOcr2ImageProcessorPil(), tokenizer=tokenizer
    )
    return build_tiny_model(tokenizer, seed).to(device), processor


@register_engine("tiny-deepseek-ocr-2")
class TinyDeepseekOcr2Engine(DeepseekOcr2Engine):
    """The deepseek-ocr-2 engine on :func:`tiny_model_and_processor`; runs anywhere.

    Options: ``seed`` (which random model), ``device`` (default ``"cpu"``), ``batch_size``,
    ``max_new_tokens`` (default 16, for speed), ``no_repeat_ngram_size``. ``model_path`` is
    accepted only as None: this engine has no weights to point at. Like deepseek-ocr-2 it needs
    transformers >= 5.20.0; an older one is refused with :func:`native_problem`'s explanation.
    """

    name = "tiny-deepseek-ocr-2"

    def __init__(
        self,
        model_path: None = None,
        *,
        seed: int = 0,
        device: str = "cpu",
        batch_size: int = 8,
        max_new_tokens: int = 16,
        no_repeat_ngram_size: int = 35,
    ) -> None:
        if model_path is not None:
            raise ValueError(
                "tiny-deepseek-ocr-2 builds its random model in process and takes no model_path; "
                "use deepseek-ocr-2 for a real checkpoint"
            )
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be int, got {type(seed).__name__}")
        problem = native_problem() or cuda_problem(device)
        if problem:
            raise EngineUnavailableError(f"engine 'tiny-deepseek-ocr-2' cannot run here: {problem}")
        decoding = Decoding(max_new_tokens, no_repeat_ngram_size)
        model, processor = tiny_model_and_processor(seed, device)
        self._bind(model, processor, device, batch_size, decoding, f"tiny-random(seed={seed})")
