"""``openai`` and ``vllm``: an engine behind an OpenAI-compatible chat-completions server.

Each request is one ``POST {api_base}/chat/completions``: a user message holding the page as a
PNG data URL (an ``image_url`` part; none for a text-only request) and the prompt text, with
``temperature=0``, ``max_tokens`` (8192; see below), ``skip_special_tokens=False`` and
DeepSeek-OCR's anti-repetition settings as ``vllm_xargs``: the request's benchmark setting
(:class:`~evalsuite.engines.base.AntiRepetition`; without one the recipe's ``ngram_size=30``,
``window_size=90``) and ``whitelist_token_ids=[128821, 128822]``, the ids of ``<td>`` and
``</td>``, as vLLM's recipes pass them (vllm-project/recipes ``DeepSeek/DeepSeek-OCR.md``). The
server applies them with the n-gram logits processor it was started with (evalsuite's plugin:
:mod:`evalsuite.vllm_plugin.ngram`), which reads them from the request's ``extra_args``.

What vLLM does with the request (read in vLLM 0.33.0's source):

- Prompt. DeepSeek-OCR's chat template is the BOS token followed by the message content
  (``vllm/transformers_utils/chat_templates/template_deepseek_ocr.jinja``), and vLLM puts one
  ``<image>`` per image part in front of the text, joined by a newline
  (``get_full_multimodal_text_prompt``, ``vllm/renderers/chat_utils/chat_message.py``): the
  text "Free OCR." becomes DeepSeek's own ``<image>\\nFree OCR.``. So the prompt is sent without
  DeepSeek's ``<image>`` placeholder (:func:`chat_text`); a placeholder left in the text would
  be counted against the images sent.
- Resolution mode. A stock vLLM serves DeepSeek-OCR in one mode only (its image-token count
  comes from module constants, ``vllm/transformers_utils/processors/deepseek_ocr.py``), so the
  ``vllm`` engine talks to a vLLM running evalsuite's plugin (:mod:`evalsuite.vllm_plugin`,
  ``make vllm-env``), which takes each request's mode from ``mm_processor_kwargs``
  (``{"mode": NAME}``) and preprocesses it exactly as DeepSeek's ``infer()``. Every answer is
  checked: vLLM reports ``usage.prompt_tokens``, which must equal BOS, the mode's image tokens
  (:func:`evalsuite.engines.deepseek_views.image_token_count`) and the text's tokens; a server
  that preprocessed otherwise (a stock vLLM, another mode) fails the sample with that
  difference instead of being scored. ``openai`` sends no such kwargs: it serves one
  ``mode`` per server, or each request's with ``evalsuite serve`` (``mode="per-request"``).
- Output length. DeepSeek-OCR's context is 8192 positions (vLLM's ``max_model_len``, which
  ``/v1/models`` reports per model), and vLLM's server refuses a request whose prompt plus
  ``max_tokens`` exceeds it. Deliberate deviation from the recipe's ``max_tokens=8192``: when
  ``max_tokens`` does not fit below the server's ``max_model_len``, it is left out, and vLLM
  generates up to the context the prompt leaves (``settings`` records ``max_tokens`` None and
  the ``max_model_len``).
- Unknown fields: vLLM's request models allow extra fields and only log them at debug level
  (``OpenAIBaseModel``, ``model_config = ConfigDict(extra="allow")`` in
  ``vllm/entrypoints/serve/engine/protocol.py``), so the ``evalsuite`` field that carries the
  sample's identity for ``evalsuite serve --engine replay`` is harmless there.

A peer model (``model_profile``, :mod:`evalsuite.models`) is sent what its authors' runner
sends instead: its prompt for the request's task kind in its message layout, its decoding
fields and nothing else (no ``vllm_xargs``, no ``mm_processor_kwargs``), the page at its size;
its pipeline turns the answer (or several calls) into the page the scorers read.

Vision tokens come from the image size and mode (the ``model_family`` option):
:func:`evalsuite.tokens.vision_tokens` for DeepSeek-OCR, :func:`ocr2_image_tokens` for
DeepSeek-OCR-2, none for ``"none"``. ``output_tokens`` is the response's
``usage.completion_tokens`` (``evalsuite serve`` also says when its engine counted none).

Several servers (``api_base`` a list: one vLLM per GPU or per node) serve as one: each must
serve the same model at the same version (:data:`SERVER_IDENTITY_FIELDS`), each request goes
to the server with the fewest requests in flight, and a request that failed in a way worth
retrying (connection refused or lost, HTTP 5xx) is retried on another server at once; a server
at fault (those, or no answer within ``timeout_s``) rests, chosen last, for
``backoff_s · 2^(k-1)`` s after its k-th fault in a row (:meth:`OpenAIChatEngine._note`).
:meth:`OpenAIChatEngine.endpoint_counts` says how many requests each one took.

The HTTP client is aiohttp: on a 2-core machine httpx's asynchronous client spent 1.2-3.5 ms of
CPU per request (more with more connections open), aiohttp 0.2-0.3 ms, which is what lets one
client keep a batching server busy.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from PIL import Image

from evalsuite.datasets.pages import render_pdf_page
from evalsuite.engines.base import (
    OCR_MODE,
    EngineBase,
    ImageInput,
    InferenceRequest,
    InferenceResult,
    register_engine,
)
from evalsuite.engines.deepseek_inputs import IMAGE_PLACEHOLDER, load_page_image
from evalsuite.engines.deepseek_ocr import INFER_MAX_CROPS
from evalsuite.engines.deepseek_ocr2 import OCR2_MODES, ocr2_image_tokens
from evalsuite.engines.deepseek_views import FAMILY_VIEWS, image_token_count
from evalsuite.engines.rate_limit import RateLimiter, retry_after_s
from evalsuite.engines.vllm_protocol import MODE_KWARG as VLLM_MODE_KWARG
from evalsuite.engines.weights import checkpoint_identity
from evalsuite.errors import EngineUnavailableError, EvalsuiteError
from evalsuite.images import PNG_SIGNATURE, lossless_png, open_image
from evalsuite.models import (
    CallError,
    Completion,
    ModelProfile,
    RateLimits,
    TaskPrompt,
    TokenPrices,
    UnsupportedTaskError,
    model_profile,
    single_call,
)
from evalsuite.models.convert import ConversionError
from evalsuite.tokens import MODES, text_token_count, vision_tokens

if TYPE_CHECKING:
    import aiohttp

DEFAULT_MAX_TOKENS = 8192
PER_REQUEST = "per-request"
"""``mode`` value for a server that takes each request's mode (``evalsuite serve``)."""
TABLE_CELL_TOKEN_IDS = (128821, 128822)
"""``<td>`` and ``</td>`` in DeepSeek-OCR's tokenizer: the recipe's n-gram whitelist."""
EVALSUITE_SERVER = "evalsuite serve"
"""What ``evalsuite serve`` answers as ``server`` on ``/version``."""


@dataclass(frozen=True)
class ModelFamily:
    """What the served model's family fixes: its modes (None: any) and how a page's vision
    tokens are counted from its size and mode (None: not counted)."""

    modes: tuple[str, ...] | None
    count_vision_tokens: Callable[[int, int, str], Any] | None


def _infer_vision_tokens(width: int, height: int, mode: str) -> Any:
    """DeepSeek-OCR's vision tokens with ``infer()``'s tiling (up to 9 tiles), which evalsuite's
    vLLM plugin and ``evalsuite serve --engine deepseek-ocr`` both run."""
    return vision_tokens(width, height, mode, max_crops=INFER_MAX_CROPS)


MODEL_FAMILIES: dict[str, ModelFamily] = {
    "deepseek-ocr": ModelFamily(tuple(MODES), _infer_vision_tokens),
    "deepseek-ocr-2": ModelFamily(OCR2_MODES, ocr2_image_tokens),
    "none": ModelFamily(None, None),
}

MAX_BACKOFF_DOUBLINGS = 6
"""A backoff or a server's rest is at most ``backoff_s · 2^6`` (32 s at the default 0.5 s)."""
_URL = re.compile(r"https?://[^\s/]+(/\S*)?")
_EXIF_ORIENTATION = 0x0112
_T = TypeVar("_T")


@dataclass(frozen=True)
class ServerInfo:
    """What the server said about itself when the engine was created.

    ``server`` is ``"evalsuite serve"`` or ``"openai-compatible"``; ``version`` is ``/version``'s
    answer (None where the server has none); ``per_request_mode`` and ``keyed_outputs`` are
    ``evalsuite serve``'s: whether it takes each request's mode, and whether its engine's output
    depends on the sample's identity (replay).
    """

    api_base: str
    model: str
    server: str
    version: str | None
    per_request_mode: bool
    keyed_outputs: bool
    max_model_len: int | None = None
    root: str | None = None
    """The model card's ``root``: what vLLM loaded (a hub id or a folder)."""
    modes: tuple[str, ...] | None = None
    """``evalsuite serve``'s engine's modes (None: not said)."""
    model_family: str | None = None
    """``evalsuite serve``'s engine's family, one of :data:`MODEL_FAMILIES` (None: not said)."""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


SERVER_IDENTITY_FIELDS = tuple(f.name for f in fields(ServerInfo) if f.name != "api_base")
"""The fields of :class:`ServerInfo` that several servers of one engine must share."""


@dataclass
class Endpoint:
    """One server of an engine and what it did: POSTs sent (``requests``), answered with a
    usable completion (``completed``) and not (``failed``: whatever the reason), refused for
    its rate limit (``rate_limited``: HTTP 429, counted in ``failed`` too), and the tokens its
    answers reported (``usage.prompt_tokens``, ``usage.completion_tokens``)."""

    info: ServerInfo
    in_flight: int = 0
    requests: int = 0
    completed: int = 0
    failed: int = 0
    rate_limited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures_in_a_row: int = 0
    resting_until: float = field(default=0.0, repr=False)

    @property
    def api_base(self) -> str:
        return self.info.api_base

    def counts(self) -> dict[str, int]:
        return {"requests": self.requests, "completed": self.completed, "failed": self.failed,
                "rate_limited": self.rate_limited, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens}


@dataclass(frozen=True)
class Attempt:
    """One POST's outcome: ``result`` (None: retry it), and ``server_problem``, the server's
    own fault (refused, dropped or timed-out connection, HTTP 5xx, no answer in time) or its
    rate limit (HTTP 429), which rests the server; another 4xx or an unusable answer is the
    request's, not the server's."""

    result: InferenceResult | None
    server_problem: str | None = None
    retry_after_s: float | None = None
    """How long the server asked the client to wait (``Retry-After``), if it did."""
    rate_limited: bool = False
    """The server refused the request for its rate limit (HTTP 429)."""
    usage: Mapping[str, Any] | None = None
    """The answer's ``usage`` (token counts), if it had one."""


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


@register_engine("openai")
class OpenAIChatEngine(EngineBase):
    """Sends each request to an OpenAI-compatible ``/v1/chat/completions``, ``concurrency`` at
    a time; ``infer_batch`` returns results in request order and never raises.

    Options: ``api_base`` (required, e.g. ``http://127.0.0.1:8000/v1``, or a list of such URLs:
    several servers of one model, see the module docstring), ``model`` (default: the first id of
    the first server's ``/v1/models``), ``api_key`` (default ``$OPENAI_API_KEY``, else ``"EMPTY"``),
    ``model_family`` (``deepseek-ocr``, ``deepseek-ocr-2`` or ``none``: the modes and the
    vision-token arithmetic, :data:`MODEL_FAMILIES`; default ``deepseek-ocr``), ``mode`` (the
    server's resolution mode, or ``"per-request"``, the default, for a server that takes each
    request's mode, i.e. ``evalsuite serve``; a stock server without ``model_family`` or
    ``mode`` given is sent the benchmark's prompt text as it is, ``temperature`` 0 and
    ``max_tokens`` only, in one mode, ``native``: :attr:`generic`),
    ``concurrency`` (requests in flight per server), ``timeout_s`` (per
    attempt), ``max_retries`` (after a refused, timed-out or dropped connection or an HTTP 5xx
    or 429 answer, on another server if there is one, else after the server's ``Retry-After``
    or, without one, backoff ``backoff_s · 2^k`` s; another HTTP 4xx answer or no answer within
    ``timeout_s`` is final), ``max_tokens``, ``ngram_size``
    (None: no ``vllm_xargs``), ``window_size``,
    ``whitelist_token_ids``, ``api_key_env`` (the variable holding the key).

    ``model_profile`` names a peer's profile (:mod:`evalsuite.models`): then the engine has one
    mode (``native``), sends the profile's message and decoding fields only, prepares the page
    by its image rule, runs its pipeline (retries, conversion) and records it; ``model``
    defaults to the first of its checkpoints the server serves; ``prompt`` and ``decoding``
    override its prompt text and decoding fields; ``max_tokens`` its length field. An API
    model's profile brings its key's variable (read when ``api_key_env`` is not given), its
    provider's rate limits and its token prices.

    ``requests_per_minute`` and ``tokens_per_minute`` (default: the profile's) hold the
    requests to those limits (:class:`~evalsuite.engines.rate_limit.RateLimiter`);
    ``token_prices`` (:class:`~evalsuite.models.TokenPrices`, default the profile's) prices the
    run's tokens in :meth:`server_info`.
    """

    name = "openai"
    kind = "vlm"
    supported_modes: tuple[str, ...] = (*MODES, *OCR2_MODES, OCR_MODE)
    mode_kwarg: str | None = None
    """The ``mm_processor_kwargs`` key that carries each request's mode (None: not sent)."""
    generic: bool = False
    """A stock server given no model: the benchmark's prompt text, no DeepSeek-only field."""

    def __init__(
        self,
        *,
        api_base: str | Sequence[str],
        model: str | None = None,
        api_key: str | None = None,
        model_family: str | None = None,
        mode: str | None = None,
        concurrency: int = 64,
        timeout_s: float = 600.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_tokens: int | None = None,
        ngram_size: int | None = 30,
        window_size: int = 90,
        whitelist_token_ids: Sequence[int] = TABLE_CELL_TOKEN_IDS,
        model_profile: str | None = None,
        api_key_env: str | None = None,
        prompt: str | None = None,
        decoding: Mapping[str, Any] | None = None,
        requests_per_minute: float | None = None,
        tokens_per_minute: float | None = None,
        token_prices: TokenPrices | None = None,
    ) -> None:
        api_bases = api_base_urls(api_base)
        self.profile = self._peer_profile(model_profile)
        family_given = model_family is not None
        model_family = model_family or "deepseek-ocr"
        if self.profile is not None:
            model_family, mode, ngram_size = "none", OCR_MODE, None
            self.mode_kwarg = None
        elif prompt is not None or decoding:
            raise ValueError("prompt and decoding overrides need a peer model_profile "
                             "(DeepSeek's prompts and decoding are the benchmarks' own)")
        if model_family not in MODEL_FAMILIES:
            raise ValueError(
                f"unknown model_family {model_family!r}; choose one of: {', '.join(MODEL_FAMILIES)}"
            )
        self.model_family = model_family
        self._family = MODEL_FAMILIES[model_family]
        mode = self._default_mode(model_family) if mode is None else mode
        if mode != PER_REQUEST:
            self._check_mode(mode)
        for name, value, minimum in (
            ("concurrency", concurrency, 1),
            ("max_retries", max_retries, 0),
            ("max_tokens", DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
        if not timeout_s > 0 or backoff_s < 0:
            raise ValueError(f"need timeout_s > 0 and backoff_s >= 0, got {timeout_s}, {backoff_s}")
        self.api_bases = api_bases
        self._where = f"the server{'s' if len(api_bases) > 1 else ''} at {', '.join(api_bases)}"
        self.mode = mode
        self.concurrency = concurrency
        self.preferred_batch_size = concurrency * len(api_bases)
        self._post_slots = asyncio.Semaphore(self.preferred_batch_size)
        self.timeout_s = float(timeout_s)
        self.max_retries = max_retries
        self.backoff_s = float(backoff_s)
        api_key = api_key or self._key_from(api_key_env) or self._profile_key(api_bases)
        self.limiter = self._limiter(requests_per_minute, tokens_per_minute)
        self.token_prices = token_prices or (self.profile and self.profile.token_prices)
        self._headers = {"Authorization": f"Bearer {api_key or 'EMPTY'}"}
        wanted: str | Sequence[str] | None = model
        if model is None and self.profile is not None:
            wanted = self.profile.hf_ids
        self._endpoints = [Endpoint(info) for info in self._query_servers(api_bases, wanted)]
        self._info = self._endpoints[0].info
        reported = self._info.model_family
        if reported is not None and self.profile is None:
            if family_given and reported != model_family:
                raise EngineUnavailableError(
                    f"{self._where} runs a {reported} engine, not {model_family}: drop "
                    f"model_family (--served-model) or pass {reported}")
            if not family_given:  # evalsuite serve says how its engine counts
                model_family, self.model_family = reported, reported
                self._family = MODEL_FAMILIES[reported]
        if mode == PER_REQUEST and not (self._info.per_request_mode or self.mode_kwarg):
            if family_given:
                raise EngineUnavailableError(
                    f"{self._where} ({self._info.server}) does not choose the "
                    "resolution mode per request; create the engine with mode=NAME, the mode "
                    "it serves, or use the vllm engine with a vLLM running evalsuite's plugin "
                    "(`make vllm-env`); for another model, name its profile (--model)"
                )
            # a stock server and no model named: the benchmark's prompt, nothing vendor-only
            self.generic, mode, ngram_size = True, OCR_MODE, None
            self.mode, self.model_family, self._family = mode, "none", MODEL_FAMILIES["none"]
            model_family = "none"
        if mode != PER_REQUEST:
            self.supported_modes = (mode,)
        elif self._info.modes is not None and self.mode_kwarg is None:
            self.supported_modes = self._info.modes  # evalsuite serve says what its engine has
        elif self._family.modes is not None:
            self.supported_modes = self._family.modes
        self.keyed_outputs = self._info.keyed_outputs
        context = self._info.max_model_len
        if self.profile is not None:
            self._decoding = dict(self.profile.decoding)
            if max_tokens is not None:
                self._decoding[self.profile.max_tokens_field] = max_tokens
            self._decoding.update(decoding or {})
            self._prompt_override = prompt
            self._overridden = prompt is not None or bool(decoding)
        else:
            self._decoding = {"temperature": 0.0}
            if not self.generic:
                self._decoding["skip_special_tokens"] = False
            max_tokens = DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens
            if context is None or max_tokens < context:
                self._decoding["max_tokens"] = max_tokens
        if ngram_size is not None:
            self._decoding["vllm_xargs"] = {
                "ngram_size": ngram_size,
                "window_size": window_size,
                "whitelist_token_ids": [int(token) for token in whitelist_token_ids],
            }
        self._settings = {
            "api_base": self._info.api_base,
            "model": self._info.model,
            "server": self._info.server,
            "server_version": self._info.version,
            "server_mode": mode,
            "vision_token_arithmetic": model_family,
            "max_model_len": context,
            "max_tokens": self._decoding.get("max_tokens"),
            **self._decoding,
        }
        if self.profile is not None:
            del self._settings["vision_token_arithmetic"]
            self._settings["max_tokens"] = self._decoding.get(self.profile.max_tokens_field)

    @property
    def default_label(self) -> str:
        """What results are keyed on when no label is given: the served model's name, its last
        path part in lower case (``deepseek-ai/DeepSeek-OCR`` and ``/models/DeepSeek-OCR`` are
        both ``deepseek-ocr``), so goldens follow the model rather than the transport. With a
        peer profile: the profile's name when the server runs one of its checkpoints (its model
        id or, under another served name, the ``root`` vLLM loaded), with ``-v<version>`` after
        version 1 and ``+<hash>`` of the prompt and decoding overrides."""
        served = self._info.model.rstrip("/").rsplit("/", 1)[-1].lower()
        if self.profile is None:
            return served
        checkpoints = self.profile.hf_ids
        ours = self._info.model in checkpoints or self._info.root in checkpoints
        label = self.profile.name.lower() if ours else served
        if self.profile.version != 1:
            label += f"-v{self.profile.version}"
        if self._overridden:
            overrides = json.dumps([self._prompt_override, self._decoding], sort_keys=True)
            label += "+" + hashlib.sha256(overrides.encode()).hexdigest()[:8]
        return label

    def server_info(self) -> dict[str, Any]:
        """The server's URL, model id, kind and version, for run metadata; with the
        checkpoint's identity when the model id is a local folder (a server started on
        ``--model-path``), and a peer's profile (:meth:`ModelProfile.settings`). Several
        servers: ``api_base`` lists their URLs."""
        info = self._info.as_dict()
        if self.profile is not None:
            info["model_profile"] = self.profile.settings()
        if self.limiter is not None:
            info["rate_limits"] = asdict(self.limiter.limits)
        if self.token_prices is not None:
            info["token_prices"] = asdict(self.token_prices)
        if len(self._endpoints) > 1:
            info["api_base"] = [endpoint.api_base for endpoint in self._endpoints]
        if Path(self._info.model).is_dir():
            info.update(checkpoint_identity(self._info.model))
        return info

    def endpoint_counts(self) -> dict[str, dict[str, int]]:
        """Per server URL: the POSTs it was sent, answered with a usable completion, and
        failed (:class:`Endpoint`)."""
        return {endpoint.api_base: endpoint.counts() for endpoint in self._endpoints}

    def infer(self, request: InferenceRequest) -> InferenceResult:
        return self.infer_batch([request])[0]

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        """One result per request, in order; a sample that cannot be served carries an error."""
        return _run_coroutine(self._complete_all(requests))

    def build_body(self, request: InferenceRequest) -> tuple[dict[str, Any], EncodedPage | None]:
        """The JSON body of ``request``'s chat completion and the page it sends (None without
        an image). Raises ValueError for a mode the server cannot serve."""
        if request.image is not None and self.mode not in (PER_REQUEST, request.mode):
            raise ValueError(
                f"mode {request.mode!r} cannot be served: {self._where} runs in "
                f"{self.mode!r} mode (vLLM fixes DeepSeek-OCR's resolution per server); send "
                f"this mode to a server started for it, with mode={request.mode!r}"
            )
        self._check_mode(request.mode)
        content: list[dict[str, Any]] = []
        page = None
        if request.image is not None:
            page = encode_page(request.image)
            content.append({"type": "image_url", "image_url": {"url": page.data_url}})
        content.append({"type": "text", "text": chat_text(request.prompt)})
        body: dict[str, Any] = {
            "model": self._info.model,
            "messages": [{"role": "user", "content": content}],
            **self.request_decoding(request),
        }
        if self.mode_kwarg is not None and page is not None:
            body["mm_processor_kwargs"] = {self.mode_kwarg: request.mode}
        if self._info.server == EVALSUITE_SERVER:
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
        text, choice, usage = _message(payload)
        served = payload.get("evalsuite")
        if isinstance(served, Mapping):
            output_tokens = served.get("output_tokens")
            extra = {
                "server_engine": served.get("engine"),
                "server_settings": served.get("settings"),
            }
        else:
            output_tokens = usage.get("completion_tokens")
            extra = {}
        counted = None
        family = self._counting_family(request.mode)
        if page is not None and family.count_vision_tokens is not None:
            counted = family.count_vision_tokens(page.width, page.height, request.mode)
        if self.mode_kwarg is not None and self._info.server != EVALSUITE_SERVER:
            self._check_prompt_tokens(request, page, usage.get("prompt_tokens"))
        return InferenceResult(
            text=text,
            vision_tokens=counted,
            output_tokens=output_tokens if isinstance(output_tokens, int) else None,
            settings={
                **self._settings,
                **self.request_decoding(request),
                "mode": request.mode,
                "finish_reason": choice.get("finish_reason"),
                **extra,
            },
        )

    def request_decoding(self, request: InferenceRequest) -> dict[str, Any]:
        """The decoding fields of ``request``'s body: the engine's, with the request's
        anti-repetition setting (its benchmark's) in ``vllm_xargs`` when it has one and the
        engine sends the n-gram rule at all (``ngram_size`` not None)."""
        setting = request.anti_repetition
        if setting is None or "vllm_xargs" not in self._decoding:
            return self._decoding
        xargs = {
            **self._decoding["vllm_xargs"],
            "ngram_size": setting.ngram_size,
            "window_size": setting.window_size,
        }
        return {**self._decoding, "vllm_xargs": xargs, "anti_repetition_source": setting.source}

    @staticmethod
    def _peer_profile(name: str | None) -> ModelProfile | None:
        """The profile ``name`` when it is a peer's (DeepSeek's keep this engine's own ways)."""
        if name is None:
            return None
        profile = model_profile(name)
        if profile.unavailable is not None:
            raise EngineUnavailableError(f"{profile.name}: {profile.unavailable}")
        return profile if profile.family is None else None

    def _profile_key(self, api_bases: Sequence[str]) -> str | None:
        """The key in the profile's variable (an API model's provider's, e.g. GEMINI_API_KEY;
        ``$OPENAI_API_KEY`` for a self-served model); EngineUnavailableError when it is unset
        and the requests go to the profile's provider, which wants it. Another provider's key
        is never sent."""
        variable = "OPENAI_API_KEY"
        if self.profile is not None and self.profile.api_key_env is not None:
            variable = self.profile.api_key_env
        key = os.environ.get(variable, "").strip()
        if not key and self.profile is not None and self.profile.api_base in api_bases:
            raise EngineUnavailableError(
                f"{self.profile.name} needs its API key at {self.profile.api_base}: set "
                f"{variable} (or name the variable that holds it with --api-key-env VAR)"
            )
        return key or None

    def _limiter(
        self, requests_per_minute: float | None, tokens_per_minute: float | None
    ) -> RateLimiter | None:
        """The limiter for the given limits, else the profile's; None without any."""
        profile_limits = self.profile.rate_limits if self.profile is not None else None
        given = RateLimits(requests_per_minute, tokens_per_minute)
        if profile_limits is not None:
            given = RateLimits(
                requests_per_minute or profile_limits.requests_per_minute,
                tokens_per_minute or profile_limits.tokens_per_minute,
            )
        if given.requests_per_minute is None and given.tokens_per_minute is None:
            return None
        return RateLimiter(given)

    @staticmethod
    def _key_from(variable: str | None) -> str | None:
        """The API key in environment variable ``variable``; ValueError when it is unset."""
        if variable is None:
            return None
        key = os.environ.get(variable, "").strip()
        if not key:
            raise ValueError(f"api_key_env: the environment variable {variable} is not set")
        return key

    def _counting_family(self, mode: str) -> ModelFamily:
        """The family whose arithmetic counts a page's vision tokens in ``mode``: the engine's;
        behind an ``evalsuite serve`` whose engine fixes no family (replay: recordings of any
        engine), the family that has ``mode`` (no two share a mode), ``none`` if none has."""
        if self._family.modes is None or mode in self._family.modes:
            return self._family
        if self._info.server == EVALSUITE_SERVER and self._info.model_family is None:
            return next((family for family in MODEL_FAMILIES.values()
                         if family.modes is not None and mode in family.modes),
                        MODEL_FAMILIES["none"])
        return self._family

    def _default_mode(self, model_family: str) -> str:
        """The ``mode`` when none is given: each request's."""
        return PER_REQUEST

    def _expected_prompt_tokens(self, request: InferenceRequest, page: EncodedPage | None) -> int:
        """Prompt tokens of ``request`` as DeepSeek lays it out: BOS, the page's image tokens
        in the request's mode (none without a page), then the chat text, after a newline when
        a page precedes it."""
        text = chat_text(request.prompt)
        if page is None:
            return 1 + text_token_count(text)
        views = FAMILY_VIEWS[self.model_family][request.mode]
        return 1 + image_token_count(page.width, page.height, views) + text_token_count(
            "\n" + text
        )

    def _check_prompt_tokens(
        self, request: InferenceRequest, page: EncodedPage | None, reported: Any
    ) -> None:
        """ValueError unless the server's ``usage.prompt_tokens`` is DeepSeek's layout."""
        if self.model_family not in FAMILY_VIEWS:
            return
        expected = self._expected_prompt_tokens(request, page)
        if reported != expected:
            raise ValueError(
                f"the server's prompt for {request.mode!r} mode has {reported} tokens where "
                f"DeepSeek's preprocessing gives {expected}: it did not preprocess the page as "
                "DeepSeek does in that mode (a vLLM without evalsuite's plugin? start it from "
                "`make vllm-env`, see docs/gpu_nightly.md)"
            )

    def _check_mode(self, mode: str) -> None:
        """ValueError naming the family's modes if ``mode`` is not one of them (or, behind
        ``evalsuite serve``, not one of its engine's)."""
        served = getattr(self, "_info", None)
        if served is not None and served.modes is not None and self.mode_kwarg is None:
            if mode not in served.modes:
                raise ValueError(f"the server's engine has no mode {mode!r}; it serves: "
                                 f"{', '.join(served.modes)}")
            return
        if self._family.modes is not None and mode not in self._family.modes:
            raise ValueError(
                f"{self.model_family} has no mode {mode!r}; choose one of: "
                f"{', '.join(self._family.modes)}"
            )

    def _query_servers(
        self, api_bases: Sequence[str], model: str | Sequence[str] | None
    ) -> list[ServerInfo]:
        """Each server's :class:`ServerInfo`, the first server choosing the model when none is
        given (or the first it serves of several); EngineUnavailableError if they differ in
        anything but their URL."""
        first = self._query_server(api_bases[0], model)
        infos = [first, *(self._query_server(base, first.model) for base in api_bases[1:])]
        for info in infos[1:]:
            differ = [
                f"{name} {getattr(first, name)!r} vs {getattr(info, name)!r}"
                for name in SERVER_IDENTITY_FIELDS
                if getattr(first, name) != getattr(info, name)
            ]
            if differ:
                raise EngineUnavailableError(
                    f"the servers at {first.api_base} and {info.api_base} do not serve the same "
                    f"model the same way ({'; '.join(differ)}; None: not reported); "
                    "serve one checkpoint with one server version behind every --api-base of "
                    "a run"
                )
        return infos

    def _query_server(self, api_base: str, model: str | Sequence[str] | None) -> ServerInfo:
        """Ask ``/models`` (and ``/version``) who is serving; unreachable -> EngineUnavailable.
        ``model``: the id to use, or several (a profile's checkpoints), the first served."""
        import aiohttp

        try:
            (status, models), (version_status, version) = _run_coroutine(
                _get_json_all(
                    [f"{api_base}/models", f"{api_base.removesuffix('/v1')}/version"],
                    headers=self._headers,
                    timeout_s=min(self.timeout_s, 30.0),
                )
            )
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise EngineUnavailableError(
                f"no OpenAI-compatible server answers at {api_base} "
                f"({type(exc).__name__}: {exc}); start one (`evalsuite serve --engine NAME`, or "
                "vLLM with evalsuite's plugin: docs/gpu_nightly.md) or pass the right --api-base"
            ) from None
        try:
            if status != 200:
                raise ValueError(f"HTTP {status}")
            served = [str(entry["id"]) for entry in models["data"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise EngineUnavailableError(
                f"{api_base}/models did not answer with an OpenAI model list ({exc!r}); "
                "is --api-base the server's /v1 URL?"
            ) from None
        if not served:
            raise EngineUnavailableError(f"the server at {api_base} serves no model")
        candidates = (model,) if isinstance(model, str) else tuple(model or served[:1])
        chosen = next((name for name in candidates if name in served), None)
        if chosen is None:
            wanted = " or ".join(repr(name) for name in candidates)
            hint = (f"; pass --served-model-name NAME if it serves {self.profile.name} under "
                    "another name") if self.profile is not None and model is not None and \
                not isinstance(model, str) else ""
            raise EngineUnavailableError(
                f"the server at {api_base} does not serve {wanted}; it serves: "
                f"{', '.join(served)}{hint}"
            )
        card = next(entry for entry in models["data"] if str(entry["id"]) == chosen)
        context = card.get("max_model_len") if isinstance(card, Mapping) else None
        root = card.get("root") if isinstance(card, Mapping) else None
        if version_status != 200 or not isinstance(version, Mapping):
            version = {}
        return ServerInfo(
            api_base=api_base,
            model=chosen,
            server=str(version.get("server", "openai-compatible")),
            version=None if version.get("version") is None else str(version["version"]),
            per_request_mode=version.get("per_request_mode") is True,
            keyed_outputs=version.get("keyed_outputs") is True,
            max_model_len=context if isinstance(context, int) and context > 0 else None,
            root=None if root is None else str(root),
            modes=_reported_modes(card) or _reported_modes(version),
            model_family=_reported_family(card) or _reported_family(version),
        )

    async def _complete_all(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        import aiohttp

        in_flight = self.concurrency * len(self._endpoints)
        semaphore = asyncio.Semaphore(in_flight)
        self._post_slots = asyncio.Semaphore(in_flight)  # a pipeline's calls share them
        async with aiohttp.ClientSession(
            headers=self._headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            connector=aiohttp.TCPConnector(limit=in_flight),
        ) as session:
            return list(
                await asyncio.gather(
                    *(self._complete(session, semaphore, request) for request in requests)
                )
            )

    async def _complete(
        self,
        session: aiohttp.ClientSession,
        semaphore: asyncio.Semaphore,
        request: InferenceRequest,
    ) -> InferenceResult:
        async with semaphore:
            started = time.perf_counter()
            try:
                result = await self._send(session, request)
            except Exception as exc:  # one sample's failure must not stop the others
                result = InferenceResult(text="", error=f"{type(exc).__name__}: {exc}")
            result.latency_s = time.perf_counter() - started
            if result.error is not None:
                result.settings = {**self._settings, "mode": request.mode, **result.settings}
            return result

    def _choose_endpoint(self, tried: set[str]) -> Endpoint:
        """The server for the next attempt: one not resting before one resting after a
        failure, then one this request has not tried, then the fewest requests in flight,
        then the fewest sent."""
        now = time.monotonic()
        return min(
            self._endpoints,
            key=lambda e: (e.resting_until > now, e.api_base in tried, e.in_flight, e.requests),
        )

    async def _send(
        self, session: aiohttp.ClientSession, request: InferenceRequest
    ) -> InferenceResult:
        """POST with retries, each on another server when one is free; a failure comes back as
        a result with ``error`` set and ``settings["api_base"]`` naming the last server."""
        if self.profile is not None:
            return await self._send_profiled(session, request)
        try:
            if isinstance(request.image, Image.Image):  # PNG-encoding it takes milliseconds
                body, page = await asyncio.to_thread(self.build_body, request)
            else:
                body, page = self.build_body(request)
        except (OSError, ValueError, TypeError) as exc:
            return InferenceResult(
                text="", error=f"cannot send sample {request.sample_id!r}: {exc}"
            )
        return await self._exchange(
            session, body, lambda payload: self.parse_completion(request, page, payload)
        )

    async def _exchange(
        self,
        session: aiohttp.ClientSession,
        body: dict[str, Any],
        parse: Callable[[Any], InferenceResult],
    ) -> InferenceResult:
        """POST ``body`` (retries as :meth:`_send` says); the answer as ``parse`` reads it."""
        attempts = self.max_retries + 1
        tried: set[str] = set()
        problems: list[str] = []
        retry_after: float | None = None
        for _ in range(attempts):
            endpoint = self._choose_endpoint(tried)
            if endpoint.api_base in tried:  # no other server to turn to: wait, then choose
                if retry_after is not None:  # until the first server asked to wait is free
                    rested = min(e.resting_until for e in self._endpoints) - time.monotonic()
                    await asyncio.sleep(max(rested, 0.0))
                else:
                    await asyncio.sleep(self.backoff_s * 2 ** min(
                        len(problems) - len(tried), MAX_BACKOFF_DOUBLINGS))
                endpoint = self._choose_endpoint(tried)
            tried.add(endpoint.api_base)
            url = f"{endpoint.api_base}/chat/completions"
            slot = await self.limiter.acquire() if self.limiter is not None else None
            async with self._post_slots:  # waiting for a connection is not the POST's time
                endpoint.in_flight += 1
                endpoint.requests += 1
                try:
                    attempt = await self._post(session, url, body, parse)
                finally:
                    endpoint.in_flight -= 1
            if self.limiter is not None and slot is not None:
                self.limiter.settle(slot, (attempt.usage or {}).get("total_tokens"))
                if attempt.rate_limited:
                    self.limiter.hold(attempt.retry_after_s or self.backoff_s)
            retry_after = attempt.retry_after_s
            self._note(endpoint, attempt)
            if attempt.result is not None:
                attempt.result.settings["api_base"] = endpoint.api_base
                return attempt.result
            problems.append(f"{url}: {attempt.server_problem}")
            if retry_after is not None and retry_after > self.timeout_s:
                return InferenceResult(
                    text="", error=f"POST {url}: {attempt.server_problem}; the server asks to "
                    f"wait {retry_after:g} s (Retry-After), longer than timeout_s="
                    f"{self.timeout_s:g} s: not retried", settings={"api_base": endpoint.api_base})
        return InferenceResult(
            text="", error=f"POST failed after {attempts} attempts: {'; '.join(problems)}",
            settings={"api_base": endpoint.api_base},
        )

    def task_prompt(self, request: InferenceRequest) -> TaskPrompt:
        """The peer profile's message for ``request``'s task (the ``prompt`` override in place
        of its text); UnsupportedTaskError for a task it has no prompt for."""
        assert self.profile is not None
        prompt = self.profile.task(request.task)
        if self._prompt_override is not None:
            prompt = replace(prompt, text=self._prompt_override)
        return prompt

    def profile_body(
        self, prompt: TaskPrompt, page: Image.Image, decoding: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A peer profile's chat completion: an optional system message, then one user message
        with the page (a PNG data URL) and the text in the profile's order, and ``decoding``
        (the profile's, this call's changes, the overrides) as the body's own fields."""
        image_part = {"type": "image_url", "image_url": {"url": encode_page(page).data_url}}
        text_part = {"type": "text", "text": prompt.user_text}
        content = [image_part, text_part] if prompt.image_first else [text_part, image_part]
        messages: list[dict[str, Any]] = []
        if prompt.system is not None:
            messages.append({"role": "system", "content": prompt.system})
        messages.append({"role": "user", "content": content})
        return {"model": self._info.model, "messages": messages,
                **decoding, **self._decoding_overrides()}

    def _decoding_overrides(self) -> dict[str, Any]:
        """What the engine's decoding changes of the profile's (--decoding, --max-new-tokens):
        applied to every call, after a pipeline's own changes (olmOCR's temperatures)."""
        assert self.profile is not None
        return {k: v for k, v in self._decoding.items() if self.profile.decoding.get(k) != v
                or k not in self.profile.decoding}

    async def _send_profiled(
        self, session: aiohttp.ClientSession, request: InferenceRequest
    ) -> InferenceResult:
        """A peer profile's pipeline for ``request``: the page prepared by its image rule, each
        call POSTed as :meth:`_exchange` does, the answer converted; a sample the profile cannot
        answer (no prompt for its task, no page, every call failed, an answer its converter
        refuses) fails with the reason."""
        profile = self.profile
        assert profile is not None
        calls: list[InferenceResult] = []
        try:
            task_message = self.task_prompt(request)
            if request.image is None:
                raise ValueError(f"{profile.name} needs a page image; sample has none")
            original, page = await asyncio.to_thread(self._prepared_page, request)
        except (UnsupportedTaskError, OSError, ValueError, TypeError) as exc:
            return InferenceResult(
                text="", error=f"cannot send sample {request.sample_id!r}: {exc}")

        async def complete(image: Image.Image, decoding: Mapping[str, Any],
                           prompt: TaskPrompt | None = None) -> Completion:
            body = await asyncio.to_thread(self.profile_body, prompt or task_message, image,
                                           decoding)
            result = await self._exchange(session, body, self._parse_profiled)
            result.settings["decoding"] = {k: v for k, v in body.items()
                                           if k not in ("model", "messages")}
            calls.append(result)
            if result.error is not None:
                raise CallError(result.error)
            return Completion(result.text, result.settings.get("finish_reason"),
                              result.settings.get("usage") or {})

        pipeline = profile.pipeline or single_call
        settings: dict[str, Any] = {
            **self._settings, "mode": request.mode,
            "model_profile": profile.settings(request.task),
            "page": list(original.size),
            "prepared_page": list(page.size),
        }
        if self._overridden:
            settings["model_profile"]["overrides"] = {
                "prompt": self._prompt_override, "decoding": self._decoding_overrides()}
        try:
            answer = await pipeline(profile, request.task or "", original, page, complete)
        except (CallError, ConversionError) as exc:
            last = calls[-1].settings if calls else {}
            return InferenceResult(text="", error=f"{type(exc).__name__}: {exc}", settings={
                **settings, **{k: last[k] for k in ("api_base", "decoding") if k in last},
                "calls": len(calls)})
        last = calls[-1].settings
        tokens = [call.output_tokens for call in calls]
        settings.update({
            "api_base": last.get("api_base"),
            "decoding": last.get("decoding"),
            "finish_reason": last.get("finish_reason"),
            "calls": len(calls),
            "usage": _summed_usage(call.settings.get("usage") or {} for call in calls),
            **answer.details,
        })
        if answer.raw != answer.text:
            settings["raw_answer"] = answer.raw
        return InferenceResult(
            text=answer.text,
            output_tokens=sum(tokens) if all(isinstance(t, int) for t in tokens) else None,
            settings=settings,
        )

    def _prepared_page(self, request: InferenceRequest) -> tuple[Image.Image, Image.Image]:
        """The page upright in RGB (as every engine loads it), and as the profile's image rule
        prepares it; a PDF page (``request.pdf_page``) rendered as the profile's runner renders
        one, where it has a rule of its own, and then prepared by that rule's step."""
        assert self.profile is not None and request.image is not None
        rendering = self.profile.pdf_rendering
        if request.pdf_page is not None and rendering is not None:
            source = request.pdf_page
            try:
                page = render_pdf_page(source.path, source.index, rendering.dpi)
            except (EvalsuiteError, OSError, ValueError, RuntimeError) as exc:  # PdfiumError
                raise ValueError(f"{self.profile.name}'s PDF rendering ({rendering.rule}) of "
                                 f"{source.path} page {source.index + 1}: {exc}") from exc
            prepare = rendering.prepare
        else:
            page = load_page_image(request.image)
            prepare = self.profile.prepare_image
        return page, prepare(page) if prepare is not None else page

    def _parse_profiled(self, payload: Any) -> InferenceResult:
        """One peer call's completion: its text, finish reason and usage."""
        text, choice, usage = _message(payload)
        output_tokens = usage.get("completion_tokens")
        return InferenceResult(
            text=text,
            output_tokens=output_tokens if isinstance(output_tokens, int) else None,
            settings={"finish_reason": choice.get("finish_reason"), "usage": dict(usage)},
        )

    def _note(self, endpoint: Endpoint, attempt: Attempt) -> None:
        """Count an attempt on ``endpoint``, and rest the server after a fault of its own: for
        ``backoff_s · 2^(k-1)`` s after its k-th (at most :data:`MAX_BACKOFF_DOUBLINGS` + 1)
        fault in a row. A fault that comes while the server rests (a request sent before the rest
        began, or while every server rested) does not lengthen it; an answer ends it."""
        if attempt.result is not None and attempt.result.error is None:
            endpoint.completed += 1
        else:
            endpoint.failed += 1
        endpoint.rate_limited += attempt.rate_limited
        prompt, completion = billed_tokens(attempt.usage or {})
        endpoint.prompt_tokens += prompt
        endpoint.completion_tokens += completion
        now = time.monotonic()
        if attempt.retry_after_s is not None:  # the server said how long: that is the rest
            endpoint.resting_until = max(endpoint.resting_until, now + attempt.retry_after_s)
            return
        if attempt.server_problem is None:
            if attempt.result is not None and attempt.result.error is None:
                endpoint.failures_in_a_row, endpoint.resting_until = 0, 0.0
            return
        if endpoint.resting_until > now:
            return
        endpoint.failures_in_a_row += 1
        doublings = min(endpoint.failures_in_a_row - 1, MAX_BACKOFF_DOUBLINGS)
        endpoint.resting_until = now + self.backoff_s * 2**doublings

    async def _post(
        self,
        session: aiohttp.ClientSession,
        url: str,
        body: dict[str, Any],
        parse: Callable[[Any], InferenceResult],
    ) -> Attempt:
        """One POST of ``body`` to ``url`` (see :class:`Attempt`)."""
        import aiohttp

        try:
            async with session.post(url, json=body) as response:
                status, raw = response.status, await response.read()
                headers = response.headers
        except aiohttp.ConnectionTimeoutError as exc:
            return Attempt(None, f"{type(exc).__name__}: {exc or 'connect timeout'}")
        except TimeoutError:
            message = f"no answer within timeout_s={self.timeout_s:g} s"
            return Attempt(InferenceResult(
                text="", error=f"POST {url}: {message} (not retried; raise timeout_s for long "
                "pages)"), message)
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            return Attempt(None, f"{type(exc).__name__}: {exc or 'connection lost'}")
        if status >= 500 or status == 429:
            return Attempt(None, f"HTTP {status}: {_error_message(raw)}",
                           retry_after_s=retry_after_s(headers), rate_limited=status == 429)
        if status >= 400:
            return Attempt(InferenceResult(
                text="", error=f"POST {url}: HTTP {status} (not retried): {_error_message(raw)}"))
        try:
            payload = json.loads(raw)
            usage = payload.get("usage") if isinstance(payload, Mapping) else None
            return Attempt(parse(payload), usage=usage if isinstance(usage, Mapping) else None)
        except ValueError as exc:
            return Attempt(InferenceResult(text="", error=f"POST {url}: unusable answer: {exc}"))


@register_engine("vllm")
class VllmChatEngine(OpenAIChatEngine):
    """:class:`OpenAIChatEngine` for a vLLM that runs evalsuite's plugin: every mode of the
    family, each request's sent in ``mm_processor_kwargs`` and checked against the answer's
    ``usage.prompt_tokens`` (see the module docstring)."""

    name = "vllm"
    supported_modes: tuple[str, ...] = (*MODES, *OCR2_MODES)
    mode_kwarg = VLLM_MODE_KWARG


def api_base_urls(api_base: str | Sequence[str]) -> tuple[str, ...]:
    """``api_base`` (a URL or several) as a tuple of server URLs without a trailing slash;
    ValueError naming a value that is not an http(s) URL or a server named twice."""
    given = (api_base,) if isinstance(api_base, str) else tuple(api_base)
    urls: list[str] = []
    for url in given:
        if not isinstance(url, str) or not _URL.fullmatch(url):
            raise ValueError(f"{url!r}: expected an http(s) URL like http://127.0.0.1:8000/v1")
        if url.rstrip("/") in urls:
            raise ValueError(f"{url!r}: this server is already given")
        urls.append(url.rstrip("/"))
    if not urls:
        raise ValueError("api_base names no server")
    return tuple(urls)


def _reported_family(answer: Any) -> str | None:
    """The ``model_family`` of an ``evalsuite serve`` model card or ``/version`` answer, when it
    is one of :data:`MODEL_FAMILIES` (None otherwise)."""
    family = answer.get("model_family") if isinstance(answer, Mapping) else None
    return family if isinstance(family, str) and family in MODEL_FAMILIES else None


def _reported_modes(answer: Any) -> tuple[str, ...] | None:
    """The ``modes`` list of an ``evalsuite serve`` model card or ``/version`` answer (None:
    none given)."""
    modes = answer.get("modes") if isinstance(answer, Mapping) else None
    if isinstance(modes, list) and modes and all(isinstance(m, str) for m in modes):
        return tuple(modes)
    return None


def served_modes(api_base: str, timeout_s: float = 10.0) -> tuple[str, ...] | None:
    """The modes an ``evalsuite serve`` at ``api_base`` runs (its ``/version``; empty: any
    mode); None for another server or none answering (the engine then says why when it is
    created)."""
    import aiohttp

    try:
        ((status, version),) = _run_coroutine(_get_json_all(
            [f"{api_base.rstrip('/').removesuffix('/v1')}/version"], headers={},
            timeout_s=timeout_s))
    except (aiohttp.ClientError, TimeoutError):
        return None
    if status != 200 or not isinstance(version, Mapping):
        return None
    if version.get("server") != EVALSUITE_SERVER:
        return None
    return _reported_modes(version) or ()


def _message(payload: Any) -> tuple[str, Mapping[str, Any], Mapping[str, Any]]:
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


def billed_tokens(usage: Mapping[str, Any]) -> tuple[int, int]:
    """(prompt, completion) tokens of an answer's ``usage`` as billed: where ``total_tokens``
    exceeds the two (Gemini's OpenAI-compatible endpoint leaves its thinking out of
    ``completion_tokens``), the rest counts as completion, which the providers bill it as.
    Counts that are not whole numbers >= 0 count 0."""
    def count(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 \
            else 0

    prompt, completion = count("prompt_tokens"), count("completion_tokens")
    return prompt, max(completion, count("total_tokens") - prompt)


def _summed_usage(usages: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """The token counts of several calls' ``usage``, field by field (integer fields only)."""
    total: dict[str, int] = {}
    for usage in usages:
        for name, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                total[name] = total.get(name, 0) + value
    return total


def _error_message(raw: bytes) -> str:
    """The message of an error answer: OpenAI's ``error.message``, FastAPI's ``detail``, or the
    start of the body."""
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    if isinstance(payload, Mapping):
        error = payload.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])
        if payload.get("detail"):
            return str(payload["detail"])
    return raw[:500].decode("utf-8", errors="replace") or "(empty body)"


async def _get_json_all(
    urls: Sequence[str], *, headers: Mapping[str, str], timeout_s: float
) -> list[tuple[int, Any]]:
    """``(status, parsed JSON or None)`` of a GET of each URL, in turn."""
    import aiohttp

    answers = []
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(headers=dict(headers), timeout=timeout) as session:
        for url in urls:
            async with session.get(url) as response:
                status, raw = response.status, await response.read()
            try:
                answers.append((status, json.loads(raw)))
            except ValueError:
                answers.append((status, None))
    return answers


def _run_coroutine(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to completion from synchronous code, also under a running event loop
    (in a worker thread then)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
