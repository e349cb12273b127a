"""Re-hash verification of a corpus against its registry (ECEB-0.1 §5:
"re-hash every registered file and reject missing or stale source bytes").

:func:`shard_verification` is the map step over one shard, from what the
storage found for each of its artifacts; :func:`reduce_verification` folds
the shards' results into one :class:`VerificationReport`, the same bytes
whatever the shard size or the order the shards finished in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final, Literal, Protocol, runtime_checkable

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.digests import CHECK_READS
from eceb_worker.corpus.artifacts import VERIFICATION_SCHEMA
from eceb_worker.corpus.outcomes import HashResult, read_status
from eceb_worker.corpus.storage import ByteSink, CorpusStorage, ReadObserver
from eceb_worker.corpus.unregistered import UnregisteredFiles
from eceb_worker.errors import (
    ArtifactReadError,
    ArtifactUnreadable,
    VerificationError,
)

__all__ = [
    "ComparingStorage",
    "ExpectedArtifact",
    "Finding",
    "FindingStatus",
    "HashResult",
    "Registered",
    "ShardVerification",
    "VerificationReport",
    "encode_verification",
    "confirm_mismatches",
    "reduce_verification",
    "shard_verification",
    "verification_failed",
    "verify_shard",
]

FindingStatus = Literal["missing", "stale", "unreadable", "outside_corpus"]


class Registered(Protocol):
    """What re-hashing needs of a registered artifact (an
    :class:`~eceb_worker.corpus.artifacts.Artifact`, or the
    :class:`ExpectedArtifact` a shard task carries)."""

    @property
    def artifact_id(self) -> str:
        """The artifact's id."""
        ...

    @property
    def path(self) -> str:
        """Its corpus-relative path."""
        ...

    @property
    def source_digest(self) -> str:
        """Its registered BLAKE3 digest."""
        ...

    @property
    def size_bytes(self) -> int:
        """Its registered size."""
        ...


class ExpectedArtifact(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A registered artifact as a shard task carries it to its worker: only
    what re-hashing needs (:class:`Registered`) and its classification (what
    the disclosure scan needs), as an array, unchecked (the registry was
    checked when it was read). A tenth of an artifact's decoding cost at
    the other end."""

    artifact_id: str
    path: str
    source_digest: str
    size_bytes: int
    classification: str = ""

    @classmethod
    def of(cls, artifact: Registered) -> ExpectedArtifact:
        """The wire form of ``artifact`` (with its classification, when it has one)."""
        classification = getattr(artifact, "classification", "")
        return cls(artifact.artifact_id, artifact.path, artifact.source_digest, artifact.size_bytes, classification)


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


class VerificationReport(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The verification of a whole corpus (schema ``symgliph.eceb/verification-v0.1``).

    Fields:
        schema: the schema identifier.
        corpus_root: the registry's corpus root.
        source: where the corpus was read, redacted (no credential).
        artifact_count: artifacts in the registry.
        verified_count: artifacts whose bytes match.
        bytes_hashed: source bytes read and hashed.
        findings: every failing artifact, in registry (corpus-root) order.
        unregistered: the files of the corpus the registry does not list
            (``eceb corpus verify``); absent when they were not looked for
            (``--unregistered ignore``, an evaluation, ``eceb-dist verify``).
    """

    schema: Literal["symgliph.eceb/verification-v0.1"]
    corpus_root: str
    source: str
    artifact_count: int
    verified_count: int
    bytes_hashed: int
    findings: tuple[Finding, ...]
    unregistered: UnregisteredFiles | None = None

    @property
    def ok(self) -> bool:
        """True when every registered artifact verified, and no file the
        registry does not list was found, unless those were only to be reported."""
        return not self.findings and (self.unregistered is None or self.unregistered.ok)


def _finding(artifact: Registered, result: HashResult) -> Finding | None:
    if isinstance(result, ArtifactReadError):
        status: FindingStatus = read_status(result)
        detail = result.detail
    elif result[1] == artifact.source_digest:
        return None
    else:
        status, detail = "stale", ""
    stale = status == "stale"
    return Finding(
        artifact_id=artifact.artifact_id,
        path=artifact.path,
        status=status,
        expected_digest=artifact.source_digest,
        expected_size=artifact.size_bytes,
        observed_digest=result[1] if stale and not isinstance(result, ArtifactReadError) else None,
        observed_size=result[0] if stale and not isinstance(result, ArtifactReadError) else None,
        detail=detail,
    )


class _Positions:
    """An observer of a sub-batch: position ``i`` of it is ``positions[i]`` of the batch."""

    def __init__(self, observer: ReadObserver, positions: Sequence[int]) -> None:
        self._observer = observer
        self._positions = positions

    def reading(self, position: int) -> ByteSink | None:
        return self._observer.reading(self._positions[position])


def confirm_mismatches(
    artifacts: Sequence[Registered],
    results: Sequence[HashResult],
    rehash: Callable[[Sequence[str], ReadObserver | None], Sequence[HashResult]],
    *,
    reads: int = CHECK_READS,
    observer: ReadObserver | None = None,
) -> list[HashResult]:
    """``results`` (what the storage found for each artifact's path, same
    positions), with every digest that differs from the registered one read
    again through ``rehash`` (paths and an observer to results, like
    :meth:`~eceb_worker.corpus.storage.CorpusStorage.hash_artifacts`), up to
    ``reads`` reads of it in all, each read watched by ``observer`` (its
    positions those of ``artifacts``).

    A read that matches the registered digest ends it (the earlier bytes
    were corrupted on their way): the artifact verifies. A read that gives a
    digest an earlier read gave ends it too: those are the bytes the storage
    holds, and the artifact is ``stale``. A read that fails ends it with its
    failure. When no two of ``reads`` reads agree, the artifact is
    :class:`~eceb_worker.errors.ArtifactUnreadable`. Raises what ``rehash``
    raises (``StorageError``). See docs/INTERPRETATIONS.md, "Bytes corrupted
    in transit".
    """
    confirmed = list(results)
    seen: dict[int, set[str]] = {
        index: {result[1]}
        for index, (artifact, result) in enumerate(zip(artifacts, results, strict=True))
        if type(result) is tuple and result[1] != artifact.source_digest
    }
    pending = sorted(seen)
    for _ in range(reads - 1):
        if not pending:
            return confirmed
        watching = None if observer is None else _Positions(observer, pending)
        again = rehash([artifacts[index].path for index in pending], watching)
        unsettled = []
        for index, result in zip(pending, again, strict=True):
            confirmed[index] = result
            if isinstance(result, ArtifactReadError) or result[1] in {artifacts[index].source_digest, *seen[index]}:
                continue  # settled: a failure, the registered bytes, or bytes read before
            seen[index].add(result[1])
            unsettled.append(index)
        pending = unsettled
    for index in pending:
        detail = f"its bytes differed on each of {reads} reads (corrupted in transit?)"
        confirmed[index] = ArtifactUnreadable(artifacts[index].path, detail)
    return confirmed


def shard_verification(
    artifacts: Sequence[Registered], results: Sequence[HashResult], *, start: int = 0
) -> ShardVerification:
    """The result of re-hashing one shard: ``artifacts`` are registry entries
    ``start..start+len``, ``results`` what the storage found for each of
    their paths (same positions). Per-artifact failures are findings, never
    exceptions."""
    findings: list[Finding] = []
    hashed = 0
    for artifact, result in zip(artifacts, results, strict=True):
        if type(result) is tuple:  # the usual case: bytes read and hashed
            hashed += result[0]
            if result[1] == artifact.source_digest:
                continue
        finding = _finding(artifact, result)
        if finding is not None:
            findings.append(finding)
    return ShardVerification(
        start=start, end=start + len(artifacts), checked=len(artifacts), bytes_hashed=hashed, findings=tuple(findings)
    )


@runtime_checkable
class ComparingStorage(Protocol):
    """A storage that compares what it reads with the registry as it reads
    (cheaper than returning every digest, as a local directory does)."""

    def check_artifacts(
        self, artifacts: Sequence[Registered], observer: ReadObserver | None = None
    ) -> tuple[int, list[tuple[int, HashResult]]]:
        """Re-hash ``artifacts``: the bytes hashed of those whose digest is
        the registered one, and ``(position, result)`` of every other one in
        their order, ``result`` what ``hash_artifacts`` gives for its path;
        every read watched by ``observer`` (positions those of ``artifacts``).
        Raises ``StorageError`` when the storage as a whole fails."""
        ...


def verify_shard(
    artifacts: Sequence[Registered],
    storage: CorpusStorage,
    *,
    start: int = 0,
    observer: ReadObserver | None = None,
) -> ShardVerification:
    """Re-hash one shard, ``artifacts`` being registry entries
    ``start..start+len`` (ECEB-0.1 §5): :func:`shard_verification` of what
    ``storage`` finds, each digest that differs read again
    (:func:`confirm_mismatches`), every read watched by ``observer`` (the
    disclosure scan, positions those of ``artifacts``). The same result
    whether or not ``storage`` compares as it reads
    (:class:`ComparingStorage`). Raises ``StorageError`` when the storage
    as a whole fails."""
    if not isinstance(storage, ComparingStorage):
        results = confirm_mismatches(
            artifacts,
            storage.hash_artifacts([a.path for a in artifacts], observer),
            storage.hash_artifacts,
            observer=observer,
        )
        return shard_verification(artifacts, results, start=start)
    hashed, odd = storage.check_artifacts(artifacts, observer)
    others = [artifacts[index] for index, _ in odd]
    watching = None if observer is None else _Positions(observer, [index for index, _ in odd])
    rest = shard_verification(
        others,
        confirm_mismatches(others, [result for _, result in odd], storage.hash_artifacts, observer=watching)
        if odd
        else [],
    )
    count = len(artifacts)
    return ShardVerification(
        start=start, end=start + count, checked=count, bytes_hashed=hashed + rest.bytes_hashed, findings=rest.findings
    )


def _finding_order(finding: Finding) -> bytes:
    """A finding's place in the report: its ``artifact_id`` as JSON, the
    prefix that orders canonical records (see docs/INTERPRETATIONS.md, "Order
    of verification findings")."""
    return canonical_json(finding.artifact_id)


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


def encode_verification(report: VerificationReport) -> bytes:
    """The report's bytes, as ``eceb corpus verify --json`` prints them:
    canonical JSON and a final newline."""
    return canonical_json(report) + b"\n"


VERIFICATION_FAILED: Final = "corpus verification failed: {failed} of {total} artifacts do not match the registry"


def verification_failed(report: VerificationReport) -> VerificationError:
    """The error of an evaluation whose corpus did not verify (ECEB-0.1 §5),
    holding ``report``."""
    return VerificationError(
        VERIFICATION_FAILED.format(failed=len(report.findings), total=report.artifact_count), report
    )
