"""Registering a corpus (ECEB-0.1 §5): list it, classify every file by the
rules, hash the files (a map stage any executor runs), build the registry;
incrementally, taking a previous registry's digest for every object its
listing snapshot shows unchanged (:mod:`eceb_worker.corpus.incremental`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import blake3
import msgspec

from eceb_worker.core.digests import HashedBytes
from eceb_worker.core.paths import path_problems, printable_path
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.incremental import (
    LISTING_SCHEMA,
    SETTLE_NS,
    ListingHeader,
    listing_lines,
    registry_order,
    reuse_digests,
    settled_before,
    snapshot_entries,
)
from eceb_worker.corpus.planning import DEFAULT_SHARD_BYTES, plan_rehash
from eceb_worker.corpus.registry import Registry, build_registry
from eceb_worker.corpus.rules import Classified, RulesFile, classify_all
from eceb_worker.corpus.storage import ListedEntry, StorageSpec
from eceb_worker.errors import InputError, OutputError, Problem
from eceb_worker.io.files import atomic_write, open_input
from eceb_worker.io.locations import CHUNK_BYTES
from eceb_worker.io.storage import shared_storage
from eceb_worker.pipeline.jobs import AnswerCallback, Executor, MapStage, ThisProcess
from eceb_worker.pipeline.messages import HashAnswer, HashTask, ShardTask, Stage
from eceb_worker.pipeline.previous import PreviousRegistry, Warn, listing_path, open_previous
from eceb_worker.pipeline.shards import Workspace

__all__ = [
    "PreviousRegistry",
    "Registration",
    "build_registration",
    "listing_path",
    "open_previous",
    "register_corpus",
    "write_listing",
]


def _ignore(_: str) -> None:
    return None


class Registration(msgspec.Struct, frozen=True, kw_only=True):
    """A registry just built, and what its listing snapshot needs.

    Fields:
        registry: the registry (corpus-root order).
        listed: each artifact's listed entry, in the registry's order.
        source: the corpus, as its storage names it (no credential).
        listed_at: when the listing started (UTC).
        rehashed: artifacts whose bytes were hashed.
        reused: artifacts whose digest was taken from the previous registry.
    """

    registry: Registry
    listed: list[ListedEntry]
    source: str
    listed_at: datetime
    rehashed: int
    reused: int

    def listing_lines(self, registry_digest: str) -> Iterator[bytes]:
        """The listing snapshot's lines, bound to the registry file whose
        bytes have BLAKE3 digest ``registry_digest``."""
        header = ListingHeader(
            schema=LISTING_SCHEMA,
            registry_digest=registry_digest,
            source=self.source,
            entry_count=len(self.listed),
            listed_at=self.listed_at,
        )
        return listing_lines(header, snapshot_entries(self.listed, self.registry.artifacts))


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
    """Build the registry of every file in a corpus, hashing every file
    (:func:`build_registration` without a previous registry)."""
    return build_registration(
        corpus,
        rules,
        rules_name=rules_name,
        executor=executor,
        shard_bytes=shard_bytes,
        on_answer=on_answer,
        on_listed=on_listed,
    ).registry


def build_registration(
    corpus: StorageSpec,
    rules: RulesFile,
    *,
    rules_name: str,
    previous: PreviousRegistry | None = None,
    executor: Executor | None = None,
    shard_bytes: int = DEFAULT_SHARD_BYTES,
    on_answer: AnswerCallback | None = None,
    on_listed: Callable[[int, int], None] | None = None,
    on_warning: Warn = _ignore,
    settle_ns: int = SETTLE_NS,
) -> Registration:
    """Build the registry of every file in a corpus.

    Kind and classification come from ``rules`` (first match wins); the
    ``artifact_id`` of a file is its corpus-relative path. With
    ``previous`` (and its listing snapshot), a file listed with the version
    the snapshot holds takes the previous digest and size
    (:func:`~eceb_worker.corpus.incremental.reuse_digests`, ``settle_ns``
    its margin for local files); every other file is hashed. The registry is
    the same bytes either way, as long as every reused digest is the
    object's (ECEB-0.1 §5 verification re-hashes every artifact, which
    finds any that is not). A snapshot that turns out not to describe the
    previous registry (a bad line, other paths, the registry changed while
    read) is dropped, ``on_warning`` told why, and every file hashed.

    ``on_listed`` gets ``(files, bytes)`` to hash once the corpus is listed
    and compared. Raises :class:`InputError` listing together every file no
    rule classifies, every non-portable path, every refused entry (a
    symbolic link to a directory or leading out of the corpus) and every
    unreadable file; ``StorageError`` when the storage as a whole fails.

    Memory: every listed file's entry (path, size and version: about 300
    bytes with a 60-character path, and a sort key of about 115 bytes while
    they are sorted into the registry's order) and the registry built; the
    previous registry and its snapshot are merge-walked as streams, one
    chunk of each (about 100 MB at most, whatever their size).
    """
    executor = executor or ThisProcess()
    storage = shared_storage(corpus)
    location = storage.location
    listed_at = datetime.now(UTC)
    problems: list[Problem] = []
    entries: list[ListedEntry] = []
    for entry in storage.list_entries():
        shown = printable_path(entry.path)
        if entry.refusal:
            problems.append(Problem(file=location, record=shown, message=entry.refusal))
            continue
        reasons = path_problems(entry.path)
        if reasons:
            problems.extend(Problem(file=location, record=shown, field="path", message=r) for r in reasons)
            continue
        entries.append(entry)
    registry_order(entries)
    # Files that can be classified are hashed even when others cannot, so
    # that unreadable or escaping files are reported in the same run.
    classified, unclassified = classify_all(rules, [e.path for e in entries], rules_name=rules_name)
    problems.extend(unclassified)
    entries = _kept(entries, classified)

    found = _reused(entries, previous, settle_ns, on_warning)
    to_hash = [i for i, result in enumerate(found) if result is None]
    if on_listed is not None:
        on_listed(len(to_hash), sum(max(entries[i].size_bytes, 0) for i in to_hash))
    paths = [entries[i].path for i in to_hash]
    tasks: list[ShardTask] = [
        HashTask(corpus=corpus, index=shard.index, paths=paths[shard.start : shard.end])
        for shard in plan_rehash([max(entries[i].size_bytes, 0) for i in to_hash], shard_bytes=shard_bytes)
    ]
    answers = executor.map(MapStage(stage=Stage.HASH, tasks=tasks), Workspace(), on_answer)
    outcomes = [o for answer in answers if isinstance(answer, HashAnswer) for o in answer.outcomes]
    for index, outcome in zip(to_hash, outcomes, strict=True):
        if outcome.status == "ok":
            found[index] = (outcome.size_bytes, outcome.digest)
            continue
        detail = f": {outcome.detail}" if outcome.detail else ""
        problems.append(
            Problem(
                file=location,
                record=printable_path(outcome.path),
                message=f"{outcome.status.replace('_', ' ')}{detail}",
            )
        )
    if problems:
        raise InputError(problems)
    artifacts = [
        Artifact(
            artifact_id=item.path,
            path=item.path,
            kind=item.kind,
            classification=item.classification,
            source_digest=result[1],
            size_bytes=result[0],
        )
        for item, result in zip(classified, found, strict=True)
        if result is not None
    ]
    return Registration(
        registry=build_registry(artifacts),
        listed=entries,
        source=location,
        listed_at=listed_at,
        rehashed=len(to_hash),
        reused=len(found) - len(to_hash),
    )


def _kept(entries: list[ListedEntry], classified: list[Classified]) -> list[ListedEntry]:
    """The entries of the classified paths (a subsequence of ``entries``, in order)."""
    if len(classified) == len(entries):
        return entries
    kept: list[ListedEntry] = []
    position = 0
    for item in classified:
        while entries[position].path != item.path:
            position += 1
        kept.append(entries[position])
        position += 1
    return kept


def _reused(
    entries: list[ListedEntry], previous: PreviousRegistry | None, settle_ns: int, on_warning: Warn
) -> list[HashedBytes | None]:
    """The previous digest of each entry that may take it, else None; all
    None without a usable snapshot, or when it turns out not to describe
    the previous registry (``on_warning`` told why)."""
    nothing: list[HashedBytes | None] = [None] * len(entries)
    if previous is None or previous.header is None:
        return nothing
    settled = settled_before(previous.header, settle_ns)
    try:
        found = list(reuse_digests(entries, previous.artifacts(), settled=settled))
    except InputError as error:
        on_warning(f"{error.problems[0]}; the listing snapshot is not used: every object is hashed")
        return nothing
    if previous.read_digest != previous.digest:
        on_warning(f"{previous.location.name}: changed while it was read: every object is hashed")
        return nothing
    return found


def write_listing(registration: Registration, registry: Path) -> Path:
    """Write the listing snapshot of the registry just written at
    ``registry`` beside it (atomically), bound to the bytes the file holds
    (read back and hashed); returns its path. Raises ``OutputError`` when
    it cannot be written or the registry cannot be read back."""
    hasher = blake3.blake3()
    try:
        stream = open_input(registry)
    except InputError as error:
        raise OutputError(f"{registry}: cannot be read back: {error.problems[0].message}") from None
    with stream:
        try:
            while chunk := stream.read(CHUNK_BYTES):
                hasher.update(chunk)
        except OSError as exc:
            raise OutputError(f"{registry}: cannot be read back: {exc.strerror or exc}") from None
    target = listing_path(registry)
    atomic_write(target, registration.listing_lines(hasher.hexdigest()))
    return target
