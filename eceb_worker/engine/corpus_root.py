"""The ECEB corpus root (ECEB-0.1 §5).

::

    BLAKE3("symgliph:eceb:corpus:v0.1\\0" ||
           canonical_json(sorted_artifact_1) || "\\n" || ... ||
           canonical_json(sorted_artifact_n) || "\\n")

Each record is the five §5 fields of :class:`~eceb_worker.engine.artifacts.Artifact`
in RFC 8785 canonical form; records are sorted by their canonical bytes
(unsigned bytewise), and every record, the last included, is followed by one
``"\\n"`` (0x0A). See docs/INTERPRETATIONS.md, "Corpus root framing".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Final

import blake3
import msgspec

from eceb_worker.engine.artifacts import Artifact

__all__ = [
    "CORPUS_ROOT_DOMAIN",
    "canonical_lines",
    "canonical_record",
    "canonical_records",
    "corpus_root",
    "corpus_root_of_sorted",
]

CORPUS_ROOT_DOMAIN: Final = b"symgliph:eceb:corpus:v0.1\x00"


_ENCODER: Final = msgspec.json.Encoder(order="sorted")

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

    The record holds only ASCII keys and string values, for which msgspec's
    sorted-key encoding produces exactly the RFC 8785 bytes (literal UTF-8,
    the same short escapes, lowercase ``\\u00xx`` for other controls); the
    test suite pins this against the ``rfc8785`` package over arbitrary
    Unicode. Strings decoded by msgspec never hold lone surrogates.
    """
    return _ENCODER.encode(artifact.root_record())


def canonical_lines(artifacts: Sequence[Artifact]) -> bytes:
    """:func:`canonical_record` of each artifact, in order, each followed by
    ``"\\n"``: the bytes these records add to the corpus root's hash input
    when they come in this order. ``b""`` for no artifacts.
    """
    return _ENCODER.encode_lines(
        [_RootRecord(a.artifact_id, a.classification, a.kind, a.path, a.source_digest) for a in artifacts]
    )


def canonical_records(artifacts: Sequence[Artifact]) -> list[bytes]:
    """:func:`canonical_record` of each artifact, in order, byte for byte.

    Encodes all records in one call, as JSON Lines, and splits the lines:
    JSON text never holds a raw newline (it is escaped inside strings).
    """
    if not artifacts:
        return []
    return canonical_lines(artifacts).split(b"\n")[:-1]


def corpus_root_of_sorted(records: Iterable[bytes]) -> str:
    """Corpus root over canonical records already in ascending byte order.

    Streams: memory stays constant whatever the number of records. The caller
    guarantees the order (see :func:`corpus_root` for unsorted input).
    Returns 64 lowercase hex characters.
    """
    hasher = blake3.blake3(CORPUS_ROOT_DOMAIN)
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
