"""Keeping a client within a provider's requests-per-minute and tokens-per-minute limits, and
reading a server's ``Retry-After``.

:class:`RateLimiter` keeps a sliding window of :data:`WINDOW_S` seconds: a request starts only
when fewer than ``requests_per_minute`` requests started within the window, and when the tokens
of the window's requests (``usage.total_tokens`` of those answered; for those still in flight,
the mean of the answered so far) leave room for one more such request. A request alone in the
window always starts, so a limit below one request's tokens slows a run but cannot stop it.
"""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from evalsuite.models import RateLimits

WINDOW_S = 60.0
"""The window the limits are per, in seconds."""


@dataclass
class _Start:
    leaves_at: float
    """When it leaves the window: its start plus the window."""
    tokens: int | None = None
    """``usage.total_tokens`` of its answer; None while in flight or when none was reported."""


class RateLimiter:
    """Waits before each request until :class:`~evalsuite.models.RateLimits` allow it
    (module docstring); the limits hold per ``window_s`` seconds (a minute unless a test
    shortens it). ``clock`` and ``sleep`` are injectable for tests."""

    def __init__(
        self,
        limits: RateLimits,
        *,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.limits = limits
        self.window_s = window_s
        self._clock = clock
        self._sleep = sleep
        self._starts: deque[_Start] = deque()
        self._answered_tokens = 0
        self._answered = 0
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None
        self.waited_s = 0.0
        """Seconds requests spent waiting for the limits, summed."""

    async def acquire(self) -> _Start:
        """Wait until one more request fits; the request's handle for :meth:`settle`."""
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:  # each batch runs its own loop
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:  # one waiter at a time keeps the order of arrival
            while True:
                now = self._clock()
                delay = self._delay(now)
                if delay <= 0:
                    start = _Start(now + self.window_s)
                    self._starts.append(start)
                    return start
                self.waited_s += delay
                await self._sleep(delay)

    def settle(self, start: _Start, total_tokens: int | None) -> None:
        """Record the tokens the answer to ``start``'s request used (None: not reported)."""
        if isinstance(total_tokens, int) and total_tokens >= 0:
            start.tokens = total_tokens
            self._answered_tokens += total_tokens
            self._answered += 1

    def _delay(self, now: float) -> float:
        """Seconds until a request may start (0: now)."""
        while self._starts and self._starts[0].leaves_at <= now:
            self._starts.popleft()
        if not self._starts:
            return 0.0
        until_oldest_leaves = self._starts[0].leaves_at - now
        rpm, tpm = self.limits.requests_per_minute, self.limits.tokens_per_minute
        if rpm is not None and len(self._starts) >= rpm:
            return until_oldest_leaves
        if tpm is not None:
            mean = self._answered_tokens / self._answered if self._answered else 0.0
            used = sum(mean if s.tokens is None else s.tokens for s in self._starts)
            if used + mean > tpm:
                return until_oldest_leaves
        return 0.0


def retry_after_s(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """How long a server asks a client to wait: ``retry-after-ms`` (OpenAI's, milliseconds),
    else ``Retry-After`` in seconds or as an HTTP date (RFC 9110 §10.2.3); None when neither is
    given or readable. Never negative."""
    lowered = {key.lower(): value for key, value in headers.items()}
    milliseconds = lowered.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(float(milliseconds) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)
