"""What hashing a corpus's files found, path by path (registering it,
ECEB-0.1 §5), and the words a failed read is reported with."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import msgspec

from eceb_worker.core.digests import HashedBytes
from eceb_worker.errors import ArtifactMissing, ArtifactOutsideCorpus, ArtifactReadError

__all__ = ["HashOutcome", "HashResult", "hash_outcomes", "read_status"]

HashResult = HashedBytes | ArtifactReadError
"""What the storage found for one path: ``(size_bytes, digest)``, or why it could not read it."""


class HashOutcome(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """What hashing one path found (registering a corpus).

    Fields:
        path: the corpus-relative path.
        status: ``ok``, or why no digest could be taken (a :data:`FindingStatus`
            other than ``stale``).
        size_bytes, digest: length and BLAKE3-256 of the bytes (``ok`` only).
        detail: the storage's own words when ``status`` is not ``ok``.
    """

    path: str
    status: Literal["ok", "missing", "unreadable", "outside_corpus"]
    size_bytes: int = 0
    digest: str = ""
    detail: str = ""


def read_status(error: ArtifactReadError) -> Literal["missing", "unreadable", "outside_corpus"]:
    """How a report names the failure ``error`` of a read."""
    if isinstance(error, ArtifactMissing):
        return "missing"
    if isinstance(error, ArtifactOutsideCorpus):
        return "outside_corpus"
    return "unreadable"


def hash_outcomes(paths: Sequence[str], results: Sequence[HashResult]) -> list[HashOutcome]:
    """One :class:`HashOutcome` per path (same positions as ``results``)."""
    return [
        HashOutcome(path=path, status=read_status(result), detail=result.detail)
        if isinstance(result, ArtifactReadError)
        else HashOutcome(path=path, status="ok", size_bytes=result[0], digest=result[1])
        for path, result in zip(paths, results, strict=True)
    ]
