"""Re-hash verification of a corpus against its registry (ECEB-0.1 §5:
"re-hash every registered file and reject missing or stale source bytes").

:func:`verify_artifacts` is the map step over one shard; :func:`reduce_verification`
folds the shards' results into one :class:`VerificationReport`, the same
bytes whatever the shard size or the order the shards finished in.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import msgspec

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.ports import CorpusStorage
from eceb_worker.engine.vocabulary import VERIFICATION_SCHEMA
from eceb_worker.errors import ArtifactMissing, ArtifactOutsideCorpus, ArtifactReadError, ArtifactUnreadable

__all__ = [
    "Finding",
    "HashOutcome",
    "hash_paths",
    "FindingStatus",
    "ShardVerification",
    "VerificationReport",
    "reduce_verification",
    "verify_artifacts",
]

FindingStatus = Literal["missing", "stale", "unreadable", "outside_corpus"]


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One artifact whose source bytes do not verify.

    Fields:
        artifact_id, path: the registered artifact.
        status: ``missing`` (no such file or object), ``stale`` (bytes differ
            from the registered digest), ``unreadable`` (exists but cannot be
            read), ``outside_corpus`` (a symbolic link leading out of the corpus).
        expected_digest: the registered BLAKE3 digest.
        observed_digest: the digest of the bytes found, for ``stale`` only.
        expected_size, observed_size: registered and found lengths in bytes
            (``observed_size`` for ``stale`` only).
        detail: the storage's own words when the bytes could not be read.
    """

    artifact_id: str
    path: str
    status: FindingStatus
    expected_digest: str
    expected_size: int
    observed_digest: str | None = None
    observed_size: int | None = None
    detail: str = ""


class ShardVerification(msgspec.Struct, frozen=True, kw_only=True):
    """Result of re-hashing one shard.

    Fields:
        start, end: the shard's artifact range in the registry.
        checked: artifacts re-hashed (= ``end - start``).
        bytes_hashed: source bytes read and hashed.
        findings: artifacts that failed, in registry order.
    """

    start: int
    end: int
    checked: int
    bytes_hashed: int
    findings: tuple[Finding, ...]


class VerificationReport(msgspec.Struct, frozen=True, kw_only=True):
    """The verification of a whole corpus (schema ``symgliph.eceb/verification-v0.1``).

    Fields:
        schema: the schema identifier.
        corpus_root: the registry's corpus root.
        source: where the corpus was read, redacted (no credential).
        artifact_count: artifacts in the registry.
        verified_count: artifacts whose bytes match.
        bytes_hashed: source bytes read and hashed.
        findings: every failing artifact, in registry (corpus-root) order.
    """

    schema: Literal["symgliph.eceb/verification-v0.1"]
    corpus_root: str
    source: str
    artifact_count: int
    verified_count: int
    bytes_hashed: int
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        """True when every registered artifact verified."""
        return not self.findings


class HashOutcome(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """What re-hashing one path found.

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


def _hash_one(storage: CorpusStorage, path: str) -> HashOutcome:
    try:
        size, digest = storage.hash_artifact(path)
    except ArtifactMissing as exc:
        return HashOutcome(path=path, status="missing", detail=exc.detail)
    except ArtifactOutsideCorpus as exc:
        return HashOutcome(path=path, status="outside_corpus", detail=exc.detail)
    except (ArtifactUnreadable, ArtifactReadError) as exc:
        return HashOutcome(path=path, status="unreadable", detail=exc.detail)
    return HashOutcome(path=path, status="ok", size_bytes=size, digest=digest)


def hash_paths(storage: CorpusStorage, paths: Sequence[str], *, threads: int = 1) -> list[HashOutcome]:
    """Re-hash each path; per-path failures become outcomes, never exceptions.

    Returns one :class:`HashOutcome` per path, in input order. ``threads`` > 1
    overlaps I/O waits (object storage). Raises ``StorageError`` only when the
    storage as a whole fails.
    """
    if threads > 1 and len(paths) > 1:
        with ThreadPoolExecutor(max_workers=min(threads, len(paths)), thread_name_prefix="eceb-rehash") as pool:
            return list(pool.map(lambda p: _hash_one(storage, p), paths))
    return [_hash_one(storage, p) for p in paths]


def _finding(artifact: Artifact, outcome: HashOutcome) -> Finding | None:
    if outcome.status == "ok" and outcome.digest == artifact.source_digest:
        return None
    status: FindingStatus = "stale" if outcome.status == "ok" else outcome.status
    stale = status == "stale"
    return Finding(
        artifact_id=artifact.artifact_id,
        path=artifact.path,
        status=status,
        expected_digest=artifact.source_digest,
        expected_size=artifact.size_bytes,
        observed_digest=outcome.digest if stale else None,
        observed_size=outcome.size_bytes if stale else None,
        detail=outcome.detail,
    )


def verify_artifacts(
    storage: CorpusStorage, artifacts: Sequence[Artifact], *, start: int = 0, threads: int = 1
) -> ShardVerification:
    """Re-hash one shard: ``artifacts`` are registry entries ``start..start+len``.

    Every artifact is checked; failures become findings, never exceptions.
    ``threads`` > 1 overlaps I/O waits (object storage). Raises
    ``StorageError`` only when the storage as a whole fails.
    """
    outcomes = hash_paths(storage, [a.path for a in artifacts], threads=threads)
    findings = (_finding(a, o) for a, o in zip(artifacts, outcomes, strict=True))
    return ShardVerification(
        start=start,
        end=start + len(artifacts),
        checked=len(artifacts),
        bytes_hashed=sum(o.size_bytes for o in outcomes),
        findings=tuple(f for f in findings if f is not None),
    )


def reduce_verification(
    shards: Iterable[ShardVerification], *, corpus_root: str, artifact_count: int, source: str
) -> VerificationReport:
    """Fold shard results, in any order, into the corpus's report.

    Raises ValueError unless the shards cover ``0..artifact_count`` exactly
    once (a lost or duplicated shard must never yield a report).
    """
    ordered = sorted(shards, key=lambda s: s.start)
    position = 0
    for shard in ordered:
        if shard.start != position or shard.end < shard.start:
            raise ValueError(f"shards do not tile the registry: expected a shard at {position}, got {shard.start}")
        position = shard.end
    if position != artifact_count:
        raise ValueError(f"shards cover {position} of {artifact_count} artifacts")
    findings = tuple(f for shard in ordered for f in shard.findings)
    return VerificationReport(
        schema=VERIFICATION_SCHEMA,
        corpus_root=corpus_root,
        source=source,
        artifact_count=artifact_count,
        verified_count=artifact_count - len(findings),
        bytes_hashed=sum(s.bytes_hashed for s in ordered),
        findings=findings,
    )
