"""Re-hash verification of a corpus against its registry (ECEB-0.1 §5:
"re-hash every registered file and reject missing or stale source bytes").

:func:`verify_artifacts` is the map step over one shard; :func:`reduce_verification`
folds the shards' results into one :class:`VerificationReport`, the same
bytes whatever the shard size or the order the shards finished in.
:func:`check_digests` is the part of the map step that needs only paths and
expected digests (what a worker process is sent); :func:`shard_verification`
turns its result into the shard's findings where the registry is at hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal

import msgspec

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.digests import HashedBytes
from eceb_worker.engine.ports import BatchCorpusStorage, CorpusStorage
from eceb_worker.engine.vocabulary import VERIFICATION_SCHEMA
from eceb_worker.errors import ArtifactMissing, ArtifactOutsideCorpus, ArtifactReadError

__all__ = [
    "DigestCheck",
    "Finding",
    "HashOutcome",
    "check_digests",
    "hash_paths",
    "shard_verification",
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
        findings: artifacts that failed, in the order of the shard's artifacts.
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


class DigestCheck(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """What re-hashing a list of paths against their expected digests found.

    Fields:
        bytes_hashed: source bytes read and hashed.
        failures: ``(position in the list, outcome)`` of every path whose
            bytes could not be read (``outcome.status`` not ``ok``) or whose
            digest differs (``ok`` with the digest found), in list order.
    """

    bytes_hashed: int
    failures: tuple[tuple[int, HashOutcome], ...]


def _failed(path: str, error: ArtifactReadError) -> HashOutcome:
    if isinstance(error, ArtifactMissing):
        return HashOutcome(path=path, status="missing", detail=error.detail)
    if isinstance(error, ArtifactOutsideCorpus):
        return HashOutcome(path=path, status="outside_corpus", detail=error.detail)
    return HashOutcome(path=path, status="unreadable", detail=error.detail)


def _hash_one(storage: CorpusStorage, path: str) -> HashedBytes | ArtifactReadError:
    try:
        return storage.hash_artifact(path)
    except ArtifactReadError as exc:
        return exc


def _hash_all(storage: CorpusStorage, paths: Sequence[str], threads: int) -> list[HashedBytes | ArtifactReadError]:
    """Each path's ``(size_bytes, digest)`` or its ``ArtifactReadError``, in order."""
    if threads > 1 and len(paths) > 1:
        from concurrent.futures import ThreadPoolExecutor  # object storage only: spares local start-up

        pool = ThreadPoolExecutor(max_workers=min(threads, len(paths)), thread_name_prefix="eceb-rehash")
        try:
            return list(pool.map(lambda p: _hash_one(storage, p), paths))
        except BaseException:
            # The storage failed as a whole: do not wait for every other read to fail too.
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        finally:
            pool.shutdown(wait=True)
    if isinstance(storage, BatchCorpusStorage):
        return storage.hash_artifacts(paths)
    return [_hash_one(storage, p) for p in paths]


def hash_paths(storage: CorpusStorage, paths: Sequence[str], *, threads: int = 1) -> list[HashOutcome]:
    """Re-hash each path; per-path failures become outcomes, never exceptions.

    Returns one :class:`HashOutcome` per path, in input order. ``threads`` > 1
    overlaps I/O waits (object storage). Raises ``StorageError`` only when the
    storage as a whole fails.
    """
    return [
        _failed(path, result)
        if isinstance(result, ArtifactReadError)
        else HashOutcome(path=path, status="ok", size_bytes=result[0], digest=result[1])
        for path, result in zip(paths, _hash_all(storage, paths, threads), strict=True)
    ]


def check_digests(
    storage: CorpusStorage, paths: Sequence[str], digests: Sequence[str], *, threads: int = 1
) -> DigestCheck:
    """Re-hash each path and compare with its expected digest (same position).

    Only failures are kept, so a worker sends back little more than a byte
    count. Per-path failures are data, never exceptions; raises
    ``StorageError`` only when the storage as a whole fails.
    """
    bytes_hashed = 0
    failures: list[tuple[int, HashOutcome]] = []
    results = _hash_all(storage, paths, threads)
    for position, (result, expected) in enumerate(zip(results, digests, strict=True)):
        if isinstance(result, ArtifactReadError):
            failures.append((position, _failed(paths[position], result)))
            continue
        size, digest = result
        bytes_hashed += size
        if digest != expected:
            failures.append((position, HashOutcome(path=paths[position], status="ok", size_bytes=size, digest=digest)))
    return DigestCheck(bytes_hashed=bytes_hashed, failures=tuple(failures))


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
    checked = check_digests(storage, [a.path for a in artifacts], [a.source_digest for a in artifacts], threads=threads)
    return shard_verification(artifacts, checked, start=start)


def shard_verification(artifacts: Sequence[Artifact], checked: DigestCheck, *, start: int = 0) -> ShardVerification:
    """The shard result for ``artifacts`` (registry entries ``start..start+len``)
    from the :class:`DigestCheck` of their paths and digests.
    """
    findings = (_finding(artifacts[position], outcome) for position, outcome in checked.failures)
    return ShardVerification(
        start=start,
        end=start + len(artifacts),
        checked=len(artifacts),
        bytes_hashed=checked.bytes_hashed,
        findings=tuple(f for f in findings if f is not None),
    )


_ID_ENCODER: Final = msgspec.json.Encoder()


def _finding_order(finding: Finding) -> bytes:
    """A finding's place in the report: its ``artifact_id`` as JSON, the
    prefix that orders canonical records (see docs/INTERPRETATIONS.md, "Order
    of verification findings")."""
    return _ID_ENCODER.encode(finding.artifact_id)


def reduce_verification(
    shards: Iterable[ShardVerification], *, corpus_root: str, artifact_count: int, source: str
) -> VerificationReport:
    """Fold shard results, in any order, into the corpus's report.

    Findings are put in canonical order, by the JSON encoding of their
    ``artifact_id`` (bytewise): for a registry's unique ids that is its
    corpus-root order (ECEB-0.1 §5), whatever order the registry file lists
    them in and however the shards cut it, so the report is the same bytes.

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
    findings = tuple(sorted((f for shard in ordered for f in shard.findings), key=_finding_order))
    return VerificationReport(
        schema=VERIFICATION_SCHEMA,
        corpus_root=corpus_root,
        source=source,
        artifact_count=artifact_count,
        verified_count=artifact_count - len(findings),
        bytes_hashed=sum(s.bytes_hashed for s in ordered),
        findings=findings,
    )
