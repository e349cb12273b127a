"""Single objects in S3-compatible storage: reading inputs (benchmark, run,
registry) and writing a report atomically.

An object is named ``s3://bucket/key``. Credentials come only from boto3's
default chain; messages name objects by their URL, never the endpoint (it
may embed credentials).
"""

from __future__ import annotations

import contextlib
import io
import posixpath
import uuid
from typing import Any, Final

import botocore.exceptions

from eceb_worker.errors import InputError, OutputError, Problem, StorageError
from eceb_worker.storage.s3 import make_s3_client, parse_s3_url

__all__ = ["ObjectStore", "is_s3_url", "object_sibling", "split_object_url"]

_MISSING: Final = frozenset({"NoSuchKey", "404", "NotFound"})
_STREAM_RESUMES: Final = 3
"""Times a stream (:meth:`ObjectStore.open`) whose connection breaks is
resumed where it broke off, by a ranged read of the same version."""
_READ_ERRORS: Final = (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError)
_CHANGED: Final = frozenset({"PreconditionFailed", "412"})


def is_s3_url(location: object) -> bool:
    """True for a string ``s3://...``."""
    return isinstance(location, str) and location.startswith("s3://")


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


class ObjectStore:
    """Reads and writes whole objects through one boto3 client."""

    def __init__(self, endpoint_url: str | None = None, *, client: Any = None) -> None:
        if client is None:
            try:
                client = make_s3_client(endpoint_url, concurrency=4)
            except ValueError as exc:
                raise StorageError(str(exc)) from None
        self._client = client

    def _fail(self, url: str, exc: Exception, *, writing: bool = False) -> Exception:
        """The eceb error for a failed request on ``url``."""
        if isinstance(exc, botocore.exceptions.ClientError):
            error = exc.response.get("Error", {})
            code = str(error.get("Code", "")) or "error"
            if not writing and code in _MISSING:
                return InputError([Problem(file=url, message="cannot read: no such object")])
            if not writing and code in _CHANGED:
                return InputError([Problem(file=url, message="changed while the job ran (its ETag differs)")])
            if code == "NoSuchBucket":
                error_type = OutputError if writing else StorageError
                return error_type(f"{url}: no such bucket")
            if writing:
                return OutputError(f"{url}: cannot write ({code})")
            return StorageError(f"{url}: cannot read ({code})")
        return StorageError(f"{url}: cannot reach the endpoint ({type(exc).__name__})")

    def _get_object(self, url: str, etag: str | None, *, byte_range: str | None = None) -> tuple[Any, str]:
        """One GET of ``url`` (only version ``etag`` when given; ``Range:
        bytes=...`` when ``byte_range``): the response and its ETag. Raises
        :class:`InputError` for a malformed URL, a missing object or another
        version, ``StorageError`` when the storage cannot be used."""
        try:
            bucket, key = split_object_url(url)
        except ValueError as exc:
            raise InputError([Problem(file=url, message=str(exc))]) from None
        extra = {"IfMatch": etag} if etag else {}
        if byte_range is not None:
            extra["Range"] = f"bytes={byte_range}"
        try:
            response = self._client.get_object(Bucket=bucket, Key=key, **extra)
        except _READ_ERRORS as exc:
            raise self._fail(url, exc) from None
        found = str(response.get("ETag", ""))
        if etag and found != etag:
            response["Body"].close()
            raise InputError([Problem(file=url, message="changed while the job ran (its ETag differs)")])
        return response, found

    def _read_body(self, url: str, response: Any) -> bytes:
        try:
            data: bytes = response["Body"].read()
        except _READ_ERRORS as exc:
            raise self._fail(url, exc) from None
        return data

    def get(self, url: str, *, etag: str | None = None) -> tuple[bytes, str]:
        """The object's bytes and ETag. With ``etag``, only that version is
        accepted (a changed object is bad input).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used.
        """
        response, found = self._get_object(url, etag)
        return self._read_body(url, response), found

    def open(
        self, url: str, *, etag: str | None = None, buffer_bytes: int = 1024 * 1024
    ) -> tuple[io.BufferedReader, str]:
        """A stream of the object's bytes (read as they are consumed, never
        held whole) and its ETag. With ``etag``, only that version is
        accepted (a changed object is bad input).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used; reading
        the stream raises ``StorageError`` when the connection fails midway.
        """
        response, found = self._get_object(url, etag)

        def resume(position: int) -> Any:
            return self._get_object(url, found, byte_range=f"{position}-")[0]["Body"]

        body = _ObjectBody(response["Body"], url, self._fail, resume)
        return io.BufferedReader(body, buffer_size=buffer_bytes), found

    def get_range(self, url: str, start: int, end: int, *, etag: str | None = None) -> bytes:
        """Bytes ``[start, end)`` of the object (one ranged GET; ``start < end``).
        With ``etag``, only that version is accepted (a changed object is bad input).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used or the
        object is shorter than ``end``; ValueError for an empty or negative range.
        """
        if not 0 <= start < end:
            raise ValueError(f"not a byte range: [{start}, {end})")
        response, _ = self._get_object(url, etag, byte_range=f"{start}-{end - 1}")
        data = self._read_body(url, response)
        if len(data) != end - start:
            raise StorageError(f"{url}: asked for bytes {start}..{end - 1}, got {len(data)} bytes")
        return data

    def exists(self, url: str) -> bool:
        """True when the object exists; raises ``StorageError`` when that cannot be told."""
        bucket, key = split_object_url(url)
        try:
            self._client.head_object(Bucket=bucket, Key=key)
        except botocore.exceptions.ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in _MISSING:
                return False
            raise self._fail(url, exc) from None
        except (botocore.exceptions.BotoCoreError, OSError) as exc:
            raise self._fail(url, exc) from None
        return True

    def bucket_exists(self, url: str) -> bool:
        """True when the bucket of ``url`` exists; raises ``StorageError``
        when that cannot be told (unreachable endpoint, access refused)."""
        bucket, _ = split_object_url(url)
        try:
            self._client.head_bucket(Bucket=bucket)
        except botocore.exceptions.ClientError as exc:
            if str(exc.response.get("Error", {}).get("Code", "")) in {*_MISSING, "NoSuchBucket"}:
                return False
            raise self._fail(url, exc) from None
        except (botocore.exceptions.BotoCoreError, OSError) as exc:
            raise self._fail(url, exc) from None
        return True

    def delete(self, url: str) -> None:
        """Delete the object at ``url`` (nothing when there is none). Raises
        :class:`OutputError` when it cannot be deleted."""
        try:
            bucket, key = split_object_url(url)
            self._client.delete_object(Bucket=bucket, Key=key)
        except ValueError as exc:
            raise OutputError(str(exc)) from None
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError) as exc:
            error = self._fail(url, exc, writing=True)
            raise (error if isinstance(error, OutputError) else OutputError(str(error))) from None

    def check_writable(self, url: str) -> None:
        """Check that an object can be written under ``url``'s bucket and
        prefix, by writing and deleting an empty probe object beside it
        (``.<name>.<random>.probe``). Raises :class:`OutputError` naming
        ``url`` when it cannot (no such bucket, access denied, unreachable).
        """
        try:
            bucket, key = split_object_url(url)
        except ValueError as exc:
            raise OutputError(str(exc)) from None
        directory, name = posixpath.split(key)
        probe = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.probe")
        try:
            self._client.put_object(Bucket=bucket, Key=probe, Body=b"")
            self._client.delete_object(Bucket=bucket, Key=probe)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError) as exc:
            error = self._fail(url, exc, writing=True)
            raise (error if isinstance(error, OutputError) else OutputError(str(error))) from None

    def put_atomic(self, url: str, data: bytes) -> None:
        """Write ``data`` under ``url`` so that a reader of ``url`` sees the old
        object or the complete new one, never a part.

        S3 has no rename: the bytes go to a temporary key beside the final one
        (``.<name>.<random>.partial``), are copied to the final key in one
        request, and the temporary object is deleted (also on failure).
        Raises :class:`OutputError` when the object cannot be written.
        """
        try:
            bucket, key = split_object_url(url)
        except ValueError as exc:
            raise OutputError(str(exc)) from None
        directory, name = posixpath.split(key)
        temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.partial")
        try:
            self._client.put_object(Bucket=bucket, Key=temporary, Body=data)
            try:
                self._client.copy_object(
                    Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": temporary}, MetadataDirective="COPY"
                )
            finally:
                self._client.delete_object(Bucket=bucket, Key=temporary)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError, OSError) as exc:
            raise self._fail(url, exc, writing=True) from None


class _ObjectBody(io.RawIOBase):
    """An object's streaming body as a raw binary stream. A read that fails
    is resumed from where it stopped (``resume(position)`` gives a new body),
    then is a ``StorageError`` naming the object."""

    def __init__(self, body: Any, url: str, fail: Any, resume: Any) -> None:
        super().__init__()
        self._body = body
        self._url = url
        self._fail = fail
        self._resume = resume
        self._position = 0
        self._resumed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while True:
            try:
                data = self._body.read(len(view))
                break
            except _READ_ERRORS as exc:
                if self._resumed >= _STREAM_RESUMES:
                    raise self._fail(self._url, exc) from None
                self._resumed += 1
                with contextlib.suppress(Exception):
                    self._body.close()
                self._body = self._resume(self._position)
        view[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._body.close()
        super().close()
