"""What S3 storage tells an observer about its requests: every request sent
(each attempt, by operation), each retry (botocore's retry of a request, a
stream resumed, a whole read again) and each throttling answer.

The observer is whatever the process installed with :func:`observe_storage`
(a worker's Prometheus counters, :mod:`eceb_worker.cluster.metrics`); by
default nothing is observed. This module knows no metrics library: it calls
a :class:`StorageObserver`. Every S3 client eceb makes is watched
(:func:`watch_client`, from :func:`~eceb_worker.io.s3.make_s3_client`), and
the observer is looked up when a request is sent, so one installed after a
client was made still sees its requests.
"""

from __future__ import annotations

import enum
import functools
from typing import Any, Final, Protocol

__all__ = ["RetryKind", "observe_storage", "storage_observer", "watch_client"]


class RetryKind(enum.Enum):
    """What was tried again."""

    REQUEST = "request"
    """A request botocore sent again (throttled, a 5xx answer, a connection error)."""
    RESUME = "resume"
    """An object's body, resumed where its connection broke off (:class:`~eceb_worker.io.s3_reads.ResumableBody`)."""
    REREAD = "reread"
    """An object read again whole, its bytes having failed the store's checksum."""


class StorageObserver(Protocol):
    """Receives what S3 storage does; each method returns quickly and never raises."""

    def request(self, operation: str) -> None:
        """One request sent (each attempt counts), by its S3 operation (``GetObject``, ...)."""

    def retried(self, kind: RetryKind) -> None:
        """Something was tried again (:class:`RetryKind`)."""

    def throttled(self) -> None:
        """The store answered that requests come too fast (``SlowDown``, ``Throttling``, ...)."""


class _Nothing:
    """The observer of a process that installed none."""

    def request(self, operation: str) -> None:
        """Nothing."""

    def retried(self, kind: RetryKind) -> None:
        """Nothing."""

    def throttled(self) -> None:
        """Nothing."""


_NOTHING: Final = _Nothing()
_current: list[StorageObserver] = [_NOTHING]


@functools.cache
def _throttles() -> Any:
    """Botocore's own check of the error codes that mean "slow down"."""
    from botocore.retries.standard import ThrottledRetryableChecker

    return ThrottledRetryableChecker()


def observe_storage(observer: StorageObserver | None) -> None:
    """Install ``observer`` for every S3 request of this process from now on (None: observe nothing)."""
    _current[0] = observer or _NOTHING


def storage_observer() -> StorageObserver:
    """The observer installed in this process (one that does nothing by default)."""
    return _current[0]


def _created(request: Any, operation_name: str, **_: Any) -> None:
    """Botocore's ``request-created`` event: each attempt of a request, its
    context holding the attempt number (from 1)."""
    observer = _current[0]
    observer.request(operation_name)
    retries = getattr(request, "context", {}).get("retries", {})
    if int(retries.get("attempt", 1)) > 1:
        observer.retried(RetryKind.REQUEST)


def _answered(response: Any = None, attempts: int = 1, caught_exception: Any = None, **_: Any) -> None:
    """Botocore's ``needs-retry`` event, seen first (it decides nothing): a
    throttling answer is counted."""
    if response is None:
        return
    from botocore.retries.standard import RetryContext

    http, parsed = response
    context = RetryContext(
        attempt_number=attempts, http_response=http, parsed_response=parsed, caught_exception=caught_exception
    )
    if _throttles().is_retryable(context):
        _current[0].throttled()


def watch_client(client: Any) -> None:
    """Tell the installed observer about every request of boto3 S3 ``client``."""
    events = client.meta.events
    events.register("request-created.s3", _created, unique_id="eceb-observe-requests")
    events.register_first("needs-retry.s3", _answered, unique_id="eceb-observe-throttles")
