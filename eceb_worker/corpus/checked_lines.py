"""Reading the lines of a registry already checked (ECEB-0.1 §5): a shard's
byte range, which a worker re-hashing it reads alone, and the artifacts a run
refers to. Neither checks the lines again: a range is refused unless it is
the bytes that were checked (:func:`registry_range_artifacts`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Final

import msgspec

from eceb_worker.core.digests import digest_bytes
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.lines import Block, artifact_blocks, decode_block, lines_of, plain_artifacts
from eceb_worker.corpus.planning import RehashShard
from eceb_worker.errors import InputError, Problem

__all__ = ["RangeArtifact", "registry_artifacts", "registry_range_artifacts"]


class RangeArtifact(msgspec.Struct, frozen=True, gc=False):
    """What re-hashing needs of an artifact line already checked (its
    :class:`~eceb_worker.corpus.verification.Registered` fields and its
    classification, for the disclosure scan), decoded without a check: the
    other fields are skipped."""

    artifact_id: str
    path: str
    source_digest: str
    size_bytes: int
    classification: str = ""


_RANGE_DECODER: Final = msgspec.json.Decoder(RangeArtifact)


def registry_range_artifacts(data: bytes, shard: RehashShard, *, name: str) -> Sequence[Artifact | RangeArtifact]:
    """The artifacts (ECEB-0.1 §5) of a shard's byte range of a registry
    already checked by :func:`~eceb_worker.corpus.registry.scan_registry`;
    ``data`` is the range's bytes.

    When the plan has the range's digest and the bytes match it, they are
    the lines that were checked: they are decoded without checks, as
    :class:`RangeArtifact` (a third of a checked decoding's cost). Raises
    :class:`InputError` naming the registry ``name`` when the bytes are not
    exactly the shard's lines as they were checked (their digest, when the
    plan has one; else their count and first path): the file changed since,
    or the range is not the planned one.
    """
    block = Block(0, 1, data)
    problems: list[tuple[int, Problem]] = []
    changed = bool(shard.digest) and digest_bytes(data) != shard.digest
    artifacts: Sequence[Artifact | RangeArtifact] = []
    if shard.digest and not changed:
        artifacts = _RANGE_DECODER.decode_lines(data)
    elif not changed:
        artifacts = decode_block(block, lines_of(block), 0, name, problems).artifacts
    if changed or problems or len(artifacts) != shard.count or (artifacts and artifacts[0].path != shard.first_path):
        raise InputError(
            [
                Problem(
                    file=name,
                    message=(
                        f"the lines of artifacts {shard.start}..{shard.end - 1} are not those the job checked "
                        "(the registry changed?)"
                    ),
                )
            ]
        )
    return artifacts


class _ArtifactId(msgspec.Struct, gc=False):
    """Just the id of an artifact line; the other fields are skipped unread."""

    artifact_id: str


_ID_DECODER: Final = msgspec.json.Decoder(_ArtifactId)


def registry_artifacts(
    chunks: Iterable[bytes], wanted: AbstractSet[str], classifications: AbstractSet[str] = frozenset()
) -> dict[str, Artifact]:
    """The artifacts (ECEB-0.1 §5) of a registry whose ids are in ``wanted``
    or whose classification is in ``classifications``, by id (an id the
    registry lacks is absent).

    For a registry already checked (by :func:`~eceb_worker.corpus.registry.scan_registry`, or pinned to a
    version that was): lines that do not decode are skipped, nothing else is
    checked. Memory is one chunk's lines plus the artifacts found.
    """
    found: dict[str, Artifact] = {}
    for block, block_lines, block_first in artifact_blocks(chunks):
        candidates = block_lines[block_first:]
        part, lines, first = block, block_lines, block_first
        try:
            # Most lines are not wanted: read only their ids, and decode whole the lines that are.
            ids = [line.artifact_id for line in _ID_DECODER.decode_lines(b"\n".join(candidates))]
        except (msgspec.DecodeError, RecursionError):
            ids = None
        if ids is not None and len(ids) == len(candidates) and not classifications:
            if wanted.isdisjoint(ids):
                continue
            chosen = [raw for raw, artifact_id in zip(candidates, ids, strict=True) if artifact_id in wanted]
            part = Block(0, 1, b"\n".join(chosen))
            lines, first = lines_of(part), 0
        artifacts, _numbers, _ends = decode_block(part, lines, first, "", None)
        kept = [a for a in artifacts if a.artifact_id in wanted or a.classification in classifications]
        for artifact in plain_artifacts(kept):
            found.setdefault(artifact.artifact_id, artifact)
    return found
