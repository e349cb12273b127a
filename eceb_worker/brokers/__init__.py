"""Message brokers: run shard plans on a cluster of worker processes.

Broker and task-queue code lives here and only here; the engine imports none
of it. A task is a thin wrapper over an engine function, and its message
carries references (a :class:`~eceb_worker.storage.StorageSpec`, artifact
paths and expected digests, a shard's position), never corpus bytes.

- :mod:`eceb_worker.brokers.celery_app`: the Celery application and its tasks
  (``celery -A eceb_worker.brokers.celery_app worker``).
- :mod:`eceb_worker.brokers.celery_executor`: :class:`CeleryExecutor`, a
  :class:`~eceb_worker.executors.ShardExecutor` sending one task per shard.

This module imports no broker library, so :func:`redact_url` is cheap to use.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote_plus, urlsplit, urlunsplit

__all__ = ["REDACTED", "redact_url"]

REDACTED: Final = "***"
"""What a credential is replaced with in a printed URL."""

_SECRET_PARAMETER: Final = re.compile(r"pass|secret|token|key|auth|credential", re.IGNORECASE)


def _redact_one(url: str) -> str:
    try:
        parts = urlsplit(url)
        _ = parts.port  # raises ValueError for a malformed port
    except ValueError:
        # Not parseable: keep only what surely holds no credential.
        scheme, sep, _rest = url.partition("://")
        return f"{scheme}://{REDACTED}" if sep else REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, has_password, _password = userinfo.partition(":")
        netloc = f"{user}:{REDACTED}@{host}" if has_password else f"{REDACTED}@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, _redact_query(parts.query), parts.fragment))


def _redact_query(query: str) -> str:
    """``query`` as written, with the value of each parameter named like a
    secret replaced (the others, such as ``ssl_ca_certs=/etc/ca.pem``, stay
    readable)."""
    pieces = []
    for piece in query.split("&"):
        name, sep, _value = piece.partition("=")
        if _SECRET_PARAMETER.search(unquote_plus(name)):
            pieces.append(f"{name}={REDACTED}" if sep else REDACTED)
        else:
            pieces.append(piece)
    return "&".join(pieces)


def redact_url(url: str) -> str:
    """``url`` with every credential replaced by ``***``: the password (or a
    user name given without one, where some services expect a token) and query
    parameters named like a secret (``password=``, ``token=``, ...).

    Accepts a ``;``-separated list of fail-over URLs, as Celery does.

    >>> redact_url("redis://:hunter2@127.0.0.1:6379/0")
    'redis://:***@127.0.0.1:6379/0'
    >>> redact_url("redis://user:hunter2@127.0.0.1:6379/0?password=x&db=1")
    'redis://user:***@127.0.0.1:6379/0?password=***&db=1'
    >>> redact_url("rediss://:hunter2@redis.internal:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/etc/ca.pem")
    'rediss://:***@redis.internal:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/etc/ca.pem'
    """
    return ";".join(_redact_one(part) for part in url.split(";"))
