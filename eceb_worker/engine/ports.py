"""The engine's view of corpus storage: a Protocol the adapters in
``eceb_worker.storage`` implement (local directory, S3-compatible bucket).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import msgspec

from eceb_worker.engine.digests import HashedBytes
from eceb_worker.errors import ArtifactReadError

__all__ = ["BatchCorpusStorage", "CorpusStorage", "ListedEntry"]


class ListedEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One entry found when listing a corpus.

    Fields:
        path: corpus-relative path, ``/``-separated (may be non-portable:
            callers check it).
        size_bytes: length in bytes, or -1 when unknown.
        refusal: why the entry cannot be registered (e.g. a symbolic link to
            a directory); ``""`` when it can.
    """

    path: str
    size_bytes: int
    refusal: str = ""


class CorpusStorage(Protocol):
    """Read access to the source bytes of a corpus.

    Implementations are safe to share between threads of one process.
    """

    @property
    def location(self) -> str:
        """Where the corpus lives, for messages: never holds a credential."""
        ...

    @property
    def concurrency(self) -> int:
        """How many artifacts one process should hash at once (threads)."""
        ...

    def hash_artifact(self, path: str) -> HashedBytes:
        """Stream the artifact's complete bytes through BLAKE3-256.

        ``path`` is a portable corpus-relative path. Returns
        ``(size_bytes, digest)``. Raises ``ArtifactMissing``,
        ``ArtifactOutsideCorpus`` or ``ArtifactUnreadable`` for this artifact,
        ``StorageError`` when the storage as a whole fails.
        """
        ...

    def list_entries(self) -> Iterator[ListedEntry]:
        """Every file or object of the corpus, in no particular order.

        Raises ``StorageError`` when the corpus cannot be listed.
        """
        ...


@runtime_checkable
class BatchCorpusStorage(CorpusStorage, Protocol):
    """A storage that hashes a batch of artifacts faster than one call per
    artifact (the local directory adapter: one path resolution check per
    directory instead of one per file).
    """

    def hash_artifacts(self, paths: Sequence[str]) -> list[HashedBytes | ArtifactReadError]:
        """``hash_artifact`` of each path, in order, with each artifact's
        ``ArtifactReadError`` returned in place of its result, not raised.

        Raises ``StorageError`` when the storage as a whole fails.
        """
        ...
