"""What ``eceb pair status`` shows of an experiment
(task-context-benchmark-reference.md, "Paired inputs and retained outputs":
incomplete journals remain visible; "Paid experiment preflight conditions":
authorized execution count, spending stop controls, pilot continuation).

A :class:`PairStatus` lists every task-pair directory and each arm's
attempt: its status, or ``"incomplete journal"`` (an ``attempt-start.json``
or a start the ledger holds, without a valid ``attempt.json``: it counts as
an execution and its usage is never a total), or ``"not started"``; the
ledger's executions, the authorized count and how many remain, the
spending stops, whether continuation after the pilot is approved, and
every inconsistency found between the journals and the ledger. Pure: Structs only.
"""

from __future__ import annotations

from typing import Final, Literal

import msgspec

from eceb_worker.families.paired.schedule import Arm, TaskKind
from eceb_worker.families.paired.transport import Usage

__all__ = ["INCOMPLETE", "NOT_STARTED", "STATUS_SCHEMA", "ArmState", "Execution", "PairState", "PairStatus"]

STATUS_SCHEMA: Final = "symgliph.eceb/pair-status-v0.1"
INCOMPLETE: Final = "incomplete journal"
NOT_STARTED: Final = "not started"


class ArmState(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One arm of a pair directory.

    Fields: ``arm``; ``attempt_id``; ``state`` (an attempt status,
    :data:`INCOMPLETE` or :data:`NOT_STARTED`); ``synthetic`` (the
    provider's stream labels itself synthetic: from the attempt record, or
    for an incomplete journal from its stream; ``None`` when not started); ``usage`` (a completed turn's
    total) and ``partial_usage`` (never a total), from ``attempt.json``.
    """

    arm: Arm
    attempt_id: str
    state: str
    synthetic: bool | None
    usage: Usage | None
    partial_usage: Usage | None


class PairState(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One task-pair directory: ``directory`` (its name), ``position``,
    ``task``, ``repeat``, ``pilot`` (``None`` when its manifest cannot be
    read), and ``arms`` in the order they run."""

    directory: str
    position: int | None
    task: TaskKind | None
    repeat: int | None
    pilot: bool | None
    arms: tuple[ArmState, ...]


class Execution(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One execution the ledger recorded: ``position``, ``pair``, ``arm``,
    ``attempt_id`` and ``outcome`` (``None`` while its journal is incomplete)."""

    position: int
    pair: int
    arm: str
    attempt_id: str
    outcome: str | None


class PairStatus(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """``eceb pair status EXP --json`` (``schema``: :data:`STATUS_SCHEMA`).

    Fields:
        experiment: the experiment directory (absolute).
        freeze_digest: the freeze's digest, ``None`` without a freeze.
        synthetic: the freeze's ``synthetic`` flag (synthetic rates), ``None`` without a freeze.
        authorization: ``"authorized"``, ``"none"`` or ``"another freeze"``.
        ledger: ``"present"`` or ``"none"``.
        authorized_executions: the ledger's authorized count (``None`` without a ledger).
        executions: the executions the ledger recorded, in order of start.
        remaining: authorized executions not yet started (``None`` without a ledger).
        spending_stops: the reasons of the recorded stops.
        continuation: ``"approved"`` (the ledger holds an approval bound to
            the freeze, and continuation.json still binds the freeze and the
            pilot's evidence on disk) or ``"not approved"``.
        pairs: every task-pair directory, by name.
        inconsistencies: what the journals and the ledger disagree on, each
            naming its file or execution.
    """

    schema: Literal["symgliph.eceb/pair-status-v0.1"]
    experiment: str
    freeze_digest: str | None
    synthetic: bool | None
    authorization: Literal["authorized", "none", "another freeze"]
    ledger: Literal["present", "none"]
    authorized_executions: int | None
    executions: tuple[Execution, ...]
    remaining: int | None
    spending_stops: tuple[str, ...]
    continuation: Literal["approved", "not approved"]
    pairs: tuple[PairState, ...]
    inconsistencies: tuple[str, ...]
