"""An experiment directory of the paired benchmark and its records, read
and written in one place (layout: :mod:`eceb_worker.families.paired.records`).

:func:`read_record` decodes a record file with every problem reported
(file, record, field); :func:`write_record` writes a record as canonical
JSON by atomic rename, refusing to replace one unless asked;
:func:`file_digest` binds a file by BLAKE3 and size, and
:func:`check_bound_files` reads the files a record binds and checks them
(:func:`~eceb_worker.families.paired.bound_files.bound_file_problems`).
Every record's digest is the BLAKE3 of its canonical bytes
(:func:`record_digest`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import msgspec

from eceb_worker.core.canonical import canonical_json
from eceb_worker.core.decoding import decode_document
from eceb_worker.core.digests import digest_bytes
from eceb_worker.errors import InputError, OutputError, Problem
from eceb_worker.families.paired.bound_files import BoundFile, Seen, Wording, bound_file_problems, seen_bytes
from eceb_worker.families.paired.records import FileDigest
from eceb_worker.io.files import atomic_write, read_input

__all__ = ["Experiment", "check_bound_files", "decode_record", "file_digest", "read_record", "utc_now", "write_record"]

T = TypeVar("T", bound=msgspec.Struct)


class Experiment:
    """The paths of an experiment directory ``root`` (absolute, physical)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.freeze = self.root / "freeze.json"
        self.authorization = self.root / "authorization.json"
        self.ledger = self.root / "ledger.sqlite"
        self.continuation = self.root / "continuation.json"

    def pair_directories(self) -> list[Path]:
        """Every ``task-pair-*`` directory, sorted by name (position first)."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.name.startswith("task-pair-") and p.is_dir())


def record_digest(record: msgspec.Struct) -> str:
    """BLAKE3 (64 hex) of ``record``'s canonical JSON bytes."""
    return digest_bytes(canonical_json(record))


def decode_record(data: bytes, struct: type[T], file: str) -> T:
    """``data`` (the bytes of ``file``) decoded as ``struct``. Raises
    :class:`InputError` naming the file (invalid: every problem), or when
    the bytes are not the record's canonical JSON (a record changed by hand
    no longer matches what binds it)."""
    record = decode_document(data, struct, file=file)
    if canonical_json(record) != data:
        raise InputError([Problem(file=file, message="not the canonical JSON eceb wrote: the record was changed")])
    return record


def read_record(path: Path, struct: type[T]) -> tuple[T, str]:
    """The record at ``path`` decoded as ``struct`` (:func:`decode_record`),
    and the BLAKE3 of its bytes. Raises :class:`InputError` naming the file
    (missing, unreadable, invalid, not canonical)."""
    data = read_input(path)
    return decode_record(data, struct, str(path)), digest_bytes(data)


def write_record(path: Path, record: msgspec.Struct, *, replace: bool = False) -> str:
    """Write ``record`` to ``path`` as canonical JSON (no trailing newline)
    by atomic rename; returns its digest. Raises :class:`OutputError` when
    ``path`` exists and ``replace`` is false, or it cannot be written."""
    if not replace and os.path.lexists(path):
        raise OutputError(f"{path}: exists; a record is never overwritten")
    data = canonical_json(record)
    atomic_write(path, [data])
    return digest_bytes(data)


def file_digest(path: Path, name: str) -> FileDigest:
    """``path``'s content as a :class:`FileDigest` recorded under ``name``."""
    data = read_input(path)
    return FileDigest(path=name, blake3=digest_bytes(data), size=len(data))


def check_bound_files(bound: Sequence[BoundFile], wording: Wording) -> tuple[dict[str, bytes], list[Problem]]:
    """Read every file of ``bound`` (each at its ``location``, a path, once)
    and check it against what its record binds
    (:func:`~eceb_worker.families.paired.bound_files.bound_file_problems`,
    worded by ``wording``). Returns the bytes read by location (a changed
    file's too) and the problems, in ``bound``'s order. Raises nothing for a
    file that cannot be read: it is a problem."""
    data: dict[str, bytes] = {}
    seen: dict[str, Seen] = {}
    why: dict[str, list[Problem]] = {}
    for entry in bound:
        if entry.location in seen or entry.location in why:
            continue
        try:
            data[entry.location] = read_input(Path(entry.location))
        except InputError as exc:
            why[entry.location] = exc.problems
            continue
        seen[entry.location] = seen_bytes(data[entry.location])
    return data, bound_file_problems(bound, seen, wording, why=why)


def utc_now() -> str:
    """The current UTC time as a record's timestamp (``2026-12-01T15:04:05.123456Z``)."""
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
