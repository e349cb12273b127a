"""Single objects in S3-compatible storage, named ``s3://bucket/key``: inputs
read whole, as a stream or by byte range (pinned to a version by its ETag),
outputs written atomically. Requests, retries and errors are those of
:mod:`eceb_worker.io.s3`.
"""

from __future__ import annotations

import io
import posixpath
import shutil
import uuid
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from eceb_worker.core.urls import split_object_url
from eceb_worker.errors import EcebError, InputError, OutputError, Problem, StorageError
from eceb_worker.io.s3 import (
    CHUNK_BYTES,
    FAILURES,
    MISSING_CODES,
    NO_SUCH_BUCKET,
    REQUEST_ERRORS,
    ObjectChanged,
    Role,
    describe_endpoint,
    error_code,
    make_s3_client,
    s3_error,
    upload_file,
)
from eceb_worker.io.s3_reads import ResumableBody, read_body, read_checked, read_object

__all__ = ["ObjectStore"]


class _RawBody(io.RawIOBase):
    """A :class:`ResumableBody` as a raw binary stream; a failure is the eceb
    error of reading an input (``url``)."""

    def __init__(self, body: ResumableBody, url: str, endpoint: str) -> None:
        super().__init__()
        self._body = body
        self._url = url
        self._endpoint = endpoint

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        try:
            data = self._body.read(len(view))
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, self._url, endpoint=self._endpoint) from None
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
        self.endpoint = describe_endpoint(client)
        """How messages name the endpoint (:func:`~eceb_worker.io.s3.describe_endpoint`)."""

    def get(self, url: str, *, etag: str | None = None) -> tuple[bytes, str]:
        """The object's bytes and ETag. With ``etag``, only that version is
        accepted (a changed object is bad input). Bytes that fail the
        checksum the store sent are read again (:func:`~eceb_worker.io.s3.read_checked`).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used or the
        bytes arrive corrupted on every read.
        """
        bucket, key = _object(url, InputError)
        try:
            return read_object(self.client, bucket, key, b"".join, etag=etag)
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, url, endpoint=self.endpoint) from None

    def open(
        self, url: str, *, etag: str | None = None, buffer_bytes: int = CHUNK_BYTES
    ) -> tuple[io.BufferedReader, str]:
        """A stream of the object's bytes (read as they are consumed, never
        held whole; a broken read resumes, :class:`ResumableBody`) and its
        ETag. With ``etag``, only that version is accepted.

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used; reading
        the stream raises them too, and ``StorageError`` for bytes that fail
        the checksum the store sent (they were handed out: not read again).
        """
        bucket, key = _object(url, InputError)
        try:
            body = ResumableBody(self.client, bucket, key, etag=etag)
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, url, endpoint=self.endpoint) from None
        return io.BufferedReader(_RawBody(body, url, self.endpoint), buffer_size=buffer_bytes), body.etag

    def download(self, url: str, path: Path) -> None:
        """Write the object's bytes to the local file ``path`` as they are
        read (:meth:`open`: never held whole, a broken read resumes).
        Raises what :meth:`open` and reading its stream raise, ``OSError``
        when the file cannot be written."""
        stream, _ = self.open(url)
        with stream, path.open("wb") as out:
            shutil.copyfileobj(stream, out, CHUNK_BYTES)

    def get_range(self, url: str, start: int, end: int, *, etag: str | None = None) -> bytes:
        """Bytes ``[start, end)`` of the object (one ranged GET, again when its
        bytes fail the checksum the store sent; ``start < end``). With
        ``etag``, only that version is accepted (a changed object is bad input).

        Raises :class:`InputError` naming the object when it does not exist
        or changed, ``StorageError`` when the storage cannot be used or the
        object is shorter than ``end``; ValueError for an empty or negative range.
        """
        if not 0 <= start < end:
            raise ValueError(f"not a byte range: [{start}, {end})")
        bucket, key = _object(url, InputError)
        extra = {"IfMatch": etag} if etag else {}

        def read() -> bytes:
            response = self.client.get_object(Bucket=bucket, Key=key, Range=f"bytes={start}-{end - 1}", **extra)
            if etag and str(response.get("ETag", "")) != etag:
                response["Body"].close()
                raise ObjectChanged(key)
            return read_body(response["Body"])

        try:
            data = read_checked(read)
        except FAILURES as exc:
            raise s3_error(exc, Role.READING, url, endpoint=self.endpoint) from None
        if len(data) != end - start:
            raise StorageError(f"{url}: asked for bytes {start}..{end - 1}, got {len(data)} bytes")
        return data

    def exists(self, url: str) -> bool:
        """True when the object exists; raises ``StorageError`` when that cannot be told."""
        bucket, key = _object(url, InputError)
        return self._found(url, MISSING_CODES, lambda: self.client.head_object(Bucket=bucket, Key=key))

    def bucket_exists(self, url: str) -> bool:
        """True when the bucket of ``url`` exists; raises ``StorageError``
        when that cannot be told (unreachable endpoint, access refused)."""
        bucket, _ = _object(url, InputError)
        return self._found(url, {*MISSING_CODES, NO_SUCH_BUCKET}, lambda: self.client.head_bucket(Bucket=bucket))

    def holds_any(self, url: str) -> bool:
        """True when some object's key starts with ``url``'s key and ``/`` (the
        prefix holds something; one list request of one key), False when
        none does or the bucket does not exist; raises ``StorageError`` when
        that cannot be told."""
        bucket, key = _object(url, InputError)
        try:
            listed = self.client.list_objects_v2(Bucket=bucket, Prefix=key.rstrip("/") + "/", MaxKeys=1)
        except REQUEST_ERRORS as exc:
            if error_code(exc) in {*MISSING_CODES, NO_SUCH_BUCKET}:
                return False
            raise s3_error(exc, Role.READING, url, endpoint=self.endpoint) from None
        return bool(listed.get("Contents"))

    def _found(self, url: str, absent: AbstractSet[str], head: Callable[[], object]) -> bool:
        """True when the ``head`` request about ``url`` succeeds, False when the
        service answers one of the ``absent`` codes; else the storage's error."""
        try:
            head()
        except REQUEST_ERRORS as exc:
            if error_code(exc) in absent:
                return False
            raise s3_error(exc, Role.READING, url, endpoint=self.endpoint) from None
        return True

    def delete(self, url: str) -> None:
        """Delete the object at ``url`` (nothing when there is none). Raises
        :class:`OutputError` when it cannot be deleted."""
        bucket, key = _object(url, OutputError)
        try:
            self.client.delete_object(Bucket=bucket, Key=key)
        except REQUEST_ERRORS as exc:
            raise _output_error(s3_error(exc, Role.WRITING, url, endpoint=self.endpoint)) from None

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
            raise _output_error(s3_error(exc, Role.WRITING, url, endpoint=self.endpoint)) from None

    def put_file_atomic(self, url: str, path: Path) -> None:
        """Write a local file's bytes under ``url`` as :meth:`put_atomic`
        does, uploaded by boto3's transfer manager (in parts when large,
        each read from the file as it is sent: memory does not grow with
        the file)."""

        def upload(bucket: str, temporary: str) -> None:
            upload_file(self.client, str(path), bucket, temporary)

        self._replace(url, upload)

    def put_atomic(self, url: str, data: bytes) -> None:
        """Write ``data`` under ``url`` so that a reader of ``url`` sees the old
        object or the complete new one, never a part.

        S3 has no rename: the bytes go to a temporary key beside the final one
        (``.<name>.<random>.partial``), are copied to the final key in one
        request, and the temporary object is deleted (also on failure).
        Raises :class:`OutputError` when the object cannot be written,
        ``StorageError`` when the endpoint cannot be reached.
        """
        self._replace(url, lambda bucket, temporary: self.client.put_object(Bucket=bucket, Key=temporary, Body=data))

    def _replace(self, url: str, upload: Callable[[str, str], object]) -> None:
        """Upload the new bytes to a temporary key beside ``url``'s
        (``upload(bucket, temporary_key)``), copy them to ``url`` in one
        request, and delete the temporary object (also on failure)."""
        bucket, key = _object(url, OutputError)
        directory, name = posixpath.split(key)
        temporary = posixpath.join(directory, f".{name}.{uuid.uuid4().hex}.partial")
        try:
            upload(bucket, temporary)
            try:
                self.client.copy_object(
                    Bucket=bucket, Key=key, CopySource={"Bucket": bucket, "Key": temporary}, MetadataDirective="COPY"
                )
            finally:
                self.client.delete_object(Bucket=bucket, Key=temporary)
        except REQUEST_ERRORS as exc:
            raise s3_error(exc, Role.WRITING, url, endpoint=self.endpoint) from None


def _output_error(error: EcebError) -> OutputError:
    """``error`` as an :class:`OutputError` (an unreachable endpoint included)."""
    return error if isinstance(error, OutputError) else OutputError(str(error))
