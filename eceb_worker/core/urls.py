"""URLs: ``s3://`` names of corpora and objects (parsed, joined, shown),
and credentials removed from URLs and texts before they are printed,
logged or stored (broker and result backend URLs hold the Redis password).
Pure string work: nothing is resolved or connected to.

The one rule for credentials in a URL eceb is given as an input, corpus,
output or S3 endpoint (:func:`check_location`, :func:`check_no_credentials`):
they are refused, and the refusal shows the URL without its user
information, query and fragment (:func:`shown_url`). Credentials come only
from the environment, as for boto3. Broker and result backend URLs are the
exception: they carry the Redis password, and are shown redacted.

One redaction (:func:`redact_url`, which :func:`shown_url` builds on) serves
every message, malformed URLs included: ``s3:///KEY:SECRET@bucket``,
``S3://...``, ``KEY:SEC/RET@host``, ``s3://bucket:SECRET/x``. A bucket name is
what botocore accepts (:func:`parse_s3_url`).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import unquote, unquote_plus, urlsplit

__all__ = [
    "check_location",
    "check_no_credentials",
    "http_url_problem",
    "is_s3_url",
    "object_sibling",
    "parse_s3_url",
    "redact_text",
    "redact_url",
    "s3_location",
    "scrub",
    "shown_url",
    "split_object_url",
]

REDACTED: Final = "***"
"""What a credential is replaced with in a printed URL."""

_SECRET_PARAMETER: Final = re.compile(r"pass|secret|token|key|auth|credential", re.IGNORECASE)


_MISTYPED_URL: Final = re.compile(r"(?i)(s3|https?|rediss?|file):(?!//)")
"""A location that starts like a URL of a scheme eceb knows but lacks the
``//`` (``s3:/KEY:SECRET@bucket/x``, ``s3:bucket/x``): a mistyped URL, never
taken as a relative local path."""

_BUCKET_NAME: Final = re.compile(r"[A-Za-z0-9._-]{1,255}")
"""What an S3 bucket name may be, as botocore checks it before any request
(AWS's rules today are narrower, 3 to 63 lowercase letters, digits, dots and
hyphens; older AWS buckets, Ceph and MinIO accept more)."""


def _shown_authority(authority: str, scheme: str) -> str:
    """``authority`` (a host, ``host:port`` or bucket, user information
    removed) as shown: ``***`` when it may hold a credential: a "port" that
    is no number (``user:password`` without its ``@host``), a ``%`` (an
    encoded ``@``), or, for ``s3``, anything that is not a bucket name."""
    if scheme.lower() == "s3":
        return authority if not authority or _BUCKET_NAME.fullmatch(authority) else REDACTED
    if authority.startswith("["):  # an IPv6 address
        _address, bracket, port = authority.partition("]")
        if not bracket or (port and not (port[0] == ":" and port[1:].isdigit())):
            return REDACTED
        return authority
    host, colon, port = authority.partition(":")
    if "%" in host or (colon and not port.isdigit()):
        return REDACTED
    return authority


def _until_path(body: str) -> tuple[str, str]:
    """``body`` (what follows ``scheme://``) split where its authority ends."""
    cut = min((i for i in (body.find(c) for c in "/?#") if i >= 0), default=len(body))
    return body[:cut], body[cut:]


def _after_userinfo(body: str, scheme: str) -> str | None:
    """What follows the user information of ``body`` (a URL after
    ``scheme://`` and its slashes), None when it has none: the text after
    the authority's last ``@`` (user information may hold ``?`` or ``#``),
    or after the URL's last ``@`` when the authority looks like
    ``KEY:SECRET`` (a secret holding ``/``: ``KEY:SEC/RET@host``)."""
    segment = body.partition("/")[0]
    if "@" in segment:
        return body[segment.rindex("@") + 1 :]
    if "@" in body and _shown_authority(_until_path(body)[0], scheme) == REDACTED:
        return body.rpartition("@")[2]
    return None


def _redact_one(url: str) -> str:
    scheme, sep, rest = url.partition("://")
    mistyped = None if sep else _MISTYPED_URL.match(url)
    if mistyped:  # s3:/KEY:SECRET@bucket/x, s3:KEY:SECRET/x: all that may be user information goes
        rest = url[mistyped.end() :]
        body = rest.lstrip("/")
        slashes = rest[: len(rest) - len(body)]
        if "@" in body or ":" in body:
            body = REDACTED + (f"@{body.rpartition('@')[2]}" if "@" in body else "")
        return f"{url[: mistyped.end()]}{slashes}{body}"
    if not sep:
        return f"{REDACTED}@{url.rpartition('@')[2]}" if "@" in url else url
    body = rest.lstrip("/")
    slashes = rest[: len(rest) - len(body)]
    after = _after_userinfo(body, scheme)
    userinfo = "" if after is None else f"{REDACTED}@"
    authority, remainder = _until_path(body if after is None else after)
    remainder, hash_sign, fragment = remainder.partition("#")
    path, question_mark, query = remainder.partition("?")
    shown = f"{scheme}://{slashes}{userinfo}{_shown_authority(authority, scheme)}{path}"
    if question_mark:
        shown += f"?{_redact_query(query)}"
    return shown + (f"#{REDACTED}" if hash_sign and fragment else hash_sign)


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
    """``url`` with whatever may be a credential replaced by ``***``: the one
    redaction of every message that shows a URL.

    Redacted: everything between ``scheme://`` (any number of slashes, any
    case) and the last ``@`` of the authority (user name and password, even
    one holding ``?`` or ``#``; up to the URL's last ``@`` when the authority
    looks like ``KEY:SECRET``, a secret holding ``/``); an authority that cannot be a host and port (a
    "port" that is no number, as ``user:password`` without ``@host``, or a
    ``%``) and, for ``s3``, an authority that is not a bucket name; the value
    of each query parameter named like a secret (``password=``,
    ``token=``, ...); the fragment. Accepts a ``;``-separated list of
    fail-over URLs, as Celery does.

    >>> redact_url("redis://:hunter2@127.0.0.1:6379/0")
    'redis://***@127.0.0.1:6379/0'
    >>> redact_url("redis://user:hunter2@127.0.0.1:6379/0?password=x&db=1")
    'redis://***@127.0.0.1:6379/0?password=***&db=1'
    >>> redact_url("rediss://:hunter2@redis.internal:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/etc/ca.pem")
    'rediss://***@redis.internal:6380/0?ssl_cert_reqs=required&ssl_ca_certs=/etc/ca.pem'
    >>> redact_url("s3:///KEY:SECRET@bucket/b.json")
    's3:///***@bucket/b.json'
    >>> redact_url("s3://bucket:SECRET/b.json")
    's3://***/b.json'
    """
    return ";".join(_redact_one(part) for part in url.split(";"))


_URL_IN_TEXT: Final = re.compile(
    r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]*:/+[^\s'\"<>]*"  # scheme:/..., scheme://...
    r"|(?:s3|https?|rediss?|file):[^\s'\"<>/]*@[^\s'\"<>]*"  # s3:KEY:SECRET@bucket/...
)


def redact_text(text: str) -> str:
    """``text`` (a message that may quote what an input file holds) with
    every URL in it shown by :func:`redact_url` (a mistyped one included):
    a credential written inside an input file is never echoed.

    >>> redact_text("field 'path': 's3://KEY:SECRET@bucket/r.jsonl' is not relative")
    "field 'path': 's3://***@bucket/r.jsonl' is not relative"
    >>> redact_text("s3://bucket/x.json: no such key")
    's3://bucket/x.json: no such key'
    """
    return _URL_IN_TEXT.sub(_redact_found, text)


def _redact_found(found: re.Match[str]) -> str:
    """A URL found in a text, redacted; punctuation that ends a sentence or a
    clause after it (``s3://bucket/x: no such key``) is not part of it."""
    url = found.group()
    body = url.rstrip(":,.;)]")
    return redact_url(body) + url[len(body) :]


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
    """How a refused URL is shown: :func:`redact_url`'s form without its
    query and fragment (any of which may hold a credential); a mistyped URL
    (``s3:/KEY:SECRET@bucket/x``) without its user information; a string
    that is no URL (no ``://``) as given.

    >>> shown_url("s3://AKIA:secret@bucket/key.json?X-Amz-Signature=s")
    's3://***@bucket/key.json'
    """
    if "://" not in url:
        return _redact_one(url) if _MISTYPED_URL.match(url) else url
    redacted = _redact_one(url)
    scheme, _, rest = redacted.partition("://")
    return f"{scheme}://{re.split(r'[?#]', rest, maxsplit=1)[0]}"


def _authority(url: str) -> tuple[str, str, str]:
    """``(scheme, authority, rest)`` of ``scheme://authority/rest``, the
    authority found after any number of slashes (``s3:///KEY@bucket`` is
    read as ``s3://KEY@bucket``)."""
    scheme, _, rest = url.partition("://")
    authority, _, path = rest.lstrip("/").partition("/")
    return scheme, authority, path


def check_no_credentials(url: str) -> None:
    """Raise ValueError when ``url`` (``scheme://...``) holds user
    information (a key, a secret: an ``@`` in its authority, after however
    many slashes, or after ``KEY:SEC/RET``), a query or a fragment (a pre-signed URL's signature); its
    message shows the URL by :func:`shown_url`. A string that is no URL
    passes."""
    if "://" not in url:
        return
    scheme, _, rest = url.partition("://")
    if _after_userinfo(rest.lstrip("/"), scheme) is not None or "?" in rest or "#" in rest:
        kind = "an s3:// URL" if scheme.lower() == "s3" else "a URL"
        raise ValueError(
            f"{kind} takes no credentials, query or fragment (credentials come from the environment, "
            f"as for boto3): {shown_url(url)}"
        )


def check_location(value: str, *, s3: bool = True) -> None:
    """Raise ValueError unless ``value`` is a local path or (with ``s3``) a
    well-formed ``s3://bucket/...`` URL without credentials; a value that
    starts like a URL without its ``//`` (``s3:/bucket/x``) is neither
    (:func:`check_no_credentials`, :func:`parse_s3_url`). The message never
    repeats a credential (:func:`shown_url`)."""
    check_no_credentials(value)
    if _MISTYPED_URL.match(value):
        raise ValueError(f"not a local path, nor a URL (a URL is scheme://...): {shown_url(value)}")
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
    leading or trailing ``/`` and may be empty. Raises ValueError (showing
    the URL by :func:`shown_url`) for credentials (:func:`check_no_credentials`),
    another scheme, no bucket, or a bucket that is not 1 to 255 letters,
    digits, ``.``, ``-`` or ``_`` (what botocore accepts; the name is then
    not shown: a ``:`` in it may be ``key:secret``).
    """
    check_no_credentials(url)
    if not url.startswith("s3://") or url.startswith("s3:///"):
        raise ValueError(f"not an s3://bucket/prefix URL: {shown_url(url)}")
    _, bucket, prefix = _authority(url)
    if not _BUCKET_NAME.fullmatch(bucket):
        raise ValueError("not a valid S3 bucket name (1 to 255 letters, digits, '.', '-' or '_'): " + shown_url(url))
    return bucket, prefix.strip("/")


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


def http_url_problem(value: str) -> str:
    """Why ``value`` is not an http or https URL with a host (shown
    redacted), or ``""`` when it is one: the rule of every base URL and
    context-system URL of a run profile."""
    try:
        parts = urlsplit(value)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port
    except ValueError:
        valid = False
    return "" if valid else f"{redact_url(value)!r} is not an http or https URL with a host"
