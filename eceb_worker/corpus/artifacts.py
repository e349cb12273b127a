"""Corpus artifact records and the registry header (ECEB-0.1 §5, §6), and
the corpus's closed vocabularies.

A registry is JSON Lines: the first line is a :class:`RegistryHeader`, every
further line one :class:`Artifact`. See ``docs/REGISTRY.md``.
"""

from __future__ import annotations

from typing import Annotated, Final, Literal, get_args

import msgspec

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.digests import Digest
from eceb_worker.core.identifiers import ID_PATTERN

__all__ = [
    "CLASSIFICATIONS",
    "REGISTRY_SCHEMA",
    "RULES_SCHEMA",
    "SOURCE_KINDS",
    "VERIFICATION_SCHEMA",
    "Artifact",
    "Classification",
    "RegistryHeader",
    "SourceKind",
]

SourceKind = Literal[
    "code",
    "rfc",
    "runbook",
    "pull_request",
    "chat",
    "issue",
    "api_spec",
    "infrastructure",
    "policy",
]
"""The nine reference enterprise source kinds (ECEB-0.1 §5)."""

Classification = Literal["public", "internal", "confidential", "restricted"]
"""The four information classifications (ECEB-0.1 §6). Listed, never ordered:
access is granted only by a task's explicit allow-list."""

SOURCE_KINDS: Final[tuple[str, ...]] = get_args(SourceKind)
CLASSIFICATIONS: Final[tuple[str, ...]] = get_args(Classification)

REGISTRY_SCHEMA: Final = "symgliph.eceb/registry-v0.1"
RULES_SCHEMA: Final = "symgliph.eceb/rules-v0.1"
VERIFICATION_SCHEMA: Final = "symgliph.eceb/verification-v0.1"

ArtifactId = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=1024,
        extra_json_schema={"pattern": ID_PATTERN},
        description="Stable identifier of the artifact, unique in the registry; no control, line-separator or "
        "invisible format character (checked per line with the registry's other checks).",
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
        path: portable corpus-relative path (see :mod:`eceb_worker.core.paths`).
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
