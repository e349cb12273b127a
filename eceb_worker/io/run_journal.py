"""The journal of ``eceb run``: a SQLite file recording every paid call
before it is sent and what came of it, so that a run cut short (Ctrl-C,
``kill -9``, a provider outage) goes on with ``--resume`` and pays only for
what is missing.

It keeps the rules every journal of a made run keeps
(:mod:`eceb_worker.families.eceb.making.journal`), those of the paired
benchmark's ledger too (:mod:`eceb_worker.io.paired.ledger`): an authorized number of paid calls
(every call started counts, finished or not), a spending stop, nothing runs
twice. :meth:`RunJournal.begin` decides, under the journal's lock,
whether an attempt of a call may be sent, and records it in one statement
(what :meth:`RunJournal.finish` records is one transaction); it raises
:class:`~eceb_worker.errors.ExecutionRefused` naming why not:

- a spending stop was recorded, or this attempt's upper-bound cost would
  take the spend past the journal's stop (the stop is recorded then);
- the call was made before (its result is kept), or failed finally;
- the call's last attempt has no outcome: the process sending it stopped
  during it (``kill -9``, a power cut), so the provider may have billed it.
  Such a call is "outcome unknown" and is sent again only when the caller
  allows it (``--rerun-unknown``); its possible cost stays counted;
- a new call would exceed the authorized count.

Spend is what the journal knows: each made call's cost, plus the upper
bound of every attempt in flight, of unknown outcome, or failed after the
provider may have billed it. The spend and the paid calls started are read
from the file once and then kept in step with it by the process that holds
it, so that deciding an attempt costs the same at the run's first call and
at its last.

A journal is bound to its plan (:func:`~eceb_worker.families.eceb.making.plan.plan_digest`):
opening it for another benchmark, corpus or profile is refused. One process
uses a journal at a time (an advisory lock on the file). SQLite errors are
mapped once (:mod:`eceb_worker.io.sqlite_files`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.errors import ExecutionRefused, InputError, OutcomeUnknown, OutputError, Problem
from eceb_worker.families.eceb.making.journal import Attempt, JournalBinding, JournalSummary, possible_spend
from eceb_worker.io.sqlite_files import connect, sqlite_errors, transaction

__all__ = ["Attempt", "JournalBinding", "JournalSummary", "RunJournal"]

_NOUN: Final = "run journal"

_SCHEMA: Final = """
CREATE TABLE journal (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    plan_digest TEXT NOT NULL,
    authorized_calls INTEGER NOT NULL CHECK (authorized_calls >= 0),
    stop_micro_usd INTEGER NOT NULL CHECK (stop_micro_usd >= 0)
);
CREATE TABLE attempts (
    seq INTEGER PRIMARY KEY,
    call_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    upper_micro_usd INTEGER NOT NULL,
    paid INTEGER NOT NULL DEFAULT 1,
    outcome TEXT CHECK (outcome IN ('ok', 'transient', 'final', 'unknown')),
    maybe_billed INTEGER NOT NULL DEFAULT 0,
    cost_micro_usd INTEGER NOT NULL DEFAULT 0,
    detail TEXT NOT NULL DEFAULT '',
    UNIQUE (call_id, attempt)
);
CREATE INDEX attempts_by_call ON attempts (call_id);
CREATE TABLE results (call_id TEXT PRIMARY KEY, record BLOB NOT NULL);
CREATE TABLE stops (id INTEGER PRIMARY KEY, reason TEXT NOT NULL);
"""


_ATTEMPT_COLUMNS: Final = "seq, call_id, attempt, upper_micro_usd, outcome, maybe_billed, cost_micro_usd, detail"


class _Totals:
    """What :meth:`RunJournal.begin` decides by, kept in step with the file
    by the one process that holds it (the advisory lock): the spend known
    and possible (:data:`_SPEND`), the paid calls started, the limits and
    the first spending stop recorded. Read from the file once, then changed
    after each committed :meth:`~RunJournal.begin`,
    :meth:`~RunJournal.finish` and :meth:`~RunJournal.set_limits`, so that
    deciding costs the same at the first call and at the millionth."""

    __slots__ = ("authorized", "spend", "started", "stop_micro_usd", "stopped")

    def __init__(self, *, spend: int, started: int, authorized: int, stop_micro_usd: int, stopped: str | None) -> None:
        self.spend = spend
        self.started = started
        self.authorized = authorized
        self.stop_micro_usd = stop_micro_usd
        self.stopped = stopped


def _attempt(row: tuple[object, ...]) -> Attempt:
    seq, call_id, attempt, upper, outcome, billed, cost, detail = row
    return Attempt(
        seq=int(seq),  # type: ignore[call-overload]
        call_id=str(call_id),
        attempt=int(attempt),  # type: ignore[call-overload]
        upper_micro_usd=int(upper),  # type: ignore[call-overload]
        outcome=None if outcome is None else str(outcome),
        maybe_billed=bool(billed),
        cost_micro_usd=int(cost),  # type: ignore[call-overload]
        detail=str(detail),
    )


_SPEND: Final = (
    "SELECT COALESCE(SUM(cost_micro_usd + CASE WHEN outcome IS NULL OR outcome = 'unknown' "
    "OR (maybe_billed = 1 AND cost_micro_usd = 0) THEN upper_micro_usd ELSE 0 END), 0) FROM attempts"
)
"""Spend known and possible: every attempt's known cost, and the upper bound
of every attempt in flight, of unknown outcome, or possibly billed without
a known cost (:func:`~eceb_worker.families.eceb.making.journal.possible_spend`, attempt by attempt)."""
_STARTED: Final = "SELECT COUNT(DISTINCT call_id) FROM attempts WHERE paid = 1"
_BEFORE_BEGIN: Final = (
    "SELECT (SELECT 1 FROM results WHERE call_id = ?1), "  # noqa: S608 - constant columns
    "(SELECT 1 FROM attempts WHERE call_id = ?1 AND paid = 1 LIMIT 1), last.* FROM (SELECT 1) LEFT JOIN "
    f"(SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE call_id = ?1 ORDER BY attempt DESC LIMIT 1) AS last ON 1"
)
"""What :meth:`RunJournal.begin` reads of a call, in one statement: whether
it was made, whether a paid attempt of it started, and its last attempt
(its columns ``NULL`` when none)."""

_KNOWN_SPEND: Final = "SELECT COALESCE(SUM(cost_micro_usd), 0) FROM attempts"
_LAST_OUTCOMES: Final = (
    "SELECT COUNT(*) FROM attempts a JOIN (SELECT call_id, MAX(attempt) m FROM attempts GROUP BY call_id) l "
    "ON a.call_id = l.call_id AND a.attempt = l.m WHERE a.outcome = ?"
)


class RunJournal:
    """An open run journal (see the module). Thread-safe: one connection,
    its transactions serialized by a lock. Create with :meth:`create`, open
    with :meth:`open`; close with :meth:`close` (or ``with``)."""

    def __init__(self, path: Path, connection: sqlite3.Connection, lock_fd: int) -> None:
        self.path = path
        self._db = connection
        self._lock = threading.Lock()
        self._lock_fd = lock_fd
        self._totals: _Totals | None = None

    @property
    def where(self) -> str:
        """The journal's path, as messages name it."""
        return str(self.path)

    # -- opening ---------------------------------------------------------

    @classmethod
    def create(cls, path: Path, binding: JournalBinding) -> RunJournal:
        """A new journal at ``path``; :class:`OutputError` when ``path``
        exists (a journal is resumed, never replaced) or cannot be written."""
        try:
            path.open("xb").close()
        except OSError as exc:
            raise OutputError(f"{path}: cannot create the run journal ({exc.strerror or type(exc).__name__})") from None
        journal = cls._locked(path)
        with journal._transaction() as db:
            for statement in filter(str.strip, _SCHEMA.split(";")):
                db.execute(statement)
            db.execute(
                "INSERT INTO journal (id, plan_digest, authorized_calls, stop_micro_usd) VALUES (1, ?, ?, ?)",
                (binding.plan_digest, binding.authorized_calls, binding.stop_micro_usd),
            )
        return journal

    @classmethod
    def open(cls, path: Path, *, plan_digest: str) -> RunJournal:
        """The journal at ``path``, checked to be bound to ``plan_digest``;
        every attempt left without an outcome by a process that stopped is
        marked ``unknown``. Raises :class:`InputError` naming the file when
        it is missing, not a journal, damaged or bound to another plan;
        :class:`OutputError` when busy or in use by another process."""
        if not path.is_file():
            raise InputError(
                [Problem(file=str(path), message="no run journal here (a new run starts without --resume)")]
            )
        journal = cls._locked(path)
        try:
            bound = journal.binding()
            if bound.plan_digest != plan_digest:
                message = (
                    "bound to another plan (another benchmark, corpus or profile) than this run's: "
                    "resume with the inputs it was made with, or start a new journal"
                )
                raise InputError([Problem(file=str(path), record="journal", field="plan_digest", message=message)])
            with journal._transaction() as db:
                db.execute("UPDATE attempts SET outcome = 'unknown', maybe_billed = 1 WHERE outcome IS NULL")
        except BaseException:
            journal.close()
            raise
        return journal

    @classmethod
    def _locked(cls, path: Path) -> RunJournal:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise OutputError(f"{path}: cannot open the run journal ({exc.strerror or type(exc).__name__})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise OutputError(f"{path}: the run journal is in use by another eceb run") from None
        try:
            db = connect(path, _NOUN, threads=True)
            with sqlite_errors(path, _NOUN):
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
        except BaseException:
            os.close(fd)
            raise
        return cls(path, db, fd)

    def close(self) -> None:
        """Close the connection and release the lock (once: closing again does nothing)."""
        if self._lock_fd < 0:
            return
        with contextlib.suppress(sqlite3.Error):
            self._db.close()
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)
        self._lock_fd = -1

    def __enter__(self) -> RunJournal:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, transaction(self._db, self.path, _NOUN) as db:
            yield db

    # -- reading ---------------------------------------------------------

    def binding(self) -> JournalBinding:
        """The plan digest, authorized calls and stop the journal holds."""
        with self._lock, sqlite_errors(self.path, _NOUN):
            rows = self._db.execute("SELECT plan_digest, authorized_calls, stop_micro_usd FROM journal").fetchall()
        if len(rows) != 1:
            raise InputError(
                [Problem(file=str(self.path), record="journal", message=f"holds {len(rows)} rows, not one")]
            )
        try:
            return msgspec.convert(
                dict(zip(("plan_digest", "authorized_calls", "stop_micro_usd"), rows[0], strict=True)),
                JournalBinding,
                strict=True,
            )
        except msgspec.ValidationError as exc:
            raise InputError([Problem(file=str(self.path), record="journal", message=str(exc))]) from None

    def set_limits(self, *, authorized_calls: int, stop_micro_usd: int) -> None:
        """Record new limits (a resumed run may raise or lower them)."""
        with self._lock:
            with transaction(self._db, self.path, _NOUN) as db:
                db.execute(
                    "UPDATE journal SET authorized_calls = ?, stop_micro_usd = ? WHERE id = 1",
                    (authorized_calls, stop_micro_usd),
                )
                db.execute("DELETE FROM stops")
            if self._totals is not None:  # committed: the totals follow the file
                self._totals.authorized, self._totals.stop_micro_usd = authorized_calls, stop_micro_usd
                self._totals.stopped = None

    def result(self, call_id: str) -> bytes | None:
        """The kept record of a made call, or ``None``."""
        with self._lock, sqlite_errors(self.path, _NOUN):
            row = self._db.execute("SELECT record FROM results WHERE call_id = ?", (call_id,)).fetchone()
        return None if row is None else bytes(row[0])

    def attempts(self, call_id: str | None = None) -> list[Attempt]:
        """Every attempt (of ``call_id``, or all), in order of start."""
        query = f"SELECT {_ATTEMPT_COLUMNS} FROM attempts"  # noqa: S608 - constant columns
        with self._lock, sqlite_errors(self.path, _NOUN):
            if call_id is None:
                rows = self._db.execute(query + " ORDER BY seq").fetchall()
            else:
                rows = self._db.execute(query + " WHERE call_id = ? ORDER BY seq", (call_id,)).fetchall()
        return [_attempt(row) for row in rows]

    def attempts_not_ok(self) -> list[Attempt]:
        """Every attempt whose outcome is not ``ok`` (failed, retried, of
        unknown outcome, in flight), in order of start: the ones a run lists
        as auxiliary costs, without reading the others."""
        query = f"SELECT {_ATTEMPT_COLUMNS} FROM attempts WHERE outcome IS NOT 'ok' ORDER BY seq"  # noqa: S608
        with self._lock, sqlite_errors(self.path, _NOUN):
            rows = self._db.execute(query).fetchall()
        return [_attempt(row) for row in rows]

    def is_empty(self) -> bool:
        """True when no attempt was ever journaled."""
        with self._lock, sqlite_errors(self.path, _NOUN):
            return self._db.execute("SELECT 1 FROM attempts LIMIT 1").fetchone() is None

    def summary(self) -> JournalSummary:
        """Counts of calls and spend (see :class:`JournalSummary`)."""
        with self._lock, sqlite_errors(self.path, _NOUN):
            db = self._db
            made = db.execute("SELECT COUNT(*) FROM results").fetchone()[0]
            failed = db.execute(_LAST_OUTCOMES, ("final",)).fetchone()[0]
            unknown = db.execute(_LAST_OUTCOMES, ("unknown",)).fetchone()[0]
            retried = db.execute("SELECT COUNT(*) FROM attempts WHERE attempt > 1").fetchone()[0]
            spent = db.execute(_KNOWN_SPEND).fetchone()[0]
            total = db.execute(_SPEND).fetchone()[0]
        return JournalSummary(
            made=made,
            failed=failed,
            unknown=unknown,
            retried=retried,
            spent_micro_usd=spent,
            possible_micro_usd=total - spent,
        )

    def stops(self) -> list[str]:
        """The reasons of every recorded spending stop, in order."""
        with self._lock, sqlite_errors(self.path, _NOUN):
            return [str(reason) for (reason,) in self._db.execute("SELECT reason FROM stops ORDER BY id")]

    # -- deciding --------------------------------------------------------

    def begin(self, call_id: str, upper_micro_usd: int, *, paid: bool = True, rerun_unknown: bool = False) -> Attempt:
        """Record the start of the next attempt of ``call_id`` (its upper-bound
        cost ``upper_micro_usd``; ``paid``: whether it counts towards the
        authorized calls: a command judge's or a context system's failure
        does not), or raise :class:`ExecutionRefused` saying why it may not
        start (see the module). One statement writes what is decided (the
        attempt, or the stop): this process is the journal's only writer
        (its advisory lock) and decides under the journal's lock."""
        with self._lock, sqlite_errors(self.path, _NOUN):
            db = self._db
            totals = self._totals_of(db)
            if totals.stopped is not None:
                raise ExecutionRefused(f"spending stopped: {totals.stopped}")
            made, paid_before, *row = db.execute(_BEFORE_BEGIN, (call_id,)).fetchone()
            if made:
                raise ExecutionRefused(f"call {call_id} was made before: nothing runs twice")
            last = None if row[0] is None else _attempt(tuple(row))
            self._check_previous(call_id, last, rerun_unknown=rerun_unknown)
            authorized, stop_micro_usd = totals.authorized, totals.stop_micro_usd
            if last is None and paid and totals.started >= authorized:
                raise ExecutionRefused(f"all {authorized} authorized paid calls have started")
            spend = totals.spend
            number = 1 if last is None else last.attempt + 1
            if bool(stop_micro_usd) and spend + upper_micro_usd > stop_micro_usd:
                reason = (
                    f"the spend known and possible ({spend} micro-USD) and this call's upper bound "
                    f"({upper_micro_usd}) would pass the stop of {stop_micro_usd} micro-USD"
                )
                db.execute("INSERT INTO stops (reason) VALUES (?)", (reason,))
                totals.stopped = reason
                seq = None
            else:
                seq = db.execute(
                    "INSERT INTO attempts (call_id, attempt, upper_micro_usd, paid) VALUES (?, ?, ?, ?)",
                    (call_id, number, upper_micro_usd, int(paid)),
                ).lastrowid
                totals.spend += possible_spend(None, False, 0, upper_micro_usd)
                totals.started += paid and not paid_before
        if seq is None:  # the stop is recorded (committed) before the refusal
            raise ExecutionRefused(f"spending stopped: {reason}")
        return Attempt(
            seq=seq,
            call_id=call_id,
            attempt=number,
            upper_micro_usd=upper_micro_usd,
            outcome=None,
            maybe_billed=False,
            cost_micro_usd=0,
            detail="",
        )

    @staticmethod
    def _check_previous(call_id: str, last: Attempt | None, *, rerun_unknown: bool) -> None:
        if last is None or last.outcome == "transient":
            return
        if last.outcome == "final":
            raise ExecutionRefused(f"call {call_id} failed finally ({last.detail}): nothing runs twice")
        if last.outcome == "unknown" and not rerun_unknown:
            raise OutcomeUnknown(
                f"call {call_id}: the outcome of its attempt {last.attempt} is unknown (the process sending it "
                "stopped; the provider may have billed it): --rerun-unknown sends it again"
            )
        if last.outcome is None:
            raise ExecutionRefused(f"call {call_id} is in flight")

    def finish(
        self,
        attempt: Attempt,
        outcome: str,
        *,
        cost_micro_usd: int = 0,
        maybe_billed: bool = False,
        detail: str = "",
        record: bytes | None = None,
    ) -> None:
        """Record the ``outcome`` of a started attempt (``ok`` with the
        call's ``record`` and cost, ``transient`` or ``final`` with a
        ``detail``); one transaction. Raises :class:`InputError` naming the
        journal when it holds no such attempt in flight."""
        upper = attempt.upper_micro_usd
        with self._lock:
            with transaction(self._db, self.path, _NOUN) as db:
                updated = db.execute(
                    "UPDATE attempts SET outcome = ?, maybe_billed = ?, cost_micro_usd = ?, detail = ? "
                    "WHERE seq = ? AND call_id = ? AND upper_micro_usd = ? AND outcome IS NULL",
                    (outcome, int(maybe_billed), cost_micro_usd, detail, attempt.seq, attempt.call_id, upper),
                ).rowcount
                if updated != 1:
                    message = f"holds no attempt {attempt.attempt} of call {attempt.call_id} in flight"
                    raise InputError([Problem(file=str(self.path), record="attempts", message=message)])
                if record is not None:
                    db.execute("INSERT INTO results (call_id, record) VALUES (?, ?)", (attempt.call_id, record))
            if self._totals is not None:  # committed: the totals follow the file
                self._totals.spend += possible_spend(outcome, maybe_billed, cost_micro_usd, upper) - possible_spend(
                    None, False, 0, upper
                )

    def _totals_of(self, db: sqlite3.Connection) -> _Totals:
        """The totals (:class:`_Totals`), read from the file the first time."""
        if self._totals is None:
            _, authorized, stop_micro_usd = db.execute(
                "SELECT plan_digest, authorized_calls, stop_micro_usd FROM journal"
            ).fetchone()
            stop = db.execute("SELECT reason FROM stops ORDER BY id LIMIT 1").fetchone()
            self._totals = _Totals(
                spend=db.execute(_SPEND).fetchone()[0],
                started=db.execute(_STARTED).fetchone()[0],
                authorized=authorized,
                stop_micro_usd=stop_micro_usd,
                stopped=None if stop is None else str(stop[0]),
            )
        return self._totals
