"""The execution ledger of the paired task-context benchmark: a SQLite file
that decides, in one transaction, whether a paid execution may start
(task-context-benchmark-reference.md, "Fixed paid comparison schedule" and
"Paid experiment preflight conditions").

An execution is one arm of one pair of the schedule
(:mod:`eceb_worker.families.paired.schedule`). :meth:`Ledger.start` records
it, or raises :class:`~eceb_worker.errors.ExecutionRefused` naming why,
when:

- the ledger's authorized execution count is used up (every recorded start
  counts, finished or not: an incomplete journal is an execution);
- a spending stop was recorded;
- the execution belongs to a pair after the pilot and no continuation
  approval binding the freeze and the pilot's evidence was recorded;
- the same pair and arm were started before: nothing runs twice, and
  nothing is retried automatically.

The check and the record are one ``BEGIN IMMEDIATE`` transaction, so two
runners racing for the last authorized execution cannot both start it.
Approvals are recorded, never created by a check passing: the ledger only
holds what a person approved (see :meth:`Ledger.approve_continuation`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.errors import ExecutionRefused, InputError, OutputError, Problem

__all__ = ["BUSY_TIMEOUT_S", "Ledger", "LedgerEntry"]

BUSY_TIMEOUT_S: Final = 30.0
"""How long a runner waits for another one's transaction before giving up."""

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


class LedgerEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One recorded execution: its ``position`` among the ledger's
    executions (1-based), its ``pair`` (position in the schedule) and
    ``arm`` (``"A"`` or ``"B"``), its ``attempt_id``, and its ``outcome``
    (``None`` while its journal is incomplete)."""

    position: int
    pair: int
    arm: str
    attempt_id: str
    outcome: str | None


class Ledger:
    """An open ledger file (see the module). Create one with :meth:`create`,
    open an existing one with :meth:`open`."""

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
        """The ledger at ``path``; raises :class:`ExecutionRefused` when there is
        none, :class:`InputError` naming it when it is not a ledger."""
        if not path.is_file():
            raise ExecutionRefused(f"{path}: no ledger (executions are authorized by creating one)")
        ledger = cls(path, _connect(path))
        try:
            ledger._db.execute("SELECT freeze_digest, authorized_executions FROM ledger").fetchone()
            ledger._db.execute("SELECT position, pair, arm, attempt_id, outcome FROM executions LIMIT 0").fetchall()
        except sqlite3.DatabaseError as exc:
            ledger.close()
            raise InputError([Problem(file=str(path), message=f"not an execution ledger ({exc})")]) from None
        return ledger

    def close(self) -> None:
        """Close the database connection."""
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def start(self, *, pair: int, arm: str, attempt_id: str) -> LedgerEntry:
        """Record the start of ``arm`` of schedule pair ``pair`` as attempt
        ``attempt_id``, or raise :class:`ExecutionRefused` saying why (see
        the module); one transaction."""
        with self._transaction() as db:
            freeze, authorized = db.execute("SELECT freeze_digest, authorized_executions FROM ledger").fetchone()
            (started,) = db.execute("SELECT count(*) FROM executions").fetchone()
            stop = db.execute("SELECT reason FROM stops ORDER BY id LIMIT 1").fetchone()
            if stop is not None:
                raise ExecutionRefused(f"spending stopped: {stop[0]}")
            if db.execute("SELECT 1 FROM executions WHERE pair = ? AND arm = ?", (pair, arm)).fetchone():
                raise ExecutionRefused(f"pair {pair} arm {arm} was started before: nothing runs twice")
            if started >= authorized:
                raise ExecutionRefused(f"all {authorized} authorized executions have started")
            if pair > 1 and not db.execute("SELECT 1 FROM approvals WHERE freeze_digest = ?", (freeze,)).fetchone():
                raise ExecutionRefused(
                    f"pair {pair} comes after the pilot: continuation needs an approval bound to the freeze "
                    "(eceb pair approve)"
                )
            db.execute(
                "INSERT INTO executions (position, pair, arm, attempt_id) VALUES (?, ?, ?, ?)",
                (started + 1, pair, arm, attempt_id),
            )
        return LedgerEntry(position=started + 1, pair=pair, arm=arm, attempt_id=attempt_id, outcome=None)

    def finish(self, attempt_id: str, outcome: str) -> None:
        """Record the ``outcome`` of a started attempt (its journal is complete)."""
        with self._transaction() as db:
            db.execute("UPDATE executions SET outcome = ? WHERE attempt_id = ?", (outcome, attempt_id))

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
            (freeze,) = db.execute("SELECT freeze_digest FROM ledger").fetchone()
            if freeze_digest != freeze:
                raise ExecutionRefused("the approval names another freeze than the ledger's")
            (finished,) = db.execute(
                "SELECT count(*) FROM executions WHERE pair = 1 AND outcome IS NOT NULL"
            ).fetchone()
            if finished < 2:
                raise ExecutionRefused("the pilot has not finished: there is no evidence to approve yet")
            db.execute(
                "INSERT INTO approvals (freeze_digest, pilot_evidence_digest, approver) VALUES (?, ?, ?)",
                (freeze_digest, pilot_evidence_digest, approver),
            )

    def binding(self) -> tuple[str, int]:
        """The freeze digest the ledger is bound to and its authorized execution count."""
        freeze, authorized = self._db.execute("SELECT freeze_digest, authorized_executions FROM ledger").fetchone()
        return str(freeze), int(authorized)

    def stops(self) -> list[str]:
        """The reasons of every recorded spending stop, in order."""
        return [str(reason) for (reason,) in self._db.execute("SELECT reason FROM stops ORDER BY id")]

    def approvals(self) -> list[tuple[str, str, str]]:
        """Every recorded continuation approval: ``(freeze_digest, pilot_evidence_digest, approver)``, in order."""
        rows = self._db.execute("SELECT freeze_digest, pilot_evidence_digest, approver FROM approvals ORDER BY id")
        return [(str(f), str(e), str(a)) for f, e, a in rows]

    def entries(self) -> list[LedgerEntry]:
        """Every recorded execution, in order of start."""
        rows = self._db.execute("SELECT position, pair, arm, attempt_id, outcome FROM executions ORDER BY position")
        return [LedgerEntry(position=p, pair=q, arm=a, attempt_id=i, outcome=o) for p, q, a, i, o in rows]


def _connect(path: Path) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are begun explicitly)."""
    return sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
