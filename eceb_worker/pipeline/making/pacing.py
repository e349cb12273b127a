"""A provider's request and token limits, kept across every thread of a
run (``eceb run``; the profile's ``requests_per_minute`` and
``tokens_per_minute``), or across every worker of a cluster
(:func:`eceb_worker.cluster.pacing.shared_pacer`).

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

The two windows of a provider are kept under the identifiers
``(key, "requests")`` and ``(key, "tokens")``, so that they never share an
entry list even when their allowances are equal.

A 429 with ``Retry-After`` pauses every thread of the provider, not only
the one that saw it (:meth:`Pacer.pause`), for at most :data:`PAUSE_MAX_S`;
a thread already waiting for a window is held too. The pause is kept in a
:class:`Pauses` (in memory by default: this process; in Redis for a
cluster: every process pacing the same key). A pacer reads the shared pause
at most once every :data:`PAUSE_READ_S` seconds (one read for all its
threads): a pause set by another process holds this one's calls at most
that long after it was set; a pause set through this pacer holds its own
threads at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final, Protocol

from limits import RateLimitItem, RateLimitItemPerMinute, RateLimitItemPerSecond, storage, strategies

__all__ = ["PAUSE_MAX_S", "PAUSE_READ_S", "MemoryPauses", "Pacer", "Pauses"]

PAUSE_MAX_S: Final = 60.0
"""The longest pause a provider's ``Retry-After`` imposes, in seconds."""

PAUSE_READ_S: Final = 0.1
"""How long a pacer keeps the shared pause it last read before reading it again, in seconds."""

_SHORT_WINDOW_S: Final = 10
_SHORT_WINDOWS_A_MINUTE: Final = 6
_TOKEN_UNITS: Final = 1000
_POLL_MIN_S: Final = 0.005
_POLL_MAX_S: Final = 1.0


class Pauses(Protocol):
    """Where the pauses of providers are kept: each key's pause-until, a Unix
    time in seconds (the clock of whoever set it)."""

    def pause(self, key: str, until_unix_s: float) -> None:
        """Hold ``key`` until ``until_unix_s`` at least (a later pause already
        kept stays). Raises ``StorageError`` when the store cannot be reached."""
        ...

    def until(self, key: str) -> float:
        """The Unix time (seconds) ``key`` is held until; 0.0 or a past time
        when it is not held. Raises ``StorageError`` when the store cannot be reached."""
        ...


class MemoryPauses:
    """:class:`Pauses` in this process's memory (thread-safe)."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def pause(self, key: str, until_unix_s: float) -> None:
        """Hold ``key`` until ``until_unix_s`` at least."""
        with self._lock:
            self._until[key] = max(self._until.get(key, 0.0), until_unix_s)

    def until(self, key: str) -> float:
        """The time ``key`` is held until (0.0 when never paused)."""
        with self._lock:
            return self._until.get(key, 0.0)


class Pacer:
    """The limits of one provider (see the module).

    ``requests_per_minute`` and ``tokens_per_minute``: 0 means no limit.
    ``key`` names the provider in the storage and in ``pauses``. ``store``
    is the ``limits`` storage of the windows (memory by default);
    ``pauses`` where a 429's pause is kept (:class:`MemoryPauses` of its
    own by default); ``clock`` (Unix seconds) and ``sleep`` are for tests.
    Errors of the storage or of ``pauses`` (``StorageError`` for Redis)
    propagate from :meth:`acquire` and :meth:`pause`.
    """

    def __init__(
        self,
        *,
        key: str,
        requests_per_minute: int = 0,
        tokens_per_minute: int = 0,
        store: storage.Storage | None = None,
        pauses: Pauses | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._key = key
        self._limiter = strategies.MovingWindowRateLimiter(store or storage.MemoryStorage())
        self._requests = _request_window(requests_per_minute)
        self._token_unit = max(1, -(-tokens_per_minute // _TOKEN_UNITS))
        self._tokens = RateLimitItemPerMinute(tokens_per_minute // self._token_unit) if tokens_per_minute else None
        self._pauses: Pauses = pauses if pauses is not None else MemoryPauses()
        self._clock = clock
        self._sleep = sleep
        self._paused_here = 0.0  # the latest pause set through this pacer
        self._shared = 0.0  # the pause last read from ``pauses``
        self._read_at: float | None = None  # when it was read (this pacer's clock)
        self._read_lock = threading.Lock()
        self._pause_lock = threading.Lock()

    @property
    def key(self) -> str:
        """The provider's key."""
        return self._key

    def pause(self, seconds: float) -> None:
        """Hold every call of this provider for ``seconds`` from now (a
        429's ``Retry-After``), at most :data:`PAUSE_MAX_S`: at once in
        this pacer, within :data:`PAUSE_READ_S` in every other pacer of the
        same key and ``pauses``."""
        held = min(max(seconds, 0.0), PAUSE_MAX_S)
        until = self._clock() + held
        with self._pause_lock:
            self._paused_here = max(self._paused_here, until)
        self._pauses.pause(self._key, until)

    def acquire(self, tokens: int) -> None:
        """Wait until a call of about ``tokens`` tokens may be sent, then take
        its share of both windows (each taken only while no pause holds)."""
        if self._requests is not None:
            self._take(self._requests, "requests", 1)
        else:
            self._wait_pause()
        if self._tokens is not None:
            units = -(-max(tokens, 1) // self._token_unit)
            self._take(self._tokens, "tokens", min(units, self._tokens.amount))

    def paused_until(self) -> float:
        """The Unix time (seconds) this provider's calls are held until: the
        later of this pacer's own pause and the shared one last read (read
        again when older than :data:`PAUSE_READ_S`)."""
        with self._read_lock:  # one read of the shared pause at a time, for every thread
            now = self._clock()
            if self._read_at is None or not 0 <= now - self._read_at < PAUSE_READ_S:
                self._shared = self._pauses.until(self._key)
                self._read_at = now
            return max(self._shared, self._paused_here)

    def _wait_pause(self) -> None:
        while True:
            left = self.paused_until() - self._clock()
            if left <= 0:
                return
            self._sleep(min(left, _POLL_MAX_S))

    def _take(self, item: RateLimitItem, window: str, cost: int) -> None:
        while True:
            self._wait_pause()
            if self._limiter.hit(item, self._key, window, cost=cost):
                return
            stats = self._limiter.get_window_stats(item, self._key, window)
            wait = stats.reset_time - self._clock()
            self._sleep(min(max(wait, _POLL_MIN_S), _POLL_MAX_S))


def _request_window(per_minute: int) -> RateLimitItem | None:
    """The window of a request limit (see the module); ``None`` for no limit."""
    if not per_minute:
        return None
    if per_minute >= _SHORT_WINDOWS_A_MINUTE * 10:
        return RateLimitItemPerSecond(per_minute // _SHORT_WINDOWS_A_MINUTE, multiples=_SHORT_WINDOW_S)
    return RateLimitItemPerMinute(per_minute)
