"""Sorting more byte records than fit in memory (external merge sort),
with temporary files: the :class:`~eceb_worker.corpus.sorting.Sorter` a
registry of millions of artifacts needs when its lines are not in
corpus-root order (ECEB-0.1 §5: duplicate detection and the corpus root over
records sorted by their canonical bytes, see :mod:`eceb_worker.corpus.registry`).

Records are ``bytes`` compared as unsigned bytes (Python's ``bytes``
ordering). Up to one run of records is held in memory; each full run is
sorted and written to a temporary file under a given directory, and the runs
are then merged with :func:`heapq.merge`. A run file is a sequence of pages
of up to 1,024 records: the page's record count (4 bytes, big-endian), each
record's length (4 bytes each, native order), then the records end to end.
Every temporary file is removed when the sorted output has been read to its
end, when its iterator is closed or dropped, and on any error.
"""

from __future__ import annotations

import contextlib
import heapq
import operator
import os
import tempfile
from array import array
from collections.abc import Generator, Iterable
from itertools import accumulate, islice, repeat
from pathlib import Path
from types import TracebackType
from typing import Final

__all__ = ["ExternalSorter", "sorted_records"]

DEFAULT_RUN_RECORDS: Final = 1_000_000
"""Records held in memory before a run is written out (at most)."""
DEFAULT_RUN_BYTES: Final = 64 * 1024 * 1024
"""Record bytes held in memory before a run is written out (about; Python
adds about 40 bytes of overhead per record)."""
MAX_RECORD_BYTES: Final = 2**32 - 1
"""The largest record a run file can hold (its length is stored in 4 bytes)."""
_MAX_OPEN_RUNS: Final = 64
"""Runs merged at once; more are first merged into longer runs."""
_LENGTH: Final = next(code for code in ("I", "L") if array(code).itemsize == 4)
"""The array type code of 4-byte unsigned lengths."""
_PAGE_RECORDS: Final = 1024
_BATCH: Final = 4096
_BUFFER_BYTES: Final = 256 * 1024


class ExternalSorter:
    """Collects byte records (:meth:`extend`), then gives them back in
    ascending byte order (:meth:`sorted`), holding at most one run in memory.

    At most ``run_records`` records, or about ``run_bytes`` bytes of them,
    are held at once; each full run is sorted and written to a temporary file
    under ``spill_dir`` (an existing directory; by default the system's
    temporary directory, ``TMPDIR``). Use as a context manager, or
    call :meth:`close`: temporary files are removed on leaving it, when the
    output of :meth:`sorted` is exhausted, closed or dropped, and on error.

    Raises ValueError for a non-positive ``run_records`` or ``run_bytes``, or
    a record longer than :data:`MAX_RECORD_BYTES` once it must be written to
    a run; ``OSError`` when a run cannot be written or read.
    """

    def __init__(
        self,
        spill_dir: str | os.PathLike[str] | None = None,
        *,
        run_records: int = DEFAULT_RUN_RECORDS,
        run_bytes: int = DEFAULT_RUN_BYTES,
    ) -> None:
        if run_records <= 0:
            raise ValueError(f"run_records must be positive, got {run_records}")
        if run_bytes <= 0:
            raise ValueError(f"run_bytes must be positive, got {run_bytes}")
        self._spill_dir = Path(spill_dir if spill_dir is not None else tempfile.gettempdir())
        self._run_records = run_records
        self._run_bytes = run_bytes
        self._batch = min(_BATCH, run_records)
        self._buffer: list[bytes] = []
        self._held = 0
        self._runs: list[Path] = []

    def __enter__(self) -> ExternalSorter:
        return self

    def __exit__(self, *_: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.close()

    def extend(self, records: Iterable[bytes]) -> None:
        """Add records (read once, in batches)."""
        remaining = iter(records)
        while batch := list(islice(remaining, self._batch)):
            self._buffer += batch
            self._held += sum(map(len, batch))
            if len(self._buffer) >= self._run_records or self._held >= self._run_bytes:
                self._buffer.sort()
                self._runs.append(_write_run(self._buffer, self._spill_dir))
                self._buffer = []
                self._held = 0

    def sorted(self) -> Generator[bytes, None, None]:
        """Every record added, in ascending byte order (duplicates kept); the
        sorter is closed when the output ends or is closed."""
        try:
            self._buffer.sort()
            if not self._runs:
                yield from self._buffer
                return
            while len(self._runs) > _MAX_OPEN_RUNS:
                # Merge the oldest runs into one longer run until few enough are left.
                group, self._runs = self._runs[:_MAX_OPEN_RUNS], self._runs[_MAX_OPEN_RUNS:]
                try:
                    with contextlib.ExitStack() as stack:
                        readers = [stack.enter_context(contextlib.closing(_read_run(path))) for path in group]
                        self._runs.append(_write_run(heapq.merge(*readers), self._spill_dir))
                finally:
                    for path in group:
                        path.unlink(missing_ok=True)
            with contextlib.ExitStack() as stack:
                readers = [stack.enter_context(contextlib.closing(_read_run(path))) for path in self._runs]
                yield from heapq.merge(*readers, self._buffer)
        finally:
            self.close()

    def close(self) -> None:
        """Remove the temporary files and drop the records held."""
        self._buffer = []
        self._held = 0
        for path in self._runs:
            path.unlink(missing_ok=True)
        self._runs = []


def sorted_records(
    records: Iterable[bytes],
    *,
    spill_dir: str | os.PathLike[str],
    run_records: int = DEFAULT_RUN_RECORDS,
    run_bytes: int = DEFAULT_RUN_BYTES,
) -> Generator[bytes, None, None]:
    """Every record of ``records``, in ascending byte order (duplicates kept).

    ``records`` is read lazily, once, when the first sorted record is asked
    for. At most ``run_records`` records, or about ``run_bytes`` bytes of them,
    are held in memory at once: when the input is larger, sorted runs are
    written to temporary files under ``spill_dir`` (an existing directory)
    and merged, at most 64 files open at a time (:class:`ExternalSorter`). The
    temporary files are removed when the iterator is exhausted, closed or
    garbage-collected, or when an error is raised (including one raised by
    ``records`` itself).

    Raises ValueError for a non-positive ``run_records`` or ``run_bytes``, or
    a record of more than :data:`MAX_RECORD_BYTES` bytes once it must be
    written to a run; ``OSError`` when a run cannot be written or read.
    """
    sorter = ExternalSorter(spill_dir, run_records=run_records, run_bytes=run_bytes)
    return _sorted(sorter, records)


def _sorted(sorter: ExternalSorter, records: Iterable[bytes]) -> Generator[bytes, None, None]:
    with sorter:
        sorter.extend(records)
        yield from sorter.sorted()


def _write_run(records: Iterable[bytes], spill_dir: Path) -> Path:
    """Write records (already in order) to a new temporary file; its path."""
    descriptor, name = tempfile.mkstemp(prefix="eceb-sort-", suffix=".run", dir=spill_dir)
    path = Path(name)
    try:
        with os.fdopen(descriptor, "wb", buffering=_BUFFER_BYTES) as out:
            remaining = iter(records)
            while page := list(islice(remaining, _PAGE_RECORDS)):
                try:
                    lengths = array(_LENGTH, map(len, page))
                except OverflowError:
                    raise ValueError(f"a record is too large to sort (at most {MAX_RECORD_BYTES} bytes)") from None
                out.write(len(page).to_bytes(4, "big"))
                out.write(lengths.tobytes())
                out.write(b"".join(page))
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


def _read_run(path: Path) -> Generator[bytes, None, None]:
    """The records of a run file, in order, a page at a time."""
    with path.open("rb", buffering=_BUFFER_BYTES) as stream:
        while head := stream.read(4):
            count = int.from_bytes(head, "big")
            sizes = stream.read(4 * count)
            if len(head) != 4 or len(sizes) != 4 * count:
                raise OSError(f"{path}: run file truncated")
            lengths = array(_LENGTH)
            lengths.frombytes(sizes)
            blob = stream.read(sum(lengths))
            if len(blob) != sum(lengths):
                raise OSError(f"{path}: run file truncated")
            offsets = list(accumulate(lengths, initial=0))
            yield from map(operator.getitem, repeat(blob), map(slice, offsets, islice(offsets, 1, None)))
