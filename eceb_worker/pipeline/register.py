"""Registering a corpus (ECEB-0.1 §5): list it, classify every file by the
rules, hash the files (a map stage any executor runs), build the registry.
"""

from __future__ import annotations

from collections.abc import Callable

from eceb_worker.core.paths import path_problems, printable_path
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES, plan_rehash
from eceb_worker.corpus.registry import Registry, build_registry
from eceb_worker.corpus.rules import RulesFile, classify_all
from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.errors import InputError, Problem
from eceb_worker.io.storage import shared_storage
from eceb_worker.pipeline.jobs import AnswerCallback, Executor, MapStage, ThisProcess
from eceb_worker.pipeline.messages import HashAnswer, HashTask, ShardTask, Stage
from eceb_worker.pipeline.shards import Workspace

__all__ = ["register_corpus"]


def register_corpus(
    corpus: StorageSpec,
    rules: RulesFile,
    *,
    rules_name: str,
    executor: Executor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    on_answer: AnswerCallback | None = None,
    on_listed: Callable[[int, int], None] | None = None,
) -> Registry:
    """Build the registry of every file in a corpus.

    Kind and classification come from ``rules`` (first match wins); the
    ``artifact_id`` of a file is its corpus-relative path. ``on_listed`` gets
    ``(files, bytes)`` to hash once the corpus is listed. Raises
    :class:`InputError` listing together every file no rule classifies, every
    non-portable path, every refused entry (a symbolic link to a directory or
    leading out of the corpus) and every unreadable file; ``StorageError``
    when the storage as a whole fails.
    """
    executor = executor or ThisProcess()
    storage = shared_storage(corpus)
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
    # Files that can be classified are hashed even when others cannot, so
    # that unreadable or escaping files are reported in the same run.
    classified, unclassified = classify_all(rules, sorted(candidates), rules_name=rules_name)
    problems.extend(unclassified)

    paths = [c.path for c in classified]
    sizes = [max(candidates[p], 0) for p in paths]
    if on_listed is not None:
        on_listed(len(paths), sum(sizes))
    tasks: list[ShardTask] = [
        HashTask(corpus=corpus, index=shard.index, paths=paths[shard.start : shard.end])
        for shard in plan_rehash(sizes, shard_bytes=shard_bytes)
    ]
    answers = executor.map(MapStage(stage=Stage.HASH, tasks=tasks), Workspace(), on_answer)
    outcomes = [o for answer in answers if isinstance(answer, HashAnswer) for o in answer.outcomes]
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
