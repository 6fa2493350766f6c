"""``deepseek-ocr``: DeepSeek-OCR through its Hugging Face remote code, on a CUDA GPU.

The engine calls the checkpoint's own ``model.infer(tokenizer, prompt=..., image_file=...,
base_size=..., image_size=..., crop_mode=..., eval_mode=True)``, so preprocessing, prompt format
and decoding are exactly DeepSeek's: greedy (``temperature=0.0``), ``max_new_tokens=8192``,
``no_repeat_ngram_size=35``, bf16. Modes map to ``base_size``/``image_size``/``crop_mode`` as in
:data:`evalsuite.tokens.MODES`.

The remote code was written for transformers 4.46 (DeepSeek pins transformers 4.46.3 and
tokenizers 0.20.3): it imports ``LlamaFlashAttention2`` (gone from transformers 4.48) and
``is_torch_fx_available`` (gone from ``transformers.utils.import_utils`` in 5.0), and the packages
addict, easydict, einops and torchvision. ``deepseek-ocr-2`` needs transformers >= 5.20, so the
two never share an environment: ``make deepseek-ocr-env`` builds one for this engine, and
:func:`environment_problem` says what a given environment lacks.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import tempfile
from pathlib import Path
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
from evalsuite.errors import EngineUnavailableError
from evalsuite.tokens import MODES, mode_settings, text_token_count, vision_tokens

WEIGHTS = WeightsSource("deepseek-ocr", "deepseek-ai/DeepSeek-OCR", "EVALSUITE_DEEPSEEK_OCR_PATH")
# infer() tiles with dynamic_preprocess's default max_num=9; DeepSeek's vLLM pipeline uses 6
# (evalsuite.tokens.MAX_CROPS), so an engine serving the model through vLLM counts with 6.
INFER_MAX_CROPS = 9
# DeepSeek's requirements.txt, and what the remote code imports beyond transformers and torch.
REMOTE_CODE_TRANSFORMERS = "4.46.3"
REMOTE_CODE_TOKENIZERS = "0.20.3"
REMOTE_CODE_PACKAGES = ("addict", "easydict", "einops", "torchvision")
# Names the remote code imports from transformers that later versions removed.
REMOTE_CODE_TRANSFORMERS_NAMES = (
    ("transformers.models.llama.modeling_llama", "LlamaFlashAttention2"),  # removed in 4.48
    ("transformers.utils.import_utils", "is_torch_fx_available"),  # removed in 5.0
)
ENVIRONMENT_FIX = (
    "build its environment with `make deepseek-ocr-env` in the evalsuite checkout and run "
    "evalsuite from .venv-deepseek-ocr/bin/ (or install transformers=="
    f"{REMOTE_CODE_TRANSFORMERS} tokenizers=={REMOTE_CODE_TOKENIZERS} "
    f"{' '.join(REMOTE_CODE_PACKAGES)} into a virtualenv of its own)"
)
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
    """DeepSeek-OCR via ``model.infer``; needs the weights, a CUDA GPU and its own environment.

    Options: ``model_path`` (else ``EVALSUITE_DEEPSEEK_OCR_PATH``, else the Hugging Face cache),
    ``device`` (``"cuda"`` or ``"cuda:N"``), ``attn_implementation`` (e.g.
    ``"flash_attention_2"``, as DeepSeek's own example uses; default: transformers' choice).

    Side effect on the whole process: ``infer()`` begins with ``disable_torch_init()``, which
    replaces ``torch.nn.Linear.reset_parameters`` and ``torch.nn.LayerNorm.reset_parameters``
    with no-ops and never restores them, so every such layer built afterwards in the process
    skips PyTorch's default initialisation. Run this engine in a process of its own (e.g.
    ``evalsuite serve --engine deepseek-ocr``), not beside models that are built after it.
    """

    name = "deepseek-ocr"
    kind = "vlm"
    supported_modes: tuple[str, ...] = tuple(MODES)
    needs_image = True  # DeepSeek-OCR's infer() has no text-only path
    model_family = "deepseek-ocr"
    max_crops = INFER_MAX_CROPS

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
        checkpoint = require_runnable(
            WEIGHTS, model_path, device, environment_problem=environment_problem()
        )
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
            "max_crops": self.max_crops,
        }

    def identity(self) -> dict[str, Any]:
        """The checkpoint behind this engine, for run records (:func:`checkpoint_identity`)."""
        return checkpoint_identity(self._fixed_settings["checkpoint"])

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
                page.width, page.height, request.mode, max_crops=self.max_crops
            ),
            output_tokens=int(text_token_count(text, self._tokenizer)),
            settings={
                **self._fixed_settings,
                "base_size": mode.base_size,
                "image_size": mode.image_size,
                "crop_mode": mode.crop_mode,
            },
        )


def environment_problem(
    packages: tuple[str, ...] = REMOTE_CODE_PACKAGES,
    transformers_names: tuple[tuple[str, str], ...] = REMOTE_CODE_TRANSFORMERS_NAMES,
) -> str | None:
    """What DeepSeek-OCR's remote code imports that this environment lacks, with the fix.

    Imports each of ``packages`` and each ``(module, name)`` of ``transformers_names`` as the
    remote code does, and reads each failure for its cause; None when all of them import.
    """
    import transformers

    missing: list[str] = []
    broken: list[str] = []
    for package in packages:
        failure = _import_failure(package)
        if failure is None:
            continue
        if isinstance(failure, ImportError) and package in import_cause(failure).missing:
            missing.append(package)
        else:
            broken.append(
                f"DeepSeek-OCR's remote code imports {package}, which is installed but fails to "
                f"import ({type(failure).__name__}: {failure}){_torchvision_note([package])}"
            )
    absent: list[str] = []
    for module, name in transformers_names:
        failure = _import_failure(module)
        if failure is None:
            if not hasattr(importlib.import_module(module), name):
                absent.append(name)
        elif isinstance(failure, ImportError) and import_cause(failure).package == "transformers":
            absent.append(name)  # the module itself is gone from this transformers
        else:
            broken.append(f"importing {module} fails ({type(failure).__name__}: {failure})")
    problems = []
    if absent:
        lacking = f" and the packages {', '.join(missing)}, not installed here" if missing else ""
        problems.append(
            f"DeepSeek-OCR's remote code needs transformers {REMOTE_CODE_TRANSFORMERS}: it imports "
            f"{', '.join(absent)}, which transformers {transformers.__version__} does not have,"
            f"{lacking}; {ENVIRONMENT_FIX}"
        )
    elif missing:
        problems.append(
            f"DeepSeek-OCR's remote code imports {', '.join(missing)}, not installed here: "
            f"`{pip_install(missing)}`{_torchvision_note(missing)}"
        )
    return "; and ".join(problems + broken) or None


def _import_failure(module: str) -> Exception | None:
    """What importing ``module`` raises (None when it imports)."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        return exc
    except (OSError, RuntimeError, AttributeError) as exc:  # e.g. a build for another torch
        return exc
    return None


def _torchvision_note(packages: list[str]) -> str:
    if "torchvision" not in packages:
        return ""
    import torch

    return f" (torchvision must be the release built for the installed torch {torch.__version__})"


def load_problem(exc: ImportError, checkpoint: str) -> EngineUnavailableError:
    """The error for an ImportError raised while loading the remote code: its real cause."""
    cause = import_cause(exc)
    if cause.package == "transformers":
        import transformers

        detail = (
            f"imports {cause.absent}, which transformers {transformers.__version__} does not "
            f"have; it needs transformers {REMOTE_CODE_TRANSFORMERS}: {ENVIRONMENT_FIX}"
        )
    elif cause.absent:
        detail = f"imports {cause.absent}, which the installed {cause.package} does not have"
    elif cause.missing:
        detail = (
            f"imports {', '.join(cause.missing)}, not installed here: "
            f"`{pip_install(cause.missing)}`{_torchvision_note(list(cause.missing))}"
        )
    else:
        detail = f"fails to import: {type(exc).__name__}: {exc}"
    return EngineUnavailableError(
        f"engine 'deepseek-ocr' cannot load {checkpoint!r}: DeepSeek-OCR's remote code {detail}"
    )


def _load_remote_code(checkpoint: Path, device: str, attn: str | None) -> tuple[Any, Any]:
    """Model (eval, bf16, on ``device``) and tokenizer of the checkpoint's remote code.

    An ImportError while loading becomes the EngineUnavailableError of :func:`load_problem`.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    options: dict[str, Any] = {"trust_remote_code": True, "use_safetensors": True}
    if attn:
        options["_attn_implementation"] = attn
    try:
        tokenizer = AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=True)
        model = AutoModel.from_pretrained(checkpoint, **options)
    except ImportError as exc:
        raise load_problem(exc, str(checkpoint)) from exc
    return model.eval().to(device).to(torch.bfloat16), tokenizer


def _on_device(device: str) -> contextlib.AbstractContextManager[Any]:
    """Make ``cuda:N`` the current device, since infer() moves tensors with a bare ``.cuda()``."""
    import torch

    index = torch.device(device).index
    return torch.cuda.device(index) if index is not None else contextlib.nullcontext()
