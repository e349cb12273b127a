"""Listing parts of an S3 corpus prefix, for a registration spread over
workers (``eceb-dist register``): a delimiter listing of one level (its key
prefixes and page ends, what the listing plan cuts at), the objects of one
key range; and the job's partials: writing one, deleting them all.

Keys come URL-encoded on the wire: botocore asks ListObjectsV2 for
``EncodingType=url`` and decodes every key, prefix and ``StartAfter`` of
the answer itself (so a key with a space, ``+``, ``%`` or a non-ASCII
character comes back as it was written); nothing here asks for an
encoding, which would turn that decoding off. Requests, retries and errors
are those of :mod:`eceb_worker.io.s3`.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import msgspec

from eceb_worker.core.urls import split_object_url
from eceb_worker.corpus.registration import LEVEL_ENTRIES, MAX_LISTING_SHARDS, ListingPlanner, ListingShard, thinned
from eceb_worker.corpus.storage import ListedEntry
from eceb_worker.io.s3 import REQUEST_ERRORS, Role, describe_endpoint, map_reads, s3_error, upload_file

__all__ = ["PAGE_KEYS", "Level", "delete_under", "list_level", "list_range", "plan_listing", "write_partial"]

PAGE_KEYS: Final = 1000
"""Keys a ListObjectsV2 page holds (S3's most)."""
_LISTING_THREADS: Final = 4
"""Delimiter listings of one level sent at once (a job's object store keeps four connections)."""
_DELETE_THREADS: Final = 4
"""Partials deleted at once."""


class Level(msgspec.Struct, frozen=True, kw_only=True):
    """One level of a delimiter listing (``Delimiter='/'``) under a prefix.

    Fields:
        prefixes: the key prefixes found under it (each ending with ``/``),
            thinned evenly to at most four times
            :data:`~eceb_worker.corpus.registration.MAX_LISTING_SHARDS`.
        page_ends: the last entry (key or key prefix) of each page that
            was followed by another.
        entries: keys and key prefixes read.
    """

    prefixes: tuple[str, ...]
    page_ends: tuple[str, ...]
    entries: int


def _utc(moment: object) -> datetime | None:
    """A listed LastModified in UTC (None when the store gave none, or a time without its zone)."""
    if not isinstance(moment, datetime) or moment.tzinfo is None:
        return None
    return moment.astimezone(UTC)


def list_level(
    client: Any,
    bucket: str,
    prefix: str,
    *,
    where: str,
    page_keys: int = PAGE_KEYS,
    max_entries: int = LEVEL_ENTRIES,
) -> Level:
    """The delimiter listing of ``prefix`` (a key prefix ending with ``/``,
    or ``""`` for the whole bucket), at most ``max_entries`` entries read
    (pages of ``page_keys``). ``where`` names the corpus in errors. Raises
    ``StorageError`` (:class:`~eceb_worker.errors.NoSuchBucketError` for a
    missing bucket) when it cannot be listed."""
    prefixes: list[str] = []
    page_ends: list[str] = []
    entries = 0
    paginator = client.get_paginator("list_objects_v2")
    pages = paginator.paginate(Bucket=bucket, Prefix=prefix, Delimiter="/", PaginationConfig={"PageSize": page_keys})
    try:
        for page in pages:
            found = [str(item["Prefix"]) for item in page.get("CommonPrefixes", [])]
            keys = [str(item["Key"]) for item in page.get("Contents", [])]
            prefixes += found
            entries += len(found) + len(keys)
            if page.get("IsTruncated") and (found or keys):
                page_ends.append(max([*found[-1:], *keys[-1:]]))
            if entries >= max_entries:
                break
    except REQUEST_ERRORS as exc:
        raise s3_error(exc, Role.LISTING, where, endpoint=describe_endpoint(client)) from None
    return Level(prefixes=tuple(thinned(prefixes, 4 * MAX_LISTING_SHARDS)), page_ends=tuple(page_ends), entries=entries)


def plan_listing(
    client: Any,
    bucket: str,
    prefix: str,
    *,
    where: str,
    planner: ListingPlanner | None = None,
    page_keys: int = PAGE_KEYS,
    max_entries: int = LEVEL_ENTRIES,
) -> list[ListingShard]:
    """The listing shards of the corpus under ``prefix`` (``"dir/"``, or
    ``""`` for the whole bucket): the delimiter listing of the prefix, then
    of the key prefixes found, as ``planner`` (a
    :class:`~eceb_worker.corpus.registration.ListingPlanner`) asks, each
    level's listings a few at a time. Raises ``StorageError`` when the
    corpus cannot be listed."""
    planner = planner or ListingPlanner()
    level = [prefix]
    while level:
        one = functools.partial(
            _level_at, client, bucket, level, where=where, page_keys=page_keys, max_entries=max_entries
        )
        listed = map_reads(one, len(level), _LISTING_THREADS)
        for found in listed:
            planner.take(found.prefixes, found.page_ends)
        level = planner.descend()
    return planner.shards()


def _level_at(
    client: Any, bucket: str, level: Sequence[str], position: int, *, where: str, page_keys: int, max_entries: int
) -> Level:
    """:func:`list_level` of ``level[position]``."""
    return list_level(client, bucket, level[position], where=where, page_keys=page_keys, max_entries=max_entries)


def list_range(
    client: Any,
    bucket: str,
    prefix: str,
    shard: ListingShard,
    *,
    where: str,
    page_keys: int = PAGE_KEYS,
) -> Iterator[ListedEntry]:
    """Every object of ``shard``'s key range under ``prefix`` (``"dir/"``,
    or ``""``), in key order, as a corpus entry: its path relative to the
    prefix, size, ETag and LastModified as listed. Keys ending with ``/``
    (folder markers) are skipped, as ``eceb corpus register`` skips them.
    Raises ``StorageError`` when the range cannot be listed."""
    arguments: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "PaginationConfig": {"PageSize": page_keys}}
    if shard.after:
        arguments["StartAfter"] = shard.after
    pages = client.get_paginator("list_objects_v2").paginate(**arguments)
    try:
        for page in pages:
            for item in page.get("Contents", []):
                key = str(item["Key"])
                if shard.until and key > shard.until:
                    return
                if key.endswith("/"):
                    continue
                yield ListedEntry(
                    path=key[len(prefix) :],
                    size_bytes=int(item["Size"]),
                    etag=item.get("ETag"),
                    last_modified=_utc(item.get("LastModified")),
                )
    except REQUEST_ERRORS as exc:
        raise s3_error(exc, Role.LISTING, where, endpoint=describe_endpoint(client)) from None


def write_partial(client: Any, url: str, data: bytes | Path) -> None:
    """Write a partial (``data``, or a local file's bytes, uploaded in parts
    when large) to ``url``, a key no other writer uses (each holding of a
    shard names its own): one upload, no copy (an upload is never seen
    half written). Raises ``StorageError`` (:class:`~eceb_worker.errors.OutputError`
    when the store refuses it)."""
    bucket, key = split_object_url(url)
    try:
        if isinstance(data, Path):
            upload_file(client, str(data), bucket, key)
        else:
            client.put_object(Bucket=bucket, Key=key, Body=data)
    except REQUEST_ERRORS as exc:
        raise s3_error(exc, Role.WRITING, url, endpoint=describe_endpoint(client)) from None


def delete_under(client: Any, bucket: str, prefix: str, *, where: str) -> int:
    """Delete every object whose key starts with ``prefix`` (a job's
    partials: a non-empty prefix ending with ``/``), a page at a time, a
    few objects at once (one request each: a multi-object delete needs a
    checksum some S3-compatible stores refuse). How many were deleted.
    Raises ``StorageError`` when the prefix cannot be listed, ValueError
    for an empty prefix."""
    if not prefix.endswith("/") or prefix == "/":
        raise ValueError(f"not a prefix to delete under: {prefix!r}")
    deleted = 0
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    try:
        for page in pages:
            keys = [str(item["Key"]) for item in page.get("Contents", [])]
            map_reads(functools.partial(_delete_at, client, bucket, keys), len(keys), _DELETE_THREADS)
            deleted += len(keys)
    except REQUEST_ERRORS as exc:
        raise s3_error(exc, Role.WRITING, where, endpoint=describe_endpoint(client)) from None
    return deleted


def _delete_at(client: Any, bucket: str, keys: Sequence[str], position: int) -> None:
    client.delete_object(Bucket=bucket, Key=keys[position])
