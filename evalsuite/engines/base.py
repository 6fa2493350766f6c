"""The engine protocol (a page image plus a prompt in, text out) and the registry of engines.

Every engine is created through :func:`create_engine`, so ``--engine NAME`` on the command line
and the library resolve names the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from evalsuite.errors import UnknownEngineError

ImageInput = Path | str | Image.Image


@dataclass(frozen=True)
class InferenceRequest:
    """One unit of work for an engine.

    ``key`` holds what identifies the sample for recording and replay (benchmark, document or
    sample id, mode, render_config, condition, question_id, ...); ``prompt`` and ``mode`` are
    added to it by :meth:`replay_key`.
    ``image`` may be None for a text-only request (the text condition of the QA studies).
    """

    image: ImageInput | None
    prompt: str
    mode: str
    sample_id: str
    key: Mapping[str, Any] = field(default_factory=dict)

    def replay_key(self) -> dict[str, Any]:
        """The full identifying key of this request, as stored in a recording."""
        return {**dict(self.key), "mode": self.mode, "prompt": self.prompt}


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


@runtime_checkable
class Engine(Protocol):
    """What every engine provides. ``kind`` is ``"ocr"`` (page to text only) or ``"vlm"``."""

    name: str
    kind: str

    def infer(self, request: InferenceRequest) -> InferenceResult: ...

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]: ...


class EngineBase:
    """Shared behaviour: ``infer_batch`` maps ``infer``; failures of one sample are recorded."""

    name: str = ""
    kind: str = "vlm"

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
        if not result.latency_s:
            result.latency_s = time.perf_counter() - started
        return result

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        return [self.infer(request) for request in requests]

    def _infer(self, request: InferenceRequest) -> InferenceResult:
        raise NotImplementedError


EngineFactory = Callable[..., Engine]
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
    """Names of every registered engine, sorted."""
    _load_builtin_engines()
    return sorted(_REGISTRY)


def engine_kind(name: str) -> str:
    """``"ocr"`` or ``"vlm"`` for a registered engine, without creating it."""
    _load_builtin_engines()
    if name not in _REGISTRY:
        raise UnknownEngineError(
            f"unknown engine {name!r}; choose one of: {', '.join(sorted(_REGISTRY))}"
        )
    return getattr(_REGISTRY[name], "kind", "vlm")


def create_engine(name: str, **options: Any) -> Engine:
    """Create the engine registered as ``name``; unknown names list the valid ones."""
    _load_builtin_engines()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise UnknownEngineError(
            f"unknown engine {name!r}; choose one of: {', '.join(sorted(_REGISTRY))}"
        ) from None
    return factory(**options)


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
