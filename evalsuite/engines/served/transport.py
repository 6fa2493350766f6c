"""The served engine's transport: its servers' URLs and API key, the POSTs to them with retries,
rests and backoff, its rate limits, and the choice of server for each request.

Several servers (``api_base`` a list: one vLLM per GPU or per node) serve as one: each request
goes to the server with the fewest requests in flight, and a request that failed in a way worth
retrying (connection refused or lost, HTTP 5xx) is retried on another server at once; a server
at fault (those, or no answer within ``timeout_s``) rests, chosen last, for
``backoff_s · 2^(k-1)`` s after its k-th fault in a row (:meth:`Transport.note`).
:meth:`Transport.endpoint_counts` says how many requests each one took.

The HTTP client is aiohttp: on a 2-core machine httpx's asynchronous client spent 1.2-3.5 ms of
CPU per request (more with more connections open), aiohttp 0.2-0.3 ms, which is what lets one
client keep a batching server busy.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import os
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from evalsuite.engines.base import InferenceResult
from evalsuite.engines.rate_limit import RateLimiter, retry_after_s
from evalsuite.engines.served.billing import billed_tokens
from evalsuite.errors import EngineUnavailableError
from evalsuite.models import ModelProfile, RateLimits

if TYPE_CHECKING:
    import aiohttp

MAX_BACKOFF_DOUBLINGS = 6
"""A backoff or a server's rest is at most ``backoff_s · 2^6`` (32 s at the default 0.5 s)."""
_URL = re.compile(r"https?://[^\s/]+(/\S*)?")
_T = TypeVar("_T")

Parse = Callable[[Any], InferenceResult]
"""Reads a chat-completion answer (parsed JSON) into a result; ValueError if it has none."""
Exchange = Callable[[dict[str, Any], Parse], Awaitable[InferenceResult]]
"""POSTs a body with the transport's retries and reads the answer (:meth:`Transport.exchange`,
bound to a batch's HTTP session)."""


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


def servers_phrase(api_bases: Sequence[str]) -> str:
    """``the server at URL`` or ``the servers at URL, URL``: the engine's servers in messages."""
    return f"the server{'s' if len(api_bases) > 1 else ''} at {', '.join(api_bases)}"


def resolve_api_key(
    given: str | None, variable: str | None, profile: ModelProfile | None,
    api_bases: Sequence[str],
) -> str | None:
    """The API key: ``given``, else the one in environment variable ``variable`` (ValueError when
    it is unset), else the profile's variable's (:func:`_profile_key`); None: no key."""
    return given or _key_from(variable) or _profile_key(profile, api_bases)


def _key_from(variable: str | None) -> str | None:
    """The API key in environment variable ``variable``; ValueError when it is unset."""
    if variable is None:
        return None
    key = os.environ.get(variable, "").strip()
    if not key:
        raise ValueError(f"api_key_env: the environment variable {variable} is not set")
    return key


def _profile_key(profile: ModelProfile | None, api_bases: Sequence[str]) -> str | None:
    """The key in the profile's variable (an API model's provider's, e.g. GEMINI_API_KEY;
    ``$OPENAI_API_KEY`` for a self-served model or none); EngineUnavailableError when it is unset
    and the requests go to the profile's provider, which wants it. Another provider's key is
    never sent."""
    variable = "OPENAI_API_KEY"
    if profile is not None and profile.api_key_env is not None:
        variable = profile.api_key_env
    key = os.environ.get(variable, "").strip()
    if not key and profile is not None and profile.api_base in api_bases:
        raise EngineUnavailableError(
            f"{profile.name} needs its API key at {profile.api_base}: set "
            f"{variable} (or name the variable that holds it with --api-key-env VAR)"
        )
    return key or None


def rate_limiter(
    requests_per_minute: float | None, tokens_per_minute: float | None,
    profile_limits: RateLimits | None,
) -> RateLimiter | None:
    """The limiter for the given limits, each else the profile's; None without any."""
    given = RateLimits(requests_per_minute, tokens_per_minute)
    if profile_limits is not None:
        given = RateLimits(
            requests_per_minute or profile_limits.requests_per_minute,
            tokens_per_minute or profile_limits.tokens_per_minute,
        )
    if given.requests_per_minute is None and given.tokens_per_minute is None:
        return None
    return RateLimiter(given)


@dataclass
class Endpoint:
    """One server of an engine and what it did: POSTs sent (``requests``), answered with a
    usable completion (``completed``) and not (``failed``: whatever the reason), refused for
    its rate limit (``rate_limited``: HTTP 429, counted in ``failed`` too), and the tokens its
    answers reported (``usage.prompt_tokens``, ``usage.completion_tokens``)."""

    api_base: str
    in_flight: int = 0
    requests: int = 0
    completed: int = 0
    failed: int = 0
    rate_limited: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failures_in_a_row: int = 0
    resting_until: float = field(default=0.0, repr=False)

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


class Transport:
    """POSTs to the servers of one engine (``api_bases``), ``concurrency`` per server at a
    time, with ``headers`` (the API key) and within ``limiter``'s rate limits.

    ``timeout_s`` bounds each attempt; ``max_retries`` retries follow a refused, timed-out or
    dropped connection or an HTTP 5xx or 429 answer, on another server if there is one, else
    after the server's ``Retry-After`` or, without one, backoff ``backoff_s · 2^k`` s; another
    HTTP 4xx answer or no answer within ``timeout_s`` is final.
    """

    def __init__(
        self,
        api_bases: Sequence[str],
        *,
        headers: Mapping[str, str],
        concurrency: int,
        timeout_s: float,
        max_retries: int,
        backoff_s: float,
        limiter: RateLimiter | None,
    ) -> None:
        self.endpoints = [Endpoint(api_base) for api_base in api_bases]
        self.headers = dict(headers)
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.limiter = limiter

    @property
    def in_flight(self) -> int:
        """Requests in flight at most: ``concurrency`` per server."""
        return self.concurrency * len(self.endpoints)

    def endpoint_counts(self) -> dict[str, dict[str, int]]:
        """Per server URL: the POSTs it was sent, answered with a usable completion, and
        failed (:class:`Endpoint`)."""
        return {endpoint.api_base: endpoint.counts() for endpoint in self.endpoints}

    @contextlib.asynccontextmanager
    async def session(self) -> AsyncIterator[Exchange]:
        """An HTTP session for one batch; yields :meth:`exchange` bound to it (the batch's
        calls, a pipeline's several included, share its :attr:`in_flight` POST slots)."""
        import aiohttp

        post_slots = asyncio.Semaphore(self.in_flight)
        async with aiohttp.ClientSession(
            headers=self.headers,
            timeout=aiohttp.ClientTimeout(total=self.timeout_s),
            connector=aiohttp.TCPConnector(limit=self.in_flight),
        ) as session:
            yield functools.partial(self.exchange, session, post_slots)

    async def exchange(
        self,
        session: aiohttp.ClientSession,
        post_slots: asyncio.Semaphore,
        body: dict[str, Any],
        parse: Parse,
    ) -> InferenceResult:
        """POST ``body`` with retries, each on another server when one is free; the answer as
        ``parse`` reads it. A failure comes back as a result with ``error`` set; every result's
        ``settings["api_base"]`` names the last server."""
        attempts = self.max_retries + 1
        tried: set[str] = set()
        problems: list[str] = []
        retry_after: float | None = None
        for _ in range(attempts):
            endpoint = self._choose_endpoint(tried)
            if endpoint.api_base in tried:  # no other server to turn to: wait, then choose
                if retry_after is not None:  # until the first server asked to wait is free
                    rested = min(e.resting_until for e in self.endpoints) - time.monotonic()
                    await asyncio.sleep(max(rested, 0.0))
                else:
                    await asyncio.sleep(self.backoff_s * 2 ** min(
                        len(problems) - len(tried), MAX_BACKOFF_DOUBLINGS))
                endpoint = self._choose_endpoint(tried)
            tried.add(endpoint.api_base)
            url = f"{endpoint.api_base}/chat/completions"
            slot = await self.limiter.acquire() if self.limiter is not None else None
            async with post_slots:  # waiting for a connection is not the POST's time
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
            self.note(endpoint, attempt)
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

    def _choose_endpoint(self, tried: set[str]) -> Endpoint:
        """The server for the next attempt: one not resting before one resting after a
        failure, then one this request has not tried, then the fewest requests in flight,
        then the fewest sent."""
        now = time.monotonic()
        return min(
            self.endpoints,
            key=lambda e: (e.resting_until > now, e.api_base in tried, e.in_flight, e.requests),
        )

    def note(self, endpoint: Endpoint, attempt: Attempt) -> None:
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
        self, session: aiohttp.ClientSession, url: str, body: dict[str, Any], parse: Parse
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


def run_coroutine(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` to completion from synchronous code, also under a running event loop
    (in a worker thread then)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()
