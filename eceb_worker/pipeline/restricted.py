"""The bytes the disclosure check compares answers with (ECEB-0.1 §1, §17):
the restricted artifacts of the tasks an evaluation shard evaluates, read
through the corpus's storage adapter (a directory, or S3), the one the
re-hash read, each read checked against the artifact's verified BLAKE3
digest (:class:`CorpusTexts`, a
:class:`~eceb_worker.families.eceb.disclosure.RestrictedTexts`).

A process keeps what it read (:func:`corpus_texts`, a few per process): the
next shard of the same job, in the same process, reads nothing again.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from eceb_worker.core.digests import CHECK_READS, digest_bytes
from eceb_worker.core.disclosure import DisclosureIndex
from eceb_worker.corpus.artifacts import VERIFICATION_SCHEMA, Artifact
from eceb_worker.corpus.storage import CorpusStorage, StorageSpec
from eceb_worker.corpus.verification import Finding, VerificationReport
from eceb_worker.errors import ArtifactMissing, ArtifactOutsideCorpus, ArtifactReadError, VerificationError
from eceb_worker.io.storage import shared_storage

if TYPE_CHECKING:
    from eceb_worker.families.eceb.benchmark import SecretSpan
    from eceb_worker.families.eceb.disclosure import DisclosureCheck, RestrictedTexts
    from eceb_worker.pipeline.messages import CheckedRegistry

__all__ = ["CorpusTexts", "corpus_texts", "restricted_texts"]

_KEPT: Final = 4
"""Indexes (one per corpus, N and secret spans) a process keeps at once."""


class CorpusTexts:
    """Restricted artifacts read from ``storage`` into a
    :class:`~eceb_worker.core.disclosure.DisclosureIndex` of ``n`` tokens,
    with the secret spans (``[(start, end), ...]`` by artifact id) marked.

    ``corpus_root`` and ``artifact_count`` name the verified corpus in the
    verification error of an artifact that changed since.
    """

    def __init__(
        self,
        storage: CorpusStorage,
        n: int,
        secrets: dict[str, list[tuple[int, int]]],
        *,
        corpus_root: str = "",
        artifact_count: int = 0,
    ) -> None:
        self._storage = storage
        self._secrets = secrets
        self._corpus_root = corpus_root
        self._artifact_count = artifact_count
        self.index = DisclosureIndex(n)
        self.bytes_read = 0

    def load(self, artifacts: Sequence[Artifact]) -> None:
        """Read and index each of ``artifacts`` not read yet. A read whose
        digest is not the verified one is read again, up to
        :data:`~eceb_worker.core.digests.CHECK_READS` reads; then the
        artifact is stale. Raises ``VerificationError`` (one finding) for a
        stale, missing or unreadable artifact, ``StorageError`` when the
        storage fails as a whole."""
        for artifact in artifacts:
            if artifact.artifact_id in self.index:
                continue
            data = self._read(artifact)
            self.bytes_read += len(data)
            self.index.add(artifact.artifact_id, data, self._secrets.get(artifact.artifact_id, ()))

    def _read(self, artifact: Artifact) -> bytes:
        data = b""
        for _ in range(CHECK_READS):
            try:
                data = self._storage.read_artifact(artifact.path)
            except ArtifactReadError as exc:
                status = (
                    "missing"
                    if isinstance(exc, ArtifactMissing)
                    else "outside_corpus"
                    if isinstance(exc, ArtifactOutsideCorpus)
                    else "unreadable"
                )
                raise self._failed(artifact, status, detail=exc.detail) from None
            if digest_bytes(data) == artifact.source_digest:
                return data
        raise self._failed(artifact, "stale", observed=data)

    def _failed(self, artifact: Artifact, status: str, *, detail: str = "", observed: bytes | None = None) -> Exception:
        finding = Finding(
            artifact_id=artifact.artifact_id,
            path=artifact.path,
            status=status,  # type: ignore[arg-type]
            expected_digest=artifact.source_digest,
            expected_size=artifact.size_bytes,
            observed_digest=None if observed is None else digest_bytes(observed),
            observed_size=None if observed is None else len(observed),
            detail=detail,
        )
        report = VerificationReport(
            schema=VERIFICATION_SCHEMA,
            corpus_root=self._corpus_root,
            source=self._storage.location,
            artifact_count=self._artifact_count,
            verified_count=max(self._artifact_count - 1, 0),
            bytes_hashed=0,
            findings=(finding,),
        )
        message = (
            f"{artifact.path}: {status} when read for the disclosure check, after the corpus verified; "
            "the corpus changed during the evaluation: evaluate again"
        )
        return VerificationError(message, report)


@functools.lru_cache(maxsize=_KEPT)
def corpus_texts(
    spec: StorageSpec,
    n: int,
    secrets: tuple[tuple[str, int, int], ...],
    corpus_root: str,
    artifact_count: int,
) -> CorpusTexts:
    """The :class:`CorpusTexts` of a corpus, N and secret spans
    (``(artifact_id, start, end)``), made once per process and kept (the last few)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    for artifact_id, start, end in secrets:
        spans.setdefault(artifact_id, []).append((start, end))
    return CorpusTexts(shared_storage(spec), n, spans, corpus_root=corpus_root, artifact_count=artifact_count)


def restricted_texts(
    corpus: StorageSpec | None,
    check: DisclosureCheck,
    spans: Sequence[SecretSpan],
    registry: CheckedRegistry,
) -> RestrictedTexts | None:
    """The reader, kept by this process, of the restricted artifacts of a
    job whose corpus is ``corpus``
    (:func:`~eceb_worker.pipeline.restricted.corpus_texts`), with the
    secret ``spans`` marked; ``None`` when ``check`` is off or the task
    names no corpus."""
    if not check.enabled or check.minimum_overlap_tokens is None or corpus is None:
        return None
    secrets = tuple(sorted({(s.artifact_id, s.start, s.end) for s in spans}))
    return corpus_texts(corpus, check.minimum_overlap_tokens, secrets, registry.corpus_root, registry.artifact_count)
