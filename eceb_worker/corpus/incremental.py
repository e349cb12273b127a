"""Incremental registration (ECEB-0.1 §5): the listing snapshot kept beside
a registry, and which digests of a previous registry a new registration
takes over instead of hashing the bytes again.

A registry ``R.jsonl`` that ``eceb corpus register`` writes gets a listing
snapshot ``R.listing.jsonl`` beside it (:func:`listing_name`), JSON Lines::

    {"entry_count":2,"listed_at":"2026-07-01T02:00:00.123456Z","registry_digest":"…","schema":"symgliph.eceb/listing-v0.1","source":"s3://corpus/eng"}
    {"etag":"\\"9b2c…\\"","last_modified":"2026-06-30T17:12:09Z","path":"runbook/db-failover.md","size_bytes":381}
    {"etag":"\\"41d8…-3\\"","last_modified":"2026-06-29T08:01:44Z","path":"runbook/disk-full.md","size_bytes":315}

a :class:`ListingHeader` that binds it to the registry file by the BLAKE3
digest of the file's bytes, then one :class:`ListingEntry` per registered
artifact, in the registry's order: what identified the object's version
when it was listed (an S3 object's ETag and LastModified; a local file's
mtime, ctime and inode), never its bytes.

Registering again with that registry as the previous one, a listed object
whose version equals its snapshot entry takes the previous digest and size
(:func:`reuse_digests`); every other object is hashed. Kind and
classification always come from the rules of the new registration. Both
sides are walked in the registry's order (:func:`registry_key`): the listing
sorted once, the previous registry and its snapshot read as streams of
chunks (:func:`previous_artifacts`), so that memory does not grow with them.

A wrong reuse cannot pass unseen: before evaluation every registered
artifact is hashed again and a digest that does not match is a stale
artifact (ECEB-0.1 §5); see docs/REGISTRY.md, "Incremental registration".

Pure: chunks and listed entries come from the caller.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from itertools import zip_longest
from typing import Annotated, Final, Literal

import msgspec
from msgspec import UNSET, UnsetType

from eceb_worker.core.arithmetic import SAFE_INTEGER_MAX
from eceb_worker.core.canonical import canonical_json, canonical_lines
from eceb_worker.core.decoding import record_problems
from eceb_worker.core.digests import Digest, HashedBytes
from eceb_worker.corpus.artifacts import Artifact, CorpusPath
from eceb_worker.corpus.lines import artifact_blocks, blocks
from eceb_worker.corpus.storage import ListedEntry
from eceb_worker.errors import InputError, Problem

__all__ = [
    "LISTING_SCHEMA",
    "SETTLE_NS",
    "ListingEntry",
    "ListingHeader",
    "PreviousArtifact",
    "decode_listing_header",
    "listing_entry",
    "listing_lines",
    "listing_name",
    "names_listing",
    "previous_artifacts",
    "registry_key",
    "registry_order",
    "reuse_digests",
    "settled_before",
    "snapshot_entries",
]

LISTING_SCHEMA: Final = "symgliph.eceb/listing-v0.1"

SETTLE_NS: Final = 2_000_000_000
"""A local file whose status changed less than this (2 s, in nanoseconds)
before its listing started is hashed again at the next registration, even
when its mtime, ctime, inode and size are unchanged: a file system records
times at a coarse granularity (up to 2 s on FAT), so a change made just
after the file was read could leave them as they were."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)

Decimal = Annotated[
    str,
    msgspec.Meta(
        pattern="^(0|[1-9][0-9]{0,19})\\Z",
        description="A non-negative integer in decimal digits (it may exceed JSON's exact integer range).",
    ),
]

Instant = Annotated[
    datetime,
    msgspec.Meta(tz=True, extra_json_schema={"format": "date-time"}, description="RFC 3339 date and time, UTC."),
]


class ListingHeader(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """First line of a listing snapshot (``REGISTRY_STEM.listing.jsonl``).

    Fields:
        schema: always ``"symgliph.eceb/listing-v0.1"``.
        registry_digest: BLAKE3-256 of every byte of the registry file the
            snapshot was written with: a snapshot whose registry is not that
            file is not used.
        source: the corpus listed, as named (a directory, or
            ``s3://bucket/prefix``; never an endpoint or a credential).
        entry_count: lines that follow, one per artifact of the registry.
        listed_at: when the listing started (the registering machine's clock).
    """

    schema: Literal["symgliph.eceb/listing-v0.1"]
    registry_digest: Digest
    source: Annotated[str, msgspec.Meta(max_length=4096)]
    entry_count: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]
    listed_at: Instant


class ListingEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, gc=False):
    """One line of a listing snapshot after its header: what identified an
    artifact's version when it was listed. An S3 object has ``etag`` and
    ``last_modified``; a local file ``mtime_ns``, ``ctime_ns`` and ``inode``;
    the fields an entry does not have are left out. An entry with none of
    them (the listing could not tell) never lets a digest be reused.

    Fields:
        path: the artifact's path (its ``artifact_id``), as in the registry.
        size_bytes: the size the listing gave.
        etag: the S3 object's ETag as the listing gave it (quotes included).
        last_modified: the S3 object's LastModified.
        mtime_ns: the local file's modification time, ns since the Unix epoch.
        ctime_ns: the local file's status change time, ns since the Unix epoch.
        inode: the local file's inode number.
    """

    path: CorpusPath
    size_bytes: Annotated[int, msgspec.Meta(ge=0, le=SAFE_INTEGER_MAX)]
    etag: Annotated[str, msgspec.Meta(max_length=1024)] | UnsetType = UNSET
    last_modified: Instant | UnsetType = UNSET
    mtime_ns: Decimal | UnsetType = UNSET
    ctime_ns: Decimal | UnsetType = UNSET
    inode: Decimal | UnsetType = UNSET

    @property
    def identifies_version(self) -> bool:
        """True when the entry holds a whole version: a non-empty ETag and
        LastModified, or mtime, ctime and inode."""
        if self.etag and self.last_modified is not UNSET:
            return True
        return self.mtime_ns is not UNSET and self.ctime_ns is not UNSET and self.inode is not UNSET


class PreviousArtifact(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """An artifact of the previous registry with its snapshot entry.

    Fields:
        key: :func:`registry_key` of its path.
        entry: its line of the snapshot.
        source_digest: its registered digest.
        size_bytes: its registered size.
    """

    key: bytes
    entry: ListingEntry
    source_digest: str
    size_bytes: int


def registry_key(path: str) -> bytes:
    """The position of ``path`` in a registry eceb writes: the path as a
    JSON string (quotes included, as the canonical encoder writes it),
    compared as bytes. A registry is in corpus-root order, its records
    sorted by their canonical bytes, which start with the encoded
    ``artifact_id``; no JSON string is a proper prefix of another, and the
    ids are the paths. Not the paths' own UTF-8 order (S3's listing order):
    the closing quote sorts ``a`` after ``a b``."""
    return canonical_json(path)


def listing_name(registry_name: str) -> str:
    """The file name of the listing snapshot beside the registry file
    ``registry_name`` (a base name): its stem and ``.listing.jsonl``
    (``registry.jsonl`` -> ``registry.listing.jsonl``)."""
    dot = registry_name.rfind(".")
    stem = registry_name[:dot] if dot > 0 else registry_name
    return f"{stem}.listing.jsonl"


def _decimal(value: int | None) -> str | UnsetType:
    return UNSET if value is None else str(value)


def listing_entry(entry: ListedEntry) -> ListingEntry:
    """The snapshot entry of a listed file or object (its size must be
    known: 0 or more). Raises ValueError for a negative size."""
    if entry.size_bytes < 0:
        raise ValueError(f"the size of {entry.path!r} is not known")
    return ListingEntry(
        path=entry.path,
        size_bytes=entry.size_bytes,
        etag=UNSET if entry.etag is None else entry.etag,
        last_modified=UNSET if entry.last_modified is None else entry.last_modified,
        mtime_ns=_decimal(entry.mtime_ns),
        ctime_ns=_decimal(entry.ctime_ns),
        inode=_decimal(entry.inode),
    )


def snapshot_entries(listed: Iterable[ListedEntry], artifacts: Iterable[Artifact]) -> Iterator[ListingEntry]:
    """The snapshot entries of a registry's ``artifacts`` (in its order),
    ``listed`` being their listed entries in the same order. An entry whose
    size the listing did not know gets the registered size and no version
    (it is hashed again next time). Raises ValueError when the two do not
    name the same paths in the same order."""
    for entry, artifact in zip(listed, artifacts, strict=True):
        if entry.path != artifact.path:
            raise ValueError("the listed entries are not in the registry's order")
        if entry.size_bytes < 0:
            yield ListingEntry(path=artifact.path, size_bytes=artifact.size_bytes)
        else:
            yield listing_entry(entry)


_LINES_AT_ONCE: Final = 65536


def listing_lines(header: ListingHeader, entries: Iterable[ListingEntry]) -> Iterator[bytes]:
    """The snapshot's JSON Lines (canonical JSON, each line ending with
    ``\\n``), header first; many lines a chunk."""
    yield canonical_json(header) + b"\n"
    batch: list[ListingEntry] = []
    for entry in entries:
        batch.append(entry)
        if len(batch) == _LINES_AT_ONCE:
            yield canonical_lines(batch)
            batch = []
    if batch:
        yield canonical_lines(batch)


_HEADER_DECODER: Final = msgspec.json.Decoder(ListingHeader)
_ENTRY_DECODER: Final = msgspec.json.Decoder(ListingEntry)


class _SchemaOnly(msgspec.Struct):
    schema: str = ""


def names_listing(line: bytes) -> bool:
    """True when ``line`` (a file's first line) is an object whose
    ``schema`` names a listing snapshot."""
    try:
        return msgspec.json.decode(line, type=_SchemaOnly).schema == LISTING_SCHEMA
    except (msgspec.DecodeError, RecursionError):
        return False


def _line_problem(raw: bytes, struct: type[msgspec.Struct], name: str, number: int, error: Exception) -> InputError:
    found = record_problems(raw, struct, file=name, record=f"line {number}", decode_error=str(error), line=number)
    return InputError(found or [Problem(file=name, record=f"line {number}", message=str(error))])


def decode_listing_header(line: bytes, name: str, number: int = 1) -> ListingHeader:
    """Decode the header line of listing snapshot ``name`` (on line
    ``number``). Raises :class:`InputError` naming every problem."""
    try:
        return _HEADER_DECODER.decode(line)
    except (msgspec.DecodeError, RecursionError) as exc:
        raise _line_problem(line, ListingHeader, name, number, exc) from None


def settled_before(header: ListingHeader, settle_ns: int = SETTLE_NS) -> int:
    """The ctime (ns since the Unix epoch) before which a local file's
    entry in the snapshot ``header`` starts may let its digest be reused:
    ``settle_ns`` before its listing started."""
    delta = header.listed_at - _EPOCH
    return (delta // timedelta(microseconds=1)) * 1000 - settle_ns


class _RegisteredLine(msgspec.Struct, gc=False):
    """What reuse takes of a registry line already checked; the other fields are skipped."""

    path: str
    source_digest: str
    size_bytes: int


_REGISTERED_DECODER: Final = msgspec.json.Decoder(_RegisteredLine)


def _registered(chunks: Iterable[bytes]) -> Iterator[_RegisteredLine]:
    """The artifact lines of a registry already checked, in file order."""
    for _block, lines, first in artifact_blocks(chunks):
        wanted = [line for line in lines[first:] if line.strip()]
        if wanted:
            yield from _REGISTERED_DECODER.decode_lines(b"\n".join(wanted))


def _snapshot_lines(chunks: Iterable[bytes], name: str) -> Iterator[tuple[int, ListingEntry | ListingHeader]]:
    """The snapshot's header, then its entries, each with its line number.
    Raises :class:`InputError` at the first line that is not one."""
    header_seen = False
    for block, lines in blocks(chunks):
        for offset, raw in enumerate(lines):
            if not raw.strip():
                continue
            number = block.number + offset
            if not header_seen:
                header_seen = True
                yield number, decode_listing_header(raw, name, number)
                continue
            try:
                yield number, _ENTRY_DECODER.decode(raw)
            except (msgspec.DecodeError, RecursionError) as exc:
                raise _line_problem(raw, ListingEntry, name, number, exc) from None
    if not header_seen:
        raise InputError([Problem(file=name, message="is empty")])


def previous_artifacts(
    registry_chunks: Iterable[bytes], listing_chunks: Iterable[bytes], *, registry_name: str, listing_name: str
) -> Iterator[PreviousArtifact]:
    """The artifacts of a previous registry paired with their snapshot
    entries, in the registry's order, read as streams (memory: a chunk's
    lines of each).

    ``registry_chunks``: the bytes of a registry already checked
    (:func:`~eceb_worker.corpus.registry.scan_registry`); ``listing_chunks``:
    its snapshot's bytes, header first. Raises :class:`InputError` naming
    the snapshot (``listing_name``) when a line of it is not an entry, when
    its paths are not the registry's, one for one, in ascending
    :func:`registry_key` order, or when it holds more or fewer entries than
    its header or the registry (``registry_name``) says: a snapshot that
    does not describe the registry is not used.
    """
    lines = _snapshot_lines(listing_chunks, listing_name)
    _, header = next(lines)
    assert isinstance(header, ListingHeader)
    count = 0
    last = b""
    for registered, item in zip_longest(_registered(registry_chunks), lines):
        if item is None or registered is None:
            more = "fewer" if item is None else "more"
            message = f"holds {more} entries than the registry {registry_name} has artifacts"
            raise InputError([Problem(file=listing_name, message=message)])
        number, entry = item
        assert isinstance(entry, ListingEntry)
        where = f"line {number}"
        if entry.path != registered.path:
            message = f"names another path than artifact {count + 1} of the registry {registry_name}"
            raise InputError([Problem(file=listing_name, record=where, field="path", message=message)])
        key = registry_key(entry.path)
        if count and key <= last:
            message = "is not in the order of a registry eceb writes (paths ascending as JSON strings)"
            raise InputError([Problem(file=listing_name, record=where, field="path", message=message)])
        count += 1
        last = key
        yield PreviousArtifact(
            key=key, entry=entry, source_digest=registered.source_digest, size_bytes=registered.size_bytes
        )
    if count != header.entry_count:
        message = f"holds {count} entries, not the {header.entry_count} its header says"
        raise InputError([Problem(file=listing_name, record="line 1", field="entry_count", message=message)])


def _reusable(entry: ListingEntry, previous: PreviousArtifact, settled: int) -> bool:
    """True when the previous digest of the object listed as ``entry`` is its digest now."""
    kept = previous.entry
    if entry != kept or kept.size_bytes != previous.size_bytes or not kept.identifies_version:
        return False
    return kept.ctime_ns is UNSET or int(kept.ctime_ns) < settled


def reuse_digests(
    listed: Iterable[ListedEntry], previous: Iterable[PreviousArtifact], *, settled: int
) -> Iterator[HashedBytes | None]:
    """For each listed entry, the previous registry's ``(size_bytes,
    digest)`` when it may be reused, else None (hash the object): reused
    when the previous registry has the path and its snapshot entry equals
    the entry listed now (:func:`listing_entry`: size, ETag and
    LastModified, or mtime, ctime and inode), the snapshot's size is the
    registered one, and a local file's ctime is before ``settled``
    (:func:`settled_before`).

    ``listed``: entries in ascending :func:`registry_key` order, each path
    once (one of unknown size is always hashed); ``previous``: as :func:`previous_artifacts`
    gives them (read to its end, so that its checks all run, even past the
    last entry listed). A merge of the two: memory is one entry of each.
    Raises ValueError when ``listed`` is not in that order, and whatever
    ``previous`` raises.
    """
    ahead = iter(previous)
    current = next(ahead, None)
    last = b""
    for position, entry in enumerate(listed):
        key = registry_key(entry.path)
        if position and key <= last:
            raise ValueError("the listed entries are not in ascending registry order")
        last = key
        while current is not None and current.key < key:
            current = next(ahead, None)
        if (
            current is not None
            and current.key == key
            and entry.size_bytes >= 0
            and _reusable(listing_entry(entry), current, settled)
        ):
            yield current.size_bytes, current.source_digest
        else:
            yield None
    for _ in ahead:
        pass


def registry_order(entries: list[ListedEntry]) -> None:
    """Sort listed entries into the registry's order (:func:`registry_key`),
    in place (holding a key of about the path's length per entry while it sorts)."""
    entries.sort(key=lambda entry: registry_key(entry.path))
