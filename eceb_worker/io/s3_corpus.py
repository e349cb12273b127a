"""A corpus in an S3-compatible bucket, under a key prefix
(:class:`~eceb_worker.corpus.storage.CorpusStorage`).

Reads go through :mod:`eceb_worker.io.s3`: its client, its retries and its
one mapping of botocore's errors.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from eceb_worker.core.digests import HashedBytes, digest_chunks
from eceb_worker.core.urls import parse_s3_url, s3_location
from eceb_worker.corpus.storage import ByteSink, ListedEntry, ReadObserver
from eceb_worker.errors import ArtifactReadError
from eceb_worker.io.s3 import (
    DEFAULT_CONCURRENCY,
    FAILURES,
    REQUEST_ATTEMPTS,
    Role,
    check_endpoint,
    describe_endpoint,
    make_s3_client,
    map_reads,
    s3_error,
)
from eceb_worker.io.s3_reads import read_object

__all__ = ["S3Storage"]


def _watched(watch: Callable[[], ByteSink | None]) -> Callable[[Iterator[bytes]], HashedBytes]:
    """A consumer of one read's chunks that digests them and feeds them to
    a fresh sink of ``watch``'s (each read again gets its own)."""

    def consume(chunks: Iterator[bytes]) -> HashedBytes:
        sink = watch()
        if sink is None:
            return digest_chunks(chunks)

        def fed() -> Iterator[bytes]:
            for chunk in chunks:
                sink.feed(chunk)
                yield chunk

        hashed = digest_chunks(fed())
        sink.end(hashed[1])
        return hashed

    return consume


class S3Storage:
    """A corpus stored under ``s3://bucket/prefix``: artifact ``path`` is the
    object ``prefix/path``. Portable paths cannot leave the prefix.

    One boto3 client is shared by all threads (clients are thread-safe); its
    connection pool is sized to ``concurrency``, and :meth:`hash_artifacts`
    keeps that many reads in flight.

    Raises ValueError for a malformed URL or endpoint; the message never
    repeats the endpoint (it may embed credentials).
    """

    def __init__(
        self,
        url: str,
        *,
        endpoint_url: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        max_attempts: int = REQUEST_ATTEMPTS,
        client: Any = None,
    ) -> None:
        self._bucket, self._prefix = parse_s3_url(url)
        self._concurrency = max(1, concurrency)
        if client is None:
            client = make_s3_client(endpoint_url, concurrency=self._concurrency, max_attempts=max_attempts)
        elif endpoint_url is not None:
            check_endpoint(endpoint_url)
        self._client = client
        self._endpoint = describe_endpoint(client)

    @property
    def location(self) -> str:
        """``s3://bucket/prefix`` (the endpoint is not shown: it may embed credentials)."""
        return s3_location(f"s3://{self._bucket}/{self._prefix}")

    @property
    def concurrency(self) -> int:
        """Concurrent object reads per process."""
        return self._concurrency

    def _key(self, path: str) -> str:
        return f"{self._prefix}/{path}" if self._prefix else path

    def hash_artifact(self, path: str, watch: Callable[[], ByteSink | None] | None = None) -> HashedBytes:
        """Stream the object's bytes through BLAKE3; ``(size_bytes, hex digest)``.
        Bytes that fail the checksum the store sent are read again whole
        (:func:`~eceb_worker.io.s3.read_checked`). Every read is fed to a
        sink of ``watch``'s, when it gives one.

        Raises ``ArtifactMissing`` (no such key), ``ArtifactUnreadable``
        (access denied, read failed after retries, corrupted on every read)
        or ``StorageError`` (the bucket does not exist, the endpoint cannot
        be reached, no credentials were found or the service rejects them).
        """
        consume = digest_chunks if watch is None else _watched(watch)
        try:
            return read_object(self._client, self._bucket, self._key(path), consume)[0]
        except FAILURES as exc:
            raise s3_error(exc, Role.ARTIFACT, self.location, path, endpoint=self._endpoint) from None

    def read_artifact(self, path: str) -> bytes:
        """The object's complete bytes (a restricted artifact the disclosure
        check compares answers with), read as :meth:`hash_artifact` reads
        them. Raises what :meth:`hash_artifact` raises."""
        try:
            return read_object(self._client, self._bucket, self._key(path), b"".join)[0]
        except FAILURES as exc:
            raise s3_error(exc, Role.ARTIFACT, self.location, path, endpoint=self._endpoint) from None

    def _hash_or_error(
        self, path: str, watch: Callable[[], ByteSink | None] | None = None
    ) -> HashedBytes | ArtifactReadError:
        try:
            return self.hash_artifact(path, watch)
        except ArtifactReadError as exc:
            return exc

    def hash_artifacts(
        self, paths: Sequence[str], observer: ReadObserver | None = None
    ) -> list[HashedBytes | ArtifactReadError]:
        """:meth:`hash_artifact` of each path, in order, ``concurrency`` at a
        time, with each artifact's failure returned in place of its result;
        each read watched by ``observer`` (positions those of ``paths``; its
        sinks end from several threads). Raises ``StorageError`` when the
        storage as a whole fails (the reads not started yet are dropped)."""

        def one(position: int) -> HashedBytes | ArtifactReadError:
            watch = None if observer is None else functools.partial(observer.reading, position)
            return self._hash_or_error(paths[position], watch)

        if self._concurrency == 1 or len(paths) < 2:
            return [one(position) for position in range(len(paths))]
        # On daemon threads: Ctrl-C never waits for a read stuck on a silent server.
        return map_reads(one, len(paths), self._concurrency)

    def list_entries(self) -> Iterator[ListedEntry]:
        """Every object under the prefix (paginated, 1,000 keys a page), in
        the listing's order (keys in UTF-8 binary order), with its size,
        ETag and LastModified as listed (keys come URL-encoded on the wire
        and are decoded by botocore).

        Raises ``StorageError`` when the bucket cannot be listed.
        """
        from eceb_worker.corpus.registration import ListingShard
        from eceb_worker.io.s3_listing import list_range

        prefix = f"{self._prefix}/" if self._prefix else ""
        return list_range(self._client, self._bucket, prefix, ListingShard(index=0), where=self.location)
