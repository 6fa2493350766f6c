"""Keeping a client within a provider's requests-per-minute and tokens-per-minute limits, and
reading a server's ``Retry-After``.

:class:`RateLimiter` keeps a sliding window of :data:`WINDOW_S` seconds: a request starts only
when fewer than ``requests_per_minute`` requests started within the window, and when the tokens
of the window's requests (``usage.total_tokens`` of those answered; for those still in flight,
the mean of the answered so far) leave room for one more such request. Until a first answer
says what a request costs, one request at a time is in flight. A request alone in the window
always starts, so a limit below one request's tokens slows a run but cannot stop it. After the
provider refused a request for its limit (HTTP 429), no request starts before the wait it asked
for (:meth:`RateLimiter.hold`).
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from evalsuite.models import RateLimits

WINDOW_S = 60.0
"""The window the limits are per, in seconds."""


@dataclass
class Slot:
    """A started request in the window: when it leaves it (its start plus the window), and the
    ``usage.total_tokens`` of its answer (None while in flight or when none was reported)."""

    leaves_at: float
    tokens: int | None = None


class RateLimiter:
    """Waits before each request until :class:`~evalsuite.models.RateLimits` allow it
    (module docstring); the limits hold per ``window_s`` seconds (a minute unless a test
    shortens it). ``clock`` and ``sleep`` are injectable for tests; without ``sleep``, a waiting
    request also looks again as soon as an answer or a hold changes the budget."""

    def __init__(
        self,
        limits: RateLimits,
        *,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self.limits = limits
        self.window_s = window_s
        self._clock = clock
        self._sleep = sleep
        self._slots: deque[Slot] = deque()
        self._answered_tokens = 0
        self._answered = 0
        self._held_until = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = asyncio.Lock()
        self._changed = asyncio.Event()

    async def acquire(self) -> Slot:
        """Wait until one more request fits; its slot, for :meth:`settle`."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # each batch runs its own event loop
            self._loop, self._lock, self._changed = loop, asyncio.Lock(), asyncio.Event()
        async with self._lock:  # one waiter at a time keeps the order of arrival
            while True:
                now = self._clock()
                delay = self._delay(now)
                if delay <= 0:
                    slot = Slot(now + self.window_s)
                    self._slots.append(slot)
                    return slot
                await self._wait(delay)

    def settle(self, slot: Slot, total_tokens: int | None) -> None:
        """Record the tokens the answer to ``slot``'s request used (None: not reported)."""
        if isinstance(total_tokens, int) and total_tokens >= 0:
            slot.tokens = total_tokens
            self._answered_tokens += total_tokens
            self._answered += 1
        self._changed.set()

    def hold(self, seconds: float) -> None:
        """Start no request for ``seconds`` from now (a provider's Retry-After)."""
        self._held_until = max(self._held_until, self._clock() + seconds)
        self._changed.set()

    async def _wait(self, delay: float) -> None:
        if self._sleep is not None:
            await self._sleep(delay)
            return
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), delay)

    def _delay(self, now: float) -> float:
        """Seconds until a request may start (0: now)."""
        if self._held_until > now:
            return self._held_until - now
        while self._slots and self._slots[0].leaves_at <= now:
            self._slots.popleft()
        if not self._slots:
            return 0.0
        until_oldest_leaves = self._slots[0].leaves_at - now
        rpm, tpm = self.limits.requests_per_minute, self.limits.tokens_per_minute
        if rpm is not None and len(self._slots) >= rpm:
            return until_oldest_leaves
        if tpm is not None:
            if not self._answered and any(slot.tokens is None for slot in self._slots):
                return until_oldest_leaves  # no answer yet says what a request costs
            mean = self._answered_tokens / self._answered if self._answered else 0.0
            used = sum(mean if slot.tokens is None else slot.tokens for slot in self._slots)
            if used + mean > tpm:
                return until_oldest_leaves
        return 0.0


def retry_after_s(headers: Mapping[str, str], now: datetime | None = None) -> float | None:
    """How long a server asks a client to wait: ``retry-after-ms`` (OpenAI's, milliseconds),
    else ``Retry-After`` in seconds or as an HTTP date (RFC 9110 §10.2.3); None when neither is
    given or readable. Never negative."""
    lowered = {key.lower(): value for key, value in headers.items()}
    for name, unit in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = lowered.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / unit
        except ValueError:
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    value = lowered.get("retry-after")
    try:
        when = email.utils.parsedate_to_datetime(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)
