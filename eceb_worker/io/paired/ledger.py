"""The execution ledger of the paired task-context benchmark: a SQLite file
that decides, in one transaction, whether a paid execution may start
(task-context-benchmark-reference.md, "Fixed paid comparison schedule" and
"Paid experiment preflight conditions").

An execution is one arm of one pair of the schedule
(:mod:`eceb_worker.families.paired.schedule`), run from one task-pair
directory. :meth:`Ledger.start` records it, or raises
:class:`~eceb_worker.errors.ExecutionRefused` naming why, when:

- the ledger's authorized execution count is used up (every recorded start
  counts, finished or not: an incomplete journal is an execution);
- a spending stop was recorded;
- the execution belongs to a pair after the pilot and no continuation
  approval binding the freeze and the pilot's evidence was recorded;
- the same pair and arm were started before: nothing runs twice, and
  nothing is retried automatically;
- the pair already has an execution from another task-pair directory (a
  pair prepared again has several): a pair runs from one directory, so its
  two arms are one pair's evidence.

The check and the record are one ``BEGIN IMMEDIATE`` transaction, so two
runners racing for the last authorized execution, or for the two arms of
one pair from two directories, cannot both start.
Approvals are recorded, never created by a check passing: the ledger only
holds what a person approved (see :meth:`Ledger.approve_continuation`).

Every SQLite error is mapped in one place
(:func:`eceb_worker.io.sqlite_files.mapped`): a ledger
locked by another connection beyond :data:`BUSY_TIMEOUT_S`, read-only or
not writable is :class:`~eceb_worker.errors.OutputError` (exit 6); a file
that is not a ledger, or a damaged one (a missing table or ``ledger`` row,
a value of the wrong type, executions not numbered from 1 in order), is
:class:`~eceb_worker.errors.InputError` (exit 3); both name the ledger file.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.errors import ExecutionRefused, InputError, OutputError, Problem
from eceb_worker.io.sqlite_files import BUSY_TIMEOUT_S, connect, sqlite_errors, transaction

__all__ = ["BUSY_TIMEOUT_S", "Ledger", "LedgerEntry"]


_SCHEMA: Final = """
CREATE TABLE ledger (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    freeze_digest TEXT NOT NULL,
    authorized_executions INTEGER NOT NULL CHECK (authorized_executions >= 0)
);
CREATE TABLE executions (
    position INTEGER PRIMARY KEY,
    pair INTEGER NOT NULL,
    arm TEXT NOT NULL,
    attempt_id TEXT NOT NULL UNIQUE,
    directory TEXT NOT NULL,
    outcome TEXT,
    UNIQUE (pair, arm)
);
CREATE TABLE stops (id INTEGER PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE approvals (
    id INTEGER PRIMARY KEY,
    freeze_digest TEXT NOT NULL,
    pilot_evidence_digest TEXT NOT NULL,
    approver TEXT NOT NULL
);
"""

_EXECUTIONS: Final = "SELECT position, pair, arm, attempt_id, directory, outcome FROM executions ORDER BY position"
_DIGEST: Final = re.compile(r"[0-9a-f]{64}")

_NOUN: Final = "execution ledger"


def _sqlite_errors(path: Path) -> contextlib.AbstractContextManager[None]:
    """Raise every SQLite error inside as :func:`~eceb_worker.io.sqlite_files.mapped` maps it."""
    return sqlite_errors(path, _NOUN)


class LedgerEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded execution: its ``position`` among the ledger's
    executions (1-based), its ``pair`` (position in the schedule) and
    ``arm`` (``"A"`` or ``"B"``), its ``attempt_id``, the name of the
    task-pair ``directory`` it ran from, and its ``outcome`` (``None``
    while its journal is incomplete)."""

    position: int
    pair: int
    arm: str
    attempt_id: str
    directory: str
    outcome: str | None


def _binding(db: sqlite3.Connection, path: Path) -> tuple[str, int]:
    """The ledger row's freeze digest and authorized count; :class:`InputError`
    naming the ledger file when the row is missing, repeated or of the wrong type."""
    rows = db.execute("SELECT freeze_digest, authorized_executions FROM ledger").fetchall()
    if len(rows) != 1:
        raise InputError([Problem(file=str(path), record="ledger", message=f"holds {len(rows)} rows, not one")])
    freeze, authorized = rows[0]
    problems: list[Problem] = []
    if not isinstance(freeze, str) or not _DIGEST.fullmatch(freeze):
        problems.append(Problem(file=str(path), record="ledger", field="freeze_digest", message="not a digest"))
    if type(authorized) is not int or authorized < 0:
        message = "not a non-negative integer"
        problems.append(Problem(file=str(path), record="ledger", field="authorized_executions", message=message))
    if problems:
        raise InputError(problems)
    return str(freeze), int(authorized)


def _entries(db: sqlite3.Connection, path: Path) -> list[LedgerEntry]:
    """Every recorded execution in order; :class:`InputError` naming the
    ledger file when a value has the wrong type or the positions are not 1..n."""
    entries: list[LedgerEntry] = []
    problems: list[Problem] = []
    names = ("position", "pair", "arm", "attempt_id", "directory", "outcome")
    for index, row in enumerate(db.execute(_EXECUTIONS), start=1):
        try:
            entry = msgspec.convert(dict(zip(names, row, strict=True)), LedgerEntry, strict=True)
        except msgspec.ValidationError as exc:
            problems.append(Problem(file=str(path), record=f"executions[{index}]", message=str(exc)))
            continue
        if entry.position != index:
            message = f"position {entry.position}, not {index}: an execution was deleted or renumbered"
            problems.append(Problem(file=str(path), record=f"executions[{index}]", field="position", message=message))
        entries.append(entry)
    if problems:
        raise InputError(problems)
    return entries


class Ledger:
    """An open ledger file (see the module). Create one with :meth:`create`,
    open an existing one with :meth:`open`. Every method raises
    :class:`OutputError` or :class:`InputError` naming the file for what
    SQLite reports (the module)."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    @classmethod
    def create(cls, path: Path, *, freeze_digest: str, authorized_executions: int) -> Ledger:
        """A new ledger at ``path`` bound to the freeze ``freeze_digest`` (64
        hex), authorizing ``authorized_executions`` executions. Raises
        :class:`OutputError` when ``path`` exists (a ledger is never reused)
        or cannot be written."""
        try:
            path.open("xb").close()
        except OSError as exc:
            raise OutputError(f"{path}: cannot create the ledger ({exc.strerror or type(exc).__name__})") from None
        ledger = cls(path, _connect(path))
        with ledger._transaction() as db:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            db.execute(
                "INSERT INTO ledger (id, freeze_digest, authorized_executions) VALUES (1, ?, ?)",
                (freeze_digest, authorized_executions),
            )
        return ledger

    @classmethod
    def open(cls, path: Path) -> Ledger:
        """The ledger at ``path``, its tables and rows checked; raises
        :class:`ExecutionRefused` when there is none, :class:`InputError`
        naming it when it is not a ledger or a damaged one,
        :class:`OutputError` when it is busy or cannot be read now."""
        if not path.is_file():
            raise ExecutionRefused(f"{path}: no ledger (executions are authorized by creating one)")
        ledger = cls(path, _connect(path))
        try:
            with _sqlite_errors(path):
                _binding(ledger._db, path)
                _entries(ledger._db, path)
                ledger._db.execute("SELECT reason FROM stops LIMIT 0").fetchall()
                ledger._db.execute(
                    "SELECT freeze_digest, pilot_evidence_digest, approver FROM approvals LIMIT 0"
                ).fetchall()
        except BaseException:
            ledger.close()
            raise
        return ledger

    def close(self) -> None:
        """Close the database connection."""
        with _sqlite_errors(self.path):
            self._db.close()

    def _transaction(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        return transaction(self._db, self.path, _NOUN)

    def start(self, *, pair: int, arm: str, attempt_id: str, directory: str) -> LedgerEntry:
        """Record the start of ``arm`` of schedule pair ``pair`` as attempt
        ``attempt_id``, run from the task-pair directory named
        ``directory``, or raise :class:`ExecutionRefused` saying why (see
        the module); one transaction."""
        with self._transaction() as db:
            freeze, authorized = _binding(db, self.path)
            entries = _entries(db, self.path)
            stop = db.execute("SELECT reason FROM stops ORDER BY id LIMIT 1").fetchone()
            if stop is not None:
                raise ExecutionRefused(f"spending stopped: {stop[0]}")
            if any((entry.pair, entry.arm) == (pair, arm) for entry in entries):
                raise ExecutionRefused(f"pair {pair} arm {arm} was started before: nothing runs twice")
            other = next((e for e in entries if e.pair == pair and e.directory != directory), None)
            if other is not None:
                raise ExecutionRefused(
                    f"pair {pair} arm {other.arm} started from {other.directory}, not {directory}: "
                    f"a pair runs from one directory (eceb pair run {other.directory})"
                )
            if len(entries) >= authorized:
                raise ExecutionRefused(f"all {authorized} authorized executions have started")
            if pair > 1 and not db.execute("SELECT 1 FROM approvals WHERE freeze_digest = ?", (freeze,)).fetchone():
                raise ExecutionRefused(
                    f"pair {pair} comes after the pilot: continuation needs an approval bound to the freeze "
                    "(eceb pair approve)"
                )
            entry = LedgerEntry(
                position=len(entries) + 1,
                pair=pair,
                arm=arm,
                attempt_id=attempt_id,
                directory=directory,
                outcome=None,
            )
            db.execute(
                "INSERT INTO executions (position, pair, arm, attempt_id, directory) VALUES (?, ?, ?, ?, ?)",
                (entry.position, pair, arm, attempt_id, directory),
            )
        return entry

    def finish(self, attempt_id: str, outcome: str) -> bool:
        """Record the ``outcome`` of the started attempt ``attempt_id`` (its
        journal is complete): ``True`` when recorded now, ``False`` when the
        ledger already holds an outcome of it (never replaced). Raises
        :class:`InputError` naming the ledger when it holds no start of it."""
        with self._transaction() as db:
            row = db.execute("SELECT outcome FROM executions WHERE attempt_id = ?", (attempt_id,)).fetchone()
            if row is None:
                message = f"holds no start of attempt {attempt_id}: an execution was deleted"
                raise InputError([Problem(file=str(self.path), record="executions", message=message)])
            if row[0] is not None:
                return False
            db.execute("UPDATE executions SET outcome = ? WHERE attempt_id = ?", (outcome, attempt_id))
        return True

    def stop(self, reason: str) -> None:
        """Record a spending stop: no execution starts after it."""
        with self._transaction() as db:
            db.execute("INSERT INTO stops (reason) VALUES (?)", (reason,))

    def approve_continuation(self, *, freeze_digest: str, pilot_evidence_digest: str, approver: str) -> None:
        """Record a person's approval to continue after the pilot, binding the
        freeze and the pilot's evidence by digest. Raises
        :class:`ExecutionRefused` when ``freeze_digest`` is not this ledger's
        freeze or the pilot's two executions have not both finished."""
        with self._transaction() as db:
            freeze, _ = _binding(db, self.path)
            if freeze_digest != freeze:
                raise ExecutionRefused("the approval names another freeze than the ledger's")
            finished = [e for e in _entries(db, self.path) if e.pair == 1 and e.outcome is not None]
            if len(finished) < 2:
                raise ExecutionRefused("the pilot has not finished: there is no evidence to approve yet")
            db.execute(
                "INSERT INTO approvals (freeze_digest, pilot_evidence_digest, approver) VALUES (?, ?, ?)",
                (freeze_digest, pilot_evidence_digest, approver),
            )

    def binding(self) -> tuple[str, int]:
        """The freeze digest the ledger is bound to and its authorized execution count."""
        with _sqlite_errors(self.path):
            return _binding(self._db, self.path)

    def stops(self) -> list[str]:
        """The reasons of every recorded spending stop, in order."""
        with _sqlite_errors(self.path):
            return [str(reason) for (reason,) in self._db.execute("SELECT reason FROM stops ORDER BY id")]

    def approvals(self) -> list[tuple[str, str, str]]:
        """Every recorded continuation approval: ``(freeze_digest, pilot_evidence_digest, approver)``, in order."""
        with _sqlite_errors(self.path):
            query = "SELECT freeze_digest, pilot_evidence_digest, approver FROM approvals ORDER BY id"
            return [(str(f), str(e), str(a)) for f, e, a in self._db.execute(query)]

    def entries(self) -> list[LedgerEntry]:
        """Every recorded execution, in order of start."""
        with _sqlite_errors(self.path):
            return _entries(self._db, self.path)


def _connect(path: Path) -> sqlite3.Connection:
    """A connection to the ledger (:func:`~eceb_worker.io.sqlite_files.connect`)."""
    return connect(path, _NOUN)
