"""What ``evalsuite serve`` checks before a request reaches the application: the body's size
(413 before the body is read whole) and, when the server has a key, the ``Authorization:
Bearer`` header of every ``/v1`` route (401). Both are plain ASGI middleware."""

from __future__ import annotations

import hmac
import json
import math
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from evalsuite.images import DEFAULT_MAX_IMAGE_PIXELS

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_BODY_BYTES = 64 * 1024 * 1024
"""The body limit at the default image limit (100 MP): 64 MiB, which holds the base64 of any
page image a scanner or renderer makes (an A4 page at 300 dpi is 1–25 MB as PNG)."""
EXCERPT_CHARS = 200
"""The most characters of a request an error answer quotes."""
PROTECTED_PREFIX = "/v1/"
"""Routes that need the key; ``/health`` and ``/version`` stay open, as in vLLM."""


def default_body_limit(max_image_pixels: int) -> int:
    """The body limit for an image limit: :data:`DEFAULT_BODY_BYTES` scaled by
    ``max_image_pixels / DEFAULT_MAX_IMAGE_PIXELS``, at least 1 MiB (bytes)."""
    return max(1024 * 1024, math.ceil(DEFAULT_BODY_BYTES * max_image_pixels
                                      / DEFAULT_MAX_IMAGE_PIXELS))


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with how much was left out."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


async def send_error(send: Send, status: int, message: str, kind: str,
                     headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """An OpenAI-style JSON error answer, sent straight through ASGI."""
    body = json.dumps({"error": {"message": message, "type": kind, "code": status}}).encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        *headers]})
    await send({"type": "http.response.body", "body": body})


class BodyLimit:
    """Answers 413 to a request whose ``Content-Length`` exceeds ``limit`` bytes without
    reading it, and to one whose streamed body grows past ``limit`` as soon as it does."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"the body limit must be an int >= 1 byte, got {limit!r}")
        self.app = app
        self.limit = limit

    def _too_large(self) -> str:
        return (f"request body over the server's limit of {self.limit:_} bytes "
                "(evalsuite serve --max-body-bytes)")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length")
        if length is not None:
            if not length.isdigit():
                shown = excerpt(length.decode("latin-1"), 40)
                await send_error(send, 400, f"Content-Length {shown!r} is not a number of bytes",
                                 "invalid_request_error")
                return
            if int(length) > self.limit:
                await send_error(send, 413, self._too_large(), "invalid_request_error")
                return
        received = 0
        started = refused = False

        async def counted() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.limit:  # answer now; the application sees the client leave
                    refused = True
                    if not started:
                        await send_error(send, 413, self._too_large(), "invalid_request_error")
                    return {"type": "http.disconnect"}
            return message

        async def guarded(message: Message) -> None:
            nonlocal started
            if refused:  # the 413 went out: the application's own answer is dropped
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        await self.app(scope, counted, guarded)


class BearerKey:
    """Answers 401 to a ``/v1`` request without ``Authorization: Bearer <key>``."""

    def __init__(self, app: ASGIApp, key: str) -> None:
        if not key:
            raise ValueError("the API key must not be empty")
        self.app = app
        self.expected = f"Bearer {key}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith(PROTECTED_PREFIX):
            given = dict(scope["headers"]).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send_error(send, 401, "missing or wrong API key: send the header "
                                 "'Authorization: Bearer KEY' with the server's key",
                                 "authentication_error", ((b"www-authenticate", b"Bearer"),))
                return
        await self.app(scope, receive, send)
