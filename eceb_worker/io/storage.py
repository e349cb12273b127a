"""Opening a corpus's storage adapter from its
:class:`~eceb_worker.corpus.storage.StorageSpec`: a local directory
(:mod:`eceb_worker.io.local_corpus`) or an S3-compatible bucket prefix
(:mod:`eceb_worker.io.s3_corpus`).
"""

from __future__ import annotations

import functools

from eceb_worker.corpus.storage import CorpusStorage, StorageSpec
from eceb_worker.errors import StorageError

__all__ = ["open_storage", "shared_storage"]


def open_storage(spec: StorageSpec) -> CorpusStorage:
    """The adapter for ``spec``; boto3 is imported only for S3 sources.

    Raises ``StorageError`` when the source is not a directory or not a
    well-formed ``s3://`` URL.
    """
    if spec.is_s3:
        from eceb_worker.io.s3_corpus import S3Storage

        try:
            return S3Storage(spec.source, endpoint_url=spec.endpoint_url, concurrency=spec.concurrency)
        except ValueError as exc:
            raise StorageError(str(exc)) from None
    from eceb_worker.io.local_corpus import LocalStorage

    return LocalStorage(spec.source)


@functools.cache
def shared_storage(spec: StorageSpec) -> CorpusStorage:
    """:func:`open_storage`, once per spec per process: adapters (and their
    connection pools) are reused across shards.
    """
    return open_storage(spec)
