"""The engine protocol (a page image plus a prompt in, text out) and the registry of engines.

Every engine is created through :func:`create_engine`, so ``--engine NAME`` on the command line
and the library resolve names the same way.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from evalsuite.errors import UnknownEngineError

ImageInput = Path | str | Image.Image
OCR_MODE = "native"
"""The single mode of an OCR-only engine, which has no vision-token settings."""


@dataclass(frozen=True)
class AntiRepetition:
    """DeepSeek-OCR's n-gram anti-repetition setting for a served engine: an output token that
    would repeat an ``ngram_size``-gram seen among the last ``window_size`` output tokens is
    banned (:mod:`evalsuite.vllm_plugin.ngram`); ``source`` names the DeepSeek script that uses
    these values."""

    ngram_size: int
    window_size: int
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"ngram_size": self.ngram_size, "window_size": self.window_size,
                "source": self.source}


DOCUMENT_EVALUATION_NGRAM = AntiRepetition(
    40, 90, "DeepSeek-OCR's run_dpsk_ocr_eval_batch.py (its benchmark evaluation)"
)
"""What DeepSeek used to evaluate page OCR and document parsing through vLLM."""
RECIPE_NGRAM = AntiRepetition(30, 90, "vLLM's DeepSeek-OCR recipe (vllm-project/recipes)")
"""The general-purpose default of vLLM's recipe, for tasks DeepSeek did not evaluate
(questions, continuation)."""


@dataclass(frozen=True)
class PdfPage:
    """Page ``index`` (0-based) of the PDF file at ``path``."""

    path: Path
    index: int

    @cached_property
    def content_sha256(self) -> str:
        """SHA-256 (hex) of the PDF file's bytes: with ``index``, what names the page wherever
        the file lies."""
        return hashlib.sha256(Path(self.path).read_bytes()).hexdigest()


@dataclass(frozen=True)
class InferenceRequest:
    """One unit of work for an engine.

    ``key`` holds what identifies the sample for recording and replay (benchmark, document,
    render_config, condition, question_id, ...); :meth:`replay_key` adds the sample id, mode,
    prompt and the image's content hash. ``image`` is None for a text-only request; engines
    that need a page (deepseek-ocr, tesseract) fail such a sample with a clear error.
    """

    image: ImageInput | None
    prompt: str
    mode: str
    sample_id: str
    key: Mapping[str, Any] = field(default_factory=dict)
    anti_repetition: AntiRepetition | None = None
    """The benchmark's n-gram setting (served engines send it; None: the engine's own).
    Not part of :meth:`replay_key`: a recording answers whatever the decoding."""
    task: str | None = None
    """The task kind (:data:`evalsuite.models.TASKS`): a model profile other than DeepSeek's
    answers it with its own prompt instead of ``prompt``; None: ``prompt`` only."""
    repeat: int = 1
    """Which conversion of the same request this is (olmOCR-bench's ``--repeats``): each repeat
    is a call of its own, never answered from another's result."""
    pdf_page: PdfPage | None = None
    """The PDF page ``image`` was rendered from (at the benchmark's resolution): a model whose
    runner rasterises PDF pages itself (a profile's ``pdf_rendering``) is sent the page rendered
    from here its way. Not part of :meth:`replay_key` (the benchmark's rendering identifies a
    recorded answer); part of the request cache's key."""

    @cached_property
    def image_sha256(self) -> str | None:
        """SHA-256 of the exact image: a file's bytes, or a PIL image's mode, size and pixel
        bytes; None without an image."""
        return image_sha256(self.image)

    def replay_key(self) -> dict[str, Any]:
        """The full identifying key of this request, as stored in a recording."""
        return {
            **dict(self.key),
            "sample_id": self.sample_id,
            "mode": self.mode,
            "prompt": self.prompt,
            "image_sha256": self.image_sha256,
        }


def image_sha256(image: ImageInput | None) -> str | None:
    """SHA-256 (hex) of an image as :attr:`InferenceRequest.image_sha256` defines it."""
    if image is None:
        return None
    digest = hashlib.sha256()
    if isinstance(image, Image.Image):
        digest.update(f"{image.mode}:{image.width}x{image.height}:".encode())
        digest.update(image.tobytes())
    else:
        digest.update(Path(image).read_bytes())
    return digest.hexdigest()


@dataclass
class InferenceResult:
    """What an engine produced for one request.

    ``vision_tokens`` is a :class:`evalsuite.tokens.VisionTokens`, an int (the engine's own
    count) or None; ``error`` is None or the message of a failure of this sample only.
    ``settings`` records every decoding setting used; ``boxes`` holds line boxes
    ``(x1, y1, x2, y2)`` in image pixels for engines that detect lines.
    """

    text: str
    vision_tokens: Any = None
    output_tokens: int | None = None
    latency_s: float = 0.0
    error: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    boxes: list[tuple[float, float, float, float]] | None = None

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def valid_vision_tokens(self) -> int | None:
        """The vision tokens that count for compression: a VisionTokens' ``valid``, the
        engine's own int count, or None."""
        value = self.vision_tokens
        if value is None or isinstance(value, int):
            return value
        return int(value.valid)


@runtime_checkable
class Engine(Protocol):
    """What every engine provides. ``kind`` is ``"ocr"`` (page to text only) or ``"vlm"``."""

    name: str
    kind: str

    def infer(self, request: InferenceRequest) -> InferenceResult: ...

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]: ...


class EngineBase:
    """Shared behaviour: ``infer_batch`` maps ``infer``; failures of one sample are recorded.

    A result without a latency gets the call's wall time, unless ``times_calls`` is False (an
    engine whose latencies are data, e.g. replayed ones, where a missing one stays 0.0).
    """

    name: str = ""
    kind: str = "vlm"
    times_calls: bool = True
    needs_image: bool = False
    """Whether every request must carry a page (no text-only path): a server refuses a request
    without one (HTTP 400) instead of failing it in the engine."""
    model_family: str | None = None
    """The family whose modes and vision-token arithmetic the engine follows (``deepseek-ocr``,
    ``deepseek-ocr-2``; ``none``: no vision tokens); None: not fixed by the engine. ``evalsuite
    serve`` tells its clients, so that the ``openai`` engine counts as the engine does."""

    def infer(self, request: InferenceRequest) -> InferenceResult:
        started = time.perf_counter()
        try:
            result = self._infer(request)
        except Exception as exc:  # one sample's failure must not stop the session
            return InferenceResult(
                text="",
                error=f"{type(exc).__name__}: {exc}",
                latency_s=time.perf_counter() - started,
            )
        if self.times_calls and not result.latency_s:
            result.latency_s = time.perf_counter() - started
        return result

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        return [self.infer(request) for request in requests]

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        raise NotImplementedError


EngineFactory = Callable[..., Engine]
ENGINE_ENTRY_POINT_GROUP = "evalsuite.engines"
"""Installed packages add engines under this entry-point group (name = engine name)."""
_REGISTRY: dict[str, EngineFactory] = {}


def register_engine(name: str) -> Callable[[EngineFactory], EngineFactory]:
    """Class decorator: make an engine creatable as ``create_engine(name, **options)``."""

    def decorate(factory: EngineFactory) -> EngineFactory:
        if name in _REGISTRY and _REGISTRY[name] is not factory:
            raise ValueError(f"engine name {name!r} is already registered")
        _REGISTRY[name] = factory
        return factory

    return decorate


def available_engines() -> list[str]:
    """Names of every registered engine and ``evalsuite.engines`` entry point, sorted."""
    _load_builtin_engines()
    return sorted(set(_REGISTRY) | {entry.name for entry in _engine_entry_points()})


def engine_kind(name: str) -> str:
    """``"ocr"`` or ``"vlm"`` for an engine name (:func:`resolve_engine`), without creating it."""
    return getattr(resolve_engine(name), "kind", "vlm")


def supported_modes(name: str) -> tuple[str, ...]:
    """The modes an engine accepts, without creating it: its class's ``supported_modes``;
    else DeepSeek-OCR's five modes for a VLM and the single ``native`` for an OCR engine."""
    factory = resolve_engine(name)
    declared = getattr(factory, "supported_modes", None)
    if declared:
        return tuple(declared)
    if getattr(factory, "kind", "vlm") == "ocr":
        return (OCR_MODE,)
    from evalsuite.tokens import MODES

    return tuple(MODES)


def create_engine(name: str, **options: Any) -> Engine:
    """Create the engine ``name`` resolves to (see :func:`resolve_engine`) with ``options``."""
    return resolve_engine(name)(**options)


def resolve_engine(name: str) -> EngineFactory:
    """The factory of ``name``: a registered engine, ``package.module:factory`` (imported, the
    attribute called with the options), or an entry point of the group ``evalsuite.engines``.

    Raises :class:`UnknownEngineError` naming what was looked for.
    """
    _load_builtin_engines()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if ":" in name:
        return _import_factory(name)
    for entry in _engine_entry_points():
        if entry.name == name:
            return entry.load()
    raise UnknownEngineError(
        f"unknown engine {name!r}; choose one of: {', '.join(available_engines())}, "
        "or name a factory as package.module:function"
    )


def _import_factory(name: str) -> EngineFactory:
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise UnknownEngineError(f"engine {name!r}: expected the form package.module:factory")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        # Only the named module (or a parent package) missing means a bad name; a missing
        # dependency of an existing module propagates.
        if exc.name is None or not (module_name + ".").startswith(exc.name + "."):
            raise
        raise UnknownEngineError(
            f"engine {name!r}: no module named {module_name!r} (is it installed or on PYTHONPATH?)"
        ) from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise UnknownEngineError(
            f"engine {name!r}: module {module_name!r} has no callable {attribute!r}"
        )
    return factory


def _engine_entry_points() -> tuple[importlib.metadata.EntryPoint, ...]:
    return tuple(importlib.metadata.entry_points(group=ENGINE_ENTRY_POINT_GROUP))


def _load_builtin_engines() -> None:
    # Importing the modules runs their @register_engine decorators.
    from evalsuite.engines import BUILTIN_ENGINE_MODULES

    for module in BUILTIN_ENGINE_MODULES:
        __import__(module)


def iter_batches(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    """Consecutive slices of ``items`` of at most ``size`` elements."""
    if size < 1:
        raise ValueError(f"batch size must be >= 1, got {size}")
    for start in range(0, len(items), size):
        yield items[start : start + size]
