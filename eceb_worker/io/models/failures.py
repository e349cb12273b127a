"""How a failed call of a model API becomes a
:class:`~eceb_worker.errors.ProviderError`: the one classification both SDKs'
exception mappings (:func:`eceb_worker.io.models.openai_api.openai_error`,
:func:`eceb_worker.io.models.anthropic_api.anthropic_error`) go through.

- An HTTP status: 408, 409, 429 and every 5xx are transient (another attempt
  may succeed), the others final; 401 and 403 are also fatal (no call with
  this credential can succeed: the run stops). A 5xx may have been billed
  (the provider received the whole request and may have run the model).
  ``retry_after_s`` comes from ``retry-after-ms`` (milliseconds) or
  ``Retry-After`` (seconds, or an HTTP date), whatever the status.
- No answer in time: transient; may have been billed, unless the time ran out
  before the request left (a connection that could not be opened or a pool
  slot that never came free: ``ConnectTimeout``, ``PoolTimeout``).
- A connection error: transient; may have been billed when the connection
  was lost after the request was (or may have been) sent, not when it could
  not be opened (``ConnectError``, ``UnsupportedProtocol``, ``ProxyError``,
  ``LocalProtocolError``: nothing reached the provider).

Messages name the provider (its name as the run records it and its API),
the HTTP status and the provider's error type (``error.type`` /
``error.code`` when they are identifiers), never the provider's message
(OpenAI's 401 message quotes part of the key), a credential or the prompt.
"""

from __future__ import annotations

import email.utils
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Final

import httpx2

from eceb_worker.errors import ProviderError

__all__ = ["connection_failure", "error_kind", "retry_after_s", "status_failure", "timeout_failure"]

TRANSIENT_STATUSES: Final = frozenset({408, 409, 429})
FATAL_STATUSES: Final = frozenset({401, 403})

_NOT_SENT: Final = (
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
    httpx2.PoolTimeout,
    httpx2.UnsupportedProtocol,
    httpx2.ProxyError,
    httpx2.LocalProtocolError,
)
_IDENTIFIER: Final = re.compile(r"[A-Za-z0-9_.:-]{1,64}")


def retry_after_s(headers: Mapping[str, str], now: datetime) -> float | None:
    """The wait, in seconds, a response asks for: ``retry-after-ms``
    (milliseconds) first, then ``Retry-After`` as seconds or as an HTTP date
    (its distance from ``now``, 0 when past). None when neither header is
    there or readable (negative, not finite, not a date).

    >>> retry_after_s({"retry-after": "2"}, datetime(2026, 1, 1, tzinfo=UTC))
    2.0
    >>> retry_after_s({"retry-after": "Thu, 01 Jan 2026 00:00:30 GMT"}, datetime(2026, 1, 1, tzinfo=UTC))
    30.0
    """
    lowered = {name.lower(): value for name, value in headers.items()}
    for name, scale in (("retry-after-ms", 1000), ("retry-after", 1)):
        text = lowered.get(name, "").strip()
        try:
            value = float(text)
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return value / scale
    date = lowered.get("retry-after", "").strip()
    if not date:
        return None
    try:
        when = email.utils.parsedate_to_datetime(date)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - now).total_seconds(), 0.0)


def error_kind(*names: object) -> str:
    """The provider's error type and code (``error.type``,
    ``error.code``...) that are identifiers, joined by ``/``; anything else
    (a message, a value of an unexpected shape) is left out."""
    kept: list[str] = []
    for name in names:
        if isinstance(name, str) and _IDENTIFIER.fullmatch(name) and name not in kept:
            kept.append(name)
    return "/".join(kept)


def status_failure(
    *, party: str, api: str, status: int, kind: str, headers: Mapping[str, str], now: datetime | None = None
) -> ProviderError:
    """The failure of an HTTP error ``status`` (see the module)."""
    transient = status in TRANSIENT_STATUSES or status >= 500
    fatal = status in FATAL_STATUSES
    what = {401: ": the credential was refused", 403: ": permission refused"}.get(status, "")
    return ProviderError(
        f"{party} ({api}) answered HTTP {status}{f' ({kind})' if kind else ''}{what}",
        party=party,
        transient=transient,
        retry_after_s=retry_after_s(headers, now or datetime.now(UTC)),
        maybe_billed=status >= 500,
        status=status,
        fatal=fatal,
    )


def _sent(cause: BaseException | None) -> bool:
    """Whether the request may have reached the provider before ``cause``."""
    return not isinstance(cause, _NOT_SENT)


def timeout_failure(*, party: str, api: str, timeout_s: float, cause: BaseException | None) -> ProviderError:
    """No answer within ``timeout_s`` (``cause``: the HTTP library's timeout)."""
    name = type(cause).__name__ if cause is not None else "timeout"
    return ProviderError(
        f"{party} ({api}): no answer within {timeout_s:g} s ({name})",
        party=party,
        transient=True,
        maybe_billed=_sent(cause),
    )


def connection_failure(*, party: str, api: str, cause: BaseException | None) -> ProviderError:
    """A connection that could not be opened, or was lost before the answer."""
    name = type(cause).__name__ if cause is not None else "connection error"
    sent = _sent(cause)
    what = "the connection was lost before the answer" if sent else "could not send the request"
    return ProviderError(f"{party} ({api}): {what} ({name})", party=party, transient=True, maybe_billed=sent)
