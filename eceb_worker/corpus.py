"""Corpus jobs: build a registry from a corpus, verify a corpus against its
registry (ECEB-0.1 §5). Wires the engine to a storage adapter and an executor.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from eceb_worker.engine.artifacts import Artifact
from eceb_worker.engine.paths import path_problems, printable_path
from eceb_worker.engine.plan import DEFAULT_SHARD_BYTES, plan_rehash
from eceb_worker.engine.registry import Registry, build_registry, read_registry
from eceb_worker.engine.verification import HashOutcome, ShardVerification, VerificationReport, reduce_verification
from eceb_worker.errors import InputError, Problem
from eceb_worker.executors.inprocess import InProcessExecutor, ShardExecutor
from eceb_worker.storage import StorageSpec, shared_storage

if TYPE_CHECKING:
    from eceb_worker.engine.rules import RulesFile

__all__ = ["load_registry", "register_corpus", "verify_corpus"]


def load_registry(path: Path) -> Registry:
    """Read and validate a registry file; raises :class:`InputError` with every problem."""
    try:
        with path.open("rb") as stream:
            return read_registry(stream, str(path))
    except OSError as exc:
        raise InputError([Problem(file=str(path), message=f"cannot read: {exc.strerror or exc}")]) from exc


def verify_corpus(
    registry: Registry,
    spec: StorageSpec,
    *,
    executor: ShardExecutor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    on_shard: Callable[[ShardVerification], object] | None = None,
) -> VerificationReport:
    """Re-hash every registered artifact from ``spec``'s storage (ECEB-0.1 §5).

    Returns the report (``report.ok`` tells whether the corpus verified).
    Raises ``StorageError`` when the storage as a whole fails.
    """
    executor = executor or InProcessExecutor()
    shards = plan_rehash([a.size_bytes for a in registry.artifacts], shard_bytes=shard_bytes)
    results = executor.rehash(spec, registry.artifacts, shards, on_shard)
    return reduce_verification(
        results,
        corpus_root=registry.corpus_root,
        artifact_count=len(registry.artifacts),
        source=shared_storage(spec).location,
    )


def register_corpus(
    spec: StorageSpec,
    rules: RulesFile,
    *,
    rules_name: str,
    executor: ShardExecutor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    on_batch: Callable[[list[HashOutcome]], object] | None = None,
    on_listed: Callable[[int, int], None] | None = None,
) -> Registry:
    """Build the registry of every file in a corpus.

    Kind and classification come from ``rules`` (first match wins); the
    ``artifact_id`` of a file is its corpus-relative path. ``on_listed`` gets
    ``(files, bytes)`` to hash once the corpus is listed. Raises
    :class:`InputError` listing together every file no rule classifies, every
    non-portable path, every refused entry (a symbolic link to a directory or
    leading out of the corpus) and every unreadable file.
    """
    executor = executor or InProcessExecutor()
    storage = shared_storage(spec)
    location = storage.location
    problems: list[Problem] = []
    candidates: dict[str, int] = {}
    for entry in storage.list_entries():
        shown = printable_path(entry.path)
        if entry.refusal:
            problems.append(Problem(file=location, record=shown, message=entry.refusal))
            continue
        reasons = path_problems(entry.path)
        if reasons:
            problems.extend(Problem(file=location, record=shown, field="path", message=r) for r in reasons)
            continue
        candidates[entry.path] = entry.size_bytes
    from eceb_worker.engine.rules import classify_all  # glob matching: only registering needs it

    # Files that can be classified are hashed even when others cannot, so
    # that unreadable or escaping files are reported in the same run.
    classified, unclassified = classify_all(rules, sorted(candidates), rules_name=rules_name)
    problems.extend(unclassified)

    paths = [c.path for c in classified]
    sizes = [max(candidates[p], 0) for p in paths]
    if on_listed is not None:
        on_listed(len(paths), sum(sizes))
    shards = plan_rehash(sizes, shard_bytes=shard_bytes)
    batches = [paths[s.start : s.end] for s in shards]
    outcomes = [o for batch in executor.hash_paths(spec, batches, on_batch) for o in batch]
    artifacts: list[Artifact] = []
    for item, outcome in zip(classified, outcomes, strict=True):
        if outcome.status != "ok":
            detail = f": {outcome.detail}" if outcome.detail else ""
            problems.append(
                Problem(
                    file=location,
                    record=printable_path(item.path),
                    message=f"{outcome.status.replace('_', ' ')}{detail}",
                )
            )
            continue
        artifacts.append(
            Artifact(
                artifact_id=item.path,
                path=item.path,
                kind=item.kind,
                classification=item.classification,
                source_digest=outcome.digest,
                size_bytes=outcome.size_bytes,
            )
        )
    if problems:
        raise InputError(problems)
    return build_registry(artifacts)
