"""URLs: ``s3://`` names of corpora and objects (parsed, joined, shown),
and credentials removed from URLs and texts before they are printed,
logged or stored (broker and result backend URLs hold the Redis password).
Pure string work: nothing is resolved or connected to.

The one rule for credentials in a URL eceb is given as an input, corpus,
output or S3 endpoint (:func:`check_location`, :func:`check_no_credentials`):
they are refused, and the refusal shows the URL without its user
information, query and fragment (:func:`shown_url`). Credentials come only
from the environment, as for boto3. Broker and result backend URLs are the
exception: they carry the Redis password, and are shown redacted
(:func:`redact_url`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

__all__ = [
    "REDACTED",
    "check_location",
    "check_no_credentials",
    "is_s3_url",
    "object_sibling",
    "parse_s3_url",
    "redact_url",
    "s3_location",
    "scrub",
    "shown_url",
    "split_object_url",
]

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


def shown_url(url: str) -> str:
    """How a refused URL is shown: ``scheme://host/path`` without its user
    information, query and fragment (any of which may hold a credential),
    ``scheme://***`` when it does not parse; a string that is no URL as given.

    >>> shown_url("s3://AKIA:secret@bucket/key.json?X-Amz-Signature=s")
    's3://***@bucket/key.json'
    """
    scheme, sep, _rest = url.partition("://")
    if not sep:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return f"{scheme}://{REDACTED}"
    userinfo = f"{REDACTED}@" if "@" in parts.netloc else ""
    return f"{scheme}://{userinfo}{parts.netloc.rpartition('@')[2]}{parts.path}"


def check_no_credentials(url: str) -> None:
    """Raise ValueError when ``url`` (``scheme://...``) holds user
    information (a key, a secret), a query or a fragment (a pre-signed
    URL's signature); its message shows the URL by :func:`shown_url`. A
    string that is no URL passes."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return
    authority = rest.split("/", 1)[0]
    if "@" in authority or "?" in rest or "#" in rest:
        kind = "an s3:// URL" if scheme == "s3" else "a URL"
        raise ValueError(
            f"{kind} takes no credentials, query or fragment (credentials come from the environment, "
            f"as for boto3): {shown_url(url)}"
        )


def check_location(value: str, *, s3: bool = True) -> None:
    """Raise ValueError unless ``value`` is a local path or (with ``s3``) a
    well-formed ``s3://bucket/...`` URL without credentials
    (:func:`check_no_credentials`). The message never repeats a credential."""
    check_no_credentials(value)
    if "://" not in value:
        return
    if not (s3 and value.startswith("s3://")):
        wanted = "a local path or an s3://bucket/... URL" if s3 else "a local path (this command reads local files)"
        raise ValueError(f"not {wanted}: {shown_url(value)}")
    parse_s3_url(value)


def is_s3_url(location: object) -> bool:
    """True for a string ``s3://...``."""
    return isinstance(location, str) and location.startswith("s3://")


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/prefix`` into ``(bucket, prefix)``; the prefix has no
    leading or trailing ``/`` and may be empty. Raises ValueError otherwise.
    """
    check_no_credentials(url)
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an s3://bucket/prefix URL: {shown_url(url)!r}")
    return parts.netloc, parts.path.strip("/")


def split_object_url(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of ``s3://bucket/key``; raises ValueError when the key is empty."""
    bucket, key = parse_s3_url(url)
    if not key:
        raise ValueError(f"not an s3://bucket/key object URL: {shown_url(url)!r}")
    return bucket, key


def object_sibling(url: str, relative: str) -> str:
    """The object ``relative`` names from ``url``'s key prefix (its "directory"),
    as a relative path names a file beside another. Raises ValueError when
    ``relative`` is absolute or leaves the bucket.
    """
    bucket, key = split_object_url(url)
    if relative.startswith("/"):
        raise ValueError(f"{relative!r} is not a relative path")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(key), relative))
    if joined in (".", "") or joined.startswith("../") or joined == "..":
        raise ValueError(f"{relative!r} leads out of s3://{bucket}")
    return f"s3://{bucket}/{joined}"


def s3_location(url: str) -> str:
    """How an ``s3://bucket/prefix`` corpus is named in reports and messages:
    ``s3://bucket/prefix``, without a trailing ``/`` (``s3://bucket`` for the
    whole bucket). Raises ValueError for a malformed URL."""
    bucket, prefix = parse_s3_url(url)
    return f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
