"""Putting byte records in order, for the checks of a registry whose lines
are not in corpus-root order (ECEB-0.1 §5: duplicate detection, and the
corpus root over records sorted by their canonical bytes).

:class:`Sorter` is what :func:`~eceb_worker.corpus.registry.scan_registry`
needs; :class:`MemorySorter` holds everything in memory, and
:class:`eceb_worker.io.spill.ExternalSorter` spills sorted runs to
temporary files so that a registry of any size sorts in bounded memory.
:func:`add_sort_keys` makes the keys of a registry's artifact lines and
:func:`duplicate_keys` finds the duplicates among them, sorted.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Final, Protocol

import msgspec

from eceb_worker.core.canonical import canonical_lines
from eceb_worker.corpus.artifacts import Artifact
from eceb_worker.corpus.corpus_root import canonical_records

__all__ = ["MemorySorter", "Sorter", "add_sort_keys", "duplicate_keys", "encoded_values"]


class Sorter(Protocol):
    """Collects byte records, then gives them back in ascending byte order
    (Python's ``bytes`` ordering), duplicates kept. Closing it drops what it
    holds (and removes whatever it stored)."""

    def extend(self, records: Iterable[bytes]) -> None:
        """Add records (read once)."""
        ...

    def sorted(self) -> Iterator[bytes]:
        """Every record added, in ascending byte order; the sorter is closed
        when the output ends or is closed."""
        ...

    def close(self) -> None:
        """Drop every record held."""
        ...


class MemorySorter:
    """A :class:`Sorter` holding every record in memory."""

    def __init__(self) -> None:
        self._records: list[bytes] = []

    def extend(self, records: Iterable[bytes]) -> None:
        """Add records."""
        self._records.extend(records)

    def sorted(self) -> Iterator[bytes]:
        """Every record, in ascending byte order."""
        records, self._records = self._records, []
        records.sort()
        return iter(records)

    def close(self) -> None:
        """Drop every record held."""
        self._records = []


def encoded_values(values: list[str]) -> list[bytes]:
    """Each value as a JSON string (quotes included): unique, and ordered so
    that distinct values never compare equal on a prefix (no JSON string is a
    proper prefix of another)."""
    return canonical_lines(values).split(b"\n")[:-1] if values else []


def add_sort_keys(
    artifacts: Sequence[Artifact],
    numbers: Sequence[int],
    ids: Sorter | None,
    paths: Sorter | None,
    records: Sorter | None,
) -> None:
    """Add the sort keys of ``artifacts`` (on lines ``numbers``, one each) to
    the sorters given: ``JSON(artifact_id) || line number`` (8 bytes,
    big-endian) to ``ids``, the same of the path to ``paths``, the canonical
    record to ``records``. Sorted, keys are grouped by value (no JSON string
    is a proper prefix of another), then ordered by line. Made
    :data:`_KEY_BATCH` artifacts at a time, so that the keys being made
    stay small beside the sorters' contents."""
    for start in range(0, len(artifacts), _KEY_BATCH):
        batch = artifacts[start : start + _KEY_BATCH]
        suffixes = [number.to_bytes(8, "big") for number in numbers[start : start + _KEY_BATCH]]
        if ids is not None:
            ids.extend(map(operator.add, encoded_values([a.artifact_id for a in batch]), suffixes))
        if paths is not None:
            paths.extend(map(operator.add, encoded_values([a.path for a in batch]), suffixes))
        if records is not None:
            records.extend(canonical_records(batch))


_KEY_BATCH: Final = 65536
"""Artifacts whose sort keys :func:`add_sort_keys` makes at once."""

_DUPLICATE_BATCH: Final = 65536
"""Keys :func:`duplicate_keys` compares at once."""


def duplicate_keys(keys: Iterator[bytes]) -> Iterator[tuple[int, str, int]]:
    """``(line, value, first line)`` of every key of :func:`add_sort_keys`
    (``keys``: sorted) whose value an earlier line already holds, in key order."""
    previous = b""
    first_line = 0
    while batch := list(islice(keys, _DUPLICATE_BATCH)):
        values = [key[:-8] for key in batch]
        if values[0] != previous and not any(map(operator.eq, values, islice(values, 1, None))):
            # No duplicate in this batch (the usual case): only its last key matters.
            previous, first_line = values[-1], int.from_bytes(batch[-1][-8:], "big")
            continue
        for key, value in zip(batch, values, strict=True):
            number = int.from_bytes(key[-8:], "big")
            if value != previous:
                previous, first_line = value, number
                continue
            yield number, msgspec.json.decode(value), first_line
