"""A provider's request and token limits kept in Redis, one for every
worker process and thread of the cluster and every job calling the same
provider (``eceb-dist run``); a 429's pause shared the same way.

:func:`shared_pacer` is :class:`~eceb_worker.pipeline.making.pacing.Pacer`
(the windows and their sizes are described there) with its moving windows
in the result backend's Redis, through the ``limits`` library's
``RedisStorage`` on that client's connection pool, and its pause in a Redis
key. Keys, each named by the provider's key (two jobs against the same
provider key, with the same limits, share them):

* ``eceb:pace:LIMITER/<key>/requests/<allowance>/<multiples>/<granularity>``
  and ``eceb:pace:LIMITER/<key>/tokens/...``: the windows (``limits``'
  lists of entry times, at most one allowance long, expiring one window
  after their last entry). Jobs that declare different limits for the same
  key keep each limit in lists of their own: each job keeps its own limit,
  the provider sees their sum;
* ``eceb:pace:<key>:pause``: the Unix time (seconds) the provider is held
  until, raised to the later of the kept and the new pause by one script,
  expiring :data:`PAUSE_KEPT_S` seconds after it passed.

Every command goes through the client's connection pool, so that its
connections retry through a Redis outage as the retry policy says
(``ECEB_REDIS_OUTAGE_S``), and each storage call runs inside ``reaching``,
which turns an outage past that bound into ``StorageError``. A thread
acquiring meanwhile waits: nothing is sent unpaced. A command sent again
after a lost reply at worst takes its entries twice (a window then admits
fewer calls, never more); raising a pause twice is harmless.

Clocks. Each entry is stamped by the Redis server's ``TIME`` when the
script taking it runs (``limits``' moving-window script, its rule
unchanged, with the server's clock in place of the caller's): the entries
of a window are in the order they were taken, whichever host took them,
and no span of a window's length on the server's clock holds more than its
allowance, whatever the workers' clocks say, and however late a command
sent again through an outage arrives. (Stamped by the caller, as
``limits`` does, a command retried through an outage carries its first
try's time, seconds old, and frees the window early.) What the provider
counts differs from this by the spread of the time from a script to the
request's arrival (a thread descheduled in between). A pause is a time on
the clock of the process that saw the 429 and holds the others until that
time on theirs: off by the hosts' clock difference (keep them synchronised).
Windows are as durable as the server: with an append-only file (as every
deployment here runs it) they survive a restart (with ``appendfsync
everysec``, less at most the last second's entries); a server restarted
without its data forgets them, and the window spanning the restart may then
admit up to twice its allowance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Final

from limits.storage import RedisStorage

from eceb_worker.pipeline.making.pacing import Pacer

__all__ = ["PACE_PREFIX", "PAUSE_KEPT_S", "RedisPauses", "pause_key", "shared_pacer"]

PACE_PREFIX: Final = "eceb:pace"
"""The prefix of every key of the shared limits."""

PAUSE_KEPT_S: Final = 60
"""How long a pause's key outlives the time it holds until, in seconds."""

Reaching = Callable[[str], AbstractContextManager[None]]

_WINDOWS: Final = "the result backend (provider rate limit)"
_PAUSE: Final = "the result backend (provider pause)"

_RAISE_PAUSE: Final = """
local held = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tonumber(ARGV[1]) > held then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    return 1
end
return 0
"""
"""KEYS: the pause; ARGV: the new pause-until (Unix seconds), its key's time to live (ms)."""


def pause_key(key: str) -> str:
    """The Redis key of provider ``key``'s pause: ``eceb:pace:<key>:pause``."""
    return f"{PACE_PREFIX}:{key}:pause"


class RedisPauses:
    """:class:`~eceb_worker.pipeline.making.pacing.Pauses` in Redis
    (``client``, a redis-py client), each command inside ``reaching``
    (raises ``StorageError`` past the retry policy's bound). ``clock``
    (Unix seconds) sets the keys' expiry."""

    def __init__(self, client: Any, reaching: Reaching, *, clock: Callable[[], float] = time.time) -> None:
        self._client = client
        self._reaching = reaching
        self._clock = clock
        self._raise = client.register_script(_RAISE_PAUSE)

    def pause(self, key: str, until_unix_s: float) -> None:
        """Hold ``key`` until ``until_unix_s`` at least (a later pause kept stays)."""
        ttl_ms = math.ceil(max(until_unix_s - self._clock(), 0.0) * 1000) + PAUSE_KEPT_S * 1000
        with self._reaching(_PAUSE):
            self._raise(keys=[pause_key(key)], args=[f"{until_unix_s:.6f}", ttl_ms])

    def until(self, key: str) -> float:
        """The Unix time (seconds) ``key`` is held until; 0.0 when no pause is
        kept (or the key holds no number)."""
        with self._reaching(_PAUSE):
            raw = self._client.get(pause_key(key))
        if raw is None:
            return 0.0
        try:
            return float(raw)
        except ValueError:
            return 0.0


_ACQUIRE_AT_SERVER_TIME: Final = """
local now = redis.call('TIME')
local timestamp = tonumber(now[1]) + tonumber(now[2]) / 1000000
local limit = tonumber(ARGV[1])
local expiry = tonumber(ARGV[2])
local amount = tonumber(ARGV[3])
if amount > limit then
    return false
end
local entry = redis.call('LINDEX', KEYS[1], limit - amount)
if entry and tonumber(entry) >= timestamp - expiry then
    return false
end
for i = 1, amount do
    redis.call('LPUSH', KEYS[1], timestamp)
end
redis.call('LTRIM', KEYS[1], 0, limit - 1)
redis.call('EXPIRE', KEYS[1], expiry)
return true
"""
"""``limits``' moving-window acquisition (``acquire_moving_window.lua``, its
list and its rule unchanged) with each entry stamped by the server's
``TIME`` when the script runs. KEYS: the window; ARGV: the allowance, the
window's seconds, the entries to take."""


class _ReachingRedisStorage(RedisStorage):
    """``limits``' Redis storage on ``client``'s connection pool, keys under
    :data:`PACE_PREFIX`, each moving-window call inside ``reaching``; its
    entries stamped by the server's clock (:data:`_ACQUIRE_AT_SERVER_TIME`)."""

    def __init__(self, client: Any, reaching: Reaching) -> None:
        self._reaching = reaching
        super().__init__("redis://", connection_pool=client.connection_pool, key_prefix=PACE_PREFIX)
        self._acquire = self.get_connection().register_script(_ACQUIRE_AT_SERVER_TIME.encode())

    def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
        """Take ``amount`` entries of the window ``key`` (see ``limits``),
        stamped when the server runs the script."""
        with self._reaching(_WINDOWS):
            return bool(self._acquire([self.prefixed_key(key)], [limit, expiry, amount]))

    def get_moving_window(self, key: str, limit: int, expiry: int) -> tuple[float, int]:
        """The start of the window ``key`` and its entries (see ``limits``)."""
        with self._reaching(_WINDOWS):
            return super().get_moving_window(key, limit, expiry)


def shared_pacer(
    client: Any,
    *,
    key: str,
    requests_per_minute: int,
    tokens_per_minute: int,
    reaching: Reaching,
) -> Pacer:
    """A :class:`~eceb_worker.pipeline.making.pacing.Pacer` of provider
    ``key`` whose windows and pause are in ``client``'s Redis (the result
    backend's: ``app.backend.client``), shared with every pacer of the same
    key there (see the module). ``reaching`` is the retry policy's
    :meth:`~eceb_worker.cluster.retry.RetryPolicy.reaching`: an outage past
    its bound raises ``StorageError`` from ``acquire`` and ``pause``. A
    limit of 0 is no limit."""
    return Pacer(
        key=key,
        requests_per_minute=requests_per_minute,
        tokens_per_minute=tokens_per_minute,
        store=_ReachingRedisStorage(client, reaching),
        pauses=RedisPauses(client, reaching),
    )
