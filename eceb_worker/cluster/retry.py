"""The one retry policy of the cluster: what runs again, how often and for
how long.

Tasks: a task whose storage failed as a whole (``StorageError``: throttled
past botocore's own retries, an endpoint away for a moment) runs again after
an exponential back-off with jitter, up to ``ECEB_TASK_MAX_RETRIES`` times;
then its job fails naming it. A bucket that does not exist
(``NoSuchBucketError``) is final: it fails at once.

Redis: a lost connection to the broker or the result backend (a Redis
server restarting) is retried, on workers and in ``eceb-dist`` alike, for
:attr:`RetryPolicy.outage_s` seconds (``ECEB_REDIS_OUTAGE_S``) with a short
capped back-off: every command of the result backend's client
(:meth:`RetryPolicy.redis_retry`: job state, steps, leases and answers),
every message published (:meth:`RetryPolicy.publish_retry_policy`), every
control command (:meth:`RetryPolicy.outlast`). A connection still lost after
that raises ``StorageError`` (:meth:`RetryPolicy.reaching`).

What retries, how often and after how long are decided here alone; the
tasks (:mod:`eceb_worker.cluster.tasks`), the job store
(:mod:`eceb_worker.cluster.state`), the application
(:mod:`eceb_worker.cluster.app`) and the client
(:mod:`eceb_worker.cluster.client`) ask this policy. S3 requests themselves
are retried earlier and faster by botocore (:mod:`eceb_worker.io.s3`); this
policy covers what outlasts those.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kombu.exceptions import OperationalError
from redis.backoff import ExponentialBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeout
from redis.retry import Retry

from eceb_worker.errors import NoSuchBucketError, ShardFailedError, StorageError

__all__ = ["BACKOFF_MAX_S", "LOST", "OUTAGE_STEP_MAX_S", "UNREACHABLE", "RetryPolicy"]

BACKOFF_MAX_S: Final = 60.0
"""The longest wait between two attempts of a task."""

DEFAULT_OUTAGE_S: Final = 60
"""How long a lost Redis connection is retried by default (``ECEB_REDIS_OUTAGE_S``), in seconds."""
OUTAGE_STEP_MAX_S: Final = 1.0
"""The longest wait between two attempts to reach Redis again, in seconds:
a restarted server is found about a second after it is back."""
_OUTAGE_STEP_FIRST_S: Final = 0.05

LOST: Final = (OperationalError, RedisConnectionError, RedisTimeout)
"""What the broker's (kombu) or the result backend's (redis-py) client
raises when its server cannot be reached (redis-py's ``BusyLoadingError``, a
server still reading its append-only file, is a ``ConnectionError``)."""
UNREACHABLE: Final = (*LOST, OSError)
""":data:`LOST`, and the socket errors of a first connection."""

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a task runs again; how long a lost
    Redis connection is tried again.

    Attributes:
        max_retries: retries of a task after its first attempt (``ECEB_TASK_MAX_RETRIES``).
        first_s: the wait before a task's first retry at most; doubled for
            each further one, capped at :data:`BACKOFF_MAX_S`.
        outage_s: seconds a lost Redis connection is retried
            (``ECEB_REDIS_OUTAGE_S``) before the command fails.
    """

    max_retries: int
    first_s: float = 1.0
    outage_s: float = DEFAULT_OUTAGE_S

    def allows(self, retries: int) -> bool:
        """True when an attempt that already retried ``retries`` times may retry again."""
        return retries < self.max_retries

    def retries(self, exc: BaseException, retries: int) -> bool:
        """True when a task that failed with ``exc``, after ``retries``
        retries, runs again: a passing storage failure (``StorageError``,
        not a final one: a shard's ``ShardFailedError``, a bucket that does
        not exist) while the policy allows."""
        final = isinstance(exc, (ShardFailedError, NoSuchBucketError))
        return isinstance(exc, StorageError) and not final and self.allows(retries)

    def countdown(self, retries: int) -> float:
        """Seconds to wait before retry number ``retries + 1``: a random
        fraction (full jitter, so that shards failing together do not all
        come back together) of ``first_s * 2**retries``, capped."""
        return random.uniform(0, min(BACKOFF_MAX_S, self.first_s * 2**retries))  # noqa: S311 - jitter, not a secret

    def outage_step(self, failures: int) -> float:
        """Seconds to wait after the ``failures``-th failed attempt to reach
        Redis: ``0.05 * 2**(failures - 1)``, capped at :data:`OUTAGE_STEP_MAX_S`."""
        exponent: int = max(0, min(failures - 1, 16))
        return min(OUTAGE_STEP_MAX_S, _OUTAGE_STEP_FIRST_S * float(1 << exponent))

    def redis_retry(self) -> OutageRetry:
        """The redis-py retry of every command (pipelines and scripts
        included) of a client: for :attr:`outage_s` seconds after the first
        failure, with :meth:`outage_step` back-off."""
        return OutageRetry(self)

    def publish_retry_policy(self) -> dict[str, float]:
        """The retry policy of a message published (kombu's, Celery's
        ``task_publish_retry_policy``): waits of 0, 0.5, 1, 1, ... s, as
        many as cover :attr:`outage_s`."""
        step = OUTAGE_STEP_MAX_S / 2
        return {
            "max_retries": math.ceil(self.outage_s / OUTAGE_STEP_MAX_S) + 2,
            "interval_start": 0,
            "interval_step": step,
            "interval_max": OUTAGE_STEP_MAX_S,
        }

    def outlast(
        self,
        call: Callable[[], T],
        what: str,
        *,
        sleep: Callable[[float], object] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> T:
        """``call()``, tried again while it cannot reach its server
        (:data:`UNREACHABLE`), for :attr:`outage_s` seconds after the first
        failure, with :meth:`outage_step` back-off. Raises ``StorageError``
        naming ``what`` once that time has passed (:meth:`reaching`)."""
        deadline: float | None = None
        failures = 0
        while True:
            with self.reaching(what):
                try:
                    return call()
                except LOST:
                    now = clock()
                    deadline = now + self.outage_s if deadline is None else deadline
                    if now >= deadline:
                        raise
            failures += 1
            sleep(self.outage_step(failures))

    @contextmanager
    def reaching(self, what: str) -> Iterator[None]:
        """Turn a lost connection raised in the block (:data:`LOST`, its
        retries spent) into ``StorageError`` naming ``what`` and the bound."""
        try:
            yield
        except LOST as exc:
            raise StorageError(
                f"{what} unreachable for more than {self.outage_s:g} s (ECEB_REDIS_OUTAGE_S): "
                f"{type(exc).__name__}: {exc}"
            ) from None


class OutageRetry(Retry):
    """redis-py's :class:`~redis.retry.Retry`, bounded by time instead of a
    count: a command (or a connection attempt) that cannot reach its server
    is tried again until :attr:`RetryPolicy.outage_s` seconds after its first
    failure, then its last error is raised. Every command eceb and Celery
    send to the result backend may run twice this way: each is idempotent
    (job state fields and sets, a shard's first answer kept, a lease renewed
    only by its holder), or counts a start (``eceb:deliveries``) where
    once more is harmless."""

    def __init__(self, policy: RetryPolicy) -> None:
        super().__init__(ExponentialBackoff(cap=OUTAGE_STEP_MAX_S, base=_OUTAGE_STEP_FIRST_S), -1)
        self.policy = policy

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutageRetry) and other.policy == self.policy

    __hash__ = Retry.__hash__

    def call_with_retry(
        self,
        do: Callable[[], T],
        fail: Callable[..., Any],
        is_retryable: Callable[[Exception], bool] | None = None,
        with_failure_count: bool = False,
    ) -> T:
        """``do()``, retried on a lost connection until the policy's
        ``outage_s`` has passed since its first failure (``fail`` is called
        after each failure, as redis-py does)."""
        started: list[float] = []

        def retryable(error: Exception) -> bool:
            now = time.monotonic()
            if not started:
                started.append(now)
            return now - started[0] < self.policy.outage_s and (is_retryable is None or is_retryable(error))

        result: T = super().call_with_retry(do, fail, retryable, with_failure_count)
        return result
