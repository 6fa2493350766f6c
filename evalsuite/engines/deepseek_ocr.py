"""``deepseek-ocr``: DeepSeek-OCR through its Hugging Face remote code, on a CUDA GPU.

The engine calls the checkpoint's own ``model.infer(tokenizer, prompt=..., image_file=...,
base_size=..., image_size=..., crop_mode=..., eval_mode=True)``, so preprocessing, prompt format
and decoding are exactly DeepSeek's: greedy (``temperature=0.0``), ``max_new_tokens=8192``,
``no_repeat_ngram_size=35``, bf16. Modes map to ``base_size``/``image_size``/``crop_mode`` as in
:data:`evalsuite.tokens.MODES`. The remote code targets transformers 4.46; see
:func:`_load_remote_code` for what happens on other versions.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult, register_engine
from evalsuite.engines.deepseek_inputs import load_page_image, with_image_placeholder
from evalsuite.engines.weights import WeightsSource, require_runnable
from evalsuite.errors import EngineUnavailableError
from evalsuite.tokens import mode_settings, text_token_count, vision_tokens

WEIGHTS = WeightsSource("deepseek-ocr", "deepseek-ai/DeepSeek-OCR", "EVALSUITE_DEEPSEEK_OCR_PATH")
# infer() tiles with dynamic_preprocess's default max_num=9 (the vLLM pipeline uses 6).
INFER_MAX_CROPS = 9
# What infer(eval_mode=True) passes to generate(); it hard-codes these, so they are recorded.
INFER_DECODING: dict[str, Any] = {
    "decoding": "greedy",
    "temperature": 0.0,
    "max_new_tokens": 8192,
    "no_repeat_ngram_size": 35,
    "use_cache": True,
    "eval_mode": True,
    "dtype": "bfloat16",
}


@register_engine("deepseek-ocr")
class DeepseekOcrEngine(EngineBase):
    """DeepSeek-OCR via ``model.infer``; needs the weights and a CUDA GPU.

    Options: ``model_path`` (else ``EVALSUITE_DEEPSEEK_OCR_PATH``, else the Hugging Face cache),
    ``device`` (``"cuda"`` or ``"cuda:N"``), ``attn_implementation`` (e.g.
    ``"flash_attention_2"``, as DeepSeek's own example uses; default: transformers' choice).
    """

    name = "deepseek-ocr"
    kind = "vlm"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        device: str = "cuda",
        attn_implementation: str | None = None,
    ) -> None:
        if not device.startswith("cuda"):
            raise EngineUnavailableError(
                f"engine 'deepseek-ocr' runs on CUDA only (its infer() calls .cuda()), "
                f"got device={device!r}"
            )
        checkpoint = require_runnable(WEIGHTS, model_path, device)
        model, tokenizer = _load_remote_code(checkpoint, device, attn_implementation)
        self._bind(model, tokenizer, device, str(checkpoint), attn_implementation)

    @classmethod
    def from_loaded(
        cls, model: Any, tokenizer: Any, *, device: str = "cuda", checkpoint: str = "(preloaded)"
    ) -> DeepseekOcrEngine:
        """Wrap a model and tokenizer loaded elsewhere; no weight lookup and no device checks."""
        engine = cls.__new__(cls)
        engine._bind(model, tokenizer, device, checkpoint, None)
        return engine

    def _bind(
        self, model: Any, tokenizer: Any, device: str, checkpoint: str, attn: str | None
    ) -> None:
        self._model = model
        self._tokenizer = tokenizer
        self._device = device
        self._fixed_settings = {
            **INFER_DECODING,
            "device": device,
            "checkpoint": checkpoint,
            "attn_implementation": attn,
            "max_crops": INFER_MAX_CROPS,
        }

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        mode = mode_settings(request.mode)
        if request.image is None:
            raise ValueError(
                "deepseek-ocr needs a page image (request.image is None): "
                "DeepSeek-OCR's infer() has no text-only path"
            )
        page = load_page_image(request.image)
        with tempfile.TemporaryDirectory(prefix="evalsuite-deepseek-ocr-") as workdir:
            if isinstance(request.image, (str, Path)):
                image_file = str(request.image)
            else:
                image_file = os.path.join(workdir, "page.png")
                page.save(image_file)
            # infer() prints shapes and progress; keep them out of the caller's stdout (--json).
            with _on_device(self._device), contextlib.redirect_stdout(io.StringIO()):
                text = self._model.infer(
                    self._tokenizer,
                    prompt=with_image_placeholder(request.prompt),
                    image_file=image_file,
                    output_path=workdir,
                    base_size=mode.base_size,
                    image_size=mode.image_size,
                    crop_mode=mode.crop_mode,
                    eval_mode=True,
                )
        if not isinstance(text, str):
            raise RuntimeError(f"DeepSeek-OCR's infer() returned {type(text).__name__}, not text")
        return InferenceResult(
            text=text,
            vision_tokens=vision_tokens(
                page.width, page.height, request.mode, max_crops=INFER_MAX_CROPS
            ),
            output_tokens=int(text_token_count(text, self._tokenizer)),
            settings={
                **self._fixed_settings,
                "base_size": mode.base_size,
                "image_size": mode.image_size,
                "crop_mode": mode.crop_mode,
            },
        )


def _load_remote_code(checkpoint: Path, device: str, attn: str | None) -> tuple[Any, Any]:
    """Model (eval, bf16, on ``device``) and tokenizer of the checkpoint's remote code.

    DeepSeek-OCR's remote code was written for transformers 4.46 and imports names that later
    versions removed (``LlamaFlashAttention2``, gone in 4.48); such an ImportError becomes an
    EngineUnavailableError that names the installed version and the fix.
    """
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    options: dict[str, Any] = {"trust_remote_code": True, "use_safetensors": True}
    if attn:
        options["_attn_implementation"] = attn
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=True)
        model = AutoModel.from_pretrained(checkpoint, **options)
    except ImportError as exc:
        raise EngineUnavailableError(
            f"engine 'deepseek-ocr' cannot load {str(checkpoint)!r}: {exc}. DeepSeek-OCR's remote "
            f"code targets transformers 4.46 and this environment has {transformers.__version__}; "
            "run it from a virtualenv with `pip install transformers==4.46.3 tokenizers==0.20.3`, "
            "or use the native engine deepseek-ocr-2"
        ) from exc
    return model.eval().to(device).to(torch.bfloat16), tokenizer


def _on_device(device: str) -> contextlib.AbstractContextManager[Any]:
    """Make ``cuda:N`` the current device, since infer() moves tensors with a bare ``.cuda()``."""
    import torch

    index = torch.device(device).index
    return torch.cuda.device(index) if index is not None else contextlib.nullcontext()
