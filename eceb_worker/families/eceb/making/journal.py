"""The journal of a made run: what every journal of paid calls holds and
decides by, whichever store keeps it (a SQLite file for ``eceb run``,
:mod:`eceb_worker.io.run_journal`; Redis for ``eceb-dist run``,
:mod:`eceb_worker.cluster.run_journal`).

Every journal keeps the same rules (ECEB-0.1 §8: nothing is paid twice,
nothing silently disappears): each attempt of a paid call is recorded
before it is sent and what came of it after; an authorized number of paid
calls (every call started counts, finished or not); a spending stop over
the spend known and possible (:func:`possible_spend`); a call made before,
or failed finally, is never sent again; a call whose last attempt has no
outcome because the process sending it stopped is "outcome unknown", sent
again only when the caller allows it, its upper bound still counted.
:class:`Journal` is what the calls of a run (:mod:`eceb_worker.pipeline.making.calls`)
need of one.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

__all__ = ["Attempt", "Journal", "JournalBinding", "JournalSummary", "possible_spend"]


class JournalBinding(msgspec.Struct, frozen=True, kw_only=True):
    """What a journal is bound to and allows: the plan's digest, the
    authorized number of paid calls and the spending stop (micro-USD, 0: none)."""

    plan_digest: str
    authorized_calls: int
    stop_micro_usd: int


class Attempt(msgspec.Struct, frozen=True, kw_only=True):
    """One attempt of one call as the journal holds it.

    Fields:
        seq: its place among all attempts (order of start).
        call_id, attempt (1-based per call).
        upper_micro_usd: its upper-bound cost, counted while its cost is not known.
        outcome: ``ok``, ``transient`` (retried or given up), ``final``,
            ``unknown`` (the process stopped during it), or ``None`` (in flight).
        maybe_billed: the provider may have billed it without an answer.
        cost_micro_usd: its known cost (``ok``).
        detail: what happened (status, error class; never a credential or prompt text).
        token: what tells this start of the attempt from any other (``""``
            where the store needs none): a journal over a network uses it to
            make a start or a finish sent twice count once.
    """

    seq: int
    call_id: str
    attempt: int
    upper_micro_usd: int
    outcome: str | None
    maybe_billed: bool
    cost_micro_usd: int
    detail: str
    token: str = ""


class JournalSummary(msgspec.Struct, frozen=True, kw_only=True):
    """Counts for a progress line: calls made, failed finally, of unknown
    outcome, attempts retried, and the spend (known + possible), micro-USD."""

    made: int
    failed: int
    unknown: int
    retried: int
    spent_micro_usd: int
    possible_micro_usd: int


def possible_spend(outcome: str | None, maybe_billed: bool, cost: int, upper: int) -> int:
    """One attempt's part of the spend known and possible, micro-USD: its
    known cost, plus its upper bound while it is in flight, of unknown
    outcome, or failed after the provider may have billed it without a
    known cost."""
    counted = outcome is None or outcome == "unknown" or (maybe_billed and cost == 0)
    return cost + (upper if counted else 0)


class Journal(Protocol):
    """What the calls of a run need of a journal (see the module). Every
    method is thread-safe. ``where`` names the journal in messages (a path,
    or a job's journal on the cluster); never a credential."""

    @property
    def where(self) -> str:
        """The journal's name in messages."""
        ...

    def begin(self, call_id: str, upper_micro_usd: int, *, paid: bool = True, rerun_unknown: bool = False) -> Attempt:
        """Record the start of the next attempt of ``call_id``, or raise
        :class:`~eceb_worker.errors.ExecutionRefused` (spending stopped,
        made before, failed finally, in flight, past the authorized calls)
        or :class:`~eceb_worker.errors.OutcomeUnknown` (its last attempt's
        outcome is unknown and ``rerun_unknown`` is false)."""
        ...

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
        """Record what came of a started attempt (``ok`` with the call's
        ``record`` and cost; ``transient``, ``final`` or ``unknown`` with a
        ``detail``)."""
        ...

    def result(self, call_id: str) -> bytes | None:
        """The kept record of a made call, or ``None``."""
        ...

    def attempts(self, call_id: str | None = None) -> list[Attempt]:
        """Every attempt (of ``call_id``, or all), in order of start."""
        ...

    def attempts_not_ok(self) -> list[Attempt]:
        """Every attempt whose outcome is not ``ok``, in order of start."""
        ...

    def summary(self) -> JournalSummary:
        """Counts of calls and spend."""
        ...
