"""A provider's request and token limits, kept across every thread of a
run (``eceb run``; the profile's ``requests_per_minute`` and
``tokens_per_minute``).

Before it is sent, each call takes one request and its estimated tokens
(prompt estimate plus the output allowance) from moving windows (the
``limits`` library's moving-window strategy, exact: no window of its length
ever holds more than its allowance; its storage is in memory here, Redis
for a cluster):

- requests: a limit of 60 a minute or more is kept in windows of ten
  seconds, each allowing a sixth of the minute's limit (rounded down), so
  that no burst takes a whole minute's allowance at once; a smaller limit
  in windows of a minute;
- tokens: windows of a minute, counted in units of ⌈limit / 1000⌉ tokens (a
  call's tokens rounded up to whole units), so that a window holds at most
  about a thousand entries whatever the limit. A call larger than the
  whole limit takes the whole window.

A 429 with ``Retry-After`` pauses every thread of the provider, not only
the one that saw it (:meth:`Pacer.pause`), for at most :data:`PAUSE_MAX_S`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

from limits import RateLimitItem, RateLimitItemPerMinute, RateLimitItemPerSecond, storage, strategies

__all__ = ["PAUSE_MAX_S", "Pacer"]

PAUSE_MAX_S: Final = 60.0
"""The longest pause a provider's ``Retry-After`` imposes, in seconds."""

_SHORT_WINDOW_S: Final = 10
_SHORT_WINDOWS_A_MINUTE: Final = 6
_TOKEN_UNITS: Final = 1000
_POLL_MIN_S: Final = 0.005
_POLL_MAX_S: Final = 1.0


class Pacer:
    """The limits of one provider (see the module).

    ``requests_per_minute`` and ``tokens_per_minute``: 0 means no limit.
    ``store`` is the ``limits`` storage (memory by default); ``clock`` and
    ``sleep`` are for tests. ``key`` names the provider in the storage.
    """

    def __init__(
        self,
        *,
        key: str,
        requests_per_minute: int = 0,
        tokens_per_minute: int = 0,
        store: storage.Storage | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._key = key
        self._limiter = strategies.MovingWindowRateLimiter(store or storage.MemoryStorage())
        self._requests = _request_window(requests_per_minute)
        self._token_unit = max(1, -(-tokens_per_minute // _TOKEN_UNITS))
        self._tokens = RateLimitItemPerMinute(tokens_per_minute // self._token_unit) if tokens_per_minute else None
        self._clock = clock
        self._sleep = sleep
        self._pause_until = 0.0
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        """Hold every call of this provider for ``seconds`` from now (a
        429's ``Retry-After``), at most :data:`PAUSE_MAX_S`."""
        held = min(max(seconds, 0.0), PAUSE_MAX_S)
        with self._lock:
            self._pause_until = max(self._pause_until, self._clock() + held)

    def acquire(self, tokens: int) -> None:
        """Wait until a call of about ``tokens`` tokens may be sent, then take
        its share of both windows."""
        self._wait_pause()
        if self._requests is not None:
            self._take(self._requests, 1)
        if self._tokens is not None:
            units = -(-max(tokens, 1) // self._token_unit)
            self._take(self._tokens, min(units, self._tokens.amount))

    def _wait_pause(self) -> None:
        while True:
            with self._lock:
                left = self._pause_until - self._clock()
            if left <= 0:
                return
            self._sleep(min(left, _POLL_MAX_S))

    def _take(self, item: RateLimitItem, cost: int) -> None:
        while not self._limiter.hit(item, self._key, cost=cost):
            stats = self._limiter.get_window_stats(item, self._key)
            wait = stats.reset_time - self._clock()
            self._sleep(min(max(wait, _POLL_MIN_S), _POLL_MAX_S))


def _request_window(per_minute: int) -> RateLimitItem | None:
    """The window of a request limit (see the module); ``None`` for no limit."""
    if not per_minute:
        return None
    if per_minute >= _SHORT_WINDOWS_A_MINUTE * 10:
        return RateLimitItemPerSecond(per_minute // _SHORT_WINDOWS_A_MINUTE, multiples=_SHORT_WINDOW_S)
    return RateLimitItemPerMinute(per_minute)
