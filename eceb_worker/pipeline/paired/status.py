"""``eceb pair status EXP``: every pair directory and attempt of an
experiment, and the ledger beside them (task-context-benchmark-reference.md,
"Paired inputs and retained outputs": incomplete journals remain visible,
raw partial usage never becomes a full total). The record is
:class:`~eceb_worker.families.paired.status.PairStatus`. Reads only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from eceb_worker.errors import InputError, Problem
from eceb_worker.families.paired.bound_files import BoundFile, SinceBound
from eceb_worker.families.paired.journal import Attempt
from eceb_worker.families.paired.records import Authorization, Freeze, Manifest
from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.status import (
    INCOMPLETE,
    NOT_STARTED,
    STATUS_SCHEMA,
    ArmState,
    Execution,
    PairState,
    PairStatus,
)
from eceb_worker.families.paired.transport import read_transport
from eceb_worker.io.files import read_input
from eceb_worker.io.paired.ledger import Ledger, LedgerEntry
from eceb_worker.pipeline.paired.approvals import continuation_problem
from eceb_worker.pipeline.paired.checks import attempt_id_of
from eceb_worker.pipeline.paired.experiment import Experiment, check_bound_files, read_record

__all__ = ["arm_state", "experiment_status"]


def arm_state(attempt: Path, in_ledger: bool) -> str:
    """The state of the attempt directory ``attempt``: the status its valid
    ``attempt.json`` records, :data:`INCOMPLETE` when it started (an
    ``attempt-start.json``, or ``in_ledger``: the ledger holds its start)
    without one, else :data:`NOT_STARTED`."""
    try:
        record, _ = read_record(attempt / "attempt.json", Attempt)
    except InputError:
        started = in_ledger or (attempt / "attempt-start.json").exists()
        return INCOMPLETE if started else NOT_STARTED
    return record.status.value


def _recorded(attempt: Path, attempt_id: str, entry: LedgerEntry | None, inconsistent: list[str]) -> Attempt | None:
    """The valid ``attempt.json`` of ``attempt``, or ``None``; what disagrees
    with it (its files, the ledger) is appended to ``inconsistent``."""
    where = attempt / "attempt.json"
    if not where.exists():
        return None
    try:
        record, _ = read_record(where, Attempt)
    except InputError as exc:
        inconsistent.append(f"{where}: not a valid attempt record: {exc}")
        return None
    if record.attempt_id != attempt_id:
        inconsistent.append(f"{where}: records attempt {record.attempt_id}, not {attempt_id}")
    bound = [BoundFile(file=file, location=str(attempt / file.path)) for file in record.files]
    _, problems = check_bound_files(bound, SinceBound("attempt.json"))
    inconsistent += [str(problem) for problem in problems]
    if entry is None:
        inconsistent.append(f"{where}: the ledger holds no start of {attempt_id}")
    elif entry.outcome != record.status.value:
        said = entry.outcome or "no outcome (the runner stopped before recording it)"
        inconsistent.append(
            f"execution {entry.position} ({attempt_id}): the ledger says {said}, {where} says {record.status.value}"
        )
    return record


def _arm(
    directory: Path,
    arm: Arm,
    attempt_path: str,
    entries: dict[str, LedgerEntry],
    inconsistent: list[str],
) -> ArmState:
    """The state of one arm of the pair in ``directory``; its ledger entry is taken out of ``entries``."""
    attempt = directory / attempt_path
    attempt_id = attempt_id_of(directory, arm.value)
    entry = entries.pop(attempt_id, None)
    record = _recorded(attempt, attempt_id, entry, inconsistent)
    if record is not None:
        return ArmState(
            arm=arm,
            attempt_id=attempt_id,
            state=record.status.value,
            synthetic=record.synthetic,
            usage=record.usage,
            partial_usage=record.partial_usage,
        )
    start = attempt / "attempt-start.json"
    if entry is None and not start.exists():
        if attempt.exists():
            inconsistent.append(f"{attempt}: exists without attempt-start.json or a start in the ledger")
        return ArmState(
            arm=arm, attempt_id=attempt_id, state=NOT_STARTED, synthetic=None, usage=None, partial_usage=None
        )
    if entry is None:
        inconsistent.append(f"{start}: the attempt started, the ledger holds no start of {attempt_id}")
    elif entry.outcome is not None:
        inconsistent.append(
            f"execution {entry.position} ({attempt_id}): the ledger says {entry.outcome}, no valid attempt.json"
        )
    if entry is not None and not start.exists():
        inconsistent.append(f"execution {entry.position} ({attempt_id}): the ledger holds its start, no {start}")
    partial = None
    synthetic = False
    stream = attempt / "provider.jsonl"
    if stream.is_file():  # whatever usage the stream shows is partial: the journal is incomplete
        transport = read_transport(read_input(stream))
        partial = transport.usage or transport.partial_usage
        synthetic = transport.synthetic
    return ArmState(
        arm=arm, attempt_id=attempt_id, state=INCOMPLETE, synthetic=synthetic, usage=None, partial_usage=partial
    )


def _pair(directory: Path, entries: dict[str, LedgerEntry], inconsistent: list[str]) -> PairState:
    try:
        manifest, _ = read_record(directory / "manifest.json", Manifest)
    except InputError as exc:
        inconsistent.append(f"{directory / 'manifest.json'}: {exc}")
        return PairState(directory=directory.name, position=None, task=None, repeat=None, pilot=None, arms=())
    arms = tuple(_arm(directory, arm.arm, arm.attempt, entries, inconsistent) for arm in manifest.arms)
    shown = manifest.pair
    return PairState(
        directory=directory.name,
        position=shown.position,
        task=shown.task,
        repeat=shown.repeat,
        pilot=shown.pilot,
        arms=arms,
    )


def _binding_problems(experiment: Experiment, record: Authorization | None, authorized: int | None) -> list[str]:
    """Where the ledger and ``authorization.json`` (``record``, ``None``
    when absent) disagree: ``eceb pair authorize`` writes both together,
    with one authorized count, and ``eceb pair run`` refuses every start
    until they agree. ``authorized``: the ledger's count, ``None`` without a ledger."""
    if record is None and authorized is not None:
        return [f"{experiment.authorization}: missing, though the ledger {experiment.ledger} holds an authorization"]
    if record is not None and authorized is None:
        return [f"{experiment.ledger}: missing, though {experiment.authorization} authorizes executions"]
    if record is not None and authorized != record.authorized_executions:
        return [
            f"{experiment.ledger}: holds {authorized} authorized executions, {experiment.authorization} "
            f"authorizes {record.authorized_executions}: nothing runs until they agree"
        ]
    return []


def experiment_status(root: Path) -> PairStatus:
    """The status of the experiment directory ``root`` (module). Raises
    :class:`InputError` when ``root`` holds no ``freeze.json`` (it is not an
    experiment) or its freeze, authorization or ledger cannot be read."""
    experiment = Experiment(root)
    if not experiment.freeze.is_file():
        raise InputError([Problem(file=str(experiment.root), message="not an experiment directory: no freeze.json")])
    freeze, freeze_digest = read_record(experiment.freeze, Freeze)
    authorization: Literal["authorized", "none", "another freeze"] = "none"
    record: Authorization | None = None
    if experiment.authorization.exists():
        record, _ = read_record(experiment.authorization, Authorization)
        authorization = "authorized" if record.freeze_digest == freeze_digest else "another freeze"
    inconsistent: list[str] = []
    executions: list[LedgerEntry] = []
    stops: list[str] = []
    authorized: int | None = None
    approved = False
    if experiment.ledger.exists():
        ledger = Ledger.open(experiment.ledger)
        try:
            bound, authorized = ledger.binding()
            executions, stops = ledger.entries(), ledger.stops()
            approved = any(freeze == bound for freeze, _, _ in ledger.approvals())
        finally:
            ledger.close()
        if bound != freeze_digest:
            inconsistent.append(f"{experiment.ledger}: bound to the freeze {bound}, not {freeze_digest}")
    inconsistent += _binding_problems(experiment, record, authorized)
    if approved != experiment.continuation.exists():
        held = "holds" if approved else "does not hold"
        inconsistent.append(
            f"{experiment.continuation}: {'missing' if approved else 'present'}, and the ledger {held} an approval"
        )
    problem = continuation_problem(experiment, freeze_digest) if freeze_digest is not None else None
    if experiment.continuation.exists() and problem is not None:
        inconsistent.append(problem)
    by_id = {entry.attempt_id: entry for entry in executions}
    pairs = tuple(_pair(directory, by_id, inconsistent) for directory in experiment.pair_directories())
    for entry in by_id.values():
        inconsistent.append(
            f"execution {entry.position} ({entry.attempt_id}): in the ledger, in no pair directory's journals"
        )
    return PairStatus(
        schema=STATUS_SCHEMA,
        experiment=str(experiment.root),
        freeze_digest=freeze_digest,
        synthetic=freeze.synthetic,
        authorization=authorization,
        ledger="present" if experiment.ledger.exists() else "none",
        authorized_executions=authorized,
        executions=tuple(
            Execution(position=e.position, pair=e.pair, arm=e.arm, attempt_id=e.attempt_id, outcome=e.outcome)
            for e in executions
        ),
        remaining=None if authorized is None else max(authorized - len(executions), 0),
        spending_stops=tuple(stops),
        continuation="approved" if approved and problem is None else "not approved",
        pairs=pairs,
        inconsistencies=tuple(inconsistent),
    )
