"""Small builders shared by tests."""

from __future__ import annotations

import blake3

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.registry import build_registry, registry_lines


def artifact(
    artifact_id: str = "a",
    *,
    path: str | None = None,
    kind: str = "runbook",
    classification: str = "internal",
    content: bytes = b"",
) -> Artifact:
    return Artifact(
        artifact_id=artifact_id,
        path=path if path is not None else artifact_id,
        kind=kind,  # type: ignore[arg-type]
        classification=classification,  # type: ignore[arg-type]
        source_digest=blake3.blake3(content).hexdigest(),
        size_bytes=len(content),
    )


def registry_bytes(*artifacts: Artifact) -> bytes:
    return b"".join(registry_lines(build_registry(artifacts)))
