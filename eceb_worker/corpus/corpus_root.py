"""The ECEB corpus root (ECEB-0.1 §5).

::

    BLAKE3("symgliph:eceb:corpus:v0.1\\0" ||
           canonical_json(sorted_artifact_1) || "\\n" || ... ||
           canonical_json(sorted_artifact_n) || "\\n")

Each record is the five §5 fields of :class:`~eceb_worker.corpus.artifacts.Artifact`
in RFC 8785 canonical form (:func:`canonical_record`);
records are sorted by their canonical bytes (unsigned bytewise), and every
record, the last included, is followed by one ``"\\n"`` (0x0A). See
docs/INTERPRETATIONS.md, "Corpus root framing".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Final

import blake3
import msgspec

from eceb_worker.core.canonical import canonical_json, canonical_lines
from eceb_worker.corpus.artifacts import Artifact

__all__ = [
    "CORPUS_ROOT_DOMAIN",
    "RootHasher",
    "canonical_record",
    "canonical_records",
    "corpus_root",
    "corpus_root_of_sorted",
    "root_lines",
]

CORPUS_ROOT_DOMAIN: Final = b"symgliph:eceb:corpus:v0.1\x00"

_HASHED_AT_ONCE: Final = 4096
"""Records joined into one BLAKE3 update by :func:`corpus_root_of_sorted`."""


class _RootRecord(msgspec.Struct, gc=False):
    """The five §5 fields of an artifact, encoded with sorted keys like
    :meth:`Artifact.root_record` but without building a dict per artifact.
    """

    artifact_id: str
    classification: str
    kind: str
    path: str
    source_digest: str


def canonical_record(artifact: Artifact) -> bytes:
    """RFC 8785 bytes of the artifact's five §5 fields (no trailing newline).

    The record holds only ASCII keys and string values, for which the
    canonical encoder (:mod:`eceb_worker.core.canonical`) produces exactly
    the RFC 8785 bytes; strings decoded by msgspec never hold lone surrogates.
    """
    return canonical_json(artifact.root_record())


def root_lines(artifacts: Sequence[Artifact]) -> bytes:
    """:func:`canonical_record` of each artifact, in order, each followed by
    ``"\\n"``: the bytes these records add to the corpus root's hash input
    when they come in this order. ``b""`` for no artifacts.
    """
    return canonical_lines(
        [_RootRecord(a.artifact_id, a.classification, a.kind, a.path, a.source_digest) for a in artifacts]
    )


def canonical_records(artifacts: Sequence[Artifact]) -> list[bytes]:
    """:func:`canonical_record` of each artifact, in order, byte for byte
    (encoded in one call, as JSON Lines, then split)."""
    if not artifacts:
        return []
    return root_lines(artifacts).split(b"\n")[:-1]


class RootHasher:
    """The corpus root's hash, fed with record lines already in ascending
    order (:func:`root_lines` of consecutive
    artifacts). Memory stays constant whatever the number of records."""

    def __init__(self) -> None:
        self._hasher = blake3.blake3(CORPUS_ROOT_DOMAIN)

    def update(self, lines: bytes) -> None:
        """Add record lines, each ending with ``"\\n"``."""
        self._hasher.update(lines)

    def hexdigest(self) -> str:
        """The corpus root of the lines added so far, 64 lowercase hex characters."""
        return str(self._hasher.hexdigest())


def corpus_root_of_sorted(records: Iterable[bytes]) -> str:
    """Corpus root over canonical records (without newlines) already in
    ascending byte order; the caller guarantees the order (see
    :func:`corpus_root` for unsorted input). Streams. Returns 64 lowercase
    hex characters.
    """
    hasher = RootHasher()
    remaining = iter(records)
    while block := list(islice(remaining, _HASHED_AT_ONCE)):
        block.append(b"")
        hasher.update(b"\n".join(block))
    return hasher.hexdigest()


def corpus_root(artifacts: Iterable[Artifact]) -> str:
    """Corpus root of artifacts in any order (ECEB-0.1 §5).

    Returns 64 lowercase hex characters; the same for every permutation of
    ``artifacts``.
    """
    return corpus_root_of_sorted(sorted(canonical_records(list(artifacts))))
