"""Putting byte records in order, for the checks of a registry whose lines
are not in corpus-root order (ECEB-0.1 §5: duplicate detection, and the
corpus root over records sorted by their canonical bytes).

:class:`Sorter` is what :func:`~eceb_worker.corpus.registry.scan_registry`
needs; :class:`MemorySorter` holds everything in memory, and
:class:`eceb_worker.io.spill.ExternalSorter` spills sorted runs to
temporary files so that a registry of any size sorts in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

__all__ = ["MemorySorter", "Sorter"]


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
