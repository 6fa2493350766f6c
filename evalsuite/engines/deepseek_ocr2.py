"""``deepseek-ocr-2``: DeepSeek-OCR 2 through transformers' native implementation.

``DeepseekOcr2ForConditionalGeneration`` and ``DeepseekOcr2Processor`` from a checkpoint
(``deepseek-community/DeepSeek-OCR-2`` or a local folder), greedy decoding with DeepSeek's
evaluation anti-repetition (``no_repeat_ngram_size=35``), and true batched generation (left
padding). The vision tokens of a result are the image tokens the processor put in its input.

Modes (:data:`OCR2_MODES`). DeepSeek-OCR 2's README lists one mode, "Default:
(0-6)×768×768 + 1×1024×1024": a 1024-px global view (the page scaled to fit and padded to a
square) plus, when the page's longer side exceeds 768 px, 2-6 tiles of 768 px
(``MIN_CROPS = 2``, ``MAX_CROPS = 6`` in its vLLM config). Its encoder has learned queries for
those two view sizes only: 1024 px for the global view, 768 px for tiles. So:

- ``default``: that mode, ``256 + 144·tiles + 1`` image tokens (the last is the view separator);
- ``global``: its 1024-px global view alone, ``256 + 1`` tokens: what ``default`` sends for every
  page that fits in 768 px, and the token layout of DeepSeek's own ``crop_mode=False`` path.

DeepSeek-OCR's five modes (tiny ... gundam) have no counterpart here (no 512, 640 or 1280 px
views, no 768-px global view) and are refused, as is any other mode.

Environment: transformers >= 5.20.0 (:data:`NATIVE_TRANSFORMERS`, see :func:`native_problem`).
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evalsuite.engines.base import EngineBase, InferenceRequest, InferenceResult, register_engine
from evalsuite.engines.deepseek_inputs import load_page_image, with_image_placeholder
from evalsuite.engines.weights import (
    WeightsSource,
    checkpoint_identity,
    import_cause,
    pip_install,
    require_runnable,
)
from evalsuite.tokens import closest_grid

WEIGHTS = WeightsSource(
    "deepseek-ocr-2", "deepseek-community/DeepSeek-OCR-2", "EVALSUITE_DEEPSEEK_OCR2_PATH"
)
PATCH_SIZE = 16  # DeepseekOcr2Processor defaults
DOWNSAMPLE_RATIO = 4
# DeepseekOcr2ForConditionalGeneration came with transformers 5.10.1; from 5.20.0 on its
# processor accepts text-only requests and counts image tokens from per-call view sizes.
NATIVE_TRANSFORMERS = "5.20.0"
NATIVE_FIX = (
    f"run it from an environment with transformers >= {NATIVE_TRANSFORMERS}, such as this "
    f"checkout's .venv (`make setup`), or `pip install 'transformers>={NATIVE_TRANSFORMERS}'`"
)


@dataclass(frozen=True)
class Ocr2View:
    """Processor settings for one mode: global view edge, tile edge, and whether to tile."""

    size: int
    tile_size: int
    crop_to_patches: bool
    min_patches: int = 2
    max_patches: int = 6

    def processor_kwargs(self) -> dict[str, Any]:
        return {
            "size": {"height": self.size, "width": self.size},
            "tile_size": self.tile_size,
            "crop_to_patches": self.crop_to_patches,
            "min_patches": self.min_patches,
            "max_patches": self.max_patches,
        }


# Without tiling the processor scales the page to ``tile_size`` and counts tokens from ``size``,
# so ``global`` sets both to the global view's edge.
OCR2_VIEWS: dict[str, Ocr2View] = {
    "default": Ocr2View(1024, 768, True),
    "global": Ocr2View(1024, 1024, False),
}
OCR2_MODES: tuple[str, ...] = tuple(OCR2_VIEWS)


def ocr2_view(mode: str) -> Ocr2View:
    """The processor settings of ``mode``; any other mode raises ValueError listing them."""
    if not isinstance(mode, str):
        raise TypeError(f"mode must be str, got {type(mode).__name__}")
    try:
        return OCR2_VIEWS[mode]
    except KeyError:
        raise ValueError(
            f"DeepSeek-OCR-2 has no mode {mode!r}; choose one of: {', '.join(OCR2_MODES)}"
        ) from None


def ocr2_tile_candidates(min_patches: int, max_patches: int) -> list[tuple[int, int]]:
    """transformers' candidate grids: (cols, rows) in column-major order, stably sorted by size."""
    grids = [
        (cols, rows)
        for cols in range(1, max_patches + 1)
        for rows in range(1, max_patches + 1)
        if min_patches <= cols * rows <= max_patches
    ]
    return sorted(grids, key=lambda grid: grid[0] * grid[1])


def ocr2_tile_grid(width: int, height: int, mode: str) -> tuple[int, int] | None:
    """The ``(cols, rows)`` tiles of a ``width`` x ``height`` page in ``mode``; None if untiled.

    The view tiles when it crops to patches and ``max(width, height) > tile_size``; the grid is
    the closest-aspect candidate of :func:`ocr2_tile_candidates`.
    """
    view = ocr2_view(mode)
    for value, name in ((width, "width"), (height, "height")):
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} must be int, got {type(value).__name__}")
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")
    if not view.crop_to_patches or max(width, height) <= view.tile_size:
        return None
    candidates = ocr2_tile_candidates(view.min_patches, view.max_patches)
    return closest_grid(width, height, candidates, tile=view.tile_size)


def ocr2_image_tokens(width: int, height: int, mode: str) -> int:
    """Image tokens ``DeepseekOcr2Processor`` inserts for a ``width`` x ``height`` page.

    ``q(size)² + q(tile)²·tiles + 1`` with ``q(s) = ceil(s / 16 / 4)`` and ``tiles`` the cells of
    :func:`ocr2_tile_grid` (0 when untiled). The final token is the view separator.
    """
    view = ocr2_view(mode)
    grid = ocr2_tile_grid(width, height, mode)
    tiles = grid[0] * grid[1] if grid else 0
    return _queries(view.size) ** 2 + _queries(view.tile_size) ** 2 * tiles + 1


def native_problem() -> str | None:
    """Why this environment cannot run transformers' DeepSeek-OCR-2 classes (None when it can)."""
    import transformers
    from packaging.version import Version

    installed = transformers.__version__
    try:
        from transformers import (  # noqa: F401
            DeepseekOcr2ForConditionalGeneration,
            DeepseekOcr2Processor,
        )
    except ImportError as exc:
        cause = import_cause(exc)
        if cause.package == "transformers":
            return (
                f"DeepSeek-OCR-2's native classes need transformers >= {NATIVE_TRANSFORMERS} and "
                f"this environment has {installed}, which has no {cause.absent}: {NATIVE_FIX}"
            )
        if cause.missing:
            return (
                f"transformers' DeepSeek-OCR-2 classes import {', '.join(cause.missing)}, not "
                f"installed here: `{pip_install(cause.missing)}`"
            )
        return f"transformers' DeepSeek-OCR-2 classes fail to import: {type(exc).__name__}: {exc}"
    if Version(installed) < Version(NATIVE_TRANSFORMERS):
        return (
            f"DeepSeek-OCR-2's native classes need transformers >= {NATIVE_TRANSFORMERS} and "
            f"this environment has {installed}, whose DeepseekOcr2Processor takes neither "
            f"text-only requests nor per-call view sizes: {NATIVE_FIX}"
        )
    return None


@dataclass(frozen=True)
class Decoding:
    """Generation settings; all recorded with every result."""

    max_new_tokens: int = 8192
    no_repeat_ngram_size: int = 35

    def __post_init__(self) -> None:
        for name in ("max_new_tokens", "no_repeat_ngram_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be an int >= 0, got {value!r}")
        if self.max_new_tokens == 0:
            raise ValueError("max_new_tokens must be >= 1, got 0")


@register_engine("deepseek-ocr-2")
class DeepseekOcr2Engine(EngineBase):
    """DeepSeek-OCR 2, native transformers; ``infer_batch`` generates whole batches at once.

    Options: ``model_path`` (else ``EVALSUITE_DEEPSEEK_OCR2_PATH``, else the Hugging Face cache),
    ``device`` (default ``"cuda"``; ``"cpu"`` only when asked for explicitly, in float32),
    ``batch_size`` (most requests per ``generate`` call), ``max_new_tokens``,
    ``no_repeat_ngram_size``. Modes: :data:`OCR2_MODES`; a request in any other mode fails with
    a ValueError that lists them.
    """

    name = "deepseek-ocr-2"
    kind = "vlm"
    supported_modes: tuple[str, ...] = OCR2_MODES
    model_family = "deepseek-ocr-2"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        device: str = "cuda",
        batch_size: int = 8,
        max_new_tokens: int = 8192,
        no_repeat_ngram_size: int = 35,
    ) -> None:
        decoding = Decoding(max_new_tokens, no_repeat_ngram_size)
        checkpoint = require_runnable(
            WEIGHTS, model_path, device, environment_problem=native_problem()
        )
        model, processor = _load_native(checkpoint, device)
        self._bind(model, processor, device, batch_size, decoding, str(checkpoint))

    def _bind(
        self,
        model: Any,
        processor: Any,
        device: str,
        batch_size: int,
        decoding: Decoding,
        checkpoint: str,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be an int >= 1, got {batch_size!r}")
        processor.tokenizer.padding_side = "left"  # generation appends on the right
        self._model = model
        self._processor = processor
        self._device = device
        self._batch_size = batch_size
        self._decoding = decoding
        self._fixed_settings = {
            "decoding": "greedy",
            "do_sample": False,
            "max_new_tokens": decoding.max_new_tokens,
            "no_repeat_ngram_size": decoding.no_repeat_ngram_size,
            "dtype": str(model.dtype).removeprefix("torch."),
            "device": device,
            "checkpoint": checkpoint,
            "padding_side": "left",
            "generation_config": model.generation_config.to_diff_dict(),
        }

    def identity(self) -> dict[str, Any]:
        """The checkpoint behind this engine, for run records (:func:`checkpoint_identity`)."""
        return checkpoint_identity(self._fixed_settings["checkpoint"])

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        """Results in request order; requests sharing mode and image presence share a batch.

        A batch that fails is retried one request at a time, so only the failing sample
        carries the error. ``latency_s`` is the batch's wall time divided by its size.
        """
        results: dict[int, InferenceResult] = {}
        groups: dict[tuple[str, bool], list[int]] = {}
        for index, request in enumerate(requests):
            groups.setdefault((request.mode, request.image is not None), []).append(index)
        for members in groups.values():
            for start in range(0, len(members), self._batch_size):
                chunk = members[start : start + self._batch_size]
                try:
                    outputs = self._generate([requests[i] for i in chunk])
                except Exception:  # isolate the failing sample(s)
                    outputs = [self.infer(requests[i]) for i in chunk]
                results.update(zip(chunk, outputs, strict=True))
        return [results[index] for index in range(len(requests))]

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        return self._generate([request])[0]

    def _generate(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        """One ``generate`` call for requests of one mode, all with or all without an image."""
        import torch

        started = time.perf_counter()
        mode = requests[0].mode
        view = ocr2_view(mode)
        with_images = requests[0].image is not None
        images = [load_page_image(r.image) for r in requests] if with_images else None
        prompts = [with_image_placeholder(r.prompt) if with_images else r.prompt for r in requests]
        inputs = self._processor(
            images=images,
            text=prompts,
            padding=True,
            return_tensors="pt",
            **(view.processor_kwargs() if with_images else {}),
        ).to(self._device, dtype=self._model.dtype)
        image_token_id = self._processor.image_token_id
        image_tokens = (inputs["input_ids"] == image_token_id).sum(dim=1).tolist()
        eos_id = self._processor.tokenizer.eos_token_id
        with torch.inference_mode():
            output = self._model.generate(
                **inputs,
                do_sample=False,
                max_new_tokens=self._decoding.max_new_tokens,
                no_repeat_ngram_size=self._decoding.no_repeat_ngram_size,
                eos_token_id=eos_id,
                pad_token_id=self._processor.tokenizer.pad_token_id,
            )
        generated = output[:, inputs["input_ids"].shape[1] :].tolist()
        latency = (time.perf_counter() - started) / len(requests)
        settings = {
            **self._fixed_settings,
            **({"processor": view.processor_kwargs()} if with_images else {}),
            "batch_size": len(requests),
        }
        results = []
        for ids, count in zip(generated, image_tokens, strict=True):
            kept = ids[: ids.index(eos_id)] if eos_id in ids else ids
            results.append(
                InferenceResult(
                    text=self._processor.tokenizer.decode(kept, skip_special_tokens=False).strip(),
                    vision_tokens=int(count) if with_images else None,
                    output_tokens=len(kept),
                    latency_s=latency,
                    settings=dict(settings),
                )
            )
        return results


def _load_native(checkpoint: Any, device: str) -> tuple[Any, Any]:
    """Model (eval; bf16 on CUDA, float32 on CPU) and processor of a native checkpoint."""
    import torch
    from transformers import AutoProcessor, DeepseekOcr2ForConditionalGeneration

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    processor = AutoProcessor.from_pretrained(checkpoint)
    model = DeepseekOcr2ForConditionalGeneration.from_pretrained(checkpoint, dtype=dtype)
    return model.eval().to(device), processor


def _queries(size: int) -> int:
    return math.ceil(size / PATCH_SIZE / DOWNSAMPLE_RATIO)
