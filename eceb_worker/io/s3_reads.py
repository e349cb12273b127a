"""Reading an S3 object's bytes: one GET (:func:`get_object`), a stream
resumed where a broken connection left it (:class:`ResumableBody`), and
whole reads again while the bytes fail the store's checksum
(:func:`read_checked`, :func:`read_object`). The retry bounds and the error
table are in :mod:`eceb_worker.io.s3`; each resume and each read again is
told to the storage observer (:mod:`eceb_worker.io.observers`).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from eceb_worker.core.digests import CHECK_READS
from eceb_worker.io.observers import RetryKind, storage_observer
from eceb_worker.io.s3 import (
    CHECKSUM_FAILED,
    CHUNK_BYTES,
    STREAM_ATTEMPTS,
    STREAM_BACKOFF_S,
    STREAM_BROKEN,
    BrokenStream,
    CorruptBody,
    ObjectChanged,
)

__all__ = ["ResumableBody", "get_object", "read_body", "read_checked", "read_object"]

T = TypeVar("T")


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
            except CHECKSUM_FAILED:
                raise CorruptBody("checksum mismatch") from None
            except STREAM_BROKEN as exc:
                if self._reads >= STREAM_ATTEMPTS:
                    raise BrokenStream(type(exc).__name__) from None
                with contextlib.suppress(Exception):
                    self._body.close()
                _back_off(self._reads)
                self._reads += 1
                storage_observer().retried(RetryKind.RESUME)
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


def _back_off(reads: int) -> None:
    """Wait before read number ``reads + 1`` of the same bytes."""
    time.sleep(STREAM_BACKOFF_S * 2 ** (reads - 1))


def read_body(body: Any) -> bytes:
    """The whole of a response's ``body``; :class:`CorruptBody` when it
    fails the checksum the store sent."""
    try:
        data: bytes = body.read()
    except CHECKSUM_FAILED:
        raise CorruptBody("checksum mismatch") from None
    return data


def read_checked(read: Callable[[], T]) -> T:
    """``read()``, a whole read of an object's bytes from the first, again
    while its bytes fail the checksum the store sent (:class:`CorruptBody`),
    :data:`~eceb_worker.core.digests.CHECK_READS` reads in all, with
    back-off; then :class:`CorruptBody` saying so. Raises what ``read`` raises."""
    reads = 1
    while True:
        try:
            return read()
        except CorruptBody:
            if reads >= CHECK_READS:
                raise CorruptBody(f"checksum mismatch on each of {reads} reads") from None
        _back_off(reads)
        reads += 1
        storage_observer().retried(RetryKind.REREAD)


def read_object(
    client: Any, bucket: str, key: str, consume: Callable[[Iterator[bytes]], T], *, etag: str | None = None
) -> tuple[T, str]:
    """``consume`` applied to the chunks of ``bucket/key`` (only version
    ``etag`` when given), read through :class:`ResumableBody` and again whole
    by :func:`read_checked`; with the object's ETag. Raises what they raise
    (:data:`FAILURES`)."""

    def read() -> tuple[T, str]:
        body = ResumableBody(client, bucket, key, etag=etag)
        try:
            return consume(body.chunks()), body.etag
        finally:
            body.close()

    return read_checked(read)
