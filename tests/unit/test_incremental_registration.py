"""Incremental registration, the pure core (eceb_worker.corpus.incremental):
the listing snapshot's lines, the registry's order, and the merge that
takes a previous digest only for an object whose listed version is the one
its snapshot holds, so that the registry is the bytes a full registration
writes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import blake3
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.incremental import (
    LISTING_SCHEMA,
    SETTLE_NS,
    ListingEntry,
    ListingHeader,
    PreviousArtifact,
    decode_listing_header,
    listing_entry,
    listing_lines,
    listing_name,
    names_listing,
    previous_artifacts,
    registry_key,
    registry_order,
    reuse_digests,
    settled_before,
    snapshot_entries,
)
from eceb_worker.corpus.registry import build_registry, registry_lines
from eceb_worker.corpus.storage import ListedEntry
from eceb_worker.errors import InputError

LISTED_AT = datetime(2026, 7, 1, 2, 0, 0, 123456, tzinfo=UTC)
LISTED_AT_NS = 1_782_871_200_123_456_000
DIGEST = "0" * 64

# Segments a portable path may hold, chosen so that the registry's order and
# the UTF-8 order of the paths differ ("a" and "a b", "a!"; a quote).
SEGMENTS = st.sampled_from(["a", "a b", "a!", "b", 'q"x', "é", "日本", "x+y", "100%", "z~", "A", " s"])
PATHS = st.lists(SEGMENTS, min_size=1, max_size=3).map("/".join)

KINDS = ("code", "runbook", "policy")
CLASSES = ("public", "internal", "restricted")


def digest(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def chunked(data: bytes, size: int) -> Iterator[bytes]:
    return (data[i : i + size] for i in range(0, len(data), size))


# --- names, order, lines ------------------------------------------------------


@pytest.mark.parametrize(
    ("registry", "listing"),
    [
        ("registry.jsonl", "registry.listing.jsonl"),
        ("nightly.2026-07-01.jsonl", "nightly.2026-07-01.listing.jsonl"),
        ("registry", "registry.listing.jsonl"),
        (".registry", ".registry.listing.jsonl"),
    ],
)
def test_listing_name_is_the_registry_stem_and_listing_jsonl(registry: str, listing: str) -> None:
    assert listing_name(registry) == listing


@settings(max_examples=200)
@given(st.lists(PATHS, unique=True, min_size=1, max_size=12))
def test_registry_key_is_the_order_of_a_registry_eceb_writes(paths: list[str]) -> None:
    artifacts = [
        Artifact(artifact_id=p, path=p, kind="code", classification="internal", source_digest=DIGEST, size_bytes=1)
        for p in paths
    ]
    built = [a.path for a in build_registry(artifacts).artifacts]
    assert built == sorted(paths, key=registry_key)
    entries = [ListedEntry(path=p, size_bytes=1) for p in reversed(paths)]
    registry_order(entries)
    assert [e.path for e in entries] == built


def test_the_registry_order_is_not_the_order_of_s3_listings() -> None:
    """S3 lists keys in UTF-8 binary order: "a" before "a b"; a registry
    holds "a b" first (a space sorts before the closing quote)."""
    assert sorted(["a", "a b"]) == ["a", "a b"]
    assert sorted(["a", "a b"], key=registry_key) == ["a b", "a"]


def test_listing_lines_round_trip_and_leave_out_what_an_entry_lacks() -> None:
    s3 = ListedEntry(
        path="dir with space/naïve.md",
        size_bytes=12,
        etag='"9b2cf535f27731c974343645a3985328-3"',
        last_modified=datetime(2026, 6, 30, 17, 12, 9, tzinfo=UTC),
    )
    local = ListedEntry(path="a.md", size_bytes=3, mtime_ns=2**61 + 1, ctime_ns=2**61 + 2, inode=2**63 + 5)
    header = ListingHeader(
        schema=LISTING_SCHEMA, registry_digest=DIGEST, source="s3://b/p", entry_count=2, listed_at=LISTED_AT
    )
    data = b"".join(listing_lines(header, [listing_entry(local), listing_entry(s3)]))
    first, second, third = data.splitlines()
    assert json.loads(first) == {
        "entry_count": 2,
        "listed_at": "2026-07-01T02:00:00.123456Z",
        "registry_digest": DIGEST,
        "schema": LISTING_SCHEMA,
        "source": "s3://b/p",
    }
    assert json.loads(second) == {
        "ctime_ns": str(2**61 + 2),
        "inode": str(2**63 + 5),
        "mtime_ns": str(2**61 + 1),
        "path": "a.md",
        "size_bytes": 3,
    }
    assert json.loads(third) == {
        "etag": '"9b2cf535f27731c974343645a3985328-3"',
        "last_modified": "2026-06-30T17:12:09Z",
        "path": "dir with space/naïve.md",
        "size_bytes": 12,
    }
    assert decode_listing_header(first, "l") == header
    assert msgspec.json.decode(third, type=ListingEntry) == listing_entry(s3)
    assert names_listing(first) and not names_listing(b'{"schema":"symgliph.eceb/registry-v0.1"}')


def test_an_entry_of_unknown_size_is_written_with_no_version() -> None:
    registry = build_registry(
        [Artifact(artifact_id="a", path="a", kind="code", classification="public", source_digest=DIGEST, size_bytes=7)]
    )
    (entry,) = snapshot_entries([ListedEntry(path="a", size_bytes=-1, mtime_ns=1)], registry.artifacts)
    assert entry == ListingEntry(path="a", size_bytes=7)
    assert not entry.identifies_version
    with pytest.raises(ValueError, match="registry's order"):
        list(snapshot_entries([ListedEntry(path="b", size_bytes=1)], registry.artifacts))


def test_settled_before_is_exact_integer_nanoseconds() -> None:
    header = ListingHeader(
        schema=LISTING_SCHEMA, registry_digest=DIGEST, source="c", entry_count=0, listed_at=LISTED_AT
    )
    assert settled_before(header) == LISTED_AT_NS - SETTLE_NS
    assert settled_before(header, 0) == LISTED_AT_NS


# --- a simulated store ----------------------------------------------------------


class Store:
    """Objects with contents and a version counter each: what a listing
    shows of an object changes whenever the object is written (S3: a new
    ETag or LastModified; a local file: a new ctime)."""

    def __init__(self, local: bool) -> None:
        self.local = local
        self.objects: dict[str, tuple[bytes, int]] = {}
        self.clock = 0

    def put(self, path: str, content: bytes) -> None:
        self.clock += 1
        self.objects[path] = (content, self.clock)

    def listed(self, *, racy: frozenset[str] = frozenset(), at: int = 0) -> list[ListedEntry]:
        """Every object's entry; ``racy`` paths show a ctime of ``at`` (a
        change within the settling margin of the listing at ``at``)."""
        entries = []
        for path, (content, version) in self.objects.items():
            if self.local:
                ctime = at if path in racy else 1_000_000_000 * version
                entries.append(
                    ListedEntry(
                        path=path, size_bytes=len(content), mtime_ns=ctime, ctime_ns=ctime, inode=hash(path) % 9999
                    )
                )
            else:
                etag = f'"{digest(content)[:32]}"'
                when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=version)
                entries.append(ListedEntry(path=path, size_bytes=len(content), etag=etag, last_modified=when))
        registry_order(entries)
        return entries


def full_registry(store: Store, rules: Callable[[str], tuple[str, str]]) -> bytes:
    artifacts = []
    for path, (content, _) in store.objects.items():
        kind, classification = rules(path)
        artifacts.append(
            Artifact(
                artifact_id=path,
                path=path,
                kind=kind,  # type: ignore[arg-type]
                classification=classification,  # type: ignore[arg-type]
                source_digest=digest(content),
                size_bytes=len(content),
            )
        )
    return b"".join(registry_lines(build_registry(artifacts)))


def snapshot(registry: bytes, entries: list[ListedEntry], listed_at: datetime) -> bytes:
    built = build_registry(msgspec.json.Decoder(Artifact).decode_lines(registry.split(b"\n", 1)[1]))
    header = ListingHeader(
        schema=LISTING_SCHEMA,
        registry_digest=digest(registry),
        source="corpus",
        entry_count=len(entries),
        listed_at=listed_at,
    )
    return b"".join(listing_lines(header, snapshot_entries(entries, built.artifacts)))


def incremental_registry(
    store: Store,
    rules: Callable[[str], tuple[str, str]],
    previous: tuple[bytes, bytes],
    listed: list[ListedEntry],
    settled: int,
) -> tuple[bytes, int]:
    """The registry a registration taking digests from ``previous`` writes
    (the others hashed from the store), and how many it reused."""
    registry, listing = previous
    found = list(
        reuse_digests(
            listed,
            previous_artifacts(
                chunked(registry, 97), chunked(listing, 89), registry_name="prev.jsonl", listing_name="prev.listing"
            ),
            settled=settled,
        )
    )
    artifacts = []
    for entry, result in zip(listed, found, strict=True):
        content = store.objects[entry.path][0]
        size, source_digest = result if result is not None else (len(content), digest(content))
        kind, classification = rules(entry.path)
        artifacts.append(
            Artifact(
                artifact_id=entry.path,
                path=entry.path,
                kind=kind,  # type: ignore[arg-type]
                classification=classification,  # type: ignore[arg-type]
                source_digest=source_digest,
                size_bytes=size,
            )
        )
    reused = sum(result is not None for result in found)
    return b"".join(registry_lines(build_registry(artifacts))), reused


def rules_of(seed: int) -> Callable[[str], tuple[str, str]]:
    def rules(path: str) -> tuple[str, str]:
        value = int(blake3.blake3(f"{seed}:{path}".encode()).hexdigest()[:8], 16)
        return KINDS[value % 3], CLASSES[value // 3 % 3]

    return rules


CHANGES = st.sampled_from(["keep", "keep", "keep", "rewrite", "same-size", "same-bytes", "delete", "racy"])


@settings(max_examples=150)
@given(
    local=st.booleans(),
    corpus=st.dictionaries(PATHS, st.binary(max_size=6), min_size=1, max_size=14),
    changes=st.lists(CHANGES, min_size=14, max_size=14),
    added=st.dictionaries(PATHS, st.binary(max_size=6), max_size=4),
    rules_change=st.booleans(),
)
def test_incremental_registration_writes_the_bytes_of_a_full_one(
    local: bool,
    corpus: dict[str, bytes],
    changes: list[str],
    added: dict[str, bytes],
    rules_change: bool,
) -> None:
    """Random corpora, random changes between two nights (contents
    rewritten, with the same size or the same bytes, objects deleted and
    added, a local file changed within the settling margin of the last
    listing with its times kept, the rules changed): the registry taking
    the previous digests is byte for byte the full registration's, and
    exactly the objects listed as they were take their digest."""
    store = Store(local)
    for path, content in corpus.items():
        store.put(path, content)
    yesterday_rules = rules_of(1)
    today_rules = rules_of(2) if rules_change else yesterday_rules
    first_listing_at = LISTED_AT_NS
    old = store.listed(racy=frozenset(), at=first_listing_at)
    registry = full_registry(store, yesterday_rules)
    listing = snapshot(registry, old, LISTED_AT)
    settled = LISTED_AT_NS - SETTLE_NS

    unchanged = set(store.objects)
    racy: set[str] = set()
    for path, change in zip(sorted(corpus), changes, strict=False):
        content = store.objects[path][0]
        if change == "rewrite":
            store.put(path, content + b"!")
        elif change == "same-size":
            store.put(path, bytes(b ^ 1 for b in content))
        elif change == "same-bytes":
            store.put(path, content)
        elif change == "delete":
            del store.objects[path]
        elif change == "racy" and local:
            # Changed just after the last listing read it, in the same
            # tick: same size and times. Only the settling margin saves it.
            store.objects[path] = (bytes(b ^ 2 for b in content), store.objects[path][1])
            racy.add(path)
            continue
        else:
            continue
        unchanged.discard(path)
    for path, content in added.items():
        if path not in corpus:
            store.put(path, content)
    if local:
        # What yesterday's snapshot recorded for the racy files: a ctime within the margin.
        old = [
            msgspec.structs.replace(e, mtime_ns=first_listing_at - 1, ctime_ns=first_listing_at - 1)
            if e.path in racy
            else e
            for e in old
        ]
        listing = snapshot(registry, old, LISTED_AT)
    listed = store.listed(racy=frozenset(racy), at=first_listing_at - 1)

    built, reused = incremental_registry(store, today_rules, (registry, listing), listed, settled)
    assert built == full_registry(store, today_rules)
    assert reused == len(unchanged - racy)


def test_a_racy_entry_is_reused_once_settled() -> None:
    """The margin only delays reuse: an entry whose ctime is well before the
    listing is reused; one within 2 s of it is hashed again."""
    store = Store(local=True)
    store.put("a", b"x")
    store.put("b", b"y")
    entries = store.listed()
    registry = full_registry(store, rules_of(1))
    listing = snapshot(registry, entries, LISTED_AT)
    recent = LISTED_AT_NS - SETTLE_NS // 2
    late = [msgspec.structs.replace(e, ctime_ns=recent, mtime_ns=recent) if e.path == "b" else e for e in entries]
    listing = snapshot(registry, late, LISTED_AT)
    _, reused = incremental_registry(store, rules_of(1), (registry, listing), late, LISTED_AT_NS - SETTLE_NS)
    assert reused == 1


def test_an_s3_entry_without_an_etag_is_never_reused() -> None:
    store = Store(local=False)
    store.put("a", b"x")
    entries = [msgspec.structs.replace(e, etag="") for e in store.listed()]
    registry = full_registry(store, rules_of(1))
    listing = snapshot(registry, entries, LISTED_AT)
    _, reused = incremental_registry(store, rules_of(1), (registry, listing), entries, 0)
    assert reused == 0


def test_a_listing_not_in_registry_order_is_refused() -> None:
    entries = [ListedEntry(path="a", size_bytes=1), ListedEntry(path="a b", size_bytes=1)]
    with pytest.raises(ValueError, match="registry order"):
        list(reuse_digests(entries, iter([]), settled=0))


# --- a snapshot that does not describe its registry ----------------------------------


def two_files() -> tuple[bytes, bytes]:
    store = Store(local=False)
    store.put("a", b"1")
    store.put("b", b"2")
    registry = full_registry(store, rules_of(1))
    return registry, snapshot(registry, store.listed(), LISTED_AT)


def previous_of(registry: bytes, listing: bytes) -> list[PreviousArtifact]:
    return list(previous_artifacts([registry], [listing], registry_name="prev.jsonl", listing_name="prev.listing"))


def test_previous_artifacts_pair_the_registry_with_its_snapshot() -> None:
    registry, listing = two_files()
    found = previous_of(registry, listing)
    assert [(p.entry.path, p.source_digest, p.size_bytes) for p in found] == [
        ("a", digest(b"1"), 1),
        ("b", digest(b"2"), 1),
    ]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda lines: [*lines[:2]], "holds fewer entries than the registry prev.jsonl"),
        (lambda lines: [*lines, lines[2].replace(b'"b"', b'"c"')], "holds more entries"),
        (lambda lines: [lines[0], lines[2], lines[1]], "names another path than artifact 1"),
        (lambda lines: [lines[0], lines[1], b'{"path":"b","size_bytes":-1}'], "size_bytes"),
        (lambda lines: [lines[0], lines[1], b"{not json"], "line 3"),
        (lambda lines: [lines[0], lines[1], lines[2][:-1] + b',"extra":1}'], "extra"),
        (lambda lines: [lines[0].replace(b'"entry_count":2', b'"entry_count":3'), *lines[1:]], "not the 3"),
        (lambda lines: [lines[0].replace(b"listing-v0.1", b"listing-v9"), *lines[1:]], "line 1"),
    ],
)
def test_a_snapshot_that_does_not_describe_its_registry_is_refused_naming_it(
    change: Callable[[list[bytes]], list[bytes]], words: str
) -> None:
    registry, listing = two_files()
    changed = b"\n".join(change(listing.splitlines())) + b"\n"
    with pytest.raises(InputError) as caught:
        previous_of(registry, changed)
    assert caught.value.problems[0].file == "prev.listing"
    assert words in str(caught.value)


def test_a_snapshot_out_of_registry_order_is_refused() -> None:
    """Paths that are the registry's, one for one, but a registry not in
    corpus-root order: the merge would miss objects, so it is refused."""
    swapped = b"".join(
        [b'{"artifact_count":2,"corpus_root":"' + b"0" * 64 + b'","schema":"symgliph.eceb/registry-v0.1"}\n']
        + [
            json.dumps(
                {
                    "artifact_id": p,
                    "classification": "public",
                    "kind": "code",
                    "path": p,
                    "size_bytes": 1,
                    "source_digest": DIGEST,
                }
            ).encode()
            + b"\n"
            for p in ("b", "a")
        ]
    )
    header = ListingHeader(
        schema=LISTING_SCHEMA, registry_digest=DIGEST, source="c", entry_count=2, listed_at=LISTED_AT
    )
    listing = b"".join(
        listing_lines(header, [ListingEntry(path="b", size_bytes=1), ListingEntry(path="a", size_bytes=1)])
    )
    with pytest.raises(InputError, match="order"):
        previous_of(swapped, listing)


def test_an_empty_snapshot_is_refused() -> None:
    registry, _ = two_files()
    with pytest.raises(InputError, match="is empty"):
        previous_of(registry, b"\n\n")
