"""SQLite files that decide paid executions: the paired benchmark's ledger
(:mod:`eceb_worker.io.paired.ledger`) and ``eceb run``'s journal
(:mod:`eceb_worker.io.run_journal`). What they share is here once: the
connection, the ``BEGIN IMMEDIATE`` transaction, and the one mapping of
SQLite's errors.

Every SQLite error is mapped by :func:`mapped`: a file locked by another
connection beyond :data:`BUSY_TIMEOUT_S`, read-only or not writable is
:class:`~eceb_worker.errors.OutputError` (exit 6); a file that is not one of
eceb's, or a damaged one, is :class:`~eceb_worker.errors.InputError` (exit
3); both name the file and what it is (``noun``: "execution ledger", "run journal").
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from eceb_worker.errors import EcebError, InputError, OutputError, Problem

__all__ = ["BUSY_TIMEOUT_S", "connect", "mapped", "sqlite_errors", "transaction"]

BUSY_TIMEOUT_S: Final = 30.0
"""How long a connection waits for another one's transaction before giving up
(seconds; beyond it the file is busy: :class:`OutputError`)."""

_UNWRITABLE: Final = {
    3: "permission denied",  # SQLITE_PERM
    5: "busy: another connection holds it beyond the busy timeout",  # SQLITE_BUSY
    6: "locked: another connection holds it beyond the busy timeout",  # SQLITE_LOCKED
    7: "out of memory",  # SQLITE_NOMEM
    8: "read-only",  # SQLITE_READONLY
    9: "interrupted",  # SQLITE_INTERRUPT
    10: "an I/O error",  # SQLITE_IOERR
    13: "the disk is full",  # SQLITE_FULL
    14: "it or its journal cannot be opened",  # SQLITE_CANTOPEN
    15: "a locking protocol error",  # SQLITE_PROTOCOL
}
"""SQLite's primary result codes that say the file cannot be used now, not that it is wrong."""


def mapped(path: Path, exc: sqlite3.Error, noun: str) -> EcebError:
    """The documented error for the SQLite error ``exc`` on the file at
    ``path`` (see the module): :class:`OutputError` when the file cannot be
    written or read now (busy, locked, read-only, I/O), else
    :class:`InputError` (not such a file, or a damaged one)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in _UNWRITABLE:
        return OutputError(
            f"{path}: the {noun} cannot be used: {_UNWRITABLE[code & 0xFF]} ({exc}); nothing was recorded"
        )
    article = "an" if noun[:1] in "aeiou" else "a"
    return InputError([Problem(file=str(path), message=f"not {article} {noun}, or a damaged one ({exc})")])


@contextmanager
def sqlite_errors(path: Path, noun: str) -> Iterator[None]:
    """Raise every SQLite error inside as :func:`mapped` maps it."""
    try:
        yield
    except sqlite3.Error as exc:
        raise mapped(path, exc, noun) from None


def connect(path: Path, noun: str, *, threads: bool = False) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly),
    waiting up to :data:`BUSY_TIMEOUT_S` for another connection's lock;
    ``threads``: usable from any thread (the caller serializes its use)."""
    with sqlite_errors(path, noun):
        return sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=not threads)


@contextmanager
def transaction(db: sqlite3.Connection, path: Path, noun: str) -> Iterator[sqlite3.Connection]:
    """One ``BEGIN IMMEDIATE`` transaction, committed when the block ends,
    rolled back when it raises; SQLite errors mapped (:func:`mapped`)."""
    with sqlite_errors(path, noun):
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):  # what failed is what is reported
                    db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
