"""One arm's attempt of a task-pair directory summarized for ``eceb pair
summary`` (task-context-benchmark-reference.md, "Paired inputs and retained
outputs": incomplete journals remain visible; "Credit and quality
calculation"): its journal read and decoded, checked step by step (the
answer schema's identity chain, the start, the presence of its record, the
finished journal's files and record against the stream re-read), then
judged. Reads only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from eceb_worker.core.digests import digest_bytes
from eceb_worker.families.paired.assessments import Binding
from eceb_worker.families.paired.bound_files import BoundFile, SinceBound, bound_file_problems
from eceb_worker.families.paired.credits import CreditEstimate, RatesFile
from eceb_worker.families.paired.evidence import (
    identity_chain,
    invocation_problems,
    record_problems,
    request_problems,
    start_problems,
)
from eceb_worker.families.paired.journal import (
    JOURNAL_ORDER,
    Attempt,
    AttemptStart,
    Invocation,
    Request,
    seconds_between,
)
from eceb_worker.families.paired.pairs import ANSWER_SCHEMA_NAME
from eceb_worker.families.paired.records import ArmCommand, Cost, Costs, Manifest
from eceb_worker.families.paired.schedule import Arm
from eceb_worker.families.paired.specs import TaskSpec
from eceb_worker.families.paired.status import INCOMPLETE, NOT_STARTED
from eceb_worker.families.paired.summary import measures
from eceb_worker.families.paired.summary_document import (
    AttemptSummary,
    IdentityLink,
    Measure,
    Outcome,
)
from eceb_worker.families.paired.transport import Transport, TransportStatus, read_transport
from eceb_worker.pipeline.paired.evidence import (
    AttemptFiles,
    PairFiles,
    read_attempt,
)
from eceb_worker.pipeline.paired.outcomes import Policy, credit_estimate, judged, usage_reason

__all__ = ["summarize_attempt"]


@dataclass(frozen=True, kw_only=True)
class _Subject:
    """One arm's attempt as the summary knows it before reading its journal:
    the policy, the arm's command, the attempt id, the arm's context cost
    (``costs.json``) and the rate snapshots (``rates.json``)."""

    policy: Policy
    arm: ArmCommand
    attempt_id: str
    cost: Cost | None
    rates: RatesFile | None


@dataclass(frozen=True, kw_only=True)
class _Journal:
    """An attempt's journal as read and decoded: the files (``read``), its
    records (``None`` when missing or invalid), the provider's stream re-read
    (``transport``) and the answer schema's identity chain (``links``)."""

    read: AttemptFiles
    start: AttemptStart | None
    record: Attempt | None
    transport: Transport | None
    request: Request | None
    invocation: Invocation | None
    links: tuple[IdentityLink, ...]


@dataclass(frozen=True, kw_only=True)
class _Finding:
    """What the summary says of one attempt: its ``state`` and ``outcome``,
    why (``reasons``), what is missing or changed (``evidence``), the
    records it is read from (``start``, ``record``: ``None`` when not
    used), whether its journal is incomplete (its usage only partial) and,
    for explanations, the ``assessment`` and its ``binding``."""

    state: str
    outcome: Outcome
    reasons: Sequence[str]
    evidence: Sequence[str] = ()
    start: AttemptStart | None = None
    record: Attempt | None = None
    incomplete: bool = False
    assessment: str | None = None
    binding: Binding | None = None


NEVER_STARTED: Final = _Finding(state=NOT_STARTED, outcome=Outcome.NOT_STARTED, reasons=("the attempt did not start",))
"""The finding of an attempt whose directory does not exist."""


def _decoded(files: PairFiles, manifest: Manifest, read: AttemptFiles) -> _Journal:
    """The records of the journal ``read`` decoded, its stream re-read and
    the answer schema's identity chain (the pair's, the request's, the
    captured one, the invocation's) drawn."""
    start = read.record("attempt-start.json", AttemptStart)
    record = read.record("attempt.json", Attempt)
    stream = read.present.get("provider.jsonl")
    transport = read_transport(stream) if stream is not None else None
    pair_schema = files.read(ANSWER_SCHEMA_NAME)
    request = read.record("request.json", Request)
    invocation = read.record("invocation.json", Invocation)
    links = identity_chain(
        manifest,
        digest_bytes(pair_schema) if pair_schema is not None else None,
        request,
        read.digests.get(ANSWER_SCHEMA_NAME),
        invocation,
        str(files.root / read.prefix / ANSWER_SCHEMA_NAME),
    )
    return _Journal(
        read=read,
        start=start,
        record=record,
        transport=transport,
        request=request,
        invocation=invocation,
        links=links,
    )


def _start_evidence(
    subject: _Subject, manifest: Manifest, manifest_digest: str, journal: _Journal, start: AttemptStart
) -> list[str]:
    """What does not hold of the attempt's start: ``attempt-start.json``,
    ``request.json`` and ``invocation.json`` against what binds them."""
    policy, read = subject.policy, journal.read
    evidence = start_problems(
        start, attempt_id=subject.attempt_id, digests=read.digests, fingerprint=policy.freeze.repository.fingerprint
    )
    if journal.request is not None:
        evidence += request_problems(
            journal.request,
            attempt_id=subject.attempt_id,
            freeze=policy.freeze,
            freeze_digest=policy.freeze_digest,
            manifest=manifest,
            manifest_digest=manifest_digest,
            arm=subject.arm,
            digests=read.digests,
        )
    if journal.invocation is not None:
        evidence += invocation_problems(journal.invocation, arm=subject.arm, freeze=policy.freeze, digests=read.digests)
    return evidence


def _unfinished(read: AttemptFiles, start: AttemptStart, evidence: list[str]) -> _Finding:
    """The finding of an attempt that started without a valid
    ``attempt.json``: an incomplete journal when there is none (the journal
    files before the start that are missing named), unverified when it is
    invalid."""
    if "attempt.json" in read.present:
        return _Finding(
            state=INCOMPLETE,
            outcome=Outcome.UNVERIFIED,
            reasons=evidence,
            evidence=evidence,
            start=start,
            incomplete=True,
        )
    before = JOURNAL_ORDER[: JOURNAL_ORDER.index("attempt-start.json")]
    evidence += [f"{name}: missing" for name in before if name not in read.present]
    reasons = ["incomplete journal: attempt-start.json without attempt.json", *evidence]
    return _Finding(
        state=INCOMPLETE, outcome=Outcome.INCOMPLETE, reasons=reasons, evidence=evidence, start=start, incomplete=True
    )


def _record_evidence(subject: _Subject, journal: _Journal, start: AttemptStart, record: Attempt) -> list[str]:
    """What does not hold of a finished journal: every journal file
    present, bound by ``attempt.json`` and unchanged since, nothing else
    bound, and ``attempt.json`` what the stream re-read shows."""
    read = journal.read
    evidence = [f"{name}: missing" for name in JOURNAL_ORDER if name not in read.present]
    bound = [BoundFile(file=file, location=file.path) for file in record.files]
    found = bound_file_problems(
        bound, read.seen(), SinceBound("attempt.json", name_missing=False), required=JOURNAL_ORDER[:-1]
    )
    evidence += [str(problem) for problem in found]
    evidence += [
        f"attempt.json files: binds {path}, which no runner writes"
        for path in dict.fromkeys(file.path for file in record.files)
        if path not in JOURNAL_ORDER
    ]
    evidence += record_problems(
        record, attempt_id=subject.attempt_id, start=start, transport=journal.transport, answer=_answer_digest(journal)
    )
    return evidence


def _answer_digest(journal: _Journal) -> str | None:
    """The BLAKE3 of the last agent message of the stream re-read, ``None`` without one."""
    answer = journal.transport.answer if journal.transport is not None else None
    return digest_bytes(answer.encode("utf-8", "surrogatepass")) if answer is not None else None


def _judged_finding(
    subject: _Subject,
    journal: _Journal,
    task: TaskSpec | None,
    start: AttemptStart,
    record: Attempt,
    evidence: list[str],
) -> _Finding:
    """The finding of a finished journal: the outcome the evidence, the
    answer and the task decide (:func:`judged`)."""
    transport = journal.transport
    answer = transport.answer if transport is not None else None
    outcome, reasons, assessment, binding = judged(
        subject.policy, record, evidence, transport, journal.read, task, answer
    )
    return _Finding(
        state=record.status.value,
        outcome=outcome,
        reasons=reasons,
        evidence=evidence,
        start=start,
        record=record,
        assessment=assessment,
        binding=binding,
    )


def _measured(
    subject: _Subject, finding: _Finding, transport: Transport | None
) -> tuple[CreditEstimate | None, tuple[Measure, ...]]:
    """The credit estimate (``None`` when the attempt did not start) and
    every metric of the attempt: usage only of a completed turn of a
    complete journal, wall clock only with an end recorded."""
    start, record = finding.start, finding.record
    started_at = start.started_at if start is not None else None
    counted = None if finding.incomplete else transport
    credits = credit_estimate(subject.policy, subject.rates, counted, started_at) if started_at else None
    completed = transport is not None and transport.status is TransportStatus.COMPLETED and not finding.incomplete
    if start is None:
        why_no_usage = why_no_wall_clock = "the attempt did not start"
    else:
        why_no_usage = usage_reason(transport, finding.incomplete)
        why_no_wall_clock = "incomplete journal: no end recorded"
    return credits, measures(
        usage=transport.usage if completed and transport is not None else None,
        why_no_usage=why_no_usage,
        credits=credits,
        wall_clock=seconds_between(record.started_at, record.ended_at) if record is not None else None,
        why_no_wall_clock=why_no_wall_clock,
        context_tokens=subject.arm.context_tokens,
        context_cost=subject.cost,
    )


def _attempt_summary(subject: _Subject, finding: _Finding, journal: _Journal | None) -> AttemptSummary:
    """The summary of one attempt: ``finding`` with what the journal
    (``None`` when the attempt did not start) shows of it."""
    transport = journal.transport if journal is not None else None
    start, record = finding.start, finding.record
    credits, measured = _measured(subject, finding, transport)
    return AttemptSummary(
        arm=subject.arm.arm,
        attempt_id=subject.attempt_id,
        state=finding.state,
        synthetic=transport.synthetic if transport is not None else None,
        outcome=finding.outcome,
        reasons=tuple(finding.reasons),
        evidence=tuple(finding.evidence),
        schema_identity=journal.links if journal is not None else (),
        ledger_position=start.ledger_position if start is not None else None,
        started_at=start.started_at if start is not None else None,
        ended_at=record.ended_at if record is not None else None,
        credits=credits,
        measures=measured,
        assessment=finding.assessment,
        binding=finding.binding,
    )


def _finding(
    subject: _Subject, manifest: Manifest, manifest_digest: str, journal: _Journal, task: TaskSpec | None
) -> _Finding:
    """What the summary says of an attempt whose directory exists, from its
    journal checked step by step: the identity chain, the start, the
    record's presence, the finished journal, then the outcome."""
    evidence = list(journal.read.evidence)
    evidence += [f"schema identity, {link.link} link: {link.problem}" for link in journal.links if not link.holds]
    start = journal.start
    if start is None:
        evidence.append("attempt-start.json: missing or invalid: the attempt never reached its commit point")
        return _Finding(state=INCOMPLETE, outcome=Outcome.UNVERIFIED, reasons=evidence, evidence=evidence)
    evidence += _start_evidence(subject, manifest, manifest_digest, journal, start)
    record = journal.record
    if record is None or "attempt.json" not in journal.read.present:
        return _unfinished(journal.read, start, evidence)
    evidence += _record_evidence(subject, journal, start, record)
    return _judged_finding(subject, journal, task, start, record, evidence)


def summarize_attempt(
    policy: Policy,
    files: PairFiles,
    manifest: Manifest,
    manifest_digest: str,
    arm: ArmCommand,
    task: TaskSpec | None,
    rates: RatesFile | None,
    costs: Costs | None,
) -> AttemptSummary:
    """The summary of ``arm``'s attempt of the pair in ``files`` (its
    manifest ``manifest``, whose bytes have the BLAKE3 ``manifest_digest``;
    its task ``task``, rate snapshots ``rates`` and context costs ``costs``,
    ``None`` when not read), judged under ``policy``: its journal read,
    checked step by step and judged; an attempt that did not start, or whose
    journal is incomplete, missing or changed, is shown with why. Raises
    nothing for bad evidence: it is shown."""
    cost = (costs.maintenance if arm.arm is Arm.A else costs.cue) if costs is not None else None
    subject = _Subject(policy=policy, arm=arm, attempt_id=f"{files.root.name}/{arm.arm.value}", cost=cost, rates=rates)
    read = read_attempt(files, arm, subject.attempt_id)
    if read is None:
        return _attempt_summary(subject, NEVER_STARTED, None)
    journal = _decoded(files, manifest, read)
    return _attempt_summary(subject, _finding(subject, manifest, manifest_digest, journal, task), journal)
