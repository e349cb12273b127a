"""S3-compatible object storage (AWS S3, MinIO, Ceph, ...): the client, the
one mapping of botocore's errors to eceb's, the one way a broken read is
retried, and single objects (inputs read, reports written atomically).

Retries: every request is retried by botocore's ``standard`` mode
(throttling, 5xx and connection errors, with back-off, up to
``max_attempts``). A connection that breaks while an object's bytes stream
is not covered by those: the read resumes where it stopped with a ranged GET
of the same version (``If-Match`` its ETag), :data:`STREAM_ATTEMPTS` reads
in all, with back-off (:class:`ResumableBody`).

Errors: :func:`s3_error` is the one table from botocore's exceptions and S3
error codes to eceb's errors, for each role a request plays (hashing an
artifact, listing a corpus, reading an input, writing an output).

Credentials come only from boto3's default chain (environment, shared files,
instance roles); they are never printed, logged or written anywhere.
Messages name objects by their ``s3://`` URL, never the endpoint (it may
embed credentials).
"""

from __future__ import annotations

import contextlib
import enum
import io
import posixpath
import time
import uuid
from collections.abc import Iterator
from typing import Any, Final
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from eceb_worker.errors import (
    ArtifactMissing,
    ArtifactUnreadable,
    EcebError,
    InputError,
    OutputError,
    Problem,
    StorageError,
)

__all__ = [
    "CHUNK_BYTES",
    "STREAM_ATTEMPTS",
    "ObjectStore",
    "ResumableBody",
    "Role",
    "is_s3_url",
    "make_s3_client",
    "object_sibling",
    "parse_s3_url",
    "s3_error",
    "split_object_url",
]

CHUNK_BYTES: Final = 1024 * 1024
"""Bytes read from an object's body at a time."""
DEFAULT_CONCURRENCY: Final = 16
REQUEST_ATTEMPTS: Final = 8
"""Attempts of one request (botocore's ``standard`` retry mode)."""
STREAM_ATTEMPTS: Final = 4
"""Reads of one object's bytes in all: the first, then resumes where the
connection broke off."""
STREAM_BACKOFF_S: Final = 0.1
"""Wait before the first resume; doubled before each further one."""
CONNECT_TIMEOUT_S: Final = 10
READ_TIMEOUT_S: Final = 30
"""Seconds before a silent endpoint counts as unreachable (each attempt)."""

_INVALID_ENDPOINT: Final = "invalid S3 endpoint URL (expected http[s]://host[:port])"
_MISSING: Final = frozenset({"NoSuchKey", "404", "NotFound"})
_CHANGED: Final = frozenset({"PreconditionFailed", "412"})
_NO_BUCKET: Final = "NoSuchBucket"
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
_UNREACHABLE: Final = (botocore.exceptions.ConnectionError, botocore.exceptions.ReadTimeoutError)
REQUEST_ERRORS: Final = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError)
"""What a request (or reading its body) may raise; :func:`s3_error` maps each."""


class ObjectChanged(Exception):
    """The object is no longer the version asked for (its ETag differs)."""


class BrokenStream(Exception):
    """An object's body broke off :data:`STREAM_ATTEMPTS` times; carries the
    last error's type name."""


FAILURES: Final = (*REQUEST_ERRORS, ObjectChanged, BrokenStream)
"""Everything :func:`s3_error` maps."""


class Role(enum.Enum):
    """What a failed request was for: it decides the error and its words."""

    ARTIFACT = "hashing an artifact"
    LISTING = "listing a corpus"
    READING = "reading an input"
    WRITING = "writing an output"


def s3_error(exc: BaseException, role: Role, where: str, path: str = "") -> EcebError:  # noqa: PLR0911 - a table
    """The eceb error for a failed request (one of :data:`FAILURES`).

    ``where`` names the object or corpus (an ``s3://`` URL, never the
    endpoint); ``path`` is the artifact's corpus-relative path (role
    ``ARTIFACT``). One artifact's failure is an ``ArtifactReadError``; the
    storage failing as a whole (no bucket, credentials missing or refused,
    endpoint unreachable or invalid) a ``StorageError``; an input missing or
    changed an :class:`InputError`; an output that cannot be written an
    :class:`OutputError`.
    """
    kind = type(exc).__name__
    if isinstance(exc, botocore.exceptions.ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        return _client_error(code, str(error.get("Message", "")), role, where, path)
    if isinstance(exc, ObjectChanged):
        if role is Role.ARTIFACT:
            return ArtifactUnreadable(path, "changed while it was read")
        return InputError([Problem(file=where, message="changed while the job ran (its ETag differs)")])
    if isinstance(exc, BrokenStream):
        kind = str(exc)
        if role is Role.ARTIFACT:
            return ArtifactUnreadable(path, f"read failed: {kind}")
    if role is Role.LISTING:
        return StorageError(f"{where}: cannot list ({kind})")
    if role is not Role.ARTIFACT:
        return StorageError(f"{where}: cannot reach the endpoint ({kind})")
    if isinstance(exc, _UNREACHABLE):
        # Connection refused, connect or read timeout, proxy or TLS failure, after retries.
        return StorageError(f"{where}: cannot reach the endpoint ({kind})")
    if isinstance(exc, botocore.exceptions.EndpointResolutionError):
        return StorageError(f"{where}: invalid endpoint")
    if isinstance(exc, _NO_CREDENTIALS):
        return StorageError(f"{where}: no usable AWS credentials ({kind})")
    return ArtifactUnreadable(path, f"read failed: {kind}")


def _client_error(code: str, message: str, role: Role, where: str, path: str) -> EcebError:  # noqa: PLR0911 - a table
    """:func:`s3_error` for an error the service answered with (``code``)."""
    shown = code or "error"
    if role is Role.LISTING:
        return StorageError(f"{where}: cannot list ({shown})")
    if role is Role.WRITING:
        return OutputError(f"{where}: no such bucket" if code == _NO_BUCKET else f"{where}: cannot write ({shown})")
    if code == _NO_BUCKET:
        return StorageError(f"{where}: no such bucket")
    if role is Role.READING:
        if code in _MISSING:
            return InputError([Problem(file=where, message="cannot read: no such object")])
        if code in _CHANGED:
            return InputError([Problem(file=where, message="changed while the job ran (its ETag differs)")])
        return StorageError(f"{where}: cannot read ({shown})")
    if code in _MISSING:
        return ArtifactMissing(path, "no such object")
    if code in _CREDENTIALS_REJECTED:
        return StorageError(f"{where}: the credentials were rejected ({code})")
    if code in _CHANGED:
        return ArtifactUnreadable(path, "changed while it was read")
    return ArtifactUnreadable(path, f"{shown}: {message}".strip())


def check_endpoint(endpoint_url: str) -> None:
    """Raise ValueError (never repeating the URL: it may hold credentials)
    unless ``endpoint_url`` is ``http[s]://host[:port][/path]``."""
    try:
        parts = urlsplit(endpoint_url)
        port = parts.port
    except ValueError:
        raise ValueError(_INVALID_ENDPOINT) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(_INVALID_ENDPOINT)
    if port is not None and not 0 < port < 65536:
        raise ValueError(_INVALID_ENDPOINT)


def make_s3_client(
    endpoint_url: str | None, *, concurrency: int = DEFAULT_CONCURRENCY, max_attempts: int = REQUEST_ATTEMPTS
) -> Any:
    """A boto3 S3 client (path-style addressing for a custom endpoint, botocore's
    ``standard`` retries, a pool of ``concurrency`` connections). Credentials
    come from boto3's default chain. Raises ValueError for a malformed endpoint
    (the message never repeats it: it may embed credentials).
    """
    if endpoint_url is not None:
        check_endpoint(endpoint_url)
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
        raise ValueError(_INVALID_ENDPOINT) from None


def is_s3_url(location: object) -> bool:
    """True for a string ``s3://...``."""
    return isinstance(location, str) and location.startswith("s3://")


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


def split_object_url(url: str) -> tuple[str, str]:
    """``(bucket, key)`` of ``s3://bucket/key``; raises ValueError when the key is empty."""
    bucket, key = parse_s3_url(url)
    if not key:
        raise ValueError(f"not an s3://bucket/key object URL: {url!r}")
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


def get_object(client: Any, bucket: str, key: str, *, etag: str | None = None, start: int = 0) -> tuple[Any, str]:
    """One GET of ``bucket/key`` from byte ``start`` on (only version ``etag``
    when given): the response body and the object's ETag. Raises what the
    request raises (:data:`REQUEST_ERRORS`) and :class:`ObjectChanged` when the
    version differs."""
    extra: dict[str, str] = {"IfMatch": etag} if etag else {}
    if start:
        extra["Range"] = f"bytes={start}-"
    response = client.get_object(Bucket=bucket, Key=key, **extra)
    found = str(response.get("ETag", ""))
    if etag and found != etag:
        response["Body"].close()
        raise ObjectChanged(key)
    return response["Body"], found


class ResumableBody:
    """An object's bytes, read in order; a read that breaks off is resumed
    where it stopped with a ranged GET pinned to the same version, up to
    :data:`STREAM_ATTEMPTS` reads in all, with back-off. Then
    :class:`BrokenStream`. A resumed request that fails raises what it
    raises (:data:`REQUEST_ERRORS`, :class:`ObjectChanged`)."""

    def __init__(self, client: Any, bucket: str, key: str, *, etag: str | None = None) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self._body, self.etag = get_object(client, bucket, key, etag=etag)
        self._position = 0
        self._reads = 1

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes; ``b""`` at the end of the object."""
        while True:
            try:
                data: bytes = self._body.read(size)
            except (botocore.exceptions.BotoCoreError, OSError) as exc:
                if self._reads >= STREAM_ATTEMPTS:
                    raise BrokenStream(type(exc).__name__) from None
                with contextlib.suppress(Exception):
                    self._body.close()
                time.sleep(STREAM_BACKOFF_S * 2 ** (self._reads - 1))
                self._reads += 1
                self._body, _ = get_object(self._client, self._bucket, self._key, etag=self.etag, start=self._position)
                continue
            self._position += len(data)
            return data

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes]:
        """The object's bytes from where the reads stand, ``size`` at a time."""
        while data := self.read(size):
            yield data

    def close(self) -> None:
        """Close the connection's body."""
        self._body.close()


class _RawBody(io.RawIOBase):
    """A :class:`ResumableBody` as a raw binary stream; a failure is the eceb
    error of reading an input (``url``)."""

    def __init__(self, body: ResumableBody, url: str) -> None:
        super().__init__()
        self._body = body
        self._url = url

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        try:
            data = self._body.read(len(view))
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, self._url) from None
        view[: len(data)] = data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()


def _object(url: str, failure: type[EcebError]) -> tuple[str, str]:
    """``(bucket, key)`` of an object URL; a malformed one is ``failure``."""
    try:
        return split_object_url(url)
    except ValueError as exc:
        if failure is InputError:
            raise InputError([Problem(file=url, message=str(exc))]) from None
        raise failure(str(exc)) from None


class ObjectStore:
    """Reads and writes whole objects, named ``s3://bucket/key``, through one
    boto3 client. Raises ``StorageError`` at construction for a malformed
    endpoint (never repeating it)."""

    def __init__(self, endpoint_url: str | None = None, *, client: Any = None) -> None:
        if client is None:
            try:
                client = make_s3_client(endpoint_url, concurrency=4)
            except ValueError as exc:
                raise StorageError(str(exc)) from None
        self.client = client

    def get(self, url: str, *, etag: str | None = None) -> tuple[bytes, str]:
        """The object's bytes and ETag. With ``etag``, only that version is
        accepted (a changed object is bad input).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used.
        """
        stream, found = self.open(url, etag=etag)
        with stream:
            return stream.read(), found

    def open(
        self, url: str, *, etag: str | None = None, buffer_bytes: int = CHUNK_BYTES
    ) -> tuple[io.BufferedReader, str]:
        """A stream of the object's bytes (read as they are consumed, never
        held whole; a broken read resumes, :class:`ResumableBody`) and its
        ETag. With ``etag``, only that version is accepted.

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used; reading
        the stream raises them too.
        """
        bucket, key = _object(url, InputError)
        try:
            body = ResumableBody(self.client, bucket, key, etag=etag)
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, url) from None
        return io.BufferedReader(_RawBody(body, url), buffer_size=buffer_bytes), body.etag

    def get_range(self, url: str, start: int, end: int, *, etag: str | None = None) -> bytes:
        """Bytes ``[start, end)`` of the object (one ranged GET; ``start < end``).
        With ``etag``, only that version is accepted (a changed object is bad input).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used or the
        object is shorter than ``end``; ValueError for an empty or negative range.
        """
        if not 0 <= start < end:
            raise ValueError(f"not a byte range: [{start}, {end})")
        bucket, key = _object(url, InputError)
        extra = {"IfMatch": etag} if etag else {}
        try:
            response = self.client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}", **extra)
            if etag and str(response.get("ETag", "")) != etag:
                response["Body"].close()
                raise ObjectChanged(key)
            data: bytes = response["Body"].read()
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, url) from None
        if len(data) != end - start:
            raise StorageError(f"{url}: asked for bytes {start}..{end - 1}, got {len(data)} bytes")
        return data

    def exists(self, url: str) -> bool:
        """True when the object exists; raises ``StorageError`` when that cannot be told."""
        bucket, key = _object(url, InputError)
        try:
            self.client.head_object(Bucket=bucket, Key=key)
        except botocore.exceptions.ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING:
                return False
            raise s3_error(exc, Role.READING, url) from None
        except REQUEST_ERRORS as exc:
            raise s3_error(exc, Role.READING, url) from None
        return True

    def bucket_exists(self, url: str) -> bool:
        """True when the bucket of ``url`` exists; raises ``StorageError``
        when that cannot be told (unreachable endpoint, access refused)."""
        bucket, _ = _object(url, InputError)
        try:
            self.client.head_bucket(Bucket=bucket)
        except botocore.exceptions.ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in {*_MISSING, _NO_BUCKET}:
                return False
            raise s3_error(exc, Role.READING, url) from None
        except REQUEST_ERRORS as exc:
            raise s3_error(exc, Role.READING, url) from None
        return True

    def delete(self, url: str) -> None:
        """Delete the object at ``url`` (nothing when there is none). Raises
        :class:`OutputError` when it cannot be deleted."""
        bucket, key = _object(url, OutputError)
        try:
            self.client.delete_object(Bucket=bucket, Key=key)
        except REQUEST_ERRORS as exc:
            raise _output_error(s3_error(exc, Role.WRITING, url)) from None

    def check_writable(self, url: str) -> None:
        """Check that an object can be written under ``url``'s bucket and
        prefix, by writing and deleting an empty probe object beside it
        (``.<name>.<random>.probe``). Raises :class:`OutputError` naming
        ``url`` when it cannot (no such bucket, access denied, unreachable).
        """
        bucket, key = _object(url, OutputError)
        directory, name = posixpath.split(key)
        probe = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.probe")
        try:
            self.client.put_object(Bucket=bucket, Key=probe, Body=b"")
            self.client.delete_object(Bucket=bucket, Key=probe)
        except REQUEST_ERRORS as exc:
            raise _output_error(s3_error(exc, Role.WRITING, url)) from None

    def put_atomic(self, url: str, data: bytes) -> None:
        """Write ``data`` under ``url`` so that a reader of ``url`` sees the old
        object or the complete new one, never a part.

        S3 has no rename: the bytes go to a temporary key beside the final one
        (``.<name>.<random>.partial``), are copied to the final key in one
        request, and the temporary object is deleted (also on failure).
        Raises :class:`OutputError` when the object cannot be written,
        ``StorageError`` when the endpoint cannot be reached.
        """
        bucket, key = _object(url, OutputError)
        directory, name = posixpath.split(key)
        temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.partial")
        try:
            self.client.put_object(Bucket=bucket, Key=temporary, Body=data)
            try:
                self.client.copy_object(
                    Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": temporary}, MetadataDirective="COPY"
                )
            finally:
                self.client.delete_object(Bucket=bucket, Key=temporary)
        except REQUEST_ERRORS as exc:
            raise s3_error(exc, Role.WRITING, url) from None


def _output_error(error: EcebError) -> OutputError:
    """``error`` as an :class:`OutputError` (an unreachable endpoint included)."""
    return error if isinstance(error, OutputError) else OutputError(str(error))
