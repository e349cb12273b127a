"""Storage adapters behind :class:`eceb_worker.engine.ports.CorpusStorage`.

A :class:`StorageSpec` is the serializable reference to a corpus (a message
carries it, never corpus bytes); :func:`open_storage` turns it into an
adapter in whichever process needs one.
"""

from __future__ import annotations

import functools

import msgspec

from eceb_worker.engine.ports import CorpusStorage
from eceb_worker.errors import StorageError

__all__ = ["StorageSpec", "open_storage", "shared_storage"]


class StorageSpec(msgspec.Struct, frozen=True, kw_only=True):
    """Where a corpus lives.

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


def open_storage(spec: StorageSpec) -> CorpusStorage:
    """The adapter for ``spec``; boto3 is imported only for S3 sources.

    Raises ``StorageError`` when the source is not a directory or not a
    well-formed ``s3://`` URL.
    """
    if spec.is_s3:
        from eceb_worker.storage.s3 import S3Storage

        try:
            return S3Storage(spec.source, endpoint_url=spec.endpoint_url, concurrency=spec.concurrency)
        except ValueError as exc:
            raise StorageError(str(exc)) from None
    from eceb_worker.storage.local import LocalStorage

    return LocalStorage(spec.source)


@functools.cache
def shared_storage(spec: StorageSpec) -> CorpusStorage:
    """:func:`open_storage`, once per spec per process: adapters (and their
    connection pools) are reused across shards.
    """
    return open_storage(spec)
