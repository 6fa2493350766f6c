"""The request shapes' common ground: :class:`RequestShape`, what a shape of request does for
the served engine (DeepSeek's, a stock server's, a model profile's; one chosen when the engine is
created), and the pieces they share: the page as a PNG data URL, the prompt's chat text, a
completion's message, the settings every result records."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from PIL import Image

from evalsuite.engines.base import ImageInput, InferenceRequest, InferenceResult
from evalsuite.engines.deepseek_inputs import IMAGE_PLACEHOLDER, load_page_image
from evalsuite.engines.served.discovery import ServerInfo
from evalsuite.engines.served.transport import Exchange
from evalsuite.images import PNG_SIGNATURE, lossless_png, open_image

_EXIF_ORIENTATION = 0x0112


class RequestShape(Protocol):
    """How the engine asks its model: the calls one request makes and the result read from
    their answers."""

    mode: str
    """The server's resolution mode: one mode, or ``per-request`` (each request's)."""
    family: str
    """The family whose vision-token arithmetic the results follow (``none``: not counted)."""
    settings: dict[str, Any]
    """What every result records in its ``settings``: the server, the mode, the decoding."""

    def modes(self) -> tuple[str, ...] | None:
        """The modes the engine serves (None: those its class declares)."""
        ...

    def label(self) -> str:
        """What the engine's results are keyed on when no label is given."""
        ...

    def details(self) -> dict[str, Any]:
        """What the shape adds to the engine's run metadata (``server_info``)."""
        ...

    async def send(self, request: InferenceRequest, exchange: Exchange) -> InferenceResult:
        """``request``'s result: its calls POSTed through ``exchange``, the answers read; a
        sample that cannot be served carries an error instead of raising."""
        ...


@dataclass(frozen=True)
class EncodedPage:
    """A page ready to send: its PNG data URL and its upright size in pixels."""

    data_url: str
    width: int
    height: int


def chat_text(prompt: str) -> str:
    """``prompt`` without DeepSeek's ``<image>`` placeholder (and the newline after it): the
    text part of a chat message, to which the server adds the placeholder itself."""
    return prompt.replace(IMAGE_PLACEHOLDER + "\n", "").replace(IMAGE_PLACEHOLDER, "")


def encode_page(image: ImageInput) -> EncodedPage:
    """The page as DeepSeek-OCR loads it (upright per EXIF, RGB), as a PNG data URL.

    A PNG file in RGB or L mode without EXIF data (before its pixels; a trailing EXIF chunk is
    not looked for) is sent as its own bytes; any other image as
    :func:`~evalsuite.images.lossless_png` writes it: a palette PNG for grey pages and pages of
    at most 256 colors, else RGB, the same pixels once converted back to RGB.
    """
    if isinstance(image, (str, Path)):
        data = Path(image).read_bytes()
        if data.startswith(PNG_SIGNATURE):
            # The header only (size and pixel limit): the server decodes the pixels.
            with open_image(data, what=str(image), load=False) as opened:
                if opened.mode in ("RGB", "L") and "exif" not in opened.info:
                    return EncodedPage(_data_url(data), opened.width, opened.height)
        page = load_page_image(image)
    elif isinstance(image, Image.Image):
        upright = image.getexif().get(_EXIF_ORIENTATION, 1) in (0, 1)
        page = image if upright and image.mode in ("RGB", "L") else load_page_image(image)
    else:
        raise TypeError(f"image must be a path or a PIL image, got {type(image).__name__}")
    return EncodedPage(_data_url(lossless_png(page)), page.width, page.height)


def _data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def completion_message(payload: Any) -> tuple[str, Mapping[str, Any], Mapping[str, Any]]:
    """(text, ``choices[0]``, ``usage``) of a chat-completion response; ValueError without a
    text answer."""
    try:
        choice = payload["choices"][0]
        text = choice["message"]["content"]
        usage = payload.get("usage") or {}
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ValueError(f"no choices[0].message.content in the response ({exc!r})") from None
    if not isinstance(text, str):
        raise ValueError(f"choices[0].message.content is {type(text).__name__}, not text")
    return text, choice, usage


def output_tokens(count: Any) -> int | None:
    """A reported ``completion_tokens`` (or ``evalsuite serve``'s ``output_tokens``) when it is
    an int, else None."""
    return count if isinstance(count, int) else None


def cannot_send(request: InferenceRequest, reason: Exception) -> InferenceResult:
    """The failed result of a request that was not sent, for ``reason``."""
    return InferenceResult(text="", error=f"cannot send sample {request.sample_id!r}: {reason}")


def served_label(server: ServerInfo) -> str:
    """The served model's name, its last path part in lower case (``deepseek-ai/DeepSeek-OCR``
    and ``/models/DeepSeek-OCR`` are both ``deepseek-ocr``)."""
    return server.model.rstrip("/").rsplit("/", 1)[-1].lower()


def served_settings(
    server: ServerInfo, mode: str, max_tokens: Any, decoding: Mapping[str, Any],
    **arithmetic: str,
) -> dict[str, Any]:
    """The settings every result records: the server (URL, model, kind, version, context), the
    ``mode`` it serves, ``arithmetic`` (``vision_token_arithmetic``, where a shape has one),
    ``max_tokens`` (the decoding's length field) and the decoding fields."""
    settings = {
        "api_base": server.api_base,
        "model": server.model,
        "server": server.server,
        "server_version": server.version,
        "server_mode": mode,
        **arithmetic,
        "max_model_len": server.max_model_len,
        "max_tokens": max_tokens,
        **decoding,
    }
    settings["max_tokens"] = max_tokens
    return settings
