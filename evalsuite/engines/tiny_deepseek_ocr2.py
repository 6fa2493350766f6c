"""``tiny-deepseek-ocr-2``: the ``deepseek-ocr-2`` engine on a tiny random model, for CI.

It runs exactly :class:`~evalsuite.engines.deepseek_ocr2.DeepseekOcr2Engine`'s code: the real
``DeepseekOcr2Processor`` (resizing, tiling, image-token insertion), ``generate`` with batching,
and decoding. Only the weights are fake: a ~140k-parameter ``DeepseekOcr2ForConditionalGeneration``
initialised from a fixed seed, with a character-level tokenizer built with ``tokenizers``, all in
process (no files, no network). Its text is meaningless but deterministic: the same requests give
the same text in every run and process on a machine. Vision-token counts are the real
processor's, mode for mode (see :mod:`evalsuite.engines.deepseek_ocr2`). Under a second per
1024-px page on one CPU core with the default ``max_new_tokens=16``.
"""

from __future__ import annotations

import functools
import string
from typing import Any

from evalsuite.engines.base import register_engine
from evalsuite.engines.deepseek_ocr2 import Decoding, DeepseekOcr2Engine
from evalsuite.engines.weights import cuda_problem
from evalsuite.errors import EngineUnavailableError

BOS, EOS, PAD, UNK = "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>", "<unk>"
# DeepSeek-OCR's special tokens: placeholder and grounding markup.
MARKUP_TOKENS = ("<image>", "<|grounding|>", "<|ref|>", "<|/ref|>", "<|det|>", "<|/det|>")
SPECIAL_TOKENS = (BOS, EOS, PAD, UNK, *MARKUP_TOKENS)
# One token per printable ASCII character (newline included, other whitespace excluded).
ALPHABET = tuple(sorted(set(string.printable) - set("\t\r\x0b\x0c")))
# Scales the vision-to-text projection so that the page, not only the prompt, steers the text.
IMAGE_FEATURE_GAIN = 30.0
INIT_STD = 0.5  # wide logits: large top-1 margins keep greedy decoding stable across machines


def build_tiny_tokenizer() -> Any:
    """A character-level fast tokenizer: special tokens, then :data:`ALPHABET`; BOS prepended."""
    from tokenizers import Tokenizer, decoders, models, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {token: index for index, token in enumerate(SPECIAL_TOKENS + ALPHABET)}
    # BPE without merges splits text into characters; unknown characters become <unk>.
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    backend.add_special_tokens(list(SPECIAL_TOKENS))
    backend.decoder = decoders.Fuse()
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, vocab[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        model_input_names=["input_ids", "attention_mask"],
        padding_side="left",
    )


def build_tiny_model(tokenizer: Any, seed: int) -> Any:
    """A random DeepSeek-OCR-2 with the real layer types and view sizes, in float32 on CPU.

    SAM keeps 16-px patches and a 1024-px position grid, so 768-px and 1024-px views give the
    12x12 and 16x16 query grids the processor's token arithmetic assumes.
    """
    import torch
    from transformers import DeepseekOcr2Config, DeepseekOcr2ForConditionalGeneration

    ids = tokenizer.convert_tokens_to_ids
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
            "bos_token_id": ids(BOS),
            "eos_token_id": ids(EOS),
            "pad_token_id": ids(PAD),
            "initializer_range": INIT_STD,
        },
        image_token_id=ids("<image>"),
        initializer_range=INIT_STD,
    )
    with torch.random.fork_rng(devices=[]):  # leave the caller's RNG state alone
        torch.manual_seed(seed)
        model = DeepseekOcr2ForConditionalGeneration(config)
    with torch.no_grad():
        model.model.multi_modal_projector.weight.mul_(IMAGE_FEATURE_GAIN)
    # Tokens a real checkpoint never emits mid-text; banning them keeps the output plain text.
    model.generation_config.suppress_tokens = [ids(t) for t in (BOS, PAD, UNK, "<image>")]
    return model.eval()


@functools.lru_cache(maxsize=4)
def tiny_model_and_processor(seed: int = 0, device: str = "cpu") -> tuple[Any, Any]:
    """The tiny model (on ``device``) and its real ``DeepseekOcr2Processor``, built once each."""
    from transformers import DeepseekOcr2Processor
    from transformers.models.deepseek_ocr2.image_processing_pil_deepseek_ocr2 import (
        DeepseekOcr2ImageProcessorPil,
    )

    tokenizer = build_tiny_tokenizer()
    processor = DeepseekOcr2Processor(
        image_processor=DeepseekOcr2ImageProcessorPil(), tokenizer=tokenizer
    )
    return build_tiny_model(tokenizer, seed).to(device), processor


@register_engine("tiny-deepseek-ocr-2")
class TinyDeepseekOcr2Engine(DeepseekOcr2Engine):
    """The deepseek-ocr-2 engine on :func:`tiny_model_and_processor`; runs anywhere.

    Options: ``seed`` (which random model), ``device`` (default ``"cpu"``), ``batch_size``,
    ``max_new_tokens`` (default 16, for speed), ``no_repeat_ngram_size``. ``model_path`` is
    accepted only as None: this engine has no weights to point at.
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
        problem = cuda_problem(device)
        if problem:
            raise EngineUnavailableError(f"engine 'tiny-deepseek-ocr-2' cannot run here: {problem}")
        decoding = Decoding(max_new_tokens, no_repeat_ngram_size)
        model, processor = tiny_model_and_processor(seed, device)
        self._bind(model, processor, device, batch_size, decoding, f"tiny-random(seed={seed})")
