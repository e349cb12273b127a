"""The Redis URLs of the broker and the result backend: checked before
any connection (:func:`check_redis_url`), and the TLS settings a
``rediss://`` URL takes (:func:`redis_tls_options`). No message repeats a
URL: it may hold the password.
"""

from __future__ import annotations

import os
import ssl
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

__all__ = ["check_redis_url", "redis_tls_options"]


_VERIFYING_CERT_REQS: Final = frozenset({"required", "CERT_REQUIRED"})
_FALSE: Final = frozenset({"false", "0", "no", "off", ""})


def redis_tls_options(url: str, what: str, ca_certs: str | None) -> dict[str, Any] | None:
    """The TLS settings (``broker_use_ssl`` / ``redis_backend_use_ssl``) for
    ``url``: None unless it is a ``rediss://`` URL (or a ``;``-separated list
    holding one), else certificate verification on, with the CA bundle
    ``ca_certs`` when given.

    Raises ValueError, naming ``what`` but never repeating the URL (it holds
    the password), when the URL's query turns verification off or
    ``ca_certs`` is not a file.
    """
    parts = url.split(";")
    try:
        splits = [urlsplit(part) for part in parts]
    except ValueError:
        return None  # Celery reports the malformed URL (redacted) when it connects
    if not any(split.scheme == "rediss" for split in splits):
        return None
    for split in splits:
        for name, value in parse_qsl(split.query, keep_blank_values=True):
            if name == "ssl_cert_reqs" and value not in _VERIFYING_CERT_REQS:
                raise ValueError(
                    f"{what}: ssl_cert_reqs={value} would not verify the Redis server's certificate; "
                    f"use ssl_cert_reqs=required (or leave it out) and give the CA bundle in ECEB_REDIS_CA_CERTS"
                )
            if name == "ssl_check_hostname" and value.strip().lower() in _FALSE:
                raise ValueError(
                    f"{what}: ssl_check_hostname={value} would accept a certificate issued to another host; "
                    "leave it out"
                )
    options: dict[str, Any] = {"ssl_cert_reqs": ssl.CERT_REQUIRED}
    if ca_certs:
        if not os.path.isfile(ca_certs):
            raise ValueError("ECEB_REDIS_CA_CERTS: no such file")  # a setting's value is not repeated
        options["ssl_ca_certs"] = ca_certs
    return options


_REDIS_SCHEMES: Final = frozenset({"redis", "rediss"})
TLS_PARAMETERS: Final = ("ssl_ca_certs", "ssl_cert_reqs", "ssl_check_hostname")
"""The only query parameters a broker or backend URL may hold, and only as
``rediss://`` (:func:`redis_tls_options` checks their values). kombu and
Celery would hand any other to a constructor (a TypeError, or a class they
import by name), and redis-py's own (``socket_timeout``, ...) are not
passed through by both."""
_FORM: Final = "use redis://[:PASSWORD@]HOST[:PORT]/DB or rediss://... (TLS)"
_BAD_PORT: Final = "the port is not a number from 1 to 65535"
_ENCODE: Final = "percent-encode a password's '/', '?', '#' and '@' (%2F, %3F, %23, %40)"


def check_redis_url(url: str, variable: str) -> None:
    """Raise ValueError naming ``variable`` (never repeating the URL, which
    may hold a password) unless ``url`` is a Redis URL eceb can use:
    ``redis://`` or ``rediss://`` (or a ``;``-separated list of them,
    failover), a port from 1 to 65535, a database number as its path, no
    fragment, and a query of :data:`TLS_PARAMETERS` only, on ``rediss://``."""
    for part in (piece.strip() for piece in url.split(";")):
        scheme, separator, _ = part.partition("://")
        if not separator or scheme.lower() not in _REDIS_SCHEMES:
            shown = f" (scheme {scheme}://)" if separator and scheme.isascii() and scheme.isalnum() else ""
            raise ValueError(
                f"{variable} is not a Redis URL{shown}: eceb needs Redis as broker and result backend; {_FORM}"
            )
        _check_redis_parts(part, scheme.lower(), variable)


def _check_redis_parts(url: str, scheme: str, variable: str) -> None:
    """:func:`check_redis_url` of one ``redis[s]://`` URL, past its scheme."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # urllib's message may quote the URL: not repeated
        what = _BAD_PORT if str(exc).startswith("Port") else "not a valid URL"
        raise ValueError(f"{variable}: {what}; {_FORM}; {_ENCODE}") from None
    if port == 0:
        raise ValueError(f"{variable}: {_BAD_PORT}; {_FORM}; {_ENCODE}")
    if parts.fragment or url.endswith("#"):
        raise ValueError(f"{variable}: a fragment (#...) is not part of a Redis URL; {_ENCODE}")
    database = parts.path.strip("/")
    if database and not (database.isascii() and database.isdigit()):
        raise ValueError(f"{variable}: the database (the URL's path) is not a number; {_FORM}; {_ENCODE}")
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    if (parts.query or url.endswith("?")) and (
        scheme != "rediss" or not names or any(name not in TLS_PARAMETERS for name in names)
    ):
        raise ValueError(
            f"{variable}: the URL's query may hold only {', '.join(TLS_PARAMETERS)}, and only in a rediss:// URL "
            f"(the password goes before the host, other settings in ECEB_* variables); {_ENCODE}"
        )
