"""The application behind ``evalsuite serve``: OpenAI's chat-completions API over one engine.

Routes: ``POST /v1/chat/completions``, ``GET /v1/models``, ``GET /health``, ``GET /version``.
A completion request holds one user message: text parts (joined by newlines, as vLLM joins
them) and at most one ``image_url`` part, a ``data:`` URL (nothing is fetched). The engine gets
an :class:`~evalsuite.engines.base.InferenceRequest`: the page, the prompt with DeepSeek's
``<image>\\n`` in front when a page was sent (as vLLM's chat template puts it), and the mode.
An optional ``evalsuite`` object in the body (sent by the ``openai`` engine) carries the
sample's identity, ``{"sample_id", "key", "mode", "prompt", "image_sha256"}``, so that
``--engine replay`` finds its recordings; without it the mode comes from
``mm_processor_kwargs`` (DeepSeek-OCR's ``base_size``, ``image_size``, ``crop_mode``), else
the server's default mode. A mode the engine does not list in its ``supported_modes`` is
refused (400).

Decoding settings are the engine's own (``--engine-option``); a request's ``max_tokens``,
``temperature`` and ``vllm_xargs`` are accepted and ignored. The answer is OpenAI's
``chat.completion`` with ``usage`` (the engine's output-token count, 0 where it counts none)
plus an ``evalsuite`` object: engine name, output tokens (null if not counted), latency,
settings, and the size of the batch the request ran in.

Concurrent requests are collected into ``engine.infer_batch`` calls of up to ``max_batch``, a
batch closing when full or when no request has come for ``batch_wait_s``
(:class:`RequestBatcher`). Engines are not thread-safe, so one batch runs at a time, in a worker
thread, and the event loop keeps accepting requests meanwhile. A sample the engine fails on is
answered with HTTP 500 and the engine's message; a malformed request, or one the engine cannot
take (no page for an engine that ``needs_image``), with 400 (422 for a body that does not parse,
413 for one over the body limit, 401 without the server's key: :mod:`evalsuite.serving.guards`).
Error answers quote at most a short excerpt of the request.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from evalsuite import __version__
from evalsuite.engines.base import Engine, InferenceRequest, InferenceResult, image_sha256
from evalsuite.engines.deepseek_inputs import with_image_placeholder
from evalsuite.errors import EvalsuiteError, ImageInputError
from evalsuite.images import max_image_pixels, open_image
from evalsuite.serving.guards import BearerKey, BodyLimit, default_body_limit, excerpt
from evalsuite.tokens import MODES

SERVER_NAME = "evalsuite serve"
BATCH_TICK_S = 0.001
"""Granularity of the batcher's quiet-time count (see :meth:`RequestBatcher._collect`)."""
ERROR_MESSAGE_CHARS = 1000
"""The most characters of an error answer's message (it never echoes a request whole)."""
INLINE_DECODE_LIMIT = 64 * 1024
"""Requests up to this many base64 characters of image are decoded on the event loop (faster
than a thread hop); larger ones in a worker thread, so decoding does not stall the loop."""


@dataclass(frozen=True)
class ServedRequest(InferenceRequest):
    """A request rebuilt from a chat completion. The page's identity (``image_sha256``) is the
    client's original image when the client sent it, not the re-encoded PNG."""

    client_image_sha256: str | None = None

    @property
    def image_sha256(self) -> str | None:  # type: ignore[override]
        if self.client_image_sha256 is not None:
            return self.client_image_sha256
        return image_sha256(self.image)


class RequestError(EvalsuiteError, ValueError):
    """A request the server cannot serve; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class ImageURL(BaseModel):
    url: str


class ContentPart(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None
    image_url: ImageURL | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str | list[ContentPart]


class SampleIdentity(BaseModel):
    """The ``evalsuite`` field of a request: who the sample is, for replay and recording."""

    sample_id: str | None = None
    key: dict[str, Any] = Field(default_factory=dict)
    mode: str | None = None
    prompt: str | None = None
    image_sha256: str | None = None


class ChatCompletionRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI and vLLM fields the engine does not use
    model: str | None = None
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    mm_processor_kwargs: dict[str, Any] | None = None
    evalsuite: SampleIdentity | None = None


class RequestBatcher:
    """Collects concurrent requests into ``engine.infer_batch`` calls of up to ``max_batch``.

    A batch closes when it holds ``max_batch`` requests or when no request has arrived during
    ``wait_s`` seconds of idle event loop (so a burst of requests, each a little after the last,
    lands in one batch even while the loop is busy answering the previous batch); then it runs
    in a worker thread while new requests queue for the next one.
    """

    def __init__(self, engine: Engine, *, max_batch: int, wait_s: float) -> None:
        if isinstance(max_batch, bool) or not isinstance(max_batch, int) or max_batch < 1:
            raise ValueError(f"max_batch must be an int >= 1, got {max_batch!r}")
        if not wait_s >= 0:
            raise ValueError(f"batch wait must be >= 0 seconds, got {wait_s!r}")
        self.engine = engine
        self.max_batch = max_batch
        self.wait_s = wait_s
        self._queue: asyncio.Queue[tuple[InferenceRequest, asyncio.Future[Any]]] | None = None
        self._worker: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._queue = asyncio.Queue()
        self._worker = asyncio.create_task(self._run(self._queue))

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
        while self._queue is not None and not self._queue.empty():
            _, future = self._queue.get_nowait()
            if not future.done():
                future.set_exception(RequestError("the server is shutting down", 503))

    async def infer(self, request: InferenceRequest) -> tuple[InferenceResult, int]:
        """The engine's result for ``request`` and the size of the batch it ran in."""
        if self._queue is None:
            raise RuntimeError("RequestBatcher.start() was not awaited")
        future: asyncio.Future[tuple[InferenceResult, int]] = (
            asyncio.get_running_loop().create_future()
        )
        self._queue.put_nowait((request, future))
        return await future

    async def _run(
        self, queue: asyncio.Queue[tuple[InferenceRequest, asyncio.Future[Any]]]
    ) -> None:
        while True:
            batch = await self._collect(queue)
            live = [(request, future) for request, future in batch if not future.done()]
            if not live:  # every client of this batch went away
                continue
            requests = [request for request, _ in live]
            results = await asyncio.to_thread(self._infer_batch, requests)
            for (_, future), result in zip(live, results, strict=True):
                if not future.done():
                    future.set_result((result, len(live)))

    async def _collect(
        self, queue: asyncio.Queue[tuple[InferenceRequest, asyncio.Future[Any]]]
    ) -> list[tuple[InferenceRequest, asyncio.Future[Any]]]:
        """The next batch: the first request to come, then more until ``max_batch`` or until
        ``wait_s`` of quiet. Quiet is counted in ticks of :data:`BATCH_TICK_S`; a tick that
        ends late means the event loop was busy (answering the last batch, reading requests),
        which is not quiet, so the count restarts."""
        loop = asyncio.get_running_loop()
        batch = [await queue.get()]
        quiet = 0.0
        while len(batch) < self.max_batch:
            if not queue.empty():
                batch.append(queue.get_nowait())
                quiet = 0.0
                continue
            if quiet >= self.wait_s:
                break
            tick = min(BATCH_TICK_S, self.wait_s - quiet)
            started = loop.time()
            try:
                async with asyncio.timeout(tick):
                    batch.append(await queue.get())
                quiet = 0.0
            except TimeoutError:
                late = loop.time() - started - tick
                quiet = 0.0 if late > BATCH_TICK_S else quiet + tick
        return batch

    def _infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        """``engine.infer_batch``, with an engine that raises or miscounts turned into errors."""
        try:
            results = list(self.engine.infer_batch(requests))
        except Exception as exc:  # the engine broke its contract; answer every sample
            return [InferenceResult(text="", error=f"{type(exc).__name__}: {exc}")] * len(requests)
        if len(results) != len(requests):
            message = f"engine returned {len(results)} results for {len(requests)} requests"
            return [InferenceResult(text="", error=message)] * len(requests)
        return results


def create_app(
    engine: Engine,
    *,
    engine_name: str,
    max_batch: int = 32,
    batch_wait_s: float = 0.02,
    default_mode: str | None = None,
    max_body_bytes: int | None = None,
    api_key: str | None = None,
) -> FastAPI:
    """The FastAPI application serving ``engine`` under the model id ``engine_name``.

    ``default_mode`` is the mode of requests that name none (default: ``gundam`` if the engine
    supports it, else the first of its ``supported_modes``). ``max_body_bytes`` (default
    :func:`~evalsuite.serving.guards.default_body_limit` of the process's image limit): larger
    bodies get 413 unread. ``api_key``: ``/v1`` routes answer 401 without ``Authorization:
    Bearer <api_key>``.
    """
    modes = tuple(getattr(engine, "supported_modes", None) or ())
    family = getattr(engine, "model_family", None)
    if default_mode is None:
        default_mode = "gundam" if not modes or "gundam" in modes else modes[0]
    check_mode(default_mode, modes)
    batcher = RequestBatcher(engine, max_batch=max_batch, wait_s=batch_wait_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await batcher.start()
        yield
        await batcher.stop()

    app = FastAPI(title=SERVER_NAME, version=__version__, lifespan=lifespan)
    limit = default_body_limit(max_image_pixels()) if max_body_bytes is None else max_body_bytes
    app.add_middleware(BodyLimit, limit=limit)
    if api_key is not None:
        app.add_middleware(BearerKey, key=api_key)  # outermost: checked before anything else

    def answer(payload: Mapping[str, Any], status: int = 200) -> Response:
        content = json.dumps(payload, default=str, ensure_ascii=False)
        return Response(content, status_code=status, media_type="application/json")

    def error(message: str, status: int, kind: str) -> Response:
        return answer({"error": {"message": excerpt(message, ERROR_MESSAGE_CHARS), "type": kind,
                                 "code": status}}, status)

    @app.exception_handler(RequestValidationError)
    async def invalid_body(_: Any, exc: RequestValidationError) -> Response:
        """422 naming what is wrong where, without the input (FastAPI's own answer echoes
        the whole body)."""
        problems = [f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}"
                    for problem in exc.errors()[:5]]
        return error("the body is not a chat completion request: " + "; ".join(problems), 422,
                     "invalid_request_error")

    @app.get("/health")
    async def health() -> Response:
        return answer({"status": "ok", "engine": engine_name})

    @app.get("/version")
    async def version() -> Response:
        return answer(
            {
                "version": __version__,
                "server": SERVER_NAME,
                "engine": engine_name,
                "per_request_mode": True,
                "modes": list(modes),
                "model_family": family,
                "keyed_outputs": bool(getattr(engine, "keyed_outputs", False)),
            }
        )

    @app.get("/v1/models")
    async def models() -> Response:
        """The model card, with what a client must send: the engine's modes (empty: any) and
        its family (the vision-token arithmetic; null: not fixed)."""
        entry = {"id": engine_name, "object": "model", "created": 0, "owned_by": "evalsuite",
                 "modes": list(modes), "model_family": family}
        return answer({"object": "list", "data": [entry]})

    @app.post("/v1/chat/completions")
    async def chat_completions(body: ChatCompletionRequest) -> Response:
        try:
            if body.model is not None and body.model != engine_name:
                raise RequestError(
                    f"this server serves {engine_name!r}, not {excerpt(body.model, 80)!r}", 404)
            if _image_chars(body) <= INLINE_DECODE_LIMIT:
                request = to_inference_request(body, default_mode, modes)
            else:
                request = await asyncio.to_thread(to_inference_request, body, default_mode, modes)
            if request.image is None and getattr(engine, "needs_image", False):
                raise RequestError(f"engine {engine_name!r} reads page images only: send one "
                                   "image_url part (a data: URL) with the text")
            result, batch_size = await batcher.infer(request)
        except RequestError as exc:
            return error(str(exc), exc.status, "invalid_request_error")
        if result.error is not None:
            message = (
                f"engine {engine_name!r} failed on sample {request.sample_id!r}: {result.error}"
            )
            return error(message, 500, "engine_error")
        output_tokens = result.output_tokens
        return answer(
            {
                "id": f"chatcmpl-{uuid.uuid4().hex}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": engine_name,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": result.text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": 0,
                    "completion_tokens": output_tokens or 0,
                    "total_tokens": output_tokens or 0,
                },
                "evalsuite": {
                    "engine": engine_name,
                    "output_tokens": output_tokens,
                    "latency_s": result.latency_s,
                    "batch_size": batch_size,
                    "settings": result.settings,
                },
            }
        )

    return app


def _image_chars(body: ChatCompletionRequest) -> int:
    """Characters of image URL in ``body``."""
    total = 0
    for message in body.messages:
        if not isinstance(message.content, str):
            total += sum(len(part.image_url.url) for part in message.content if part.image_url)
    return total


def to_inference_request(
    body: ChatCompletionRequest, default_mode: str, modes: Sequence[str] = ()
) -> ServedRequest:
    """The engine request a chat completion asks for (decodes the page). RequestError if the
    request is malformed or its mode is not among ``modes`` (when given)."""
    if body.stream:
        raise RequestError("streaming is not supported; send stream=false")
    if len(body.messages) != 1 or body.messages[0].role != "user":
        roles = [message.role for message in body.messages]
        raise RequestError(f"expected exactly one user message, got roles {roles}")
    content = body.messages[0].content
    parts = [ContentPart(type="text", text=content)] if isinstance(content, str) else content
    texts = [part.text or "" for part in parts if part.type == "text"]
    urls = [part.image_url.url for part in parts if part.type == "image_url" and part.image_url]
    unknown = sorted({part.type for part in parts} - {"text", "image_url"})
    if unknown or len(urls) > 1:
        raise RequestError(
            f"a message may hold text parts and at most one image_url part; got {len(urls)} "
            f"images and part types {unknown or 'text/image_url'}"
        )
    image = decode_data_url(urls[0]) if urls else None
    identity = body.evalsuite or SampleIdentity()
    if identity.prompt is not None:
        prompt = identity.prompt
    else:
        text = "\n".join(texts)
        prompt = with_image_placeholder(text) if image is not None else text
    mode = identity.mode or mode_from_processor_kwargs(body.mm_processor_kwargs) or default_mode
    check_mode(mode, modes)
    return ServedRequest(
        image=image,
        prompt=prompt,
        mode=mode,
        sample_id=identity.sample_id or f"request-{uuid.uuid4().hex[:12]}",
        key=identity.key,
        client_image_sha256=identity.image_sha256,
    )


def check_mode(mode: str, modes: Sequence[str]) -> None:
    """RequestError unless ``mode`` is one of ``modes`` (any mode when ``modes`` is empty)."""
    if modes and mode not in modes:
        raise RequestError(f"the engine has no mode {mode!r}; choose one of: {', '.join(modes)}")


def mode_from_processor_kwargs(kwargs: Mapping[str, Any] | None) -> str | None:
    """The DeepSeek-OCR mode whose ``base_size``, ``image_size`` and ``crop_mode`` are all in
    ``kwargs``; None without kwargs; RequestError when they name no mode."""
    if not kwargs:
        return None
    wanted = {name: kwargs.get(name) for name in ("base_size", "image_size", "crop_mode")}
    for name, settings in MODES.items():
        if wanted == {
            "base_size": settings.base_size,
            "image_size": settings.image_size,
            "crop_mode": settings.crop_mode,
        }:
            return name
    raise RequestError(
        f"mm_processor_kwargs {wanted} match no DeepSeek-OCR mode; modes are "
        + ", ".join(
            f"{name} ({s.base_size}/{s.image_size}/{s.crop_mode})" for name, s in MODES.items()
        )
    )


def decode_data_url(url: str) -> Image.Image:
    """The image in a ``data:<type>;base64,<data>`` URL, fully decoded. RequestError if the URL
    is of another kind or does not hold an image."""
    header, comma, data = url.partition(",")
    if not url.startswith("data:") or not comma or not header.endswith(";base64"):
        raise RequestError(
            f"image_url must be a data:<type>;base64,... URL (the server fetches nothing), "
            f"got {url[:40]!r}..."
        )
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise RequestError(f"image_url does not hold valid base64: {exc}") from None
    try:
        return open_image(decoded, what="image_url")
    except ImageInputError as exc:
        raise RequestError(str(exc)) from None
