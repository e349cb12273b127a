"""Registering a corpus on a cluster (``eceb-dist register``, ECEB-0.1 §5;
docs/DISTRIBUTED.md, "Registering a corpus on the cluster"): the job's
steps, each run by whichever worker takes it. What is planned, answered
and reduced is in :mod:`eceb_worker.corpus.registration`.

- :func:`plan_listing` (the first step): key ranges of the corpus prefix,
  cut where a few delimiter listings find key prefixes and page ends.
- :func:`list_shard`: list one range, check and classify its files (the
  rules of ``eceb corpus register``), sort the rows into corpus-root order
  (on disk past a million rows), write them as a partial beside the
  registry and answer its counts, pieces and problems.
- :func:`plan_hashing` (the listing's reduce): fail on any problem, every
  one listed (bounded), grouped as ``eceb corpus register`` groups them;
  else hash shards as byte ranges of the listing partials.
- :func:`hash_shard`: hash one range's files and write their registry
  lines as a partial.
- :func:`finish_registration` (the hashing's reduce): fail on any file
  that could not be read; else the partials of each listing partial,
  concatenated in order, are one sorted run: the runs are merged into the
  registry's lines as they stream, the corpus root hashed on the way, the
  header written last in its place, and the registry uploaded atomically.
  The bytes are those ``eceb corpus register`` writes for the same objects.

Partials are objects beside the registry, under
:func:`~eceb_worker.corpus.registration.parts_prefix` (``.<name>.parts/<job>/``),
each named uniquely per holding (a shard run twice writes its own), and
deleted when the job ends (:func:`discard_parts`).
"""

from __future__ import annotations

import contextlib
import heapq
import tempfile
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import IO, Any, Final

import msgspec

from eceb_worker.core.canonical import canonical_lines
from eceb_worker.core.digests import digest_chunks
from eceb_worker.core.urls import parse_s3_url, split_object_url
from eceb_worker.corpus.outcomes import HashResult
from eceb_worker.corpus.planning import TAPER_PARTS
from eceb_worker.corpus.registration import (
    LISTED_PROBLEMS,
    ListedRow,
    PieceCutter,
    Registered,
    RootOfLines,
    TallyBuilder,
    classified_rows,
    decode_rows,
    encode_rows,
    first_problems,
    hashed_artifacts,
    header_line,
    listing_problems,
    merge_tallies,
    merged_lines,
    parts_prefix,
)
from eceb_worker.corpus.registration import plan_hashing as plan_ranges
from eceb_worker.corpus.rules import classify_all
from eceb_worker.corpus.storage import CorpusStorage, ListedEntry
from eceb_worker.errors import InputError, OutputError, Problem, ShardFailedError, StorageError
from eceb_worker.io.s3_listing import delete_under, list_range, write_partial
from eceb_worker.io.s3_listing import plan_listing as plan_ranges_of_keys
from eceb_worker.io.spill import ExternalSorter
from eceb_worker.pipeline.messages import (
    HashRangeAnswer,
    HashRangeTask,
    JobMessage,
    ListAnswer,
    ListTask,
    RegistrationOptions,
)

__all__ = [
    "Reuse",
    "previous_reuse",
    "check_output",
    "discard_parts",
    "finish_registration",
    "hash_shard",
    "list_shard",
    "plan_hashing",
    "plan_listing",
]

ROWS_BATCH: Final = 10_000
"""Listed objects checked and classified at once by a listing shard."""
_READS_AHEAD: Final = 4
"""Partials the merge downloads at once (a job's object store keeps four connections)."""
_RUN_BUFFER: Final = 64 * 1024
"""Read buffer of each run the merge keeps open."""

Reuse = Callable[[Iterator[ListedRow]], Iterator[ListedRow]]
"""An incremental registration's decision over a listing shard's rows, in
corpus-root order (the registry's: a merge with a previous registry and
its listing snapshot needs nothing more): the same rows, in the same
order, those whose previous digest is to be taken with their
``reuse_digest`` set (their objects are then not read)."""


def previous_reuse(registration: RegistrationOptions, chunks: Callable[[str], Iterable[bytes]]) -> Reuse | None:
    """An incremental registration's :data:`Reuse` (``None`` for a full
    one): each shard's rows merged with the previous registry and its
    listing snapshot, read as streams through ``chunks(url)`` (pinned to
    the versions the first step read); a row whose object is listed as it
    was then takes the previous digest
    (:func:`~eceb_worker.corpus.incremental.reuse_digests`). A previous
    registry or snapshot that does not pair up raises ``InputError``."""
    if not registration.previous_listing:
        return None
    from eceb_worker.corpus.incremental import previous_artifacts, reuse_digests

    def reuse(rows: Iterator[ListedRow]) -> Iterator[ListedRow]:
        waiting: deque[ListedRow] = deque()

        def listed() -> Iterator[ListedEntry]:
            for row in rows:
                waiting.append(row)
                yield _listed_entry(row)

        previous = previous_artifacts(
            chunks(registration.previous),
            chunks(registration.previous_listing),
            registry_name=registration.previous,
            listing_name=registration.previous_listing,
        )
        for found in reuse_digests(listed(), previous, settled=registration.settled):
            row = waiting.popleft()
            yield row if found is None else msgspec.structs.replace(row, reuse_digest=found[1])

    return reuse


def _listed_entry(row: ListedRow) -> ListedEntry:
    """The listed entry a row was made from (its path, size and version)."""
    return ListedEntry(path=row.path, size_bytes=row.size_bytes, etag=row.etag, last_modified=row.last_modified)


def _options(message: JobMessage) -> RegistrationOptions:
    if message.registration is None:
        raise ValueError("a registration's job message carries no registration options")
    return message.registration


def _key_prefix(source: str) -> tuple[str, str]:
    """``(bucket, key prefix)`` of an ``s3://bucket/prefix`` corpus: the
    prefix with its ``/`` (``""`` for the whole bucket), as its keys start."""
    bucket, prefix = parse_s3_url(source)
    return bucket, f"{prefix}/" if prefix else ""


def check_output(message: JobMessage) -> None:
    """Refuse (:class:`~eceb_worker.errors.OutputError`) a registry written
    under its own corpus prefix (it would be registered by the next
    registration, then replaced), as ``eceb corpus register`` refuses a
    registry inside the directory it registers; and a corpus that is not
    an ``s3://`` prefix (ValueError: the listing is spread by key ranges)."""
    if not message.corpus.is_s3:
        raise ValueError(f"{message.corpus.source}: a registration on a cluster lists an s3://bucket/prefix")
    bucket, prefix = _key_prefix(message.corpus.source)
    out_bucket, key = split_object_url(message.out)
    if out_bucket == bucket and key.startswith(prefix):
        raise OutputError(
            f"{message.out}: lies under the corpus {message.corpus.location} it registers: it would be registered "
            "by the next registration; write it elsewhere"
        )


def plan_listing(message: JobMessage, client: Any) -> list[ListTask]:
    """The listing shards of a registration's job (its first step), read
    through the S3 ``client``. Raises ``StorageError`` when the corpus
    cannot be listed."""
    registration = _options(message)
    bucket, prefix = _key_prefix(message.corpus.source)
    shards = plan_ranges_of_keys(client, bucket, prefix, where=message.corpus.location)
    return [
        ListTask(
            job_id=message.job_id,
            corpus=message.corpus,
            out=message.out,
            shard=shard,
            registration=registration,
            shard_bytes=message.shard_bytes,
        )
        for shard in shards
    ]


def _partial_url(out: str, job_id: str, stage: str, index: int) -> str:
    """A new partial's URL beside the registry, unique to this holding of the shard."""
    return f"{parts_prefix(out, job_id)}{stage}-{index:06d}-{uuid.uuid4().hex}.jsonl"


def list_shard(task: ListTask, client: Any, *, reuse: Reuse | None = None) -> ListAnswer:
    """List ``task``'s key range through the S3 ``client``; check each
    path and classify each file (:func:`~eceb_worker.corpus.rules.classify_all`,
    excluded files left out); sort the rows into corpus-root order (spilled
    to temporary files past a million); write them as a partial and
    answer. ``reuse``, when given, decides which rows take a previous
    digest (an incremental registration; :data:`Reuse`). Raises
    ``StorageError`` when the range cannot be listed or the partial written."""
    registration = task.registration
    location = task.corpus.location
    bucket, prefix = _key_prefix(task.corpus.source)
    tally = TallyBuilder(location, registration.rules_name)
    listed = 0
    with tempfile.TemporaryDirectory(prefix="eceb-listing-") as directory, ExternalSorter(directory) as sorter:
        for batch in _blocks(list_range(client, bucket, prefix, task.shard, where=location), ROWS_BATCH):
            listed += len(batch)
            candidates = tally.candidates(batch)
            classified, unclassified = classify_all(
                registration.rules, [entry.path for entry in candidates], rules_name=registration.rules_name
            )
            tally.unclassified(unclassified)
            sorter.extend(encode_rows(classified_rows(candidates, classified)))
        rows = (row for block in _blocks(sorter.sorted()) for row in decode_rows(b"".join(block)))
        path = Path(directory, "rows.jsonl")
        cutter = PieceCutter(max(1, task.shard_bytes // TAPER_PARTS))
        size = 0
        with path.open("wb") as rows_file:
            for block in _blocks(reuse(rows) if reuse is not None else rows):
                lines = encode_rows(block)
                for row, line in zip(block, lines, strict=True):
                    cutter.add(row.path, row.size_bytes, len(line))
                    size += row.size_bytes
                rows_file.writelines(lines)
        pieces = cutter.finish()
        partial = ""
        if pieces:
            partial = _partial_url(task.out, task.job_id, "list", task.shard.index)
            write_partial(client, partial, path)
    return ListAnswer(
        index=task.shard.index,
        partial=partial,
        listed=listed,
        rows=sum(piece.count for piece in pieces),
        size_bytes=size,
        pieces=tuple(pieces),
        tally=tally.tally(),
    )


def _blocks(items: Iterable[Any], size: int = 4096) -> Iterator[list[Any]]:
    """``items`` in lists of ``size`` (the last one shorter)."""
    remaining = iter(items)
    while block := list(islice(remaining, size)):
        yield block


def _in_plan(answers: Iterable[Any], total: int, what: str) -> list[Any]:
    """Each shard's answer in plan order (one answered twice counts once);
    ``ShardFailedError`` when they do not cover the plan."""
    by_index: dict[int, Any] = {}
    for answer in answers:
        by_index.setdefault(answer.index, answer)
    if sorted(by_index) != list(range(total)):
        raise ShardFailedError(f"{what} results do not cover the plan ({len(by_index)} of {total} answered)")
    return [by_index[index] for index in range(total)]


def plan_hashing(message: JobMessage, answers: Sequence[ListAnswer]) -> tuple[list[HashRangeTask], int]:
    """The listing's reduce: every problem it found fails the job as bad
    input (:class:`~eceb_worker.errors.InputError`, listed as ``eceb
    corpus register`` lists them: the paths' problems, then the unclassified
    files grouped); else the hash shards over the listing partials
    (:func:`~eceb_worker.corpus.registration.plan_hashing`) and the number
    of artifacts they make. ``ShardFailedError`` when the answers do not
    cover the plan."""
    registration = _options(message)
    ordered: list[ListAnswer] = _in_plan(answers, registration.listing_shards, "listing shard")
    tally = merge_tallies(answer.tally for answer in ordered)
    if not tally.empty:
        raise InputError(listing_problems(tally, rules_name=registration.rules_name, location=message.corpus.location))
    plan = plan_ranges([(answer.partial, answer.pieces) for answer in ordered], message.shard_bytes)
    tasks = [
        HashRangeTask(job_id=message.job_id, corpus=message.corpus, out=message.out, range=shard) for shard in plan
    ]
    return tasks, sum(answer.rows for answer in ordered)


def _checked_rows(data: bytes, task: HashRangeTask) -> list[ListedRow]:
    """The rows of ``task``'s range as read, checked to be those planned
    (their count and first path). :class:`~eceb_worker.errors.InputError`
    naming the partial and the range otherwise (never its bytes)."""
    shard = task.range
    problem = Problem(
        file=shard.partial,
        record=f"bytes {shard.byte_start}..{shard.byte_end}",
        message="are not the rows its listing shard wrote (the object was replaced or damaged since)",
    )
    try:
        rows = decode_rows(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        raise InputError([problem]) from None
    if len(rows) != shard.count or (rows and rows[0].path != shard.first_path):
        raise InputError([problem])
    return rows


def hash_shard(
    task: HashRangeTask,
    storage: CorpusStorage,
    client: Any,
    *,
    read_range: Callable[[str, int, int], bytes],
) -> HashRangeAnswer:
    """Hash ``task``'s rows (read by ``read_range(url, start, end)``) from
    ``storage`` (a row with a ``reuse_digest`` takes it, its object not
    read), write their registry lines as a partial through the S3
    ``client`` and answer, with the first files that could not be read.
    Raises ``StorageError`` when the storage fails as a whole, ``InputError``
    when the range is not the rows planned."""
    shard = task.range
    rows = _checked_rows(read_range(shard.partial, shard.byte_start, shard.byte_end) if shard.count else b"", task)
    wanted = [position for position, row in enumerate(rows) if not row.reuse_digest]
    results: list[HashResult | None] = [None] * len(rows)
    for position, result in zip(wanted, storage.hash_artifacts([rows[p].path for p in wanted]), strict=True):
        results[position] = result
    artifacts, problems = hashed_artifacts(rows, results, location=task.corpus.location)
    hashed = sum(result[0] for result in results if isinstance(result, tuple))
    partial = ""
    if artifacts:
        partial = _partial_url(task.out, task.job_id, "hash", shard.index)
        write_partial(client, partial, canonical_lines(artifacts))
    return HashRangeAnswer(
        index=shard.index,
        listing=shard.listing,
        partial=partial,
        artifacts=len(artifacts),
        size_bytes=sum(artifact.size_bytes for artifact in artifacts),
        bytes_hashed=hashed,
        problems=tuple(sorted(problems, key=lambda item: item.path)[:LISTED_PROBLEMS]),
        problem_count=len(problems),
        reused=len(rows) - len(wanted),
    )


def _spill_runs(answers: Sequence[HashRangeAnswer], read: Callable[[str], bytes], directory: Path) -> list[Path]:
    """Every partial, downloaded :data:`_READS_AHEAD` at a time, appended in
    shard order to the local file of its listing shard: one sorted run per
    listing partial (its hash shards are consecutive ranges of it)."""
    runs: dict[int, Path] = {}
    with (
        ThreadPoolExecutor(max_workers=_READS_AHEAD, thread_name_prefix="eceb-partials") as pool,
        contextlib.ExitStack() as stack,
    ):
        ahead: deque[tuple[HashRangeAnswer, Future[bytes]]] = deque()
        current: tuple[int, IO[bytes]] | None = None

        def take() -> None:
            nonlocal current
            answer, future = ahead.popleft()
            if current is None or current[0] != answer.listing:
                if current is not None:
                    current[1].close()
                path = runs.setdefault(answer.listing, directory / f"run-{answer.listing:06d}.jsonl")
                current = (answer.listing, stack.enter_context(path.open("ab")))
            current[1].write(future.result())

        for answer in answers:
            if answer.partial:
                ahead.append((answer, pool.submit(read, answer.partial)))
            if len(ahead) >= _READS_AHEAD:
                take()
        while ahead:
            take()
    return [runs[listing] for listing in sorted(runs)]


def _digest_file(path: Path) -> str:
    with path.open("rb") as file:
        return digest_chunks(iter(lambda: file.read(1024 * 1024), b""))[1]


def finish_registration(
    message: JobMessage,
    answers: Sequence[HashRangeAnswer],
    *,
    read: Callable[[str], bytes],
    download: Callable[[str, Path], None],
    upload: Callable[[str, Path], None],
) -> Registered:
    """The hashing's reduce (see the module): every file that could not be
    read fails the job as bad input (the first listed, by path, as ``eceb
    corpus register`` lists them; the rest counted); else the registry is
    merged from the partials (``read`` reads a hash shard's, bounded by
    the shard's size) into a local file and written to the job's output
    through ``upload`` (atomically); with a listing snapshot, the listing
    partials (a listing shard's rows, as large as its key range) are
    streamed into local files through ``download``, never held whole. Raises
    ``ShardFailedError`` when the answers do not cover the plan or the
    partials do not make the registry planned, ``StorageError``,
    ``OutputError``."""
    registration = _options(message)
    ordered: list[HashRangeAnswer] = _in_plan(answers, registration.hash_shards, "hash batch")
    count = sum(answer.problem_count for answer in ordered)
    if count:
        listed = [item.problem for item in first_problems(answer.problems for answer in ordered)]
        if count > len(listed):
            more = f"and {count - len(listed):,} more files that could not be read"
            listed.append(Problem(file=message.corpus.location, message=more))
        raise InputError(listed)
    expected = sum(answer.artifacts for answer in ordered)
    with tempfile.TemporaryDirectory(prefix="eceb-registry-") as name:
        directory = Path(name)
        runs = _spill_runs(ordered, read, directory)
        registry = directory / "registry.jsonl"
        root = RootOfLines()
        try:
            with contextlib.ExitStack() as stack, registry.open("wb") as out:
                opened = [stack.enter_context(path.open("rb", buffering=_RUN_BUFFER)) for path in runs]
                out.write(header_line(expected, "0" * 64))  # of its final length: filled in below
                out.writelines(root.blocks(merged_lines(opened)))
                if root.count != expected:
                    raise ValueError(f"they hold {root.count} artifacts, their answers {expected}")
                out.seek(0)
                out.write(header_line(root.count, root.corpus_root))
        except ValueError as exc:
            raise ShardFailedError(f"{message.out}: the hash batches' partials do not make a registry: {exc}") from None
        digest = _digest_file(registry)
        upload(message.out, registry)
        if registration.listing_partials:
            snapshot = _snapshot(message, root.count, digest, download, directory)
            upload(_listing_url(message.out), snapshot)
    return Registered(
        artifact_count=root.count,
        size_bytes=root.size_bytes,
        corpus_root=root.corpus_root,
        registry_digest=digest,
        reused=sum(answer.reused for answer in ordered),
    )


def _listing_url(out: str) -> str:
    """The listing snapshot's URL beside the registry ``out``."""
    from eceb_worker.corpus.incremental import listing_name

    directory, _, name = out.rpartition("/")
    return f"{directory}/{listing_name(name)}"


def _snapshot(
    message: JobMessage, count: int, digest: str, download: Callable[[str, Path], None], directory: Path
) -> Path:
    """The new registry's listing snapshot (bound to its bytes' BLAKE3
    ``digest``), merged from the listing partials (each a sorted run of
    rows in the registry's order) into a local file: what the next
    incremental registration compares with."""
    from eceb_worker.corpus.incremental import LISTING_SCHEMA, ListingHeader, listing_entry, listing_lines, registry_key

    registration = _options(message)
    runs = []
    for position, url in enumerate(registration.listing_partials):
        run = directory / f"listed-{position:06d}.jsonl"
        download(url, run)
        runs.append(run)

    def rows(run: Path) -> Iterator[ListedRow]:
        with run.open("rb", buffering=_RUN_BUFFER) as lines:
            for block in _blocks(lines):
                yield from decode_rows(b"".join(block))

    merged = heapq.merge(*(rows(run) for run in runs), key=lambda row: registry_key(row.path))
    entries = (
        listing_entry(
            ListedEntry(path=row.path, size_bytes=row.size_bytes, etag=row.etag, last_modified=row.last_modified)
        )
        for row in merged
    )
    header = ListingHeader(
        schema=LISTING_SCHEMA,
        registry_digest=digest,
        source=message.corpus.location,
        entry_count=count,
        listed_at=registration.listed_at or datetime.now(UTC),
    )
    snapshot = directory / "registry.listing.jsonl"
    with snapshot.open("wb") as out:
        out.writelines(listing_lines(header, entries))
    return snapshot


def discard_parts(client: Any, out: str, job_id: str) -> int:
    """Delete every partial of job ``job_id`` writing the registry ``out``
    (under :func:`~eceb_worker.corpus.registration.parts_prefix`), through
    the S3 ``client``, as far as storage lets; how many were deleted (0
    when none could be)."""
    try:
        prefix = parts_prefix(out, job_id)
        bucket, key = parse_s3_url(prefix)
        return delete_under(client, bucket, f"{key}/", where=prefix)
    except (StorageError, OutputError, ValueError):
        return 0
