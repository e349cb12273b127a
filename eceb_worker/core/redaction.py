"""Credentials removed from URLs and texts before they are printed, logged
or stored (broker and result backend URLs hold the Redis password).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

__all__ = ["REDACTED", "redact_url", "scrub"]

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


def scrub(text: str, urls: Iterable[object]) -> str:
    """``text`` without any credential of ``urls`` (each a URL or a
    ``;``-separated list of them; non-strings are ignored): each URL is
    replaced by its :func:`redact_url` form, then every password (or lone
    user name) it holds, raw or percent-decoded, by ``***`` wherever else it
    appears (a library's error message may quote it alone)."""
    for url in urls:
        if not isinstance(url, str):
            continue
        for part in url.split(";"):
            text = text.replace(part, redact_url(part))
            try:
                split = urlsplit(part)
                secrets = (split.password,) if split.password is not None else (split.username,)
            except ValueError:
                continue
            for secret in secrets:
                for form in {secret, unquote(secret)} if secret else ():
                    text = text.replace(form, REDACTED)
    return text
