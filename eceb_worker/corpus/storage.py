"""What the corpus needs of storage: a Protocol the adapters in
:mod:`eceb_worker.io` implement (a local directory, an S3-compatible bucket).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Protocol

import msgspec

from eceb_worker.core.digests import HashedBytes
from eceb_worker.core.urls import s3_location
from eceb_worker.errors import ArtifactReadError

__all__ = ["ByteSink", "CorpusStorage", "ListedEntry", "ReadObserver", "StorageSpec"]


class StorageSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Where a corpus lives: the reference a message carries (never corpus
    bytes), opened into an adapter by :func:`eceb_worker.io.storage.open_storage`
    in whichever process needs one.

    Fields:
        source: a directory path, or ``s3://bucket/prefix``.
        endpoint_url: S3-compatible endpoint (MinIO, ...); ``None`` for AWS.
        concurrency: concurrent object reads per process (S3 only).
    """

    source: str
    endpoint_url: str | None = None
    concurrency: int = 16

    @property
    def is_s3(self) -> bool:
        """True for an ``s3://`` source."""
        return self.source.startswith("s3://")

    @property
    def location(self) -> str:
        """How reports and messages name the corpus (the adapter's
        ``location``), found without opening it: the directory as given, or
        ``s3://bucket/prefix``. Raises ValueError for a malformed ``s3://`` URL."""
        return s3_location(self.source) if self.is_s3 else self.source


class ListedEntry(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """One entry found when listing a corpus, with what identifies its
    version without reading it (None where the listing does not tell):
    for an S3 object its ETag and LastModified, as ListObjectsV2 gives them;
    for a local file its modification time, status change time and inode
    (a file replaced or written again gets a new ctime, which cannot be set
    back; a file replaced by a rename gets a new inode).

    Fields:
        path: corpus-relative path, ``/``-separated (may be non-portable:
            callers check it).
        size_bytes: length in bytes, or -1 when unknown.
        refusal: why the entry cannot be registered (e.g. a symbolic link to
            a directory); ``""`` when it can.
        etag: the S3 object's ETag, as listed (quotes included).
        last_modified: the S3 object's LastModified (UTC).
        mtime_ns: the local file's ``st_mtime_ns`` (ns since the Unix epoch).
        ctime_ns: the local file's ``st_ctime_ns`` (ns since the Unix epoch).
        inode: the local file's ``st_ino``.
    """

    path: str
    size_bytes: int
    refusal: str = ""
    etag: str | None = None
    last_modified: datetime | None = None
    mtime_ns: int | None = None
    ctime_ns: int | None = None
    inode: int | None = None


class ByteSink(Protocol):
    """What watches one read of one artifact: its bytes as they are read,
    then the digest of all of them (a read that fails midway is never ended)."""

    def feed(self, data: bytes | memoryview) -> None:
        """The next bytes read (the caller may reuse ``data``'s buffer once this returns)."""
        ...

    def end(self, digest: str) -> None:
        """The read completed: BLAKE3-256 (hex) of the bytes fed."""
        ...


class ReadObserver(Protocol):
    """What watches the reads of a batch of artifacts (the disclosure scan
    of a re-hash shard): a fresh sink for every read, an artifact read
    again (corrupted in transit, a mismatch confirmed) included."""

    def reading(self, position: int) -> ByteSink | None:
        """A sink for a read of the artifact at ``position`` in the batch, or None to read it unwatched."""
        ...


class CorpusStorage(Protocol):
    """Read access to the source bytes of a corpus. Implementations are safe
    to share between threads of one process."""

    @property
    def location(self) -> str:
        """Where the corpus lives, for messages: never holds a credential."""
        ...

    def hash_artifacts(
        self, paths: Sequence[str], observer: ReadObserver | None = None
    ) -> list[HashedBytes | ArtifactReadError]:
        """Stream each artifact's complete bytes through BLAKE3-256 (and
        through ``observer``'s sink for its position, when it has one).

        ``paths`` are portable corpus-relative paths. Returns, in their
        order, ``(size_bytes, digest)`` or the artifact's
        ``ArtifactMissing``, ``ArtifactOutsideCorpus`` or
        ``ArtifactUnreadable`` (returned, not raised). Raises
        ``StorageError`` when the storage as a whole fails.
        """
        ...

    def read_artifact(self, path: str) -> bytes:
        """The complete bytes of one artifact (``path``: portable,
        corpus-relative). Raises ``ArtifactMissing``,
        ``ArtifactOutsideCorpus``, ``ArtifactUnreadable`` or, when the
        storage as a whole fails, ``StorageError``.
        """
        ...

    def list_entries(self) -> Iterator[ListedEntry]:
        """Every file or object of the corpus, in no particular order.

        Raises ``StorageError`` when the corpus cannot be listed.
        """
        ...
