"""Corpus artifact records and the registry header (ECEB-0.1 §5).

A registry is JSON Lines: the first line is a :class:`RegistryHeader`, every
further line one :class:`Artifact`. See ``docs/REGISTRY.md``.
"""

from __future__ import annotations

import re
from typing import Annotated, Final, Literal

import msgspec

from eceb_worker.engine.vocabulary import SAFE_INTEGER_MAX, Classification, SourceKind

__all__ = ["DIGEST_PATTERN", "Artifact", "Digest", "RecordDigest", "RegistryHeader", "is_digest"]

DIGEST_PATTERN: Final = "^[0-9a-f]{64}$"
_DIGEST: Final = re.compile(DIGEST_PATTERN)

Digest = Annotated[
    str,
    msgspec.Meta(
        pattern=DIGEST_PATTERN,
        description="BLAKE3-256 digest, 64 lowercase hexadecimal characters.",
    ),
]

RecordDigest = Annotated[
    str,
    msgspec.Meta(
        min_length=64,
        max_length=64,
        extra_json_schema={"pattern": DIGEST_PATTERN},
        description="BLAKE3-256 digest, 64 lowercase hexadecimal characters.",
    ),
]
"""A digest in a record that occurs millions of times (observations, registry
lines). Decoding checks only its length; the schema states the full pattern,
and the engine checks it with :func:`is_digest` on the distinct values, which
is much cheaper than a regular expression per field while decoding."""


def is_digest(value: str) -> bool:
    """True for 64 lowercase hexadecimal characters."""
    return _DIGEST.fullmatch(value) is not None


ArtifactId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=1024,
        description="Stable identifier of the artifact, unique in the registry.",
    ),
]

CorpusPath = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=1024,
        description=(
            "Portable corpus-relative path: '/'-separated, no empty, '.' or '..' "
            "segment, no backslash, no control character, no leading '/'."
        ),
    ),
]


class Artifact(msgspec.Struct, frozen=True, kw_only=True, gc=False, forbid_unknown_fields=True):
    """One registered corpus artifact (ECEB-0.1 §5).

    Fields:
        artifact_id: stable identifier, unique in the registry.
        path: portable corpus-relative path (see ``eceb_worker.engine.paths``).
        kind: enterprise source kind, one of ``SOURCE_KINDS``.
        classification: information classification, one of ``CLASSIFICATIONS``.
        source_digest: BLAKE3-256 of the complete source bytes, lowercase hex.
        size_bytes: length of the source bytes. An eceb extension used to
            balance re-hash shards by bytes; it is *not* part of the corpus
            root, which commits to the five §5 fields only.
    """

    artifact_id: ArtifactId
    path: CorpusPath
    kind: SourceKind
    classification: Classification
    source_digest: Digest
    size_bytes: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX, description="Length of the source bytes.")]

    def root_record(self) -> dict[str, str]:
        """The five fields of ECEB-0.1 §5 that the corpus root commits to."""
        return {
            "artifact_id": self.artifact_id,
            "classification": self.classification,
            "kind": self.kind,
            "path": self.path,
            "source_digest": self.source_digest,
        }


class RegistryHeader(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """First line of a registry file.

    Fields:
        schema: always ``"symgliph.eceb/registry-v0.1"``.
        artifact_count: number of artifact lines that follow.
        corpus_root: the corpus root (ECEB-0.1 §5) of those artifacts; a reader
            recomputes it and rejects a registry whose lines do not match.
    """

    schema: Literal["symgliph.eceb/registry-v0.1"]
    artifact_count: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]
    corpus_root: Digest
