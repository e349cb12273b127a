"""The one retry policy of every cluster task: a task whose storage failed
as a whole (``StorageError``: throttled past botocore's own retries, an
endpoint away for a moment) runs again after an exponential back-off with
jitter, up to ``ECEB_TASK_MAX_RETRIES`` times; then its job fails naming it.
A bucket that does not exist (``NoSuchBucketError``) is final: it fails at once.
What retries, how often and after how long are decided here alone; the
tasks (:mod:`eceb_worker.cluster.tasks`) ask this policy.

Requests themselves are retried earlier and faster by botocore
(:mod:`eceb_worker.io.s3`); this policy covers what outlasts those.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

from eceb_worker.errors import NoSuchBucketError, ShardFailedError, StorageError

__all__ = ["BACKOFF_MAX_S", "CAUSE_LOOKUPS", "RetryPolicy"]

BACKOFF_MAX_S: Final = 60.0
"""The longest wait between two attempts."""

CAUSE_LOOKUPS: Final = 5
"""How many times the cause of a shard that ended without an answer is
looked for again (Celery may store it just after the chord's error callback
is sent), with the policy's back-off."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often, and after how long, a task runs again.

    Attributes:
        max_retries: retries after the first attempt (``ECEB_TASK_MAX_RETRIES``).
        first_s: the wait before the first retry at most; doubled for each
            further one, capped at :data:`BACKOFF_MAX_S`.
    """

    max_retries: int
    first_s: float = 1.0

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
