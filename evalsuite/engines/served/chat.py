"""One chat completion per request (:class:`ChatShape`), and the stock server's shape
(:class:`StockShape`): a stock OpenAI-compatible server given no model is sent the benchmark's
prompt text and the page, ``temperature`` 0 and ``max_tokens`` only, in one mode, ``native``.

The body is a user message holding the page as a PNG data URL (an ``image_url`` part; none for a
text-only request) and the prompt's chat text (:func:`~evalsuite.engines.served.shapes.chat_text`),
then the decoding fields. Behind ``evalsuite serve`` an ``evalsuite`` field carries the sample's
identity for ``evalsuite serve --engine replay``; vLLM's request models allow extra fields and only
log them at debug level (``OpenAIBaseModel``, ``model_config = ConfigDict(extra="allow")`` in
``vllm/entrypoints/serve/engine/protocol.py``), so it is harmless there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from PIL import Image

from evalsuite.engines.base import OCR_MODE, InferenceRequest, InferenceResult
from evalsuite.engines.served.discovery import EVALSUITE_SERVER, ServerInfo
from evalsuite.engines.served.families import PER_REQUEST
from evalsuite.engines.served.shapes import (
    EncodedPage,
    cannot_send,
    chat_text,
    completion_message,
    encode_page,
    output_tokens,
    served_label,
    served_settings,
)
from evalsuite.engines.served.transport import Exchange

DEFAULT_MAX_TOKENS = 8192


def length_field(max_tokens: int | None, context: int | None) -> dict[str, int]:
    """``{"max_tokens": N}`` (N default :data:`DEFAULT_MAX_TOKENS`) when N is below the server's
    ``max_model_len`` (``context``; None: not reported), else nothing: vLLM refuses a request
    whose prompt plus ``max_tokens`` exceeds it, and without the field generates up to the
    context the prompt leaves."""
    tokens = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
    return {"max_tokens": tokens} if context is None or tokens < context else {}


class ChatShape:
    """One chat completion per request: the page and the prompt's chat text in one user message
    and ``decoding``, sent to ``server`` (``where`` names the engine's servers in messages),
    which serves ``mode`` (``per-request``: each request's). The family ``family`` names the
    results' vision-token arithmetic; this class counts none and checks no usage (a stock
    server's), :class:`~evalsuite.engines.served.deepseek.DeepSeekShape` does."""

    def __init__(
        self, server: ServerInfo, where: str, mode: str, family: str, decoding: dict[str, Any]
    ) -> None:
        self.server = server
        self.where = where
        self.mode = mode
        self.family = family
        self.decoding = decoding
        self.settings = served_settings(server, mode, decoding.get("max_tokens"), decoding,
                                        vision_token_arithmetic=family)

    def modes(self) -> tuple[str, ...] | None:
        """The server's one mode."""
        return (self.mode,)

    def label(self) -> str:
        """The served model's name (:func:`~evalsuite.engines.served.shapes.served_label`)."""
        return served_label(self.server)

    def details(self) -> dict[str, Any]:
        """Nothing beyond the server's identity."""
        return {}

    def check_mode(self, mode: str) -> None:
        """ValueError when an ``evalsuite serve`` reported its engine's modes and ``mode`` is
        not one of them."""
        served = self.server.modes
        if served is not None and mode not in served:
            raise ValueError(f"the server's engine has no mode {mode!r}; it serves: "
                             f"{', '.join(served)}")

    def request_decoding(self, request: InferenceRequest) -> dict[str, Any]:
        """The decoding fields of ``request``'s body."""
        return self.decoding

    def processor_fields(
        self, request: InferenceRequest, page: EncodedPage | None
    ) -> dict[str, Any]:
        """Fields for the server's preprocessing of the page (none here)."""
        return {}

    def vision_tokens(self, page: EncodedPage, mode: str) -> Any:
        """The page's vision tokens in ``mode`` (None: not counted)."""
        return None

    def check_usage(
        self, request: InferenceRequest, page: EncodedPage | None, usage: Mapping[str, Any]
    ) -> None:
        """ValueError when the answer's ``usage`` shows the server did not preprocess
        ``request`` as the model's own code does (nothing to check here)."""

    def build_body(self, request: InferenceRequest) -> tuple[dict[str, Any], EncodedPage | None]:
        """The JSON body of ``request``'s chat completion and the page it sends (None without
        an image). Raises ValueError for a mode the server cannot serve."""
        if request.image is not None and self.mode not in (PER_REQUEST, request.mode):
            raise ValueError(
                f"mode {request.mode!r} cannot be served: {self.where} runs in "
                f"{self.mode!r} mode (vLLM fixes DeepSeek-OCR's resolution per server); send "
                f"this mode to a server started for it, with mode={request.mode!r}"
            )
        self.check_mode(request.mode)
        content: list[dict[str, Any]] = []
        page = None
        if request.image is not None:
            page = encode_page(request.image)
            content.append({"type": "image_url", "image_url": {"url": page.data_url}})
        content.append({"type": "text", "text": chat_text(request.prompt)})
        body: dict[str, Any] = {
            "model": self.server.model,
            "messages": [{"role": "user", "content": content}],
            **self.request_decoding(request),
            **self.processor_fields(request, page),
        }
        if self.server.server == EVALSUITE_SERVER:
            body["evalsuite"] = {
                "sample_id": request.sample_id,
                "key": dict(request.key),
                "mode": request.mode,
                "prompt": request.prompt,
                "image_sha256": request.image_sha256,
            }
        return body, page

    def parse_completion(
        self, request: InferenceRequest, page: EncodedPage | None, payload: Any
    ) -> InferenceResult:
        """The result in a chat-completion response (parsed JSON); ValueError if it has none."""
        text, choice, usage = completion_message(payload)
        served = payload.get("evalsuite")
        if isinstance(served, Mapping):
            tokens = served.get("output_tokens")
            extra = {
                "server_engine": served.get("engine"),
                "server_settings": served.get("settings"),
            }
        else:
            tokens = usage.get("completion_tokens")
            extra = {}
        counted = None if page is None else self.vision_tokens(page, request.mode)
        self.check_usage(request, page, usage)
        return InferenceResult(
            text=text,
            vision_tokens=counted,
            output_tokens=output_tokens(tokens),
            settings={
                **self.settings,
                **self.request_decoding(request),
                "mode": request.mode,
                "finish_reason": choice.get("finish_reason"),
                **extra,
            },
        )

    async def send(self, request: InferenceRequest, exchange: Exchange) -> InferenceResult:
        """``request``'s body POSTed through ``exchange`` and its answer read; a request that
        cannot be built (a mode not served, an unreadable page) fails without a POST."""
        try:
            if isinstance(request.image, Image.Image):  # PNG-encoding it takes milliseconds
                body, page = await asyncio.to_thread(self.build_body, request)
            else:
                body, page = self.build_body(request)
        except (OSError, ValueError, TypeError) as exc:
            return cannot_send(request, exc)
        return await exchange(
            body, lambda payload: self.parse_completion(request, page, payload)
        )


class StockShape(ChatShape):
    """A stock OpenAI-compatible server given no model: the benchmark's prompt text, no
    DeepSeek-only field, ``temperature`` 0 and ``max_tokens`` (:func:`length_field`), one mode
    (``native``), no vision tokens."""

    def __init__(self, server: ServerInfo, where: str, *, max_tokens: int | None) -> None:
        decoding = {"temperature": 0.0, **length_field(max_tokens, server.max_model_len)}
        super().__init__(server, where, OCR_MODE, "none", decoding)
