"""The ``openai`` and ``vllm`` engines: the served engine's options wired to its transport, its
servers' identity and the request shape chosen for the model they serve."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evalsuite.engines.base import (
    OCR_MODE,
    EngineBase,
    InferenceRequest,
    InferenceResult,
    register_engine,
)
from evalsuite.engines.deepseek_ocr2 import OCR2_MODES
from evalsuite.engines.rate_limit import RateLimiter
from evalsuite.engines.served.chat import DEFAULT_MAX_TOKENS, ChatShape, StockShape
from evalsuite.engines.served.deepseek import TABLE_CELL_TOKEN_IDS, DeepSeekShape
from evalsuite.engines.served.discovery import engine_family, query_servers
from evalsuite.engines.served.families import PER_REQUEST, check_family, check_family_mode
from evalsuite.engines.served.profile import ProfileShape, peer_profile
from evalsuite.engines.served.shapes import EncodedPage, RequestShape
from evalsuite.engines.served.transport import (
    Exchange,
    Transport,
    api_base_urls,
    rate_limiter,
    resolve_api_key,
    run_coroutine,
    servers_phrase,
)
from evalsuite.engines.vllm_protocol import MODE_KWARG as VLLM_MODE_KWARG
from evalsuite.engines.weights import checkpoint_identity
from evalsuite.errors import EngineUnavailableError
from evalsuite.models import ModelProfile, TokenPrices
from evalsuite.tokens import MODES


@register_engine("openai")
class OpenAIChatEngine(EngineBase):
    """Sends each request to an OpenAI-compatible ``/v1/chat/completions``, ``concurrency`` at
    a time; ``infer_batch`` returns results in request order and never raises.

    Options: ``api_base`` (required, e.g. ``http://127.0.0.1:8000/v1``, or a list of such URLs:
    several servers of one model, :mod:`~evalsuite.engines.served.transport`), ``model``
    (default: the first id of the first server's ``/v1/models``), ``api_key`` (default
    ``$OPENAI_API_KEY``, else ``"EMPTY"``), ``model_family`` (``deepseek-ocr``,
    ``deepseek-ocr-2`` or ``none``: the modes and the vision-token arithmetic,
    :data:`~evalsuite.engines.served.families.MODEL_FAMILIES`; default ``deepseek-ocr``),
    ``mode`` (the server's resolution mode, or ``"per-request"``, the default, for a server
    that takes each request's mode, i.e. ``evalsuite serve``; a stock server without
    ``model_family`` or ``mode`` given is sent the benchmark's prompt text as it is,
    ``temperature`` 0 and ``max_tokens`` only, in one mode, ``native``: :attr:`generic`),
    ``concurrency`` (requests in flight per server), ``timeout_s`` (per attempt),
    ``max_retries`` and ``backoff_s`` (:class:`~evalsuite.engines.served.transport.Transport`),
    ``max_tokens``, ``ngram_size`` (None: no ``vllm_xargs``), ``window_size``,
    ``whitelist_token_ids`` (:class:`~evalsuite.engines.served.deepseek.DeepSeekShape`),
    ``api_key_env`` (the variable holding the key).

    ``model_profile`` names a peer's profile (:mod:`evalsuite.models`): then the engine has one
    mode (``native``), sends the profile's message and decoding fields only, prepares the page
    by its image rule, runs its pipeline (retries, conversion) and records it
    (:class:`~evalsuite.engines.served.profile.ProfileShape`); ``model`` defaults to the first
    of its checkpoints the server serves; ``prompt`` and ``decoding`` override its prompt text
    and decoding fields; ``max_tokens`` its length field. An API model's profile brings its
    key's variable (read when ``api_key_env`` is not given), its provider's rate limits and its
    token prices.

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
    profile: ModelProfile | None
    """The peer model profile the engine runs (None: DeepSeek's requests or a stock server's)."""
    shape: RequestShape
    """How the engine asks its model, chosen when it is created."""

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
        profile = peer_profile(model_profile)
        family_given = model_family is not None
        model_family = model_family or "deepseek-ocr"
        if profile is not None:
            model_family, mode = "none", OCR_MODE
        elif prompt is not None or decoding:
            raise ValueError("prompt and decoding overrides need a peer model_profile "
                             "(DeepSeek's prompts and decoding are the benchmarks' own)")
        check_family(model_family)
        mode = PER_REQUEST if mode is None else mode
        if mode != PER_REQUEST:
            check_family_mode(model_family, mode)
        _check_numbers(concurrency, max_retries, max_tokens, timeout_s, backoff_s)
        where = servers_phrase(api_bases)
        key = resolve_api_key(api_key, api_key_env, profile, api_bases)
        limiter = rate_limiter(requests_per_minute, tokens_per_minute,
                               profile.rate_limits if profile is not None else None)
        self.token_prices = token_prices or (profile and profile.token_prices)
        headers = {"Authorization": f"Bearer {key or 'EMPTY'}"}
        wanted = profile.hf_ids if model is None and profile is not None else model
        infos = query_servers(api_bases, wanted, headers=headers, timeout_s=float(timeout_s),
                              profile_name=None if profile is None else profile.name)
        self.server = infos[0]
        self.profile = profile
        self.api_bases = api_bases
        self.concurrency = concurrency
        self.preferred_batch_size = concurrency * len(api_bases)
        self.keyed_outputs = self.server.keyed_outputs
        self.transport = Transport(
            api_bases, headers=headers, concurrency=concurrency, timeout_s=float(timeout_s),
            max_retries=max_retries, backoff_s=float(backoff_s), limiter=limiter)
        if profile is not None:
            self.shape = ProfileShape(profile, self.server, max_tokens=max_tokens, prompt=prompt,
                                      decoding=decoding)
        else:
            model_family = engine_family(self.server, model_family, family_given, where)
            if mode == PER_REQUEST and not (self.server.per_request_mode or self.mode_kwarg):
                if family_given:
                    raise EngineUnavailableError(
                        f"{where} ({self.server.server}) does not choose the "
                        "resolution mode per request; create the engine with mode=NAME, the "
                        "mode it serves, or use the vllm engine with a vLLM running evalsuite's "
                        "plugin (`make vllm-env`); for another model, name its profile (--model)"
                    )
                # a stock server and no model named: the benchmark's prompt, nothing vendor-only
                self.shape = StockShape(self.server, where, max_tokens=max_tokens)
            else:
                self.shape = DeepSeekShape(
                    self.server, where, mode=mode, family=model_family,
                    mode_kwarg=self.mode_kwarg, max_tokens=max_tokens, ngram_size=ngram_size,
                    window_size=window_size, whitelist_token_ids=whitelist_token_ids)
        self.mode = self.shape.mode
        self.model_family = self.shape.family
        modes = self.shape.modes()
        if modes is not None:
            self.supported_modes = modes

    @property
    def generic(self) -> bool:
        """A stock server given no model: the benchmark's prompt text, no DeepSeek-only field."""
        return isinstance(self.shape, StockShape)

    @property
    def limiter(self) -> RateLimiter | None:
        """What holds the requests to their rate limits (None: nothing)."""
        return self.transport.limiter

    @limiter.setter
    def limiter(self, limiter: RateLimiter | None) -> None:
        self.transport.limiter = limiter

    @property
    def default_label(self) -> str:
        """What results are keyed on when no label is given: the served model's name, its last
        path part in lower case (``deepseek-ai/DeepSeek-OCR`` and ``/models/DeepSeek-OCR`` are
        both ``deepseek-ocr``), so goldens follow the model rather than the transport. With a
        peer profile: the profile's name when the server runs one of its checkpoints
        (:meth:`ProfileShape.label <evalsuite.engines.served.profile.ProfileShape.label>`)."""
        return self.shape.label()

    def server_info(self) -> dict[str, Any]:
        """The server's URL, model id, kind and version, for run metadata; with the
        checkpoint's identity when the model id is a local folder (a server started on
        ``--model-path``), and a peer's profile (:meth:`ModelProfile.settings`). Several
        servers: ``api_base`` lists their URLs."""
        info = {**self.server.as_dict(), **self.shape.details()}
        if self.limiter is not None:
            info["rate_limits"] = asdict(self.limiter.limits)
        if self.token_prices is not None:
            info["token_prices"] = asdict(self.token_prices)
        if len(self.api_bases) > 1:
            info["api_base"] = list(self.api_bases)
        if Path(self.server.model).is_dir():
            info.update(checkpoint_identity(self.server.model))
        return info

    def endpoint_counts(self) -> dict[str, dict[str, int]]:
        """Per server URL: the POSTs it was sent, answered with a usable completion, and
        failed (:class:`~evalsuite.engines.served.transport.Endpoint`)."""
        return self.transport.endpoint_counts()

    def infer(self, request: InferenceRequest) -> InferenceResult:
        return self.infer_batch([request])[0]

    def infer_batch(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        """One result per request, in order; a sample that cannot be served carries an error."""
        return run_coroutine(self._complete_all(requests))

    def build_body(self, request: InferenceRequest) -> tuple[dict[str, Any], EncodedPage | None]:
        """The JSON body of ``request``'s chat completion and the page it sends
        (:meth:`ChatShape.build_body <evalsuite.engines.served.chat.ChatShape.build_body>`);
        TypeError for a peer profile, whose pipeline makes its own calls."""
        return self._chat_shape().build_body(request)

    def parse_completion(
        self, request: InferenceRequest, page: EncodedPage | None, payload: Any
    ) -> InferenceResult:
        """The result in a chat-completion response (parsed JSON); ValueError if it has none
        (:meth:`ChatShape.parse_completion
        <evalsuite.engines.served.chat.ChatShape.parse_completion>`)."""
        return self._chat_shape().parse_completion(request, page, payload)

    def _chat_shape(self) -> ChatShape:
        if not isinstance(self.shape, ChatShape):
            raise TypeError(f"{type(self.shape).__name__} makes its own calls, not one body "
                            "per request")
        return self.shape

    async def _complete_all(self, requests: Sequence[InferenceRequest]) -> list[InferenceResult]:
        semaphore = asyncio.Semaphore(self.transport.in_flight)
        async with self.transport.session() as exchange:
            return list(await asyncio.gather(
                *(self._complete(exchange, semaphore, request) for request in requests)))

    async def _complete(
        self, exchange: Exchange, semaphore: asyncio.Semaphore, request: InferenceRequest
    ) -> InferenceResult:
        async with semaphore:
            started = time.perf_counter()
            try:
                result = await self.shape.send(request, exchange)
            except Exception as exc:  # one sample's failure must not stop the others
                result = InferenceResult(text="", error=f"{type(exc).__name__}: {exc}")
            result.latency_s = time.perf_counter() - started
            if result.error is not None:
                result.settings = {**self.shape.settings, "mode": request.mode,
                                   **result.settings}
            return result


@register_engine("vllm")
class VllmChatEngine(OpenAIChatEngine):
    """:class:`OpenAIChatEngine` for a vLLM that runs evalsuite's plugin: every mode of the
    family, each request's sent in ``mm_processor_kwargs`` and checked against the answer's
    ``usage.prompt_tokens`` (:mod:`~evalsuite.engines.served.deepseek`)."""

    name = "vllm"
    supported_modes: tuple[str, ...] = (*MODES, *OCR2_MODES)
    mode_kwarg = VLLM_MODE_KWARG


def _check_numbers(
    concurrency: int, max_retries: int, max_tokens: int | None, timeout_s: float,
    backoff_s: float,
) -> None:
    """ValueError unless ``concurrency`` >= 1, ``max_retries`` >= 0 and ``max_tokens`` (None:
    the default) >= 1 are ints, ``timeout_s`` > 0 and ``backoff_s`` >= 0."""
    for name, value, minimum in (
        ("concurrency", concurrency, 1),
        ("max_retries", max_retries, 0),
        ("max_tokens", DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    if not timeout_s > 0 or backoff_s < 0:
        raise ValueError(f"need timeout_s > 0 and backoff_s >= 0, got {timeout_s}, {backoff_s}")
