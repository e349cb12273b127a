"""Corpus storage in an S3-compatible bucket (AWS S3, MinIO, Ceph, ...).

Credentials come only from boto3's default chain (environment, shared files,
instance roles); they are never printed, logged or written anywhere.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from eceb_worker.engine.digests import HashedBytes, digest_chunks
from eceb_worker.engine.ports import ListedEntry
from eceb_worker.errors import ArtifactMissing, ArtifactUnreadable, StorageError

__all__ = ["S3Storage", "make_s3_client", "parse_s3_url"]

CHUNK_BYTES: Final = 1024 * 1024
DEFAULT_CONCURRENCY: Final = 16
_MISSING_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})
_BUCKET_GONE: Final = frozenset({"NoSuchBucket"})
# The service refuses the credentials themselves: every request would fail alike.
_CREDENTIALS_REJECTED: Final = frozenset(
    {
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AuthorizationHeaderMalformed",
    }
)
# No credentials could be found or loaded on this side.
_NO_CREDENTIALS: Final = (
    botocore.exceptions.NoCredentialsError,
    botocore.exceptions.PartialCredentialsError,
    botocore.exceptions.CredentialRetrievalError,
)
# The connection broke while the object's bytes were streaming: botocore's
# retries cover the request, not the body, so the object is read again.
_STREAM_FAILURES: Final = (
    botocore.exceptions.ResponseStreamingError,
    botocore.exceptions.IncompleteReadError,
    botocore.exceptions.ReadTimeoutError,
    botocore.exceptions.ConnectionClosedError,
)
STREAM_ATTEMPTS: Final = 3
_STREAM_BACKOFF_S: Final = 0.1


class _BrokenStream(Exception):
    """The body of a GET broke off; carries the botocore error's type name."""


CONNECT_TIMEOUT_S: Final = 10
READ_TIMEOUT_S: Final = 30
"""Seconds before a silent endpoint counts as unreachable (each attempt)."""


def _check_endpoint(endpoint_url: str) -> None:
    """Raise ValueError (never repeating the URL: it may hold credentials)
    unless ``endpoint_url`` is ``http[s]://host[:port][/path]``."""
    message = "invalid S3 endpoint URL (expected http[s]://host[:port])"
    try:
        parts = urlsplit(endpoint_url)
        port = parts.port
    except ValueError:
        raise ValueError(message) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(message)
    if port is not None and not 0 < port < 65536:
        raise ValueError(message)


def make_s3_client(endpoint_url: str | None, *, concurrency: int = DEFAULT_CONCURRENCY, max_attempts: int = 8) -> Any:
    """A boto3 S3 client (path-style addressing for a custom endpoint, botocore's
    ``standard`` retries, a pool of ``concurrency`` connections). Credentials
    come from boto3's default chain. Raises ValueError for a malformed endpoint
    (the message never repeats it: it may embed credentials).
    """
    if endpoint_url is not None:
        _check_endpoint(endpoint_url)
    config = botocore.config.Config(
        max_pool_connections=max(1, concurrency),
        retries={"mode": "standard", "max_attempts": max_attempts},
        s3={"addressing_style": "path"} if endpoint_url else None,
        connect_timeout=CONNECT_TIMEOUT_S,
        read_timeout=READ_TIMEOUT_S,
    )
    try:
        return boto3.session.Session().client("s3", endpoint_url=endpoint_url, config=config)
    except ValueError:
        # botocore's message repeats the endpoint verbatim.
        raise ValueError("invalid S3 endpoint URL (expected http[s]://host[:port])") from None


def parse_s3_url(url: str) -> tuple[str, str]:
    """Split ``s3://bucket/prefix`` into ``(bucket, prefix)``; the prefix has no
    leading or trailing ``/`` and may be empty. Raises ValueError otherwise.
    """
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ValueError(f"not an s3://bucket/prefix URL: {url!r}")
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise ValueError(f"an s3:// URL takes no credentials, query or fragment: s3://{parts.netloc.split('@')[-1]}/…")
    return parts.netloc, parts.path.strip("/")


class S3Storage:
    """A corpus stored under ``s3://bucket/prefix``: artifact ``path`` is the
    object ``prefix/path``. Portable paths cannot leave the prefix.

    One boto3 client is shared by all threads (clients are thread-safe); its
    connection pool is sized to ``concurrency`` and each request is retried
    with botocore's ``standard`` mode (throttling, 5xx and connection errors,
    with backoff, up to ``max_attempts`` attempts). A connection that breaks
    while an object's bytes stream is not covered by those retries: the object
    is then read again from the start, ``STREAM_ATTEMPTS`` reads in all.

    Raises ValueError for a malformed URL or endpoint; the message never
    repeats the endpoint (it may embed credentials).
    """

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_attempts: int = 8,
        client: Any = None,
    ) -> None:
        self._bucket, self._prefix = parse_s3_url(url)
        self._concurrency = max(1, concurrency)
        if client is None:
            client = make_s3_client(endpoint_url, concurrency=self._concurrency, max_attempts=max_attempts)
        elif endpoint_url is not None:
            _check_endpoint(endpoint_url)
        self._client = client

    @property
    def location(self) -> str:
        """``s3://bucket/prefix`` (the endpoint is not shown: it may embed credentials)."""
        return f"s3://{self._bucket}/{self._prefix}" if self._prefix else f"s3://{self._bucket}"

    @property
    def concurrency(self) -> int:
        """Concurrent object reads per process."""
        return self._concurrency

    def _key(self, path: str) -> str:
        return f"{self._prefix}/{path}" if self._prefix else path

    def hash_artifact(self, path: str) -> HashedBytes:
        """Stream the object's bytes through BLAKE3; ``(size_bytes, hex digest)``.

        Raises ``ArtifactMissing`` (no such key), ``ArtifactUnreadable``
        (access denied, read failed after retries) or ``StorageError`` (the
        bucket does not exist, the endpoint cannot be reached, no credentials
        were found or the service rejects them).
        """
        for attempt in range(STREAM_ATTEMPTS - 1):
            try:
                return self._hash_once(path)
            except _BrokenStream:
                time.sleep(_STREAM_BACKOFF_S * 2**attempt)
        try:
            return self._hash_once(path)
        except _BrokenStream as exc:
            raise ArtifactUnreadable(path, f"read failed: {exc}") from None

    def _hash_once(self, path: str) -> HashedBytes:
        """One GET of the object, hashed as its bytes stream; raises
        ``_BrokenStream`` when the body breaks off.
        """
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=self._key(path))
            body = response["Body"]
            try:
                return digest_chunks(body.iter_chunks(CHUNK_BYTES))
            except _STREAM_FAILURES as exc:
                raise _BrokenStream(type(exc).__name__) from None
            finally:
                body.close()
        except botocore.exceptions.ClientError as exc:
            error = exc.response.get("Error", {})
            code = str(error.get("Code", ""))
            if code in _MISSING_CODES:
                raise ArtifactMissing(path, "no such object") from None
            if code in _BUCKET_GONE:
                raise StorageError(f"{self.location}: no such bucket") from None
            if code in _CREDENTIALS_REJECTED:
                raise StorageError(f"{self.location}: the credentials were rejected ({code})") from None
            raise ArtifactUnreadable(path, f"{code or 'error'}: {error.get('Message', '')}".strip()) from None
        except (botocore.exceptions.ConnectionError, botocore.exceptions.ReadTimeoutError) as exc:
            # Connection refused, connect or read timeout, proxy or TLS failure, after retries.
            raise StorageError(f"{self.location}: cannot reach the endpoint ({type(exc).__name__})") from None
        except botocore.exceptions.EndpointResolutionError:
            raise StorageError(f"{self.location}: invalid endpoint") from None
        except _NO_CREDENTIALS as exc:
            raise StorageError(f"{self.location}: no usable AWS credentials ({type(exc).__name__})") from None
        except (botocore.exceptions.BotoCoreError, OSError) as exc:
            raise ArtifactUnreadable(path, f"read failed: {type(exc).__name__}") from None

    def list_entries(self) -> Iterator[ListedEntry]:
        """Every object under the prefix (paginated, 1,000 keys a page).

        Raises ``StorageError`` when the bucket cannot be listed.
        """
        prefix = f"{self._prefix}/" if self._prefix else ""
        paginator = self._client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self._bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    key = item["Key"]
                    if key.endswith("/"):
                        continue
                    yield ListedEntry(path=key[len(prefix) :], size_bytes=int(item["Size"]))
        except botocore.exceptions.ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "error")
            raise StorageError(f"{self.location}: cannot list ({code})") from None
        except botocore.exceptions.BotoCoreError as exc:
            raise StorageError(f"{self.location}: cannot list ({type(exc).__name__})") from None
