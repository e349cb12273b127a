"""A person's decisions over a frozen paired experiment
(task-context-benchmark-reference.md, "Paid experiment preflight
conditions": "Authorized execution count, spending stop controls, and pilot
continuation"; "Local software approval does not resolve G3"; "Fixed paid
comparison schedule": "Continuation requires explicit approval").

- :func:`authorize`: G3, ``authorization.json`` bound to the freeze digest,
  and the execution ledger that counts against it.
- :func:`approve_continuation`: ``continuation.json`` after the pilot,
  bound to the freeze and to the pilot's evidence (:func:`pilot_evidence`),
  recorded in the ledger.
- :func:`stop_spending`: a spending stop in the ledger.
- :func:`reconcile_outcomes`: an outcome a complete journal holds and the
  ledger never recorded (the runner stopped between ``attempt.json`` and
  the ledger), recorded from ``attempt.json``.

Only these functions, called by the commands a person runs, create these
records; no check passing ever does.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Final

import msgspec

from eceb_worker.errors import ExecutionRefused, InputError, Problem
from eceb_worker.families.paired.journal import Attempt
from eceb_worker.families.paired.pairs import PAIR_DIRECTORY, pilot_evidence_digest
from eceb_worker.families.paired.records import (
    AUTHORIZATION_SCHEMA,
    CONTINUATION_SCHEMA,
    Authorization,
    ContinuationApproval,
    Freeze,
    Manifest,
)
from eceb_worker.io.paired.ledger import Ledger
from eceb_worker.pipeline.paired.checks import attempt_id_of
from eceb_worker.pipeline.paired.experiment import Experiment, read_record, utc_now, write_record
from eceb_worker.pipeline.paired.freeze import refuse_once_started

__all__ = [
    "continuation_problem",
    "BILLING_NOTICE",
    "approve_continuation",
    "authorize",
    "pilot_evidence",
    "reconcile_outcomes",
    "stop_spending",
]

BILLING_NOTICE: Final = "One pair bounds the execution count, not the charges. The adapter has no hard billing ceiling."
"""What every authorization and run says (the seed's words)."""


def authorize(
    root: Path, *, approver: str, executions: int | None = None, freeze_digest: str | None = None
) -> tuple[Authorization, str]:
    """Record G3 for the experiment at ``root``: ``authorization.json``
    binding the freeze digest, granting ``executions`` (default: the
    freeze's ``authorized_executions``; never more), and a new
    ``ledger.sqlite`` counting against it. Returns the record and the
    freeze digest.

    Raises :class:`ExecutionRefused` when already authorized (an
    authorization or a ledger exists) or an attempt may have started (an
    entry of a ``task-pair-*/attempts`` directory exists:
    :func:`~eceb_worker.pipeline.paired.freeze.refuse_once_started`; a ledger
    removed by hand is not authorized again); :class:`InputError` when
    ``freeze.json`` is missing, invalid or changed, or ``executions`` is
    more than the freeze allows or zero, or ``freeze.json`` is not the
    freeze ``freeze_digest`` names (:class:`ExecutionRefused`)."""
    experiment = Experiment(root)
    for path in (experiment.authorization, experiment.ledger):
        if os.path.lexists(path):
            raise ExecutionRefused(f"{path}: exists: the experiment is already authorized (G3 is recorded once)")
    refuse_once_started(experiment)
    freeze, digest = read_record(experiment.freeze, Freeze)
    if freeze_digest is not None and freeze_digest != digest:
        raise ExecutionRefused(
            f"{experiment.freeze}: its digest {digest} is not the freeze {freeze_digest} being authorized"
        )
    count = freeze.authorized_executions if executions is None else executions
    if not 1 <= count <= freeze.authorized_executions:
        message = f"{count} executions: the freeze allows from 1 to {freeze.authorized_executions}"
        raise InputError([Problem(file=str(experiment.freeze), field="authorized_executions", message=message)])
    record = Authorization(
        schema=AUTHORIZATION_SCHEMA,
        freeze_digest=digest,
        authorized_executions=count,
        approver=approver,
        statement=(
            f"{approver} authorizes at most {count} paid executions of the experiment frozen as "
            f"{digest}, in the schedule's order. {BILLING_NOTICE}"
        ),
        recorded_at=utc_now(),
    )
    ledger = Ledger.create(experiment.ledger, freeze_digest=digest, authorized_executions=count)
    ledger.close()
    try:
        write_record(experiment.authorization, record)
    except BaseException:
        experiment.ledger.unlink(missing_ok=True)  # created just now: no execution can have started
        raise
    return record, digest


def stop_spending(root: Path, reason: str) -> None:
    """Record a spending stop in the experiment's ledger: no execution
    starts after it. Raises :class:`ExecutionRefused` when there is no
    ledger (nothing is authorized, so nothing could start)."""
    ledger = Ledger.open(Experiment(root).ledger)
    try:
        ledger.stop(reason)
    finally:
        ledger.close()


class PilotEvidence(msgspec.Struct, frozen=True, kw_only=True):
    """The pilot's evidence: its ``pair`` directory name, its manifest's
    digest, the digests of its two ``attempt.json`` in the order the arms
    ran, their attempt ids, and ``digest``
    (:func:`~eceb_worker.families.paired.pairs.pilot_evidence_digest` of the three)."""

    pair: str
    manifest: str
    attempts: tuple[str, str]
    attempt_ids: tuple[str, str]
    digest: str


def find_pilot(experiment: Experiment) -> Path:
    """The pilot's pair directory: the one ``task-pair-01-*`` directory
    where an attempt started. Raises :class:`ExecutionRefused` when none
    has, or more than one has."""
    started = [
        directory
        for directory in experiment.pair_directories()
        if (match := PAIR_DIRECTORY.fullmatch(directory.name)) is not None
        and int(match.group(1)) == 1
        and any(directory.glob("attempts/*/attempt-start.json"))
    ]
    if not started:
        raise ExecutionRefused("the pilot has not started: there is no evidence to approve yet")
    if len(started) > 1:
        names = ", ".join(directory.name for directory in started)
        raise ExecutionRefused(f"the pilot's attempts are in more than one pair directory ({names})")
    return started[0]


def pilot_evidence(pair: Path) -> PilotEvidence:
    """The evidence of the pilot pair directory ``pair``: its manifest and
    both arms' ``attempt.json``. Raises :class:`ExecutionRefused` when an
    arm has no valid ``attempt.json`` (its journal is incomplete: the pilot
    has not finished); :class:`InputError` when the manifest is invalid or changed."""
    manifest, manifest_digest = read_record(pair / "manifest.json", Manifest)
    digests: list[str] = []
    ids: list[str] = []
    for arm in manifest.arms:
        path = pair / arm.attempt / "attempt.json"
        if not path.is_file():
            raise ExecutionRefused(f"the pilot has not finished: {path} does not exist (its journal is incomplete)")
        try:
            attempt, digest = read_record(path, Attempt)
        except InputError as exc:
            raise ExecutionRefused(
                f"the pilot has not finished: {path} is not a valid attempt record ({exc})"
            ) from None
        digests.append(digest)
        ids.append(attempt.attempt_id)
    return PilotEvidence(
        pair=pair.name,
        manifest=manifest_digest,
        attempts=(digests[0], digests[1]),
        attempt_ids=(ids[0], ids[1]),
        digest=pilot_evidence_digest(manifest_digest, digests[0], digests[1]),
    )


def reconcile_outcomes(ledger: Ledger, directory: Path, manifest: Manifest) -> list[tuple[str, str]]:
    """Record in ``ledger`` the outcome of each attempt of the pair in
    ``directory`` (its ``manifest``) whose journal is complete while the
    ledger holds its start without an outcome: the runner stopped (killed,
    or the ledger busy) after writing ``attempt.json`` and before recording
    it. The outcome is the status of the valid ``attempt.json``
    (:func:`read_record`) that records the same attempt id; an incomplete
    journal stays an execution without an outcome. Returns the
    ``(attempt_id, outcome)`` pairs recorded now, in the manifest's order;
    raises what :class:`Ledger` raises."""
    entries = {entry.attempt_id: entry for entry in ledger.entries()}
    recorded: list[tuple[str, str]] = []
    for arm in manifest.arms:
        attempt_id = attempt_id_of(directory, arm.arm.value)
        entry = entries.get(attempt_id)
        if entry is None or entry.outcome is not None:
            continue
        try:
            attempt, _ = read_record(directory / arm.attempt / "attempt.json", Attempt)
        except InputError:
            continue  # no valid attempt.json: the journal is incomplete
        if attempt.attempt_id == attempt_id and ledger.finish(attempt_id, attempt.status.value):
            recorded.append((attempt_id, attempt.status.value))
    return recorded


def approve_continuation(
    root: Path, *, approver: str
) -> tuple[ContinuationApproval, PilotEvidence, list[tuple[str, str]]]:
    """Record a person's approval to continue after the pilot:
    ``continuation.json`` (binding the freeze digest and
    :func:`pilot_evidence`) and its entry in the ledger. An outcome of the
    pilot the ledger never recorded is recorded first from its
    ``attempt.json`` (:func:`reconcile_outcomes`). Returns the record, the
    evidence and what was reconciled.

    Raises :class:`ExecutionRefused` when the experiment is not authorized,
    is already approved, or the pilot has not finished (both attempts need a
    valid ``attempt.json``, recorded as finished in the ledger);
    :class:`InputError` when a record is invalid, changed, or bound to another freeze."""
    experiment = Experiment(root)
    if not experiment.authorization.is_file() or not experiment.ledger.is_file():
        raise ExecutionRefused(f"{experiment.root}: not authorized (eceb pair authorize): there is no pilot to approve")
    if os.path.lexists(experiment.continuation):
        raise ExecutionRefused(f"{experiment.continuation}: exists: continuation is approved once")
    _, freeze_digest = read_record(experiment.freeze, Freeze)
    authorization, _ = read_record(experiment.authorization, Authorization)
    if authorization.freeze_digest != freeze_digest:
        message = "binds another freeze than freeze.json"
        raise InputError([Problem(file=str(experiment.authorization), field="freeze_digest", message=message)])
    pilot = find_pilot(experiment)
    manifest, _ = read_record(pilot / "manifest.json", Manifest)
    if manifest.freeze_digest != freeze_digest:
        message = "the pilot was prepared under another freeze than freeze.json"
        raise InputError([Problem(file=str(pilot / "manifest.json"), field="freeze_digest", message=message)])
    evidence = pilot_evidence(pilot)
    ledger = Ledger.open(experiment.ledger)
    try:
        reconciled = reconcile_outcomes(ledger, pilot, manifest)
        recorded = {entry.attempt_id for entry in ledger.entries() if entry.pair == 1 and entry.outcome is not None}
        unrecorded = [attempt for attempt in evidence.attempt_ids if attempt not in recorded]
        if unrecorded:
            raise ExecutionRefused(
                f"the pilot has not finished: the ledger records no outcome of {', '.join(unrecorded)}"
            )
        record = ContinuationApproval(
            schema=CONTINUATION_SCHEMA,
            freeze_digest=freeze_digest,
            pilot_evidence_digest=evidence.digest,
            pilot_pair=evidence.pair,
            approver=approver,
            recorded_at=utc_now(),
        )
        write_record(experiment.continuation, record)
        try:
            ledger.approve_continuation(
                freeze_digest=freeze_digest, pilot_evidence_digest=evidence.digest, approver=approver
            )
        except BaseException:
            with contextlib.suppress(OSError):
                experiment.continuation.unlink()
            raise
    finally:
        ledger.close()
    return record, evidence, reconciled


def continuation_problem(experiment: Experiment, freeze_digest: str) -> str | None:
    """Why ``continuation.json`` does not (or no longer) approve continuing
    after the pilot of the freeze ``freeze_digest``, or ``None`` when it
    does: missing or invalid, bound to another freeze, or the pilot's
    evidence on disk (:func:`pilot_evidence`) no longer the evidence it
    approved. Run refuses a pair after the pilot on it; status reports it."""
    if not experiment.continuation.is_file():
        return f"{experiment.continuation}: missing: continuation after the pilot is not approved (eceb pair approve)"
    try:
        approval, _ = read_record(experiment.continuation, ContinuationApproval)
    except InputError as exc:
        return "; ".join(str(problem) for problem in exc.problems)
    if approval.freeze_digest != freeze_digest:
        return f"{experiment.continuation}: approves the freeze {approval.freeze_digest}, not {freeze_digest}"
    try:
        evidence = pilot_evidence(experiment.root / approval.pilot_pair)
    except (InputError, ExecutionRefused) as exc:
        return f"{experiment.continuation}: the pilot's evidence cannot be read again: {exc}"
    if evidence.digest != approval.pilot_evidence_digest:
        return (
            f"{experiment.continuation}: the pilot's evidence changed since it was approved "
            f"(approved {approval.pilot_evidence_digest}, now {evidence.digest})"
        )
    return None
