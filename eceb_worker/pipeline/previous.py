"""An incremental registration's previous registry (``--previous``):
checked as every command checks a registry, and its listing snapshot found
beside it and bound to it by digest (docs/REGISTRY.md, "Incremental
registration"). Used by ``eceb corpus register`` and by the first step of
``eceb-dist register``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

import blake3

from eceb_worker.corpus.incremental import (
    ListingHeader,
    PreviousArtifact,
    decode_listing_header,
    listing_name,
    names_listing,
    previous_artifacts,
)
from eceb_worker.corpus.registry import scan_registry
from eceb_worker.documents import wrong_kind
from eceb_worker.errors import InputError, Problem
from eceb_worker.io.locations import Location, Locator

__all__ = ["PreviousRegistry", "Warn", "listing_path", "open_previous"]

Warn = Callable[[str], None]
"""Told each warning, one line (names and reasons only, never content)."""

_HEADER_LIMIT: Final = 64 * 1024
"""Bytes of a listing snapshot read at most to find its header line."""


def _ignore(_: str) -> None:
    return None


class PreviousRegistry:
    """A previous registry (checked) and its listing snapshot, when one is
    beside it and bound to it; made by :func:`open_previous`.

    Attributes:
        location: the registry.
        digest: BLAKE3-256 of the registry's bytes.
        listing: the snapshot, or None when there is none to use (every
            object is then hashed).
        header: the snapshot's header (None with ``listing``).
    """

    def __init__(self, location: Location, digest: str, listing: Location | None, header: ListingHeader | None) -> None:
        self.location = location
        self.digest = digest
        self.listing = listing
        self.header = header
        self.read_digest = ""
        """BLAKE3-256 of the registry's bytes as :meth:`artifacts` last read them to their end."""

    def artifacts(self) -> Iterator[PreviousArtifact]:
        """The registry's artifacts with their snapshot entries, read as
        streams (:func:`~eceb_worker.corpus.incremental.previous_artifacts`);
        :attr:`read_digest` is set once the registry has been read to its end.
        Raises ValueError without a snapshot to use."""
        if self.listing is None:
            raise ValueError("no listing snapshot to use")
        listing = self.listing
        return previous_artifacts(
            self._digested(),
            listing.chunks(),
            registry_name=self.location.name,
            listing_name=listing.name,
        )

    def _digested(self) -> Iterator[bytes]:
        hasher = blake3.blake3()
        for chunk in self.location.chunks():
            hasher.update(chunk)
            yield chunk
        self.read_digest = hasher.hexdigest()


def _base_name(name: str) -> str:
    return name.rsplit("/", 1)[-1] if name.startswith("s3://") else os.path.basename(name)


def listing_path(registry: Path) -> Path:
    """Where the listing snapshot of registry file ``registry`` is: beside it,
    ``REGISTRY_STEM.listing.jsonl``."""
    return registry.with_name(listing_name(registry.name))


def open_previous(where: str, locator: Locator | None = None, *, on_warning: Warn = _ignore) -> PreviousRegistry:
    """Check the previous registry at ``where`` (a path or ``s3://`` URL,
    read through ``locator``) and find its listing snapshot beside it.

    Raises :class:`InputError` with every problem of the registry (or the
    one saying it is a listing snapshot or another kind of file); a snapshot
    that is missing, unreadable, not a snapshot or made for other bytes than
    the registry's is not used: ``on_warning`` is told why, and every object
    will be hashed. ``StorageError`` when the storage cannot be used.
    """
    location = (locator or Locator()).locate(where)
    digest = _checked_digest(location)
    name = listing_name(_base_name(location.name))
    try:
        listing = location.sibling(name)
    except ValueError as exc:
        on_warning(f"{location.name}: its listing snapshot {name} cannot be read ({exc}): every object is hashed")
        return PreviousRegistry(location, digest, None, None)
    try:
        header = _listing_header(listing)
    except InputError as error:
        on_warning(f"{error.problems[0]}; the listing snapshot is not used: every object is hashed")
        return PreviousRegistry(location, digest, None, None)
    if header.registry_digest != digest:
        on_warning(
            f"{listing.name}: made for another registry than {location.name} (its registry_digest is not the "
            "registry's BLAKE3): the listing snapshot is not used, every object is hashed"
        )
        return PreviousRegistry(location, digest, None, None)
    return PreviousRegistry(location, digest, listing, header)


def _checked_digest(location: Location) -> str:
    """Check the registry at ``location`` (as every command does: every
    line, duplicates, header; sorting in temporary files when it is not in
    corpus-root order) and return the BLAKE3 of its bytes. Raises
    :class:`InputError`."""
    from eceb_worker.io.spill import ExternalSorter

    digests: list[str] = []

    def open_chunks() -> Iterator[bytes]:
        hasher = blake3.blake3()
        for chunk in location.chunks():
            hasher.update(chunk)
            yield chunk
        digests.append(hasher.hexdigest())

    def other_kind(head: bytes) -> Problem | None:
        if names_listing(head.split(b"\n", 1)[0]):
            message = "is a listing snapshot, not a registry: name the registry it is beside"
            return Problem(file=location.name, message=message)
        return wrong_kind(location.name, head, "registry")

    scan_registry(
        open_chunks,
        location.name,
        keep=frozenset(),
        new_sorter=ExternalSorter,
        digest_ranges=False,
        other_kind=other_kind,
    )
    return digests[0]


def _listing_header(listing: Location) -> ListingHeader:
    """The header of the listing snapshot at ``listing`` (its first line
    that is not blank). Raises :class:`InputError` naming it."""
    chunks = listing.chunks()
    data = b""
    try:
        for chunk in chunks:
            data += chunk
            if b"\n" in data.lstrip() or len(data) > _HEADER_LIMIT:
                break
    finally:
        close = getattr(chunks, "close", None)  # a generator: its file or stream closed now
        if close is not None:
            close()
    text = data.lstrip()
    number = data[: len(data) - len(text)].count(b"\n") + 1
    if not text:
        raise InputError([Problem(file=listing.name, message="is empty")])
    return decode_listing_header(text.split(b"\n", 1)[0], listing.name, number)
