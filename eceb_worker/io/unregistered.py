"""Finding the files of a corpus (a directory or an S3 prefix) that its
registry file does not list (:mod:`eceb_worker.corpus.unregistered`), in
memory that does not grow with the corpus: both lists of paths are sorted
in temporary files when they are long, then merged."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import msgspec

from eceb_worker.corpus.storage import StorageSpec
from eceb_worker.corpus.unregistered import (
    UNREGISTERED_LISTED,
    UnregisteredFiles,
    path_key,
    registry_paths,
    unregistered_files,
)
from eceb_worker.corpus.verification import VerificationReport
from eceb_worker.errors import InputError, Problem
from eceb_worker.io.spill import ExternalSorter
from eceb_worker.io.storage import shared_storage

__all__ = ["find_unregistered", "with_unregistered"]

READ_BYTES: Final = 8 * 1024 * 1024
"""The registry is read this many bytes at a time."""

RUN_RECORDS: Final = 500_000
"""Paths each of the two sorters holds in memory before it writes a sorted run."""


def _chunks(path: str) -> Iterator[bytes]:
    with open(path, "rb") as file:
        while chunk := file.read(READ_BYTES):
            yield chunk


def find_unregistered(
    registry: str,
    corpus: StorageSpec,
    *,
    fail: bool,
    limit: int = UNREGISTERED_LISTED,
    on_listed: Callable[[int], object] | None = None,
    skip: Callable[[str], bool] | None = None,
    run_records: int = RUN_RECORDS,
    spill_dir: str | None = None,
) -> UnregisteredFiles:
    """The files or objects of ``corpus`` that the registry file ``registry``
    (a local path, already checked) does not list (ECEB-0.1 §5), the first
    ``limit`` of them named; ``fail`` is recorded as their verdict.
    ``on_listed(n)`` is told of every ``n`` entries listed (progress).
    Each side holds ``run_records`` paths at most before it writes a sorted
    run under ``spill_dir`` (by default the system's temporary directory).

    Every entry the storage lists counts, registrable or not (a symbolic
    link to a directory, a FIFO, a name that is not portable), except the
    paths ``skip`` is true of (those a rules file excludes), which are
    counted (:attr:`UnregisteredFiles.excluded`). Raises
    ``StorageError`` when the corpus cannot be listed, :class:`InputError`
    when the registry cannot be read again or changed since it was checked.
    """
    storage = shared_storage(corpus)
    excluded = 0

    def listed() -> Iterator[bytes]:
        nonlocal excluded
        count = 0
        for entry in storage.list_entries():
            count += 1
            if on_listed is not None and count % 1000 == 0:
                on_listed(1000)
            if skip is None or not skip(entry.path):
                yield path_key(entry.path)
            else:
                excluded += 1
        if on_listed is not None and count % 1000:
            on_listed(count % 1000)

    with (
        ExternalSorter(spill_dir, run_records=run_records) as listing,
        ExternalSorter(spill_dir, run_records=run_records) as registered,
    ):
        listing.extend(listed())
        try:
            registered.extend(map(path_key, registry_paths(_chunks(registry), registry)))
        except (OSError, ValueError) as exc:
            why = str(exc) if isinstance(exc, ValueError) else f"cannot be read again: {exc.strerror or exc}"
            raise InputError([Problem(file=registry, message=why.removeprefix(f"{registry}: "))]) from None
        found = unregistered_files(listing.sorted(), registered.sorted(), fail=fail, limit=limit)
        return msgspec.structs.replace(found, excluded=excluded)


def with_unregistered(report: VerificationReport, unregistered: UnregisteredFiles) -> VerificationReport:
    """``report`` with the unregistered files found."""
    return msgspec.structs.replace(report, unregistered=unregistered)
